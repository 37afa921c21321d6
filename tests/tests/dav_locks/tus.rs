//! A tus upload (`spec/site.md`, "Resumable uploads") whose final name
//! another user locks while its bytes arrive: the completion is 423 and
//! the upload stays, whole, until the lock goes; a creation for a name
//! another user locked is 423 from the start.

use super::{assert_locked, locked, req, Drive, Req, ALICE, BOB};
use nikaia_tests::tus::{b64, pattern};
use std::net::SocketAddr;

const LEN: usize = 2 << 20;

/// A tus request by `user` (no retry on 423: each answer is asserted).
fn tus(method: &str, target: &str, user: &'static str) -> Req {
    req(method, target).auth(user).h("Tus-Resumable", "1.0.0")
}

fn create(addr: SocketAddr, user: &'static str, name: &str, len: usize) -> nikaia_tests::Reply {
    tus("POST", "/.tus/", user)
        .h("Upload-Length", len.to_string())
        .h("Upload-Metadata", format!("filename {}", b64(name)))
        .send(addr)
}

fn patch(addr: SocketAddr, at: &str, offset: usize, bytes: &[u8]) -> nikaia_tests::Reply {
    tus("PATCH", at, ALICE)
        .h("Content-Type", "application/offset+octet-stream")
        .h("Upload-Offset", offset.to_string())
        .body(bytes)
        .send(addr)
}

#[test]
fn an_upload_that_meets_a_lock_keeps_its_bytes_until_the_lock_goes() {
    let d = Drive::new("tus", &super::rules("", "[resumable]\ndir = \"partial\""));
    let server = d.serve();
    let addr = server.local_addr();
    let bytes = pattern(LEN, 3);
    let r = create(addr, ALICE, "big.bin", LEN);
    assert_eq!(r.status, 201, "creation: {}", r.text());
    let at = r.header("location").unwrap().to_owned();
    let r = patch(addr, &at, 0, &bytes[..LEN / 2]);
    assert_eq!(r.status, 204, "first half: {}", r.text());
    // bob locks the final name: an empty file under it.
    let t = locked(addr, "/big.bin", BOB, "0");
    assert_eq!(std::fs::read(d.root().join("big.bin")).unwrap(), b"");
    let r = patch(addr, &at, LEN / 2, &bytes[LEN / 2..]);
    assert_locked(&r, "/big.bin", "the completing PATCH");
    assert_eq!(
        std::fs::read(d.root().join("big.bin")).unwrap(),
        b"",
        "the upload's bytes went under a locked name"
    );
    // Unlocked, the same PATCH with no more bytes completes it.
    let r = req("UNLOCK", "/big.bin")
        .auth(BOB)
        .h("Lock-Token", format!("<{t}>"))
        .send(addr);
    assert_eq!(r.status, 204, "bob's UNLOCK: {}", r.text());
    let r = patch(addr, &at, LEN, b"");
    assert_eq!(
        r.status,
        204,
        "the completion after the UNLOCK: {}",
        r.text()
    );
    assert_eq!(r.header("upload-offset"), Some(&*LEN.to_string()));
    let got = std::fs::read(d.root().join("big.bin")).unwrap();
    assert!(
        got == bytes,
        "big.bin: {} bytes, not the upload's",
        got.len()
    );
}

/// An upload whose completion met a lock, as `HEAD` tells of it: all
/// its bytes here.
#[test]
fn a_head_of_an_upload_held_by_a_lock_says_all_its_bytes_are_here() {
    let d = Drive::new(
        "tus-head",
        &super::rules("", "[resumable]\ndir = \"partial\""),
    );
    let server = d.serve();
    let addr = server.local_addr();
    let bytes = pattern(LEN, 5);
    let r = create(addr, ALICE, "big.bin", LEN);
    assert_eq!(r.status, 201, "creation: {}", r.text());
    let at = r.header("location").unwrap().to_owned();
    let r = patch(addr, &at, 0, &bytes[..LEN / 2]);
    assert_eq!(r.status, 204, "first half: {}", r.text());
    let _t = locked(addr, "/big.bin", BOB, "0");
    let r = patch(addr, &at, LEN / 2, &bytes[LEN / 2..]);
    assert_locked(&r, "/big.bin", "the completing PATCH");
    let head = tus("HEAD", &at, ALICE).send(addr);
    assert_eq!(
        head.status, 200,
        "HEAD of the upload after the 423: {head:?}"
    );
    assert_eq!(head.header("upload-offset"), Some(&*LEN.to_string()));
    assert_eq!(head.header("upload-length"), Some(&*LEN.to_string()));
    assert_eq!(std::fs::read(d.root().join("big.bin")).unwrap(), b"");
}

#[test]
fn a_creation_for_a_name_another_user_locked_is_423() {
    let d = Drive::new(
        "tus-create",
        &super::rules("", "[resumable]\ndir = \"partial\""),
    );
    let server = d.serve();
    let addr = server.local_addr();
    let _t = locked(addr, "/other.bin", BOB, "0");
    let r = create(addr, ALICE, "other.bin", 10);
    assert_locked(&r, "/other.bin", "alice's creation");
    let uploads = server.report().resumable.expect("[resumable] counted");
    assert_eq!(
        (uploads.created, uploads.pending),
        (0, 0),
        "a refused creation made an upload"
    );
    assert_eq!(std::fs::read(d.root().join("other.bin")).unwrap(), b"");
}
