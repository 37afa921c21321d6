//! What an outside tester found against the first build of class 2, each
//! kept as a test: an owner that grows as the locks file keeps it, the
//! locks of members a Destination's replacement took with it, a locks
//! file edited by hand, and a lock only another user's lock covers.

use super::{active_locks, assert_locked, discovery, locked, put, req, submit, Drive, ALICE, BOB};

/// An owner of 4 KiB as the client wrote it, but 12 KiB as the file keeps
/// it (every byte of "é" percent-encoded), is refused: the file's size is
/// bounded by what it keeps.
#[test]
fn an_owner_is_bounded_as_the_locks_file_keeps_it() {
    let d = Drive::new("owner", &super::rules("", ""));
    let server = d.serve();
    let addr = server.local_addr();
    let body = |owner: &str| {
        format!(
            "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/>\
             </D:lockscope><D:locktype><D:write/></D:locktype><D:owner>{owner}</D:owner>\
             </D:lockinfo>"
        )
    };
    let lock = |owner: &str| {
        req("LOCK", "/f.txt")
            .h("Depth", "0")
            .body(body(owner))
            .send(addr)
    };
    let r = lock(&"é".repeat(2048));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(active_locks(&discovery(addr, "/f.txt", ALICE)), 0);
    // Plain ASCII of the same 4 KiB is kept.
    let r = lock(&"a".repeat(4096));
    assert_eq!(r.status, 200, "{}", r.text());
}

/// A `COPY` with `Overwrite: T` onto a collection takes its members with
/// it, their locks too (RFC 4918 §9.8.4: as a `DELETE` would): the name
/// a lock was on is free again.
#[test]
fn a_collection_replaced_whole_takes_its_members_locks() {
    let d = Drive::new("ghost", &super::rules("", ""));
    super::file(&d.root().join("od/x"), b"x, locked");
    super::file(&d.root().join("src/y"), b"y");
    let server = d.serve();
    let addr = server.local_addr();
    let t = locked(addr, "/od/x", ALICE, "0");
    let r = req("COPY", "/src/")
        .h("Destination", format!("http://{addr}/od/"))
        .h("Overwrite", "T")
        .h("If", format!("<http://{addr}/od/x> {}", submit(&t)))
        .send(addr);
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(!d.root().join("od/x").exists());
    // bob makes `od/x` anew: no lock is left on it.
    let r = put("/od/x", BOB, b"bob's").send(addr);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(active_locks(&discovery(addr, "/od/x", BOB)), 0);
}

/// A locks file edited by hand (a byte-order mark, `\r\n` line ends, a
/// line no server wrote) keeps every lock it holds: read through, and
/// the line it cannot read written back with the next change.
#[test]
fn a_locks_file_edited_by_hand_keeps_its_locks() {
    let d = Drive::new("edited", &super::rules("", ""));
    let locks = d.path().join("locks");
    let t = {
        let server = d.serve();
        let addr = server.local_addr();
        locked(addr, "/f.txt", ALICE, "0")
    };
    let file = locks.join("locks");
    let text = std::fs::read_to_string(&file).unwrap();
    let edited = format!("\u{feff}{}a note by hand\r\n", text.replace('\n', "\r\n"));
    std::fs::write(&file, edited).unwrap();
    let server = d.serve();
    let addr = server.local_addr();
    assert_locked(
        &put("/f.txt", BOB, b"bob's").send(addr),
        "/f.txt",
        "after the edit",
    );
    // A change (another lock) writes the table back, the note with it.
    let _ = locked(addr, "/dir/a.txt", ALICE, "0");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("a note by hand"), "{text}");
    assert!(text.contains(&t), "{text}");
    let r = put("/f.txt", ALICE, b"alice's")
        .h("If", submit(&t))
        .send(addr);
    assert_eq!(r.status, 204, "{}", r.text());
}

/// A shared depth-0 lock of a collection opens its member list to its
/// owner, not a member another user's depth-infinity lock covers.
#[test]
fn a_token_opens_only_what_its_own_lock_covers() {
    let d = Drive::new("shared", &super::rules("", ""));
    super::file(&d.root().join("s/f"), b"f");
    let server = d.serve();
    let addr = server.local_addr();
    let shared = |user: &'static str, depth: &str| {
        let r = req("LOCK", "/s/")
            .auth(user)
            .h("Depth", depth)
            .body(super::lockinfo(true, "x"))
            .send(addr);
        assert_eq!(r.status, 200, "{}", r.text());
        super::token(&r)
    };
    let ta = shared(ALICE, "0");
    let _tb = shared(BOB, "infinity");
    let tagged = format!("<http://{addr}/s/> {}", submit(&ta));
    let r = req("DELETE", "/s/f").h("If", tagged.clone()).send(addr);
    assert_locked(&r, "/s/", "alice's DELETE of a member bob's lock covers");
    assert!(d.root().join("s/f").exists());
    let r = put("/s/f", ALICE, b"alice's").h("If", tagged).send(addr);
    assert_locked(&r, "/s/", "alice's PUT of it");
}

/// A `DELETE` (or `MOVE` away) of a file racing a `LOCK` of it ends as
/// one of the two orders would: the LOCK first (the DELETE 423, the file
/// kept, locked) or the DELETE first (the LOCK makes the name again,
/// 201) — never a lock left on a name that is gone.
#[test]
fn a_removal_racing_a_lock_ends_as_one_order_or_the_other() {
    let d = Drive::new("race-remove", &super::rules("", ""));
    let server = d.serve();
    let addr = server.local_addr();
    for round in 0..40 {
        let name = format!("/r{round}.txt");
        super::file(&d.root().join(&name[1..]), b"to race");
        let moving = round % 2 == 1;
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let (b, n) = (barrier.clone(), name.clone());
        let remover = std::thread::spawn(move || {
            let r = match moving {
                true => req("MOVE", &n)
                    .auth(BOB)
                    .h("Destination", format!("http://{addr}/moved-{}", &n[1..])),
                false => req("DELETE", &n).auth(BOB),
            };
            b.wait();
            r.send(addr).status
        });
        let lock = super::lock_req(&name, ALICE, "0", "Second-600");
        barrier.wait();
        let locked = lock.send(addr).status;
        let removed = remover.join().unwrap();
        let there = d.root().join(&name[1..]).exists();
        let held = active_locks(&discovery(addr, &name, ALICE));
        let gone = if moving { 201 } else { 204 };
        let serial = matches!((removed, locked, there, held), (423, 200, true, 1))
            || (removed == gone && locked == 201 && there && held == 1);
        assert!(
            serial,
            "round {round} ({}): removal {removed}, LOCK {locked}, name there {there}, locks {held}",
            if moving { "MOVE" } else { "DELETE" }
        );
    }
}
