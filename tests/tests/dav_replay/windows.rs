//! Windows' mini-redirector (sources W1 to W6 in `dav_replay.rs`).

use super::wire::*;
use super::xml::{activelocks, find, hrefs, multistatus};

/// W1's PROPPATCH body, byte for byte (its indentation included).
const WIN32_PROPPATCH: &str = "<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n\
<D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:schemas-microsoft-com:\">\n  <D:set>\n    <D:prop>\n      \
<Z:Win32CreationTime>Sat, 16 Feb 2019 18:24:58 GMT</Z:Win32CreationTime>\n      \
<Z:Win32LastAccessTime>Sat, 16 Feb 2019 18:24:58 GMT</Z:Win32LastAccessTime>\n      \
<Z:Win32LastModifiedTime>Sat, 16 Feb 2019 18:24:58 GMT</Z:Win32LastModifiedTime>\n      \
<Z:Win32FileAttributes>00000020</Z:Win32FileAttributes>\n    </D:prop>\n  </D:set>\n</D:propertyupdate>";

/// W3's PROPPATCH of Windows Explorer (sent on one line), `00000000`
/// attributes — a folder's in its source is `00000010`, a file's here.
const EXPLORER_PROPPATCH: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\
<D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:schemas-microsoft-com:\"><D:set><D:prop>\
<Z:Win32CreationTime>Thu, 09 Oct 2025 17:54:43 GMT</Z:Win32CreationTime>\
<Z:Win32LastAccessTime>Thu, 09 Oct 2025 17:55:31 GMT</Z:Win32LastAccessTime>\
<Z:Win32LastModifiedTime>Thu, 09 Oct 2025 17:54:43 GMT</Z:Win32LastModifiedTime>\
<Z:Win32FileAttributes>00000000</Z:Win32FileAttributes>\
</D:prop></D:set></D:propertyupdate>";

/// W1's LOCK body, byte for byte (the owner is the Windows account).
const WIN_LOCKINFO: &str = "<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n<D:lockinfo xmlns:D=\"DAV:\">\n  \
<D:lockscope>\n    <D:exclusive/>\n  </D:lockscope>\n  <D:locktype>\n    <D:write/>\n  </D:locktype>\n  \
<D:owner>\n    <D:href>HOST\\user</D:href>\n  </D:owner>\n</D:lockinfo>\n";

const WIN32_PROPS: [&str; 4] = [
    "Win32CreationTime",
    "Win32LastAccessTime",
    "Win32LastModifiedTime",
    "Win32FileAttributes",
];

/// The headers W1 shows on every request but LOCK, PROPPATCH and UNLOCK,
/// with the credentials the redirector adds after the 401.
fn win<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![("Connection", "Keep-Alive")];
    h.extend_from_slice(extra);
    h.push(("translate", "f"));
    h.push(("Authorization", BASIC));
    h
}

/// W1's LOCK, PROPPATCH and UNLOCK heads (`Cache-Control`, `Pragma`,
/// the XML type); the `If:` W1's PROPPATCH carries is the caller's.
fn win_locked<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![
        ("Cache-Control", "no-cache"),
        ("Connection", "Keep-Alive"),
        ("Pragma", "no-cache"),
    ];
    h.extend_from_slice(extra);
    h.push(("translate", "f"));
    h.push(("Authorization", BASIC));
    h
}

/// Mapping a drive and opening a folder (W1, W2, W5): OPTIONS /, first
/// without credentials (W1 and W2 show none), PROPFIND Depth 0 of the
/// root with an empty body, PROPFIND of names Explorer probes that do not
/// exist (W1's `AutoRun.inf`, 404 and nothing else), PROPFIND Depth 1 of
/// a folder, GET of a file, PROPFIND Depth 0 of the file. Every 207 is
/// parsed; the allprop answers carry the live properties.
#[test]
fn windows_maps_the_drive_and_lists_a_folder() {
    let drive = Drive::new("");
    std::fs::create_dir(drive.root.join("docs")).unwrap();
    std::fs::write(drive.root.join("docs/report.txt"), b"four score").unwrap();
    std::fs::write(drive.root.join("readme.txt"), b"hello").unwrap();
    let mut c = drive.client(WIN_UA);

    // W2: exactly these headers, no credentials. The served directory
    // itself is under no `[[auth]]` rule (`**` matches every name in it,
    // not it), so OPTIONS is answered as is: it tells nothing a listing
    // would (spec/site.md, "WebDAV class 1", "OPTIONS, PROPFIND: the read
    // rules").
    let a = c.send(
        "OPTIONS",
        "/",
        &[("Connection", "Keep-Alive"), ("translate", "f")],
        b"",
    );
    assert_options(&a, 2, &ROOT_ALLOWS);

    // W1: PROPFIND / Depth 0, Content-Length: 0 (allprop), first without
    // credentials: 401 with a Basic challenge (the members are behind
    // the password), the connection kept; then with them.
    let a = c.send(
        "PROPFIND",
        "/",
        &[
            ("Connection", "Keep-Alive"),
            ("Depth", "0"),
            ("translate", "f"),
            ("Content-Length", "0"),
        ],
        b"",
    );
    assert_eq!(a.status, 401, "{:?}", a.headers);
    let challenge = a.header("www-authenticate").unwrap_or("");
    assert!(challenge.starts_with("Basic "), "{challenge:?}");
    let a = c.send("OPTIONS", "/", &win(&[]), b"");
    assert_options(&a, 2, &ROOT_ALLOWS);
    let a = c.expect(
        207,
        "PROPFIND",
        "/",
        &win(&[("Depth", "0"), ("Content-Length", "0")]),
        b"",
    );
    let all = multistatus(&a);
    assert_eq!(all.len(), 1, "{all:#?}");
    let root = find(&all, "/");
    assert!(root.is_collection(), "{root:#?}");
    root.ok(DAV, "getlastmodified");
    // W1's server answers both in allprop; class 2 has them (RFC 4918
    // §15.8, §15.10), nothing locked.
    root.ok(DAV, "supportedlock");
    root.ok(DAV, "lockdiscovery");
    assert!(activelocks(&a).is_empty(), "{}", a.text());

    // W1: PROPFIND of a name that is not there.
    c.expect(
        404,
        "PROPFIND",
        "/AutoRun.inf",
        &win(&[("Depth", "0"), ("Content-Length", "0")]),
        b"",
    );
    c.expect(
        404,
        "PROPFIND",
        "/desktop.ini",
        &win(&[("Depth", "0"), ("Content-Length", "0")]),
        b"",
    );

    // The folder's OPTIONS (with credentials): what a writer may do there.
    let a = c.send("OPTIONS", "/docs", &win(&[]), b"");
    assert_options(&a, 2, &NAME_ALLOWS_LOCKS);

    // W1: the folder, Depth 1 (the redirector asks without the slash).
    let a = c.expect(
        207,
        "PROPFIND",
        "/docs",
        &win(&[("Depth", "1"), ("Content-Length", "0")]),
        b"",
    );
    let all = multistatus(&a);
    assert_eq!(hrefs(&all), ["/docs", "/docs/report.txt"], "{all:#?}");
    let file = find(&all, "/docs/report.txt");
    assert!(!file.is_collection());
    assert_eq!(file.ok(DAV, "getcontentlength"), "10");
    let etag = file.ok(DAV, "getetag").to_owned();
    file.ok(DAV, "getlastmodified");
    file.ok(DAV, "getcontenttype");

    // Opening it: GET, its ETag the one PROPFIND gave.
    let a = c.expect(200, "GET", "/docs/report.txt", &win(&[]), b"");
    assert_eq!(a.body, b"four score");
    assert_eq!(a.header("etag"), Some(etag.as_str()));

    // The root at Depth 1: the folder and the file, nothing else.
    let a = c.expect(
        207,
        "PROPFIND",
        "/",
        &win(&[("Depth", "1"), ("Content-Length", "0")]),
        b"",
    );
    let all = multistatus(&a);
    assert_eq!(hrefs(&all), ["/", "/docs", "/readme.txt"], "{all:#?}");
    assert!(find(&all, "/docs/").is_collection());
}

/// Copying a file in, renaming it, making a folder and deleting (W1, W3,
/// W4): PROPFIND of the new name (404), PUT of 0 bytes (201; the length is
/// not in W4's log, see the sources), W1's LOCK byte for byte (no
/// `Depth`: infinity, which on a file is the file; 200 with `Lock-Token`),
/// HEAD, a PUT of the content without the token (423, nothing written),
/// the PUT of the content with `If: (<token>)` (204), W1's PROPPATCH of
/// the four Win32 properties with W1's `If:` (207, each 200), W1's UNLOCK
/// (204), PROPFIND (no lock left; the Win32 values back, in allprop),
/// MOVE to a new name with `Overwrite: F` (201: the bytes under the new
/// name, the old one gone), MKCOL and the folder's PROPPATCH, DELETE of
/// the file and of the folder.
///
/// How the content's PUT carries the token is not shown byte for byte by
/// any source found: W1 shows `If: (<urn:uuid:…>)` (a No-tag-list) on the
/// PROPPATCH that follows it; cs3org/reva#4928 and #4972 say Windows'
/// client submits its lock in `If` (the server's move to a `Lock-Token`
/// check broke it); wsgidav#332 logs Windows 10.0.19045's request after
/// its LOCK with `If` parsed as one untagged list of the token. So the
/// PUT here sends W1's `If:` form. [MS-WDV] §2.2.4.2's `Lock-Token` on PUT
/// is `windows_put_with_only_lock_token`.
#[test]
fn windows_copies_a_file_in_renames_it_and_deletes_it() {
    let drive = Drive::new("");
    let mut c = drive.client(WIN_UA);
    let body: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let len = body.len().to_string();
    let zero = [("Depth", "0"), ("Content-Length", "0")];
    let name = "/Novo%20Documento%20de%20Texto.txt";

    c.expect(404, "PROPFIND", name, &win(&zero), b"");
    let a = c.expect(201, "PUT", name, &win(&[("Content-Length", "0")]), b"");
    assert!(a.header("etag").is_some(), "{:?}", a.headers);
    assert_eq!(
        std::fs::read(drive.root.join("Novo Documento de Texto.txt")).unwrap(),
        b""
    );

    // W1's LOCK, exactly (less Authorization's place): the name exists
    // (the 0-byte PUT made it), so 200 (RFC 4918 §9.10.6).
    let a = win_lock(&mut c, name);
    let (token, lock) = assert_lock_granted(&a, 200, "W1's LOCK");
    assert_eq!(lock.scope, "exclusive", "{lock:?}");
    assert_eq!(lock.owner_href, "HOST\\user", "{lock:?}");
    assert_eq!(super::xml::path_of(&lock.root), name, "{lock:?}");
    assert!(
        (1..=3600).contains(&seconds(&lock.timeout)),
        "Timeout: Second-3600 asked, {lock:?}"
    );
    let submit = format!("(<{token}>)");

    let a = c.expect(200, "HEAD", name, &win(&[]), b"");
    assert_eq!(a.header("content-length"), Some("0"));

    // The same user, without the token: 423, nothing written.
    let a = c.send("PUT", name, &win(&[("Content-Length", &len)]), &body);
    assert_locked(&a, name, "PUT without the lock's token");
    assert_eq!(
        std::fs::read(drive.root.join("Novo Documento de Texto.txt")).unwrap(),
        b""
    );

    // The content, the token in W1's `If:` form: a replace.
    let a = c.expect(
        204,
        "PUT",
        name,
        &win(&[("If", &submit), ("Content-Length", &len)]),
        &body,
    );
    assert!(a.header("etag").is_some(), "{:?}", a.headers);
    assert_eq!(
        std::fs::read(drive.root.join("Novo Documento de Texto.txt")).unwrap(),
        body
    );

    // W1's PROPPATCH, exactly, with its `If:`.
    let pp_len = WIN32_PROPPATCH.len().to_string();
    let a = c.expect(
        207,
        "PROPPATCH",
        name,
        &win_locked(&[
            ("Content-Type", "text/xml; charset=\"utf-8\""),
            ("If", &submit),
            ("Content-Length", &pp_len),
        ]),
        WIN32_PROPPATCH.as_bytes(),
    );
    let all = multistatus(&a);
    assert_eq!(all.len(), 1, "{all:#?}");
    for p in WIN32_PROPS {
        all[0].ok(MS, p);
    }

    // W1's UNLOCK: 204, and no lock is left on the name.
    let unlock = format!("<{token}>");
    c.expect(
        204,
        "UNLOCK",
        name,
        &win_locked(&[("Lock-Token", &unlock)]),
        b"",
    );
    assert_no_lock(&mut c, name);

    // The file as the redirector reads it back: allprop (W1's server
    // answers the Win32 properties in it; dead properties are in allprop,
    // RFC 4918 §9.1), the length and the values set.
    let a = c.expect(207, "PROPFIND", name, &win(&zero), b"");
    let all = multistatus(&a);
    let file = &all[0];
    assert_eq!(file.ok(DAV, "getcontentlength"), len);
    assert_eq!(
        file.ok(MS, "Win32CreationTime"),
        "Sat, 16 Feb 2019 18:24:58 GMT"
    );
    assert_eq!(
        file.ok(MS, "Win32LastModifiedTime"),
        "Sat, 16 Feb 2019 18:24:58 GMT"
    );
    assert_eq!(file.ok(MS, "Win32FileAttributes"), "00000020");

    // W3: Explorer's own PROPPATCH (one line) replaces them.
    let pp_len = EXPLORER_PROPPATCH.len().to_string();
    let a = c.expect(
        207,
        "PROPPATCH",
        "/Novo%20Documento%20de%20Texto.txt",
        &[
            ("Content-Type", "text/xml; charset=\"utf-8\""),
            ("Content-Length", &pp_len),
            ("Authorization", BASIC),
        ],
        EXPLORER_PROPPATCH.as_bytes(),
    );
    let all = multistatus(&a);
    for p in WIN32_PROPS {
        all[0].ok(MS, p);
    }

    // W1's MOVE: an absolute Destination, Overwrite F.
    let dest = format!("https://{}/test.txt", drive.authority());
    c.expect(
        201,
        "MOVE",
        name,
        &win(&[
            ("Destination", &dest),
            ("Overwrite", "F"),
            ("Content-Length", "0"),
        ]),
        b"",
    );
    assert_eq!(on_disk(&drive.root), ["test.txt"]);
    assert_eq!(std::fs::read(drive.root.join("test.txt")).unwrap(), body);
    c.expect(404, "PROPFIND", name, &win(&zero), b"");
    let a = c.expect(200, "GET", "/test.txt", &win(&[]), b"");
    assert_eq!(a.body, body);
    assert_no_lock(&mut c, "/test.txt");
    // The properties went with it (spec/site.md: MOVE keeps them).
    let a = c.expect(207, "PROPFIND", "/test.txt", &win(&zero), b"");
    assert_eq!(
        multistatus(&a)[0].ok(MS, "Win32LastAccessTime"),
        "Thu, 09 Oct 2025 17:55:31 GMT"
    );
    // Once more onto a name that exists, Overwrite F: 412, nothing moved.
    std::fs::write(drive.root.join("other.txt"), b"keep").unwrap();
    let dest2 = format!("https://{}/other.txt", drive.authority());
    c.expect(
        412,
        "MOVE",
        "/test.txt",
        &win(&[
            ("Destination", &dest2),
            ("Overwrite", "F"),
            ("Content-Length", "0"),
        ]),
        b"",
    );
    assert_eq!(
        std::fs::read(drive.root.join("other.txt")).unwrap(),
        b"keep"
    );

    // W1's MKCOL, then W4's PROPPATCH of the new folder.
    c.expect(
        201,
        "MKCOL",
        "/Nova%20pasta",
        &win(&[("Content-Length", "0")]),
        b"",
    );
    assert!(drive.root.join("Nova pasta").is_dir());
    let folder = EXPLORER_PROPPATCH.replace("00000000", "00000010");
    let folder_len = folder.len().to_string();
    let a = c.expect(
        207,
        "PROPPATCH",
        "/Nova%20pasta",
        &win_locked(&[
            ("Content-Type", "text/xml; charset=\"utf-8\""),
            ("Content-Length", &folder_len),
        ]),
        folder.as_bytes(),
    );
    multistatus(&a)[0].ok(MS, "Win32FileAttributes");

    // W1's DELETE (no Content-Length: no body), of the file and the folder.
    c.expect(204, "DELETE", "/test.txt", &win(&[]), b"");
    c.expect(204, "DELETE", "/Nova%20pasta", &win(&[]), b"");
    assert_eq!(on_disk(&drive.root), ["other.txt"]);
    c.expect(404, "PROPFIND", "/test.txt", &win(&zero), b"");
}

/// W1's LOCK, byte for byte (less Authorization's place).
fn win_lock(c: &mut Dav<'_>, name: &str) -> Answer {
    let lock_len = WIN_LOCKINFO.len().to_string();
    c.send(
        "LOCK",
        name,
        &win_locked(&[
            ("Content-Type", "text/xml; charset=\"utf-8\""),
            ("Timeout", "Second-3600"),
            ("Content-Length", &lock_len),
        ]),
        WIN_LOCKINFO.as_bytes(),
    )
}

/// PROPFIND Depth 0 of `lockdiscovery`: answered, and no activelock.
fn assert_no_lock(c: &mut Dav<'_>, name: &str) {
    let body = "<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n\
<D:propfind xmlns:D=\"DAV:\"><D:prop><D:lockdiscovery/></D:prop></D:propfind>";
    let blen = body.len().to_string();
    let a = c.expect(
        207,
        "PROPFIND",
        name,
        &win(&[
            ("Depth", "0"),
            ("Content-Type", "text/xml; charset=\"utf-8\""),
            ("Content-Length", &blen),
        ]),
        body.as_bytes(),
    );
    multistatus(&a)[0].ok(DAV, "lockdiscovery");
    let left = activelocks(&a);
    assert!(left.is_empty(), "{name}: locks left {left:?}");
}

/// [MS-WDV] §2.2.4.2: "The Lock-Token header SHOULD be included in a PUT
/// request that acts on a locked resource"
/// (https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-wdv/cacea365-41fe-4bfd-84fc-35f2417349b9),
/// and Word 2016 was seen sending its token that way on PUT, with no
/// `If:` (https://github.com/sabre-io/dav/issues/980, sabre/dav's 423 the
/// user's complaint). Whether the mini-redirector itself ever sends a
/// PUT so is not shown by any source found (W1's PUT has neither header).
/// Such a client needs the PUT of its own locked file to pass.
#[test]
fn windows_put_with_only_lock_token() {
    let drive = Drive::new("");
    let mut c = drive.client(WIN_UA);
    let name = "/report.docx";
    c.expect(201, "PUT", name, &win(&[("Content-Length", "0")]), b"");
    let a = win_lock(&mut c, name);
    let (token, _) = assert_lock_granted(&a, 200, "W1's LOCK");
    let coded = format!("<{token}>");
    c.expect(
        204,
        "PUT",
        name,
        &win(&[("Lock-Token", &coded), ("Content-Length", "5")]),
        b"hello",
    );
    assert_eq!(
        std::fs::read(drive.root.join("report.docx")).unwrap(),
        b"hello"
    );
}

/// A drive without `[webdav-locks]` is class 1 still: OPTIONS says `DAV`
/// 1 and not 2, no `Allow` offers LOCK or UNLOCK, and W1's LOCK and
/// UNLOCK are 405 with an `Allow` (W6: the real redirector then mounts
/// read-only or does not write); a PUT carrying W1's `If:` is not held to
/// it (a class-1 server reads no `If:`, spec/site.md).
#[test]
fn windows_on_a_class_1_drive_gets_405_for_lock() {
    let drive = Drive::class1("");
    let mut c = drive.client(WIN_UA);
    let a = c.send("OPTIONS", "/", &win(&[]), b"");
    assert_options(&a, 1, &ROOT_ALLOWS);
    let name = "/Novo%20Documento%20de%20Texto.txt";
    c.expect(201, "PUT", name, &win(&[("Content-Length", "0")]), b"");
    let a = c.send("OPTIONS", name, &win(&[]), b"");
    assert_options(&a, 1, &NAME_ALLOWS);

    let a = win_lock(&mut c, name);
    assert_lock_refused(&a, "W1's LOCK on a class-1 drive");
    let a = c.send(
        "UNLOCK",
        name,
        &win_locked(&[(
            "Lock-Token",
            "<urn:uuid:083b2983-d67d-17c4-003a-0000da197fec>",
        )]),
        b"",
    );
    assert_lock_refused(&a, "W1's UNLOCK on a class-1 drive");
    c.expect(
        204,
        "PUT",
        name,
        &win(&[
            ("If", "(<urn:uuid:083b2983-d67d-17c4-003a-0000da197fec>)"),
            ("Content-Length", "3"),
        ]),
        b"abc",
    );
    assert_eq!(
        std::fs::read(drive.root.join("Novo Documento de Texto.txt")).unwrap(),
        b"abc"
    );
}
