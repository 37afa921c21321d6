//! macOS Finder, WebDAVFS (sources F1 to F4 in `dav_replay.rs`).

use super::wire::*;
use super::xml::{activelocks, find, hrefs, multistatus, path_of};

/// F1's `network_stat` body (F2 saw it on the wire).
const MAC_STAT: &str =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:propfind xmlns:D=\"DAV:\">\n\
<D:prop>\n<D:getlastmodified/>\n<D:getcontentlength/>\n<D:creationdate/>\n<D:resourcetype/>\n\
</D:prop>\n</D:propfind>\n";

/// F1's `network_statfs` body.
const MAC_STATFS: &str =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:propfind xmlns:D=\"DAV:\">\n\
<D:prop>\n<D:quota-available-bytes/>\n<D:quota-used-bytes/>\n<D:quota/>\n<D:quotaused/>\n\
</D:prop>\n</D:propfind>\n";

/// F1's `network_readdir` body when caching (with Apple's property).
const MAC_READDIR: &str =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:propfind xmlns:D=\"DAV:\">\n\
<D:prop xmlns:A=\"http://www.apple.com/webdav_fs/props/\">\n<D:getlastmodified/>\n\
<D:getcontentlength/>\n<D:creationdate/>\n<D:resourcetype/>\n<A:appledoubleheader/>\n\
</D:prop>\n</D:propfind>\n";

/// F1's PROPFIND head: `Accept`, `Content-Type: text/xml`, `Depth`
/// (`translate` only for IIS), with the credentials.
fn mac_propfind(depth: &'static str, body: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Accept", "*/*".to_owned()),
        ("Content-Type", "text/xml".to_owned()),
        ("Depth", depth.to_owned()),
        ("Content-Length", body.len().to_string()),
        ("Authorization", BASIC.to_owned()),
    ]
}

/// F1's `network_lock` body (shared when the file is opened O_SHLOCK;
/// exclusive by default).
const MAC_LOCKINFO: &str =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:lockinfo xmlns:D=\"DAV:\">\n\
<D:lockscope><D:exclusive/></D:lockscope>\n<D:locktype><D:write/></D:locktype>\n<D:owner>\n\
<D:href>http://www.apple.com/webdav_fs/</D:href>\n</D:owner>\n</D:lockinfo>\n";

/// F1's `network_lock`: `Accept`, `Depth: 0`, `Timeout: Second-600`
/// (`WEBDAV_PULSE_TIMEOUT`), the XML type, its lockinfo.
fn mac_lock(c: &mut Dav<'_>, name: &str) -> Answer {
    let lock_len = MAC_LOCKINFO.len().to_string();
    c.send(
        "LOCK",
        name,
        &[
            ("Accept", "*/*"),
            ("Depth", "0"),
            ("Timeout", "Second-600"),
            ("Content-Type", "text/xml; charset=\"utf-8\""),
            ("Content-Length", &lock_len),
            ("Authorization", BASIC),
        ],
        MAC_LOCKINFO.as_bytes(),
    )
}

fn heads<'a>(h: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    h.iter().map(|(n, v)| (*n, v.as_str())).collect()
}

/// Mounting and browsing (F1, F2, F4): OPTIONS (class 1 and 2:
/// WebDAVFS mounts read-write, F1's `network_mount`), PROPFIND Depth 0 of
/// the root with `network_stat`'s body, the quota PROPFIND (RFC 4331's
/// two answered with numbers, the older two in a 404 propstat, and the
/// 207 well-formed), `network_readdir` at Depth 1 with `appledoubleheader`
/// (404 on each member, the live ones 200), the probes for `._.`,
/// `.DS_Store`, `.Spotlight-V100`, `._NAME` (404, never 403: a dot-name
/// is not shown), GET of a file.
#[test]
fn finder_mounts_and_browses() {
    let drive = Drive::new("");
    std::fs::write(drive.root.join("photo.jpg"), [0xffu8, 0xd8, 0xff, 0xe0]).unwrap();
    std::fs::create_dir(drive.root.join("Stuff")).unwrap();
    std::fs::write(drive.root.join(".secret"), b"not shown").unwrap();
    let mut c = drive.client(MAC_UA);

    let a = c.send(
        "OPTIONS",
        "/",
        &[("Accept", "*/*"), ("Authorization", BASIC)],
        b"",
    );
    assert_options(&a, 2, &ROOT_ALLOWS);

    let h = mac_propfind("0", MAC_STAT);
    let a = c.expect(207, "PROPFIND", "/", &heads(&h), MAC_STAT.as_bytes());
    let all = multistatus(&a);
    let root = find(&all, "/");
    assert!(root.is_collection());
    root.ok(DAV, "getlastmodified");

    let h = mac_propfind("0", MAC_STATFS);
    let a = c.expect(207, "PROPFIND", "/", &heads(&h), MAC_STATFS.as_bytes());
    let all = multistatus(&a);
    // RFC 4331's two are answered (the file system's bytes, Finder's
    // "available"), the older `quota` and `quotaused` are not.
    for p in ["quota-available-bytes", "quota-used-bytes"] {
        let bytes = find(&all, "/").ok(DAV, p);
        assert!(bytes.parse::<u64>().is_ok(), "{p}: {bytes}");
    }
    for p in ["quota", "quotaused"] {
        find(&all, "/").missing(DAV, p);
    }

    let h = mac_propfind("1", MAC_READDIR);
    let a = c.expect(207, "PROPFIND", "/", &heads(&h), MAC_READDIR.as_bytes());
    let all = multistatus(&a);
    assert_eq!(hrefs(&all), ["/", "/Stuff", "/photo.jpg"], "{all:#?}");
    let photo = find(&all, "/photo.jpg");
    assert_eq!(photo.ok(DAV, "getcontentlength"), "4");
    photo.ok(DAV, "getlastmodified");
    assert!(!photo.is_collection());
    photo.missing(APPLE, "appledoubleheader");
    assert!(find(&all, "/Stuff/").is_collection());

    let h = mac_propfind("0", MAC_STAT);
    for probe in [
        "/._.",
        "/.DS_Store",
        "/.Spotlight-V100",
        "/._photo.jpg",
        "/Stuff/._.",
        "/.secret",
    ] {
        c.expect(404, "PROPFIND", probe, &heads(&h), MAC_STAT.as_bytes());
    }
    let a = c.expect(
        200,
        "GET",
        "/photo.jpg",
        &[("Accept", "*/*"), ("Authorization", BASIC)],
        b"",
    );
    assert_eq!(a.body, [0xff, 0xd8, 0xff, 0xe0]);
}

/// Finder's write of `doc.txt` as F1 and F4 give it, on a class-2
/// drive (which it mounts read-write, F1): PROPFIND (404), PUT with no
/// body (201, `network_create`), PROPFIND `._doc.txt` (404), F1's LOCK
/// byte for byte (200 with `Lock-Token`: the name exists), the pulse
/// thread's refresh (a LOCK with no body and `If: (<token>)`: 200, no
/// `Lock-Token`, the timeout anew), a PUT without the token (423), the
/// content's PUT chunked with `X-Expected-Entity-Length` and `If:
/// (<token>)` (F3), the AppleDouble file's PUT chunked (`Chunked`, as
/// older Finders spell it) as the `apple-double` key says, `.DS_Store`'s,
/// UNLOCK on close (204, no lock left), a rename by MOVE (F1: `Accept`
/// and an absolute `Destination`: the bytes under the new name, the old
/// one gone), DELETE. Returns the drive and what the two Finder files'
/// PUTs and a `._` folder's MKCOL were answered.
fn finder_writes(apple: &str) -> (Drive, Answer, Answer, Answer) {
    let drive = Drive::new(apple);
    let mut c = drive.client(MAC_UA);
    let content: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
    let expected = content.len().to_string();
    let accept = [("Accept", "*/*"), ("Authorization", BASIC)];
    let stat = mac_propfind("0", MAC_STAT);

    let a = c.send("OPTIONS", "/", &accept, b"");
    assert_options(&a, 2, &ROOT_ALLOWS);
    c.expect(
        404,
        "PROPFIND",
        "/doc.txt",
        &heads(&stat),
        MAC_STAT.as_bytes(),
    );
    c.expect(
        201,
        "PUT",
        "/doc.txt",
        &[
            ("Accept", "*/*"),
            ("Content-Length", "0"),
            ("Authorization", BASIC),
        ],
        b"",
    );
    c.expect(
        404,
        "PROPFIND",
        "/._doc.txt",
        &heads(&stat),
        MAC_STAT.as_bytes(),
    );

    // F1's `network_lock`: 200 (the name exists), the token, the owner
    // href kept, depth 0, a timeout of at most what was asked.
    let a = mac_lock(&mut c, "/doc.txt");
    let (token, lock) = assert_lock_granted(&a, 200, "Finder's LOCK");
    assert_eq!(lock.scope, "exclusive", "{lock:?}");
    assert_eq!(lock.depth, "0", "{lock:?}");
    assert_eq!(
        lock.owner_href, "http://www.apple.com/webdav_fs/",
        "{lock:?}"
    );
    assert_eq!(path_of(&lock.root), "/doc.txt", "{lock:?}");
    assert!((1..=600).contains(&seconds(&lock.timeout)), "{lock:?}");
    let submit = format!("(<{token}>)");

    // The pulse thread's refresh (every 300 s for an open file): no
    // body, `If: (<token>)`, the same Timeout. 200, no new token, the
    // lock with its timeout in the body.
    let a = c.send(
        "LOCK",
        "/doc.txt",
        &[
            ("If", &submit),
            ("Timeout", "Second-600"),
            ("Content-Type", "text/xml"),
            ("Authorization", BASIC),
        ],
        b"",
    );
    assert_eq!(a.status, 200, "refresh: {:?}\n{}", a.headers, a.text());
    assert_eq!(a.header("lock-token"), None, "{:?}", a.headers);
    let locks = activelocks(&a);
    let again = locks
        .iter()
        .find(|l| l.token == token)
        .unwrap_or_else(|| panic!("refresh: no activelock with the token\n{}", a.text()));
    assert!((1..=600).contains(&seconds(&again.timeout)), "{again:?}");

    // Another writer of the same account without the token: 423.
    let a = c.send(
        "PUT",
        "/doc.txt",
        &[
            ("Accept", "*/*"),
            ("Content-Length", "5"),
            ("Authorization", BASIC),
        ],
        b"other",
    );
    assert_locked(&a, "/doc.txt", "PUT without the token");
    assert_eq!(std::fs::read(drive.root.join("doc.txt")).unwrap(), b"");

    // F3: the content, chunked, no Content-Length, F3's `If:`.
    let a = c.expect(
        204,
        "PUT",
        "/doc.txt",
        &[
            ("Transfer-Encoding", "chunked"),
            ("Accept", "*/*"),
            ("If", &submit),
            ("Authorization", BASIC),
            ("X-Expected-Entity-Length", &expected),
        ],
        &chunked(&content, 8192),
    );
    assert!(a.header("etag").is_some(), "{:?}", a.headers);
    assert_eq!(std::fs::read(drive.root.join("doc.txt")).unwrap(), content);

    // The AppleDouble file (an 82-byte header, as webdav-handler-rs's
    // notes give its size) and .DS_Store, chunked.
    let double = [0u8; 82];
    let put_double = c.send(
        "PUT",
        "/._doc.txt",
        &[
            ("Transfer-Encoding", "Chunked"),
            ("Accept", "*/*"),
            ("Authorization", BASIC),
            ("X-Expected-Entity-Length", "82"),
        ],
        &chunked(&double, 4096),
    );
    let put_store = c.send(
        "PUT",
        "/.DS_Store",
        &[
            ("Transfer-Encoding", "chunked"),
            ("Accept", "*/*"),
            ("Authorization", BASIC),
            ("X-Expected-Entity-Length", "6148"),
        ],
        &chunked(&[0u8; 6148], 4096),
    );
    // Either answer leaves the connection usable: the next request on it
    // is answered (the chunked body was read or thrown away whole).
    c.expect(
        404,
        "PROPFIND",
        "/._doc.txt",
        &heads(&stat),
        MAC_STAT.as_bytes(),
    );
    let mkcol_double = c.send("MKCOL", "/._folder", &accept, b"");

    // Closing the file: F1's UNLOCK, and no lock is left.
    let coded = format!("<{token}>");
    c.expect(
        204,
        "UNLOCK",
        "/doc.txt",
        &[("Lock-Token", &coded), ("Authorization", BASIC)],
        b"",
    );
    let discover = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:propfind xmlns:D=\"DAV:\">\n\
<D:prop>\n<D:lockdiscovery/>\n</D:prop>\n</D:propfind>\n";
    let h = mac_propfind("0", discover);
    let a = c.expect(207, "PROPFIND", "/doc.txt", &heads(&h), discover.as_bytes());
    multistatus(&a)[0].ok(DAV, "lockdiscovery");
    assert!(activelocks(&a).is_empty(), "{}", a.text());

    // F1's `network_rename`: Accept and an absolute Destination.
    let dest = format!("https://{}/renamed.txt", drive.authority());
    c.expect(
        201,
        "MOVE",
        "/doc.txt",
        &[
            ("Accept", "*/*"),
            ("Destination", &dest),
            ("Authorization", BASIC),
        ],
        b"",
    );
    let h = mac_propfind("1", MAC_READDIR);
    let a = c.expect(207, "PROPFIND", "/", &heads(&h), MAC_READDIR.as_bytes());
    assert_eq!(hrefs(&multistatus(&a)), ["/", "/renamed.txt"]);
    assert_eq!(on_disk(&drive.root), ["renamed.txt"]);
    assert_eq!(
        std::fs::read(drive.root.join("renamed.txt")).unwrap(),
        content
    );
    let a = c.expect(200, "GET", "/renamed.txt", &accept, b"");
    assert_eq!(a.body, content);
    c.expect(
        404,
        "PROPFIND",
        "/doc.txt",
        &heads(&stat),
        MAC_STAT.as_bytes(),
    );
    c.expect(204, "DELETE", "/renamed.txt", &accept, b"");
    drop(c);
    // Nothing of Finder's was written, whatever the key.
    let left = on_disk(&drive.root);
    assert!(left.is_empty(), "on disk: {left:?}");
    (drive, put_double, put_store, mkcol_double)
}

/// `apple-double = "discard"`: each of Finder's files is answered 201
/// and nothing is written (spec/site.md, "WebDAV class 1").
#[test]
fn finder_writes_with_apple_double_discarded() {
    let (_drive, double, store, mkcol) = finder_writes("apple-double = \"discard\"");
    assert_eq!(
        double.status,
        201,
        "PUT ._doc.txt: {:?}\n{}",
        double.headers,
        double.text()
    );
    assert_eq!(
        store.status,
        201,
        "PUT .DS_Store: {:?}\n{}",
        store.headers,
        store.text()
    );
    assert_eq!(
        mkcol.status,
        201,
        "MKCOL ._folder: {:?}\n{}",
        mkcol.headers,
        mkcol.text()
    );
}

/// The default, `apple-double = "refuse"`: Finder's files are refused as
/// any dot-name is, and without `--hidden` that is 404 (spec/site.md, "The
/// order of checks", step 1: a hidden name is 404; 403 only with
/// `--hidden`, step 3), nothing written.
#[test]
fn finder_writes_with_apple_double_refused() {
    let (_drive, double, store, mkcol) = finder_writes("");
    assert_eq!(
        double.status,
        404,
        "PUT ._doc.txt: {:?}\n{}",
        double.headers,
        double.text()
    );
    assert_eq!(
        store.status,
        404,
        "PUT .DS_Store: {:?}\n{}",
        store.headers,
        store.text()
    );
    assert_eq!(
        mkcol.status,
        404,
        "MKCOL ._folder: {:?}\n{}",
        mkcol.headers,
        mkcol.text()
    );
}

/// A drive without `[webdav-locks]`: OPTIONS says `DAV` 1 and not 2, so
/// WebDAVFS mounts it read-only (F1's `network_mount`), and its LOCK is
/// 405 with an `Allow` that offers neither LOCK nor UNLOCK.
#[test]
fn finder_mounts_a_class_1_drive_read_only() {
    let drive = Drive::class1("");
    std::fs::write(drive.root.join("doc.txt"), b"x").unwrap();
    let mut c = drive.client(MAC_UA);
    let a = c.send(
        "OPTIONS",
        "/",
        &[("Accept", "*/*"), ("Authorization", BASIC)],
        b"",
    );
    assert_options(&a, 1, &ROOT_ALLOWS);
    let a = mac_lock(&mut c, "/doc.txt");
    assert_lock_refused(&a, "Finder's LOCK on a class-1 drive");
    assert_eq!(std::fs::read(drive.root.join("doc.txt")).unwrap(), b"x");
}
