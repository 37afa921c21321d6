//! `Timeout` and `Lock-Token`.

use super::{T, U1};
use crate::http::dav::cond::{lock_token, timeout};

// ---- Timeout ----

#[test]
fn timeouts() {
    let t = |v: &str| timeout(Some(v.as_bytes()), 3600);
    assert_eq!(t("Second-600"), 600);
    assert_eq!(t("Second-3600"), 3600);
    assert_eq!(t("Second-3601"), 3600);
    assert_eq!(t("Infinite, Second-4100000000"), 3600);
    assert_eq!(t("Second-4100000000, Infinite"), 3600);
    assert_eq!(t("Second-99999999999"), 3600);
    assert_eq!(t("Second-999999999999999999999999999999"), 3600);
    assert_eq!(timeout(Some(b"Second-4294967295"), u64::MAX), 4_294_967_295);
    assert_eq!(timeout(Some(b"Second-4294967296"), u64::MAX), u64::MAX);
    assert_eq!(t("Second-0"), 1);
    assert_eq!(t("bogus"), 3600);
    assert_eq!(t(""), 3600);
    assert_eq!(timeout(None, 3600), 3600);
    assert_eq!(timeout(Some(b"\xff\x00"), 3600), 3600);
    assert_eq!(t("bogus, Second-60"), 60);
    assert_eq!(t(" , Second-60 ,"), 60);
    assert_eq!(t("\tsecond-60\t"), 60);
    assert_eq!(t("infinite"), 3600);
    assert_eq!(t("Second- 60, Second-70"), 70);
    assert_eq!(t("Second-60s, Second-+5, Second-, Second-80"), 80);
    assert_eq!(t("Seconds-60"), 3600);
}

// ---- Lock-Token ----

#[test]
fn lock_tokens() {
    assert_eq!(lock_token(format!("<{U1}>").as_bytes()), Some(U1));
    assert_eq!(lock_token(format!(" \t<{T}> ").as_bytes()), Some(T));
    assert_eq!(
        lock_token(b"<opaquelocktoken:foobar>"),
        Some("opaquelocktoken:foobar")
    );
    for v in [
        &b""[..],
        b"<>",
        b"<urn>",
        b"urn:uuid:x",
        b"<urn:uuid:x",
        b"urn:uuid:x>",
        b"< urn:uuid:x>",
        b"<urn:uuid:x >",
        b"<urn:uuid:x> <urn:uuid:y>",
        b"<urn:uuid:\xff>",
        b"<urn:uuid:\0>",
        b"<1796624484>",
        b"(<urn:uuid:x>)",
    ] {
        assert_eq!(lock_token(v), None, "{:?}", String::from_utf8_lossy(v));
    }
}
