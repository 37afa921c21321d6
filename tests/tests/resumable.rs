//! Resumable uploads (`spec/site.md`, "Resumable uploads"): the tus
//! endpoint of `nikaia serve` over real sockets with a raw HTTP/1.1
//! client — whole uploads in chunks, identifiers that are not one's own or
//! not identifiers at all, checksums, offsets, the caps, expiry, a final
//! name the rules refuse after the bytes arrived, a PATCH that takes an
//! upload over from one whose client left, `OPTIONS` and CORS. Requests
//! racing one upload are `resumable_races.rs`; names and identifiers
//! refused from the head, `resumable_refusals.rs`.
//! The 256 MiB upload killed twenty ways is `nikaia_cli/tests/resumable.rs`.

use nikaia_tests::serve::serve_dir;
use nikaia_tests::tus::{b64, b64_bytes, pattern, Tus, RULES};
use nikaia_tests::uploads::{basic, Site, ALICE, BOB};
use nikaia_tests::{names, Client};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn sha1(bytes: &[u8]) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, bytes);
    format!("Upload-Checksum: sha1 {}", b64_bytes(d.as_ref()))
}

/// Every name under `dir`, recursively, with its length.
fn tree(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for entry in walk(dir) {
        let len = std::fs::symlink_metadata(&entry).map_or(0, |m| m.len());
        out.push((entry.strip_prefix(dir).unwrap().display().to_string(), len));
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn an_upload_in_chunks_becomes_its_file_only_whole() {
    let t = Tus::new("");
    let body = pattern(3 << 20, 7);
    let at = t.created(ALICE, "in/deep/a.bin", body.len() as u64);
    let created = t.create(ALICE, "in/other.bin", 5);
    assert!(created.header("upload-expires").unwrap().ends_with(" GMT"));
    assert_eq!(t.offset(ALICE, &at), 0);
    // Nothing under the final name while bytes arrive.
    let first = t.patch(ALICE, &at, 0, &body[..1 << 20], &[]);
    assert_eq!(first.status, 204, "{first:?}");
    assert_eq!(first.header("upload-offset"), Some("1048576"));
    assert_eq!(first.header("tus-resumable"), Some("1.0.0"));
    assert!(!t.site.root.join("in/deep/a.bin").exists());
    let head = t.head(ALICE, &at);
    assert_eq!(head.header("upload-offset"), Some("1048576"));
    assert_eq!(head.header("upload-length"), Some("3145728"));
    assert_eq!(head.header("cache-control"), Some("no-store"));
    assert!(head
        .header("upload-metadata")
        .unwrap()
        .contains("filename "));
    // The rest, with a checksum.
    let rest = &body[1 << 20..];
    let last = t.patch(ALICE, &at, 1 << 20, rest, &[sha1(rest)]);
    assert_eq!(last.status, 204, "{last:?}");
    assert_eq!(last.header("upload-offset"), Some("3145728"));
    assert_eq!(
        std::fs::read(t.site.root.join("in/deep/a.bin")).unwrap(),
        body
    );
    // A client whose last answer was lost asks again: complete.
    assert_eq!(t.offset(ALICE, &at), 3 << 20);
    let again = t.patch(ALICE, &at, 3 << 20, b"", &[]);
    assert_eq!(again.status, 204);
    // Only the records stay in the partial directory: no bytes.
    let left = names(&t.partial());
    assert!(
        left.iter()
            .all(|n| !n.ends_with(".part") || !n.starts_with(&at[6..])),
        "{left:?}"
    );
    let r = t.report();
    assert_eq!((r.created, r.completed, r.bytes), (2, 1, 3 << 20));
    assert_eq!((r.pending, r.pending_bytes), (1, 5));
    let writes = t.running.report().writes;
    assert_eq!(writes.created, 1);
}

#[test]
fn another_users_identifier_is_404_and_no_credentials_401() {
    let t = Tus::new("");
    let at = t.created(ALICE, "in/mine.bin", 10);
    assert_eq!(t.patch(ALICE, &at, 0, b"12345", &[]).status, 204);
    assert_eq!(t.head(BOB, &at).status, 404);
    assert_eq!(t.patch(BOB, &at, 5, b"67890", &[]).status, 404);
    let auth = format!("Authorization: Basic {}", basic(BOB));
    assert_eq!(t.ask("DELETE", &at, &[auth], b"").status, 404);
    let none = t.ask("HEAD", &at, &[], b"");
    assert_eq!(none.status, 401);
    let wrong = format!("Authorization: Basic {}", basic("alice:wrong"));
    assert_eq!(t.ask("HEAD", &at, &[wrong], b"").status, 401);
    // Alice's upload is as she left it.
    assert_eq!(t.offset(ALICE, &at), 5);
    assert_eq!(t.patch(ALICE, &at, 5, b"67890", &[]).status, 204);
    assert_eq!(
        std::fs::read(t.site.root.join("in/mine.bin")).unwrap(),
        b"1234567890"
    );
}

#[test]
fn what_is_not_an_identifier_names_nothing() {
    let t = Tus::new("");
    let at = t.created(ALICE, "in/x.bin", 10);
    let id = &at[6..];
    let before = (tree(&t.site.root), tree(t.site.tmp.path()));
    let attempts = [
        "../../users.htpasswd".to_owned(),
        "..%2f..%2fusers.htpasswd".to_owned(),
        "%2e%2e/%2e%2e/users.htpasswd".to_owned(),
        id.to_uppercase(),
        id[..31].to_owned(),
        format!("{id}0"),
        format!("{id}/x"),
        format!("{id}.info"),
        format!("{id}.part"),
        format!("{id}%00"),
        format!("../partial/{id}.part"),
        "00000000000000000000000000000000".to_owned(),
    ];
    let auth = format!("Authorization: Basic {}", basic(ALICE));
    for tail in &attempts {
        let path = format!("/.tus/{tail}");
        for method in ["HEAD", "DELETE"] {
            let r = t.ask(method, &path, std::slice::from_ref(&auth), b"");
            assert!(matches!(r.status, 400 | 404), "{method} {path}: {r:?}");
        }
        let r = t.patch(ALICE, &path, 0, b"12345", &[]);
        assert!(matches!(r.status, 400 | 404), "PATCH {path}: {r:?}");
    }
    assert_eq!(before, (tree(&t.site.root), tree(t.site.tmp.path())));
    assert_eq!(t.offset(ALICE, &at), 0);
}

#[test]
fn a_chunk_whose_checksum_fails_is_discarded_and_the_offset_stays() {
    let t = Tus::new("");
    let at = t.created(ALICE, "in/sum.bin", 12);
    assert_eq!(
        t.patch(ALICE, &at, 0, b"abcd", &[sha1(b"abcd")]).status,
        204
    );
    let bad = t.patch(ALICE, &at, 4, b"efgh", &[sha1(b"EFGH")]);
    assert_eq!(bad.status, 460, "{bad:?}");
    assert_eq!(t.offset(ALICE, &at), 4);
    let part = t.partial().join(format!("{}.part", &at[6..]));
    assert_eq!(std::fs::read(&part).unwrap(), b"abcd");
    let md5 = "Upload-Checksum: md5 1B2M2Y8AsgTpgAmY7PhCfg==".to_owned();
    assert_eq!(t.patch(ALICE, &at, 4, b"efgh", &[md5]).status, 400);
    assert_eq!(
        t.patch(ALICE, &at, 4, b"efghijkl", &[sha1(b"efghijkl")])
            .status,
        204
    );
    assert_eq!(
        std::fs::read(t.site.root.join("in/sum.bin")).unwrap(),
        b"abcdefghijkl"
    );
    assert_eq!(t.report().checksum_mismatches, 1);
}

#[test]
fn offsets_types_versions_and_lengths_are_checked() {
    let t = Tus::new("");
    let at = t.created(ALICE, "in/o.bin", 8);
    let conflict = t.patch(ALICE, &at, 3, b"xyz", &[]);
    assert_eq!(conflict.status, 409);
    assert_eq!(conflict.header("upload-offset"), Some("0"));
    let auth = format!("Authorization: Basic {}", basic(ALICE));
    let typed = [
        auth.clone(),
        "Content-Type: application/octet-stream".into(),
        "Upload-Offset: 0".into(),
    ];
    assert_eq!(t.ask("PATCH", &at, &typed, b"abc").status, 415);
    let mut c = Client::connect(([127, 0, 0, 1], t.port()).into());
    c.send(format!("HEAD {at} HTTP/1.1\r\nHost: t\r\n{auth}\r\n\r\n"));
    let unversioned = c.read_reply(true).unwrap();
    assert_eq!(unversioned.status, 412);
    assert_eq!(unversioned.header("tus-version"), Some("1.0.0"));
    assert_eq!(t.patch(ALICE, &at, 0, b"123456789", &[]).status, 413);
    assert_eq!(t.offset(ALICE, &at), 0);
    assert_eq!(t.ask("GET", &at, &[auth], b"").status, 405);
    let big = t.create(ALICE, "in/big.bin", 9 << 20);
    assert_eq!(big.status, 413);
    assert_eq!(t.report().conflicts, 1);
}

#[test]
fn creation_checks_the_final_name_as_a_put_of_it() {
    let t = Tus::new("");
    std::os::unix::fs::symlink(t.site.tmp.path(), t.site.root.join("in/out")).unwrap();
    for (name, status) in [
        (".env", 404),
        ("in/.hidden", 404),
        ("in/../in/x", 404),
        ("in/secret.txt", 403),
        ("elsewhere/x", 405),
        ("in/out/escape.bin", 403),
        ("in/", 400),
        ("", 400),
    ] {
        let r = t.create(ALICE, name, 3);
        assert_eq!(r.status, status, "{name:?}: {}", r.text());
    }
    let auth = format!("Authorization: Basic {}", basic(ALICE));
    let nameless = [auth.clone(), "Upload-Length: 3".into()];
    assert_eq!(t.ask("POST", "/.tus/", &nameless, b"").status, 400);
    let deferred = [
        auth.clone(),
        "Upload-Defer-Length: 1".into(),
        format!("Upload-Metadata: filename {}", b64("in/d")),
    ];
    assert_eq!(t.ask("POST", "/.tus/", &deferred, b"").status, 400);
    let with_body = [
        auth,
        "Upload-Length: 3".into(),
        format!("Upload-Metadata: filename {}", b64("in/d")),
    ];
    assert_eq!(t.ask("POST", "/.tus/", &with_body, b"abc").status, 400);
    // No credentials: 401 before anything.
    let meta = format!("Upload-Metadata: filename {}", b64("in/x"));
    assert_eq!(
        t.ask("POST", "/.tus/", &[meta, "Upload-Length: 3".into()], b"")
            .status,
        401
    );
    // A file that exists where the rule does not replace.
    std::fs::write(t.site.root.join("once/taken"), b"theirs").unwrap();
    assert_eq!(t.create(ALICE, "once/taken", 3).status, 403);
    assert!(std::fs::read_dir(t.site.tmp.path())
        .unwrap()
        .all(|e| e.unwrap().file_name() != "escape.bin"));
    assert_eq!(t.report().created, 0);
}

#[test]
fn the_final_name_refused_after_the_bytes_arrived_leaves_nothing() {
    let t = Tus::new("");
    let at = t.created(ALICE, "once/late.bin", 6);
    assert_eq!(t.patch(ALICE, &at, 0, b"abc", &[]).status, 204);
    // Someone else takes the name meanwhile; the rule creates only.
    std::fs::write(t.site.root.join("once/late.bin"), b"theirs").unwrap();
    let last = t.patch(ALICE, &at, 3, b"def", &[]);
    assert_eq!(last.status, 403, "{last:?}");
    assert_eq!(
        std::fs::read(t.site.root.join("once/late.bin")).unwrap(),
        b"theirs"
    );
    // The upload is gone with its bytes (spec: a refused completion
    // removes it).
    assert_eq!(t.head(ALICE, &at).status, 404);
    assert!(!names(&t.partial()).iter().any(|n| n.starts_with(&at[6..])));

    // A link swapped in on the way after the creation: never followed.
    std::fs::create_dir_all(t.site.root.join("in/sub")).unwrap();
    let at = t.created(ALICE, "in/sub/y.bin", 3);
    std::fs::remove_dir(t.site.root.join("in/sub")).unwrap();
    let outside = t.site.tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, t.site.root.join("in/sub")).unwrap();
    let r = t.patch(ALICE, &at, 0, b"xyz", &[]);
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(t.running.report().writes.created, 0);
}

#[test]
fn caps_on_pending_uploads_per_user_in_all_and_in_bytes() {
    let t = Tus::new("");
    let a1 = t.created(ALICE, "in/a1", 1024);
    t.created(ALICE, "in/a2", 1024);
    assert_eq!(t.create(ALICE, "in/a3", 1024).status, 507, "per user");
    let b1 = t.created(BOB, "in/b1", 8 << 20);
    assert_eq!(t.create(BOB, "in/b2", 1).status, 507, "in all");
    let auth = format!("Authorization: Basic {}", basic(ALICE));
    assert_eq!(t.ask("DELETE", &a1, &[auth], b"").status, 204);
    assert_eq!(t.create(BOB, "in/b2", 2 << 20).status, 507, "bytes in all");
    let b2 = t.created(BOB, "in/b2", 1 << 20);
    // A complete upload no longer counts.
    let body = pattern(1 << 20, 1);
    assert_eq!(t.patch(BOB, &b2, 0, &body, &[]).status, 204);
    t.created(ALICE, "in/a4", 1024);
    let r = t.report();
    assert_eq!((r.pending, r.terminated), (3, 1));
    assert_eq!(t.offset(BOB, &b1), 0);
    assert!(!names(&t.partial()).iter().any(|n| n.starts_with(&a1[6..])));
}

#[test]
fn an_upload_no_byte_reached_expires_and_is_removed() {
    let t = Tus::new("");
    drop(t);
    let site = Site::new();
    std::fs::create_dir_all(site.root.join("in")).unwrap();
    let rules = RULES.replace("max-pending = 3\n", "max-pending = 3\nexpire = \"2s\"\n");
    let running = serve_dir(&site.root, site.runtime(&rules), false, false);
    let t = Tus { site, running };
    let at = t.created(ALICE, "in/slow.bin", 10);
    assert_eq!(t.patch(ALICE, &at, 0, b"12345", &[]).status, 204);
    let id = at[6..].to_owned();
    // Bytes no record claims (a process killed while it removed one) go
    // too; a file the server did not name stays.
    let orphan = t.partial().join(format!("{}.part", "0f".repeat(16)));
    std::fs::write(&orphan, b"left").unwrap();
    std::fs::write(t.partial().join("notes.txt"), b"the operator's").unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while names(&t.partial()).iter().any(|n| n.starts_with(&id)) {
        assert!(Instant::now() < end, "the expired upload stayed");
        std::thread::sleep(Duration::from_millis(50));
    }
    while orphan.exists() {
        assert!(Instant::now() < end, "the orphan stayed");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(t.partial().join("notes.txt").exists());
    assert_eq!(t.head(ALICE, &at).status, 404);
    assert_eq!(t.patch(ALICE, &at, 5, b"67890", &[]).status, 404);
    assert!(!t.site.root.join("in/slow.bin").exists());
    assert_eq!(t.report().expired, 1);
}

#[test]
fn a_patch_at_the_counted_offset_takes_the_upload_over_from_one_whose_client_went_quiet() {
    let t = Tus::new("");
    let body = pattern(2 << 20, 9);
    let at = t.created(ALICE, "in/quiet.bin", body.len() as u64);
    // A PATCH that sends half and then nothing (a link that died without
    // a FIN): its connection stays open.
    let mut quiet = std::net::TcpStream::connect(("127.0.0.1", t.port())).unwrap();
    write!(
        quiet,
        "PATCH {at} HTTP/1.1\r\nHost: t\r\nTus-Resumable: 1.0.0\r\nAuthorization: Basic {}\r\n\
         Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\nContent-Length: {}\r\n\r\n",
        basic(ALICE),
        body.len()
    )
    .unwrap();
    quiet.write_all(&body[..1 << 20]).unwrap();
    let part = t.partial().join(format!("{}.part", &at[6..]));
    let end = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(&part).map_or(0, |m| m.len()) < 1 << 20 {
        assert!(Instant::now() < end, "the first half was not written");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The client comes back on another connection: HEAD says what was
    // counted, and a PATCH from there takes the upload over.
    let offset = t.offset(ALICE, &at);
    assert_eq!(offset, 1 << 20);
    let done = t.patch(ALICE, &at, offset, &body[offset as usize..], &[]);
    assert_eq!(done.status, 204, "{done:?}");
    assert_eq!(
        std::fs::read(t.site.root.join("in/quiet.bin")).unwrap(),
        body
    );
    // The quiet one's late bytes change nothing: it is told 409.
    let _ = quiet.write_all(&body[1 << 20..(1 << 20) + (600 << 10)]);
    let mut c = Client::from_stream(quiet);
    if let Ok(r) = c.reply() {
        assert_eq!(r.status, 409, "{r:?}");
    }
    assert_eq!(
        std::fs::read(t.site.root.join("in/quiet.bin")).unwrap(),
        body
    );
    assert!(t.report().taken_over >= 1);
}

#[test]
fn options_advertises_and_cors_lets_a_browser_client_through() {
    let t = Tus::new("\n[cors]\norigins = [\"https://app.example\"]\n");
    let r = t.ask("OPTIONS", "/.tus/", &[], b"");
    assert_eq!(r.status, 204);
    assert_eq!(r.header("tus-version"), Some("1.0.0"));
    assert_eq!(
        r.header("tus-extension"),
        Some("creation,expiration,termination,checksum")
    );
    assert_eq!(
        r.header("tus-checksum-algorithm"),
        Some("sha1,sha256,sha512")
    );
    // The largest any write rule takes: `once/*` has stream-limit's.
    assert_eq!(r.header("tus-max-size"), Some("1073741824"));
    let preflight = t.ask(
        "OPTIONS",
        "/.tus/",
        &[
            "Origin: https://app.example".into(),
            "Access-Control-Request-Method: PATCH".into(),
            "Access-Control-Request-Headers: tus-resumable, upload-offset, upload-checksum, authorization, content-type".into(),
        ],
        b"",
    );
    assert_eq!(
        preflight.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert!(preflight
        .header("access-control-allow-methods")
        .unwrap()
        .contains("PATCH"));
    let stranger = t.ask(
        "OPTIONS",
        "/.tus/",
        &[
            "Origin: https://evil.example".into(),
            "Access-Control-Request-Method: PATCH".into(),
        ],
        b"",
    );
    assert_eq!(stranger.header("access-control-allow-origin"), None);
    let meta = format!("Upload-Metadata: filename {}", b64("in/c.bin"));
    let auth = format!("Authorization: Basic {}", basic(ALICE));
    let created = t.ask(
        "POST",
        "/.tus/",
        &[
            auth,
            meta,
            "Upload-Length: 1".into(),
            "Origin: https://app.example".into(),
        ],
        b"",
    );
    assert_eq!(created.status, 201);
    let exposed = created.header("access-control-expose-headers").unwrap();
    assert!(
        exposed.contains("Location") && exposed.contains("Upload-Offset"),
        "{exposed}"
    );
}

#[test]
fn http2_speaks_the_same_protocol() {
    let t = Tus::new("");
    let at = t.created(ALICE, "in/h2.bin", 6);
    let url = format!("http://127.0.0.1:{}{at}", t.port());
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), b"abcdef").unwrap();
    let auth = format!("Authorization: Basic {}", basic(ALICE));
    let out = std::process::Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{http_version}",
            "--http2-prior-knowledge",
        ])
        .args(["-X", "PATCH", "--data-binary"])
        .arg(format!("@{}", file.path().display()))
        .args([
            "-H",
            "Tus-Resumable: 1.0.0",
            "-H",
            &auth,
            "-H",
            "Upload-Offset: 0",
        ])
        .args(["-H", "Content-Type: application/offset+octet-stream", &url])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "204 2");
    let head = std::process::Command::new("curl")
        .args([
            "-sI",
            "--http2-prior-knowledge",
            "-H",
            "Tus-Resumable: 1.0.0",
            "-H",
            &auth,
            &url,
        ])
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).to_ascii_lowercase();
    assert!(
        head.starts_with("http/2 200") && head.contains("upload-offset: 6"),
        "{head}"
    );
    assert_eq!(
        std::fs::read(t.site.root.join("in/h2.bin")).unwrap(),
        b"abcdef"
    );
}

#[test]
fn the_creations_preconditions_hold_when_the_name_is_given() {
    let t = Tus::new("");
    std::fs::write(t.site.root.join("in/there.bin"), b"theirs").unwrap();
    let create = |name: &str, extra: &str| {
        let meta = format!("Upload-Metadata: filename {}", b64(name));
        let auth = format!("Authorization: Basic {}", basic(ALICE));
        t.ask(
            "POST",
            "/.tus/",
            &[auth, meta, "Upload-Length: 4".into(), extra.into()],
            b"",
        )
    };
    // Create only: 412 at once where the name exists.
    assert_eq!(create("in/there.bin", "If-None-Match: *").status, 412);
    // And when it appears while the bytes arrive.
    let r = create("in/later.bin", "If-None-Match: *");
    assert_eq!(r.status, 201);
    let at = r.header("location").unwrap().to_owned();
    assert_eq!(t.patch(ALICE, &at, 0, b"ab", &[]).status, 204);
    std::fs::write(t.site.root.join("in/later.bin"), b"theirs").unwrap();
    assert_eq!(t.patch(ALICE, &at, 2, b"cd", &[]).status, 412);
    assert_eq!(
        std::fs::read(t.site.root.join("in/later.bin")).unwrap(),
        b"theirs"
    );
    // If-Match: replaces only the version it names.
    let mut c = Client::connect(([127, 0, 0, 1], t.port()).into());
    c.send(format!(
        "HEAD /in/there.bin HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {}\r\n\r\n",
        basic(ALICE)
    ));
    let tag = c
        .read_reply(true)
        .unwrap()
        .header("etag")
        .unwrap()
        .to_owned();
    let r = create("in/there.bin", &format!("If-Match: {tag}"));
    assert_eq!(r.status, 201);
    let at = r.header("location").unwrap().to_owned();
    assert_eq!(t.patch(ALICE, &at, 0, b"ab", &[]).status, 204);
    std::fs::write(t.site.root.join("in/there.bin"), b"changed").unwrap();
    assert_eq!(t.patch(ALICE, &at, 2, b"cd", &[]).status, 412);
    assert_eq!(
        std::fs::read(t.site.root.join("in/there.bin")).unwrap(),
        b"changed"
    );
}

#[test]
fn an_empty_upload_is_named_at_its_creation() {
    let t = Tus::new("");
    let r = t.create(ALICE, "in/empty.bin", 0);
    assert_eq!(r.status, 201, "{r:?}");
    assert_eq!(
        std::fs::read(t.site.root.join("in/empty.bin")).unwrap(),
        b""
    );
    let at = r.header("location").unwrap().to_owned();
    assert_eq!(t.offset(ALICE, &at), 0);
    assert!(!names(&t.partial()).iter().any(|n| n.ends_with(".part")));
    assert_eq!(t.report().completed, 1);
}

/// A process killed after it linked a complete upload's bytes under the
/// final name, before it removed the `.part` or said so: the next request
/// finishes only that, whatever the rule says of replacing.
#[test]
fn a_name_given_before_a_kill_is_recognised_not_given_twice() {
    let t = Tus::new("");
    let at = t.created(ALICE, "once/linked.bin", 3);
    let part = t.partial().join(format!("{}.part", &at[6..]));
    std::fs::write(&part, b"abc").unwrap();
    std::fs::hard_link(&part, t.site.root.join("once/linked.bin")).unwrap();
    let head = t.head(ALICE, &at);
    assert_eq!(head.status, 200, "{head:?}");
    assert_eq!(head.header("upload-offset"), Some("3"));
    assert!(!part.exists(), "the .part was removed");
    assert_eq!(
        std::fs::read(t.site.root.join("once/linked.bin")).unwrap(),
        b"abc"
    );
    assert_eq!(t.offset(ALICE, &at), 3);
}
