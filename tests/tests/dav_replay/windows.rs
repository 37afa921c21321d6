//! Windows' mini-redirector (sources W1 to W6 in `dav_replay.rs`).

use super::wire::*;
use super::xml::{find, hrefs, multistatus};

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
/// the XML type), less the `If:` a granted lock would add.
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
    assert_options(&a, &ROOT_ALLOWS);

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
    assert_options(&a, &ROOT_ALLOWS);
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
    assert_options(&a, &NAME_ALLOWS);

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
/// not in W4's log, see the sources), LOCK (405 with Allow: class 1 — W6:
/// the real redirector then does not write, or mounts read-only; the
/// rest is replayed to pin each other step for #50), HEAD, PUT of the
/// content (204), PROPPATCH of the four Win32 properties (207, each 200),
/// UNLOCK (405), PROPFIND (the Win32 values back, in allprop), MOVE to a
/// new name with `Overwrite: F` (201), MKCOL and the folder's PROPPATCH,
/// DELETE of the file and of the folder.
#[test]
fn windows_copies_a_file_in_renames_it_and_deletes_it() {
    let drive = Drive::new("");
    let mut c = drive.client(WIN_UA);
    let body: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let len = body.len().to_string();
    let zero = [("Depth", "0"), ("Content-Length", "0")];

    c.expect(
        404,
        "PROPFIND",
        "/Novo%20Documento%20de%20Texto.txt",
        &win(&zero),
        b"",
    );
    let a = c.expect(
        201,
        "PUT",
        "/Novo%20Documento%20de%20Texto.txt",
        &win(&[("Content-Length", "0")]),
        b"",
    );
    assert!(a.header("etag").is_some(), "{:?}", a.headers);
    assert_eq!(
        std::fs::read(drive.root.join("Novo Documento de Texto.txt")).unwrap(),
        b""
    );

    // W1's LOCK, exactly (less Authorization's place): 405, Allow.
    let lock_len = WIN_LOCKINFO.len().to_string();
    let a = c.send(
        "LOCK",
        "/Novo%20Documento%20de%20Texto.txt",
        &win_locked(&[
            ("Content-Type", "text/xml; charset=\"utf-8\""),
            ("Timeout", "Second-3600"),
            ("Content-Length", &lock_len),
        ]),
        WIN_LOCKINFO.as_bytes(),
    );
    assert_lock_refused(&a, "LOCK of the new file");

    let a = c.expect(
        200,
        "HEAD",
        "/Novo%20Documento%20de%20Texto.txt",
        &win(&[]),
        b"",
    );
    assert_eq!(a.header("content-length"), Some("0"));

    // W1's PUT with the content: a replace.
    let a = c.expect(
        204,
        "PUT",
        "/Novo%20Documento%20de%20Texto.txt",
        &win(&[("Content-Length", &len)]),
        &body,
    );
    assert!(a.header("etag").is_some(), "{:?}", a.headers);
    assert_eq!(
        std::fs::read(drive.root.join("Novo Documento de Texto.txt")).unwrap(),
        body
    );

    // W1's PROPPATCH, exactly, less its `If:` (no lock was granted).
    let pp_len = WIN32_PROPPATCH.len().to_string();
    let a = c.expect(
        207,
        "PROPPATCH",
        "/Novo%20Documento%20de%20Texto.txt",
        &win_locked(&[
            ("Content-Type", "text/xml; charset=\"utf-8\""),
            ("Content-Length", &pp_len),
        ]),
        WIN32_PROPPATCH.as_bytes(),
    );
    let all = multistatus(&a);
    assert_eq!(all.len(), 1, "{all:#?}");
    for p in WIN32_PROPS {
        all[0].ok(MS, p);
    }

    let a = c.send(
        "UNLOCK",
        "/Novo%20Documento%20de%20Texto.txt",
        &win_locked(&[(
            "Lock-Token",
            "<urn:uuid:083b2983-d67d-17c4-003a-0000da197fec>",
        )]),
        b"",
    );
    assert_lock_refused(&a, "UNLOCK of the new file");

    // The file as the redirector reads it back: allprop (W1's server
    // answers the Win32 properties in it; dead properties are in allprop,
    // RFC 4918 §9.1), the length and the values set.
    let a = c.expect(
        207,
        "PROPFIND",
        "/Novo%20Documento%20de%20Texto.txt",
        &win(&zero),
        b"",
    );
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
        "/Novo%20Documento%20de%20Texto.txt",
        &win(&[
            ("Destination", &dest),
            ("Overwrite", "F"),
            ("Content-Length", "0"),
        ]),
        b"",
    );
    assert_eq!(on_disk(&drive.root), ["test.txt"]);
    assert_eq!(std::fs::read(drive.root.join("test.txt")).unwrap(), body);
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
