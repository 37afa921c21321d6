//! A lock's token is its owner's: another writer of the same name who
//! submits it is refused as one who submits nothing.

use super::{
    active_locks, assert_locked, discovery, get, locked, put, req, submit, Drive, ALICE, BOB,
};

const PROPPATCH: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\
    <D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:z\"><D:set><D:prop>\
    <Z:colour>red</Z:colour></D:prop></D:set></D:propertyupdate>";

#[test]
fn another_users_token_is_refused_and_not_shown() {
    let d = Drive::new("users", &super::rules("", ""));
    let server = d.serve();
    let addr = server.local_addr();
    let t = locked(addr, "/f.txt", ALICE, "0");
    let with = |r: super::Req| r.auth(BOB).h("If", submit(&t));
    // bob's writes, with alice's token and without.
    for (what, r) in [
        ("PUT with the token", with(put("/f.txt", BOB, b"bob's"))),
        ("PUT", put("/f.txt", BOB, b"bob's")),
        ("DELETE with the token", with(req("DELETE", "/f.txt"))),
        ("DELETE", req("DELETE", "/f.txt").auth(BOB)),
        (
            "MOVE with the token",
            with(req("MOVE", "/f.txt")).h("Destination", format!("http://{addr}/g.txt")),
        ),
        (
            "MOVE",
            req("MOVE", "/f.txt")
                .auth(BOB)
                .h("Destination", format!("http://{addr}/g.txt")),
        ),
        (
            "PROPPATCH with the token",
            with(req("PROPPATCH", "/f.txt")).body(PROPPATCH),
        ),
        (
            "PROPPATCH",
            req("PROPPATCH", "/f.txt").auth(BOB).body(PROPPATCH),
        ),
    ] {
        assert_locked(&r.send(addr), "/f.txt", &format!("bob's {what}"));
    }
    assert_eq!(std::fs::read(d.root().join("f.txt")).unwrap(), b"f, first");
    assert!(!d.root().join("g.txt").exists());
    // bob cannot release it either: 409, as for a token of nothing.
    let r = req("UNLOCK", "/f.txt")
        .auth(BOB)
        .h("Lock-Token", format!("<{t}>"))
        .send(addr);
    assert_eq!(r.status, 409, "bob's UNLOCK: {}", r.text());
    assert!(
        r.text().contains("lock-token-matches-request-uri"),
        "{}",
        r.text()
    );
    // Anyone sees the lock; only alice its token.
    let bobs = discovery(addr, "/f.txt", BOB);
    assert_eq!(active_locks(&bobs), 1, "{bobs}");
    assert!(!bobs.contains("locktoken>"), "bob is shown a token: {bobs}");
    assert!(!bobs.contains(&t), "bob is shown alice's token: {bobs}");
    let alices = discovery(addr, "/f.txt", ALICE);
    assert_eq!(active_locks(&alices), 1, "{alices}");
    assert!(
        alices.contains("locktoken>") && alices.contains(&t),
        "alice is not shown her token: {alices}"
    );
    // The owner's token works.
    let r = put("/f.txt", ALICE, b"alice's")
        .h("If", submit(&t))
        .send(addr);
    assert_eq!(r.status, 204, "alice's PUT: {}", r.text());
    assert_eq!(get(addr, "/f.txt").body, b"alice's");
    assert_eq!(super::counter(&server, "held"), 1);
}
