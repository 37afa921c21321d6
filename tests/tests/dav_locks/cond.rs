//! `If:` (RFC 4918 §10.4) as a write reads it: entity tags, a malformed
//! header, two of them, a tag naming another server; and a lock that
//! expires under `max-timeout`.

use super::{counter, get, lock_req, locked, put, submit, token, Drive, ALICE};

#[test]
fn if_is_evaluated_with_etags_and_tags_and_refused_malformed() {
    let d = Drive::new("if", &super::rules("", ""));
    let server = d.serve();
    let addr = server.local_addr();
    let etag = get(addr, "/f.txt")
        .header("etag")
        .expect("a GET's ETag")
        .to_owned();
    let r = put("/f.txt", ALICE, b"x")
        .h("If", "([\"wrong-etag\"])")
        .send(addr);
    assert_eq!(r.status, 412, "a false If: {}", r.text());
    assert_eq!(std::fs::read(d.root().join("f.txt")).unwrap(), b"f, first");
    let r = put("/f.txt", ALICE, b"second")
        .h("If", format!("([{etag}])"))
        .send(addr);
    assert_eq!(
        r.status,
        204,
        "If: with the current ETag {etag}: {}",
        r.text()
    );
    assert_eq!(std::fs::read(d.root().join("f.txt")).unwrap(), b"second");
    // Not RFC 4918's grammar, or given twice: 400, nothing written.
    let t = "urn:uuid:2bd1f5a6-8a3b-4c7d-9e0f-1a2b3c4d5e6f";
    let r = put("/f.txt", ALICE, b"x")
        .h("If", format!("(<{t}>"))
        .send(addr);
    assert_eq!(r.status, 400, "a malformed If: {}", r.text());
    let r = put("/f.txt", ALICE, b"x")
        .h("If", format!("([{etag}])"))
        .h("If", format!("([{etag}])"))
        .send(addr);
    assert_eq!(r.status, 400, "two If headers: {}", r.text());
    assert_eq!(std::fs::read(d.root().join("f.txt")).unwrap(), b"second");
    // Locked: a list tagged with another server's name is false, the
    // only one there is, so the header is: 412, not 423.
    let t = locked(addr, "/f.txt", ALICE, "0");
    let r = put("/f.txt", ALICE, b"x")
        .h("If", format!("<http://other.example/f.txt> (<{t}>)"))
        .send(addr);
    assert_eq!(r.status, 412, "a tag of another host: {}", r.text());
    let r = put("/f.txt", ALICE, b"third")
        .h("If", format!("<http://{addr}/f.txt> (<{t}>)"))
        .send(addr);
    assert_eq!(
        r.status,
        204,
        "the same tagged with this server: {}",
        r.text()
    );
    let r = put("/f.txt", ALICE, b"x")
        .h("If", format!("(Not <{t}>)"))
        .send(addr);
    assert_eq!(r.status, 412, "If: (Not <its token>): {}", r.text());
    let r = put("/f.txt", ALICE, b"x")
        .h("If", "(Not <DAV:no-lock>)")
        .send(addr);
    assert_eq!(
        r.status,
        423,
        "a true If: that submits no token: {}",
        r.text()
    );
    assert_eq!(std::fs::read(d.root().join("f.txt")).unwrap(), b"third");
    let r = put("/f.txt", ALICE, b"fourth")
        .h("If", submit(&t))
        .send(addr);
    assert_eq!(r.status, 204, "{}", r.text());
}

#[test]
fn a_lock_past_its_timeout_guards_nothing_and_is_counted_expired() {
    let d = Drive::new("expiry", &super::rules("max-timeout = \"1s\"", ""));
    let server = d.serve();
    let addr = server.local_addr();
    let r = lock_req("/f.txt", ALICE, "0", "Second-600").send(addr);
    assert_eq!(r.status, 200, "{}", r.text());
    let _ = token(&r);
    assert!(
        r.text().contains("Second-1<"),
        "the Timeout not capped at max-timeout: {}",
        r.text()
    );
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let r = put("/f.txt", ALICE, b"after").send(addr);
    assert_eq!(r.status, 204, "a PUT past the lock's end: {}", r.text());
    assert_eq!(std::fs::read(d.root().join("f.txt")).unwrap(), b"after");
    assert!(
        counter(&server, "expired") >= 1,
        "{}",
        super::locks_report(&server)
    );
    assert_eq!(counter(&server, "held"), 0);
}
