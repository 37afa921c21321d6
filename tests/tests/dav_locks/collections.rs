//! Locks of collections (RFC 4918 §7.4, §9.6.1, §9.9.4): a
//! depth-infinity lock guards every member, made or removed; a MOVE
//! takes no lock along; a locked member guards its collection's removal.

use super::{active_locks, assert_locked, discovery, locked, put, req, Drive, ALICE};

#[test]
fn a_depth_infinity_lock_guards_its_members_and_stays_behind_a_move() {
    let d = Drive::new("coll", &super::rules("", ""));
    let server = d.serve();
    let addr = server.local_addr();
    let t = locked(addr, "/dir/", ALICE, "infinity");
    let shown = discovery(addr, "/dir/", ALICE);
    assert!(shown.contains("infinity"), "{shown}");
    // A new member: the collection's token is needed.
    assert_locked(&put("/dir/new", ALICE, b"new").send(addr), "/dir/", "PUT");
    assert!(!d.root().join("dir/new").exists());
    let tagged = format!("<http://{addr}/dir/> (<{t}>)");
    let r = put("/dir/new", ALICE, b"new").h("If", &tagged).send(addr);
    assert_eq!(
        r.status,
        201,
        "PUT with the collection's token: {}",
        r.text()
    );
    assert_eq!(std::fs::read(d.root().join("dir/new")).unwrap(), b"new");
    // The collection's removal.
    let r = req("DELETE", "/dir/").send(addr);
    assert_locked(&r, "/dir/", "DELETE");
    assert_eq!(
        std::fs::read(d.root().join("dir/a.txt")).unwrap(),
        b"dir, a"
    );
    assert!(d.root().join("dir/new").exists());
    // Moved with its token: the lock stays with the name, which is gone.
    let r = req("MOVE", "/dir/")
        .h("Destination", format!("http://{addr}/moved/"))
        .h("If", format!("(<{t}>)"))
        .send(addr);
    assert_eq!(r.status, 201, "MOVE with the token: {}", r.text());
    assert!(!d.root().join("dir").exists());
    assert_eq!(
        std::fs::read(d.root().join("moved/a.txt")).unwrap(),
        b"dir, a"
    );
    let at_new = discovery(addr, "/moved/", ALICE);
    assert_eq!(active_locks(&at_new), 0, "a lock came along: {at_new}");
    let r = put("/moved/b.txt", ALICE, b"b").send(addr);
    assert_eq!(r.status, 201, "PUT under the new name: {}", r.text());
    assert_eq!(super::counter(&server, "held"), 0);
    // The old name is free again.
    let r = req("MKCOL", "/dir/").send(addr);
    assert_eq!(r.status, 201, "MKCOL at the old name: {}", r.text());
    let r = put("/dir/again", ALICE, b"again").send(addr);
    assert_eq!(r.status, 201, "PUT at the old name: {}", r.text());
    let at_old = discovery(addr, "/dir/", ALICE);
    assert_eq!(active_locks(&at_old), 0, "{at_old}");
}

#[test]
fn a_locked_member_guards_its_unlocked_collection() {
    let d = Drive::new("member", &super::rules("", ""));
    std::fs::create_dir(d.root().join("d2")).unwrap();
    std::fs::write(d.root().join("d2/x.txt"), b"x").unwrap();
    std::fs::write(d.root().join("d2/y.txt"), b"y").unwrap();
    let server = d.serve();
    let addr = server.local_addr();
    let t = locked(addr, "/d2/x.txt", ALICE, "0");
    let r = req("DELETE", "/d2/").send(addr);
    assert_locked(&r, "/d2/x.txt", "DELETE of the collection");
    assert_eq!(
        nikaia_tests::names(&d.root().join("d2")),
        ["x.txt", "y.txt"],
        "a refused DELETE removed members"
    );
    // A MOVE of the collection removes the member from its name too.
    let r = req("MOVE", "/d2/")
        .h("Destination", format!("http://{addr}/d3/"))
        .send(addr);
    assert_locked(&r, "/d2/x.txt", "MOVE of the collection");
    assert!(d.root().join("d2/x.txt").exists());
    // With the member's token, tagged, the removal is whole.
    let r = req("DELETE", "/d2/")
        .h("If", format!("<http://{addr}/d2/x.txt> (<{t}>)"))
        .send(addr);
    assert_eq!(
        r.status,
        204,
        "DELETE with the member's token: {}",
        r.text()
    );
    assert!(!d.root().join("d2").exists());
    assert_eq!(
        super::counter(&server, "held"),
        0,
        "the removed name's lock"
    );
}
