//! What an outside tester found in the first build (#49's break run), each
//! held here: a `DELETE` that asks less than infinity, a `COPY` over a
//! file keeping the wrong properties, `PROPPATCH`es racing each other and
//! a `PUT`, a name that is not UTF-8 listed under another, a Destination
//! behind a proxy that ended TLS, a listing cut at its bound, headers and
//! bodies that are not what they should be, and a body that never comes
//! holding a writer's place.

use super::props::{set, value};
use super::*;
use std::os::unix::ffi::OsStrExt;

/// `Depth: 0`, `1` or anything but `infinity` on a collection's `DELETE`
/// is 400, and the collection stays whole (RFC 4918 §9.6.1).
#[test]
fn a_delete_that_asks_less_than_infinity_removes_nothing() {
    let d = Drive::new("found-depth", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    for depth in ["0", "1", "bogus"] {
        let reply = req("DELETE", "/drive/dir/").h("Depth", depth).send(addr);
        assert_eq!(reply.status, 400, "Depth {depth}: {}", reply.text());
        assert!(d.drive().join("dir/sub/two.txt").exists(), "Depth {depth}");
    }
    // Asked twice, it is refused too, whichever comes first.
    for (one, two) in [("infinity", "0"), ("0", "infinity")] {
        let reply = req("DELETE", "/drive/dir/")
            .h("Depth", one)
            .h("Depth", two)
            .send(addr);
        assert_eq!(reply.status, 400, "Depth {one}, {two}: {}", reply.text());
        assert!(d.drive().join("dir/sub/two.txt").exists());
    }
    let reply = req("DELETE", "/drive/dir/")
        .h("Depth", "infinity")
        .send(addr);
    assert_eq!(reply.status, 204, "{}", reply.text());
    assert!(!d.drive().join("dir").exists());
    // A name without members ignores Depth (RFC 4918 §10.2).
    let reply = req("DELETE", "/drive/a.txt").h("Depth", "0").send(addr);
    assert_eq!(reply.status, 204, "{}", reply.text());
    let reply = req("COPY", "/drive/b.txt")
        .h("Destination", "/drive/b2.txt")
        .h("Depth", "1")
        .send(addr);
    assert_eq!(reply.status, 201, "{}", reply.text());
    let reply = req("PROPFIND", "/drive/b.txt")
        .h("Depth", "infinity")
        .send(addr);
    assert_eq!(reply.status, 207, "{}", reply.text());
}

/// A `COPY` with `Overwrite: T` onto a file: the Destination is the
/// source, its properties with it; none of the old file's stay
/// (RFC 4918 §9.8.4).
#[test]
fn a_copy_over_a_file_brings_the_sources_properties_only() {
    let d = Drive::new("found-copyprops", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let s = req("PROPPATCH", "/drive/a.txt")
        .body(set("<Z:from>source</Z:from>"))
        .send(addr);
    assert_eq!(s.status, 207, "{}", s.text());
    let s = req("PROPPATCH", "/drive/b.txt")
        .body(set("<Z:old>replaced</Z:old>"))
        .send(addr);
    assert_eq!(s.status, 207, "{}", s.text());
    let reply = req("COPY", "/drive/a.txt")
        .h("Destination", "/drive/b.txt")
        .send(addr);
    assert_eq!(reply.status, 204, "{}", reply.text());
    assert_eq!(
        value(addr, "/drive/b.txt", "from").as_deref(),
        Some("source")
    );
    assert_eq!(value(addr, "/drive/b.txt", "old"), None);
}

/// Two clients setting properties of one file at once, and a third
/// replacing it by `PUT` meanwhile: every property a 207 said was set is
/// there at the end (one record, read and written as one under the name's
/// hold).
#[test]
fn proppatches_racing_each_other_and_a_put_lose_nothing() {
    let d = Drive::new("found-race", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let setter = |who: &'static str| {
        std::thread::spawn(move || {
            let mut said = Vec::new();
            for i in 0..40 {
                let name = format!("{who}{i}");
                let body = set(&format!("<Z:{name}>v</Z:{name}>"));
                let reply = req("PROPPATCH", "/drive/a.txt").body(body).send(addr);
                if reply.status == 207 && reply.text().contains(" 200 ") {
                    said.push(name);
                }
            }
            said
        })
    };
    let putter = std::thread::spawn(move || {
        for i in 0..40 {
            let reply = req("PUT", "/drive/a.txt")
                .body(format!("version {i}"))
                .send(addr);
            assert!(matches!(reply.status, 201 | 204), "{}", reply.text());
        }
    });
    let (one, two) = (setter("p"), setter("q"));
    let mut said = one.join().unwrap();
    said.extend(two.join().unwrap());
    putter.join().unwrap();
    assert_eq!(said.len(), 80, "every PROPPATCH was answered 200");
    let lost: Vec<&String> = (said.iter())
        .filter(|n| value(addr, "/drive/a.txt", n).is_none())
        .collect();
    assert!(lost.is_empty(), "lost: {lost:?}");
}

/// A file whose name is not UTF-8 is listed by its own bytes, and the
/// href opens it, not a file named with the replacement character.
#[test]
fn a_name_that_is_not_utf8_is_listed_by_its_bytes() {
    let d = Drive::new("found-bytes", RULES);
    let dir = d.drive().join("names");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join(std::ffi::OsStr::from_bytes(b"lat\xe9.txt")),
        b"LATIN",
    )
    .unwrap();
    std::fs::write(dir.join("lat\u{fffd}.txt"), b"OTHER").unwrap();
    let running = d.serve();
    let addr = running.local_addr();
    let reply = req("PROPFIND", "/drive/names/").h("Depth", "1").send(addr);
    assert_eq!(reply.status, 207, "{}", reply.text());
    let text = reply.text();
    assert!(text.contains("/drive/names/lat%E9.txt<"), "{text}");
    assert!(text.contains("/drive/names/lat%EF%BF%BD.txt<"), "{text}");
    let get = req("GET", "/drive/names/lat%E9.txt").send(addr);
    assert_eq!(get.body, b"LATIN");
}

/// Behind a proxy that ended TLS (`plain-http = true`), the Destination a
/// client writes is `https://` and the host it asked: this server.
#[test]
fn an_https_destination_on_a_plain_listener_names_this_server() {
    let d = Drive::new("found-proxy", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let reply = req("COPY", "/drive/a.txt")
        .h("Host", "files.example")
        .h("Destination", "https://files.example/drive/proxied.txt")
        .send(addr);
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(
        std::fs::read(d.drive().join("proxied.txt")).unwrap(),
        b"drive, a"
    );
    // Another host, or another port of it, is still another server.
    for other in [
        "https://elsewhere.example/drive/x",
        "https://files.example:8443/drive/x",
    ] {
        let reply = req("COPY", "/drive/a.txt")
            .h("Host", "files.example")
            .h("Destination", other)
            .send(addr);
        assert_eq!(reply.status, 502, "{other}: {}", reply.text());
    }
}

/// Headers and bodies that are not what RFC 4918 lets them be: 400, and
/// nothing changes.
#[test]
fn malformed_heads_and_empty_updates_are_400() {
    let d = Drive::new("found-heads", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let before = snapshot(d.path());
    let cases = [
        req("COPY", "/drive/a.txt").h("Destination", "//127.0.0.1/drive/x"),
        req("COPY", "/drive/a.txt")
            .h("Destination", "/drive/x")
            .h("Overwrite", ""),
        req("COPY", "/drive/a.txt")
            .h("Destination", "/drive/x")
            .h("Overwrite", "T")
            .h("Overwrite", "F"),
        req("COPY", "/drive/a.txt")
            .h("Destination", "/drive/x")
            .h("Destination", "/drive/y"),
        req("PROPPATCH", "/drive/a.txt")
            .body("<?xml version=\"1.0\"?><D:propertyupdate xmlns:D=\"DAV:\"/>"),
    ];
    for case in cases {
        let reply = case.send(addr);
        assert_eq!(reply.status, 400, "{}", reply.text());
    }
    // A trailing `/` names a collection: no file is made there.
    let reply = req("COPY", "/drive/a.txt")
        .h("Destination", "/drive/trail/")
        .send(addr);
    assert_eq!(reply.status, 409, "{}", reply.text());
    assert!(snapshot(d.path()) == before, "nothing changed");
}

/// A `PROPPATCH` whose body never comes holds no writer's place: with
/// `max-writes = 1`, a `PUT` beside it is written.
#[test]
fn a_proppatch_body_that_never_comes_holds_no_writers_place() {
    let rules = format!("max-writes = 1\n{RULES}");
    let d = Drive::new("found-stall", &rules);
    let running = d.serve();
    let addr = running.local_addr();
    let mut stalled = std::net::TcpStream::connect(addr).unwrap();
    let head = format!(
        "PROPPATCH /drive/a.txt HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {}\r\n\
         Content-Length: 200\r\n\r\n<?xml",
        base64(ALICE)
    );
    stalled.write_all(head.as_bytes()).unwrap();
    // The stalled request's head was read and its credentials checked
    // before this PUT comes: the same connection order as a client's.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let reply = req("PUT", "/drive/new.txt").body("written").send(addr);
    assert_eq!(reply.status, 201, "{}", reply.text());
    drop(stalled);
}

/// A collection past the listing's bound (100 000 members) is not listed
/// at all: 507 before a byte of a 207, since a listing that is not all of
/// it would read as whole to a sync client, which would then delete what
/// it left out (rclone does).
#[test]
fn a_collection_past_the_listings_bound_is_507_not_a_short_listing() {
    let d = Drive::new("found-bound", RULES);
    let dir = d.drive().join("many");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..100_001u32 {
        std::fs::File::create(dir.join(format!("f{i}"))).unwrap();
    }
    let running = d.serve();
    let addr = running.local_addr();
    let reply = req("PROPFIND", "/drive/many/").h("Depth", "1").send(addr);
    assert_eq!(reply.status, 507, "{}", reply.text());
    assert!(
        reply.text().contains("more than 100000 members"),
        "{}",
        reply.text()
    );
    // One fewer is listed whole.
    std::fs::remove_file(dir.join("f0")).unwrap();
    let reply = req("PROPFIND", "/drive/many/").h("Depth", "1").send(addr);
    assert_eq!(reply.status, 207);
    assert_eq!(reply.text().matches("<D:response>").count(), 100_001);
}

/// A 207 names a collection that stays with its trailing `/` (RFC 4918
/// §8.3): here the one that holds a denied name, named in its place.
#[test]
fn a_collection_that_stays_is_named_with_its_slash() {
    let d = Drive::new("found-slash", RULES);
    file(&d.drive().join("tree/deep/x.key"), b"denied-404 key");
    file(&d.drive().join("tree/loose.txt"), b"goes");
    let running = d.serve();
    let addr = running.local_addr();
    let reply = req("DELETE", "/drive/tree/").send(addr);
    assert_eq!(reply.status, 207, "{}", reply.text());
    let text = reply.text();
    assert!(
        text.contains("<D:href>/drive/tree/deep/</D:href>"),
        "{text}"
    );
    assert!(!text.contains("x.key"), "{text}");
    assert!(d.drive().join("tree/deep/x.key").exists());
    assert!(!d.drive().join("tree/loose.txt").exists());
}

/// A `MOVE` between two names of one file (hard links made outside the
/// server): the source goes, as after any `MOVE` (RFC 4918 §9.9).
#[test]
fn a_move_between_two_names_of_one_file_leaves_one() {
    let d = Drive::new("found-links", RULES);
    std::fs::hard_link(d.drive().join("a.txt"), d.drive().join("a-too.txt")).unwrap();
    let running = d.serve();
    let addr = running.local_addr();
    let reply = req("MOVE", "/drive/a.txt")
        .h("Destination", "/drive/a-too.txt")
        .send(addr);
    assert_eq!(reply.status, 204, "{}", reply.text());
    assert!(!d.drive().join("a.txt").exists());
    assert_eq!(
        std::fs::read(d.drive().join("a-too.txt")).unwrap(),
        b"drive, a"
    );
}
