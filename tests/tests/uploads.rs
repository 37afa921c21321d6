//! `nikaia serve` takes files in (`spec/site.md`, "Writes"): `PUT` and
//! `DELETE` of the directory writer under the runtime file's `[[write]]`
//! rules, driven by real clients over real sockets — curl `-T` over
//! HTTP/1.1, nghttp `-d` over h2c, a raw client where the bytes on the wire
//! matter. The precondition matrix (racing create-only writers, stale
//! `If-Match`, `Content-Range`, a hundred same-size replaces), writers
//! against readers against anonymous clients, the plain-HTTP refusal, the
//! refusals before `100 Continue`, a full file system, names that are not
//! UTF-8. What makes a site safe to share: `uploads_safety.rs`.

use nikaia_std::rt::{LogTarget, Runtime};
use nikaia_tests::serve::serve_dir;
use nikaia_tests::uploads::{basic, delete, get, put, raw_put, url, Site, ALICE, BOB, RULES};
use nikaia_tests::{names, test_runtime, Client, TestPki};
use std::process::Command;

#[test]
fn curl_creates_replaces_and_deletes_a_file_and_nghttp_creates_over_h2c() {
    let site = Site::new();
    let running = site.serve(RULES);
    let made = put(
        &running,
        "/drop/report.txt",
        b"first version",
        &["-u", ALICE],
    );
    assert_eq!(made.status, 201, "{made:?}");
    assert_eq!(made.header("location"), Some("/drop/report.txt"));
    let first = made.header("etag").unwrap().to_owned();
    let read = get(&running, "/drop/report.txt", &["-u", BOB]);
    assert_eq!((read.status, &read.body[..]), (200, &b"first version"[..]));
    assert_eq!(read.header("etag"), Some(&*first), "the ETag a read shows");

    let replaced = put(
        &running,
        "/drop/report.txt",
        b"second version",
        &["-u", ALICE],
    );
    assert_eq!(replaced.status, 204, "{replaced:?}");
    let second = replaced.header("etag").unwrap().to_owned();
    assert_ne!(first, second);
    let read = get(&running, "/drop/report.txt", &["-u", ALICE]);
    assert_eq!(read.body, b"second version");

    // Missing levels are made when the rule says so, each by the walk.
    let deep = put(&running, "/drop/a/b/c.txt", b"deep", &["-u", ALICE]);
    assert_eq!(deep.status, 201);
    assert_eq!(
        std::fs::read(site.root.join("drop/a/b/c.txt")).unwrap(),
        b"deep"
    );

    let gone = delete(&running, "/drop/report.txt", &["-u", ALICE]);
    assert_eq!(gone.status, 204);
    assert!(!site.root.join("drop/report.txt").exists());
    assert_eq!(
        delete(&running, "/drop/report.txt", &["-u", ALICE]).status,
        404
    );
    // A directory goes only empty, and only asked for as one.
    assert_eq!(delete(&running, "/drop/a/b/", &["-u", ALICE]).status, 409);
    assert_eq!(
        delete(&running, "/drop/a/b/c.txt", &["-u", ALICE]).status,
        204
    );
    assert_eq!(delete(&running, "/drop/a/b/", &["-u", ALICE]).status, 204);
    assert!(!site.root.join("drop/a/b").exists());

    // HTTP/2 (h2c by prior knowledge): nghttp sends the body as DATA.
    let data = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(data.path(), vec![b'h'; 200_000]).unwrap();
    let out = Command::new("nghttp")
        .args(["-v", "-H", ":method: PUT", "-d"])
        .arg(data.path())
        .args(["-H", &format!("authorization: Basic {}", basic(ALICE))])
        .arg(url(&running, "/drop/over-h2.bin"))
        .output()
        .expect("nghttp runs (test.sh installs nghttp2-client)");
    let trace = String::from_utf8_lossy(&out.stdout);
    assert!(trace.contains(":status: 201"), "{trace}");
    assert_eq!(
        std::fs::read(site.root.join("drop/over-h2.bin")).unwrap(),
        vec![b'h'; 200_000]
    );
}

#[test]
fn preconditions_decide_exactly_and_every_replace_has_its_own_etag() {
    let site = Site::new();
    let running = site.serve(RULES);
    let port = running.local_addr().port();
    let auth = format!("Authorization: Basic {}\r\n", basic(ALICE));
    // Verified once, so the racers do not each wait for bcrypt (a client
    // has at most 8 checks waiting: the rest would be 503).
    assert_eq!(get(&running, "/drop/", &["-u", ALICE]).status, 200);

    // 50 create-only writers race for one name: one 201, 49 × 412, and
    // the file holds the winner's bytes.
    let racers: Vec<_> = (0..50u8)
        .map(|i| {
            let auth = auth.clone();
            std::thread::spawn(move || {
                let data = vec![b'a' + i % 26; 4096 + i as usize];
                let extra = format!("{auth}If-None-Match: *\r\n");
                (raw_put(port, "/drop/race.txt", &extra, &data).status, data)
            })
        })
        .collect();
    let results: Vec<(u16, Vec<u8>)> = racers.into_iter().map(|t| t.join().unwrap()).collect();
    let won: Vec<&Vec<u8>> = results
        .iter()
        .filter(|r| r.0 == 201)
        .map(|r| &r.1)
        .collect();
    let statuses: Vec<u16> = results.iter().map(|r| r.0).collect();
    assert_eq!(won.len(), 1, "{statuses:?}");
    assert!(
        statuses.iter().all(|s| [201, 412].contains(s)),
        "{statuses:?}"
    );
    assert_eq!(
        &std::fs::read(site.root.join("drop/race.txt")).unwrap(),
        won[0]
    );

    // A stale If-Match: 412, the file untouched.
    let before = std::fs::read(site.root.join("drop/race.txt")).unwrap();
    let stale = raw_put(
        port,
        "/drop/race.txt",
        &format!("{auth}If-Match: \"0-0\"\r\n"),
        b"lost",
    );
    assert_eq!(stale.status, 412);
    assert_eq!(
        std::fs::read(site.root.join("drop/race.txt")).unwrap(),
        before
    );
    // If-None-Match: * on a name that exists: 412.
    let exists = raw_put(
        port,
        "/drop/race.txt",
        &format!("{auth}If-None-Match: *\r\n"),
        b"x",
    );
    assert_eq!(exists.status, 412);
    // The current ETag replaces; a weak one never matches.
    let now = get(&running, "/drop/race.txt", &["-u", ALICE]);
    let etag = now.header("etag").unwrap().to_owned();
    let weak = raw_put(
        port,
        "/drop/race.txt",
        &format!("{auth}If-Match: W/{etag}\r\n"),
        b"w",
    );
    assert_eq!(weak.status, 412);
    let listed = format!("{auth}If-Match: \"1-2\", {etag}\r\n");
    let current = raw_put(port, "/drop/race.txt", &listed, b"matched");
    assert_eq!(current.status, 204, "{current:?}");
    assert_eq!(
        std::fs::read(site.root.join("drop/race.txt")).unwrap(),
        b"matched"
    );
    // If-Unmodified-Since in the past: 412.
    let old = format!("{auth}If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
    assert_eq!(raw_put(port, "/drop/race.txt", &old, b"late").status, 412);

    // A part of a file is never written as if it were the whole (RFC 9110
    // §14.5): 400, the file untouched; a coded body: 415.
    let range = format!("{auth}Content-Range: bytes 0-4/13\r\n");
    assert_eq!(
        raw_put(port, "/drop/race.txt", &range, b"parts").status,
        400
    );
    let coded = format!("{auth}Content-Encoding: gzip\r\n");
    assert_eq!(
        raw_put(port, "/drop/race.txt", &coded, b"\x1f\x8b").status,
        415
    );
    assert_eq!(
        std::fs::read(site.root.join("drop/race.txt")).unwrap(),
        b"matched"
    );
    // The preconditions come before the head's own faults.
    let both = format!("{auth}If-Match: \"0-0\"\r\nContent-Range: bytes 0-4/13\r\n");
    assert_eq!(raw_put(port, "/drop/race.txt", &both, b"parts").status, 412);
    // Past the rule's max-size: 413.
    let big = vec![0u8; (1 << 20) + 1];
    assert_eq!(raw_put(port, "/drop/big.bin", &auth, &big).status, 413);
    assert!(!site.root.join("drop/big.bin").exists());

    // 100 back-to-back replaces of one size: 100 distinct ETags.
    let mut c = Client::connect(running.local_addr());
    let mut tags = std::collections::HashSet::new();
    for i in 0..100u32 {
        let data = format!("{i:08}");
        c.send(format!(
            "PUT /drop/same.txt HTTP/1.1\r\nHost: t\r\n{auth}Content-Length: 8\r\n\r\n{data}"
        ));
        let r = c.reply().unwrap();
        assert!([201, 204].contains(&r.status), "{r:?}");
        tags.insert(r.header("etag").unwrap().to_owned());
    }
    assert_eq!(tags.len(), 100);

    // DELETE honours If-Match too.
    let del = |extra: &str| {
        let mut c = Client::connect(running.local_addr());
        c.send(format!(
            "DELETE /drop/same.txt HTTP/1.1\r\nHost: t\r\n{auth}{extra}\r\n"
        ));
        c.reply().unwrap().status
    };
    assert_eq!(del("If-Match: \"0-0\"\r\n"), 412);
    assert!(site.root.join("drop/same.txt").exists());
    let etag = get(&running, "/drop/same.txt", &["-u", ALICE]);
    assert_eq!(
        del(&format!("If-Match: {}\r\n", etag.header("etag").unwrap())),
        204
    );
    assert!(!site.root.join("drop/same.txt").exists());
}

#[test]
fn writers_write_readers_read_and_anonymous_clients_get_nothing() {
    let site = Site::new();
    let running = site.serve(RULES);
    // No credentials: 401, nothing written; wrong ones too.
    assert_eq!(put(&running, "/drop/x.txt", b"x", &[]).status, 401);
    assert_eq!(
        put(&running, "/drop/x.txt", b"x", &["-u", "alice:nope"]).status,
        401
    );
    // bob is a user of the file but not a writer: 403.
    assert_eq!(put(&running, "/drop/x.txt", b"x", &["-u", BOB]).status, 403);
    assert_eq!(delete(&running, "/drop/x.txt", &["-u", BOB]).status, 403);
    assert!(!site.root.join("drop/x.txt").exists());
    assert_eq!(
        put(&running, "/drop/x.txt", b"x", &["-u", ALICE]).status,
        201
    );
    // bob reads it.
    assert_eq!(get(&running, "/drop/x.txt", &["-u", BOB]).status, 200);
    // A name no rule covers: 405 with what it allows.
    let none = put(&running, "/public/a.txt", b"over", &[]);
    assert_eq!(none.status, 405);
    assert_eq!(none.header("allow"), Some("GET, HEAD, OPTIONS"));
    assert_eq!(
        std::fs::read(site.root.join("public/a.txt")).unwrap(),
        b"public"
    );
    assert_eq!(delete(&running, "/public/a.txt", &[]).status, 405);
    // A rule whose names no auth rule protects, with writers: 403 (fail
    // closed), even with credentials.
    assert_eq!(put(&running, "/nolink/y", b"y", &["-u", ALICE]).status, 403);
    // `anyone = true`, create only: a new name, once.
    assert_eq!(put(&running, "/inbox/note.txt", b"hi", &[]).status, 201);
    assert_eq!(put(&running, "/inbox/note.txt", b"again", &[]).status, 403);
    assert_eq!(
        std::fs::read(site.root.join("inbox/note.txt")).unwrap(),
        b"hi"
    );
    // The rule does not delete there: 405 with what it allows.
    let no_delete = delete(&running, "/inbox/note.txt", &[]);
    assert_eq!(no_delete.status, 405);
    assert_eq!(no_delete.header("allow"), Some("GET, HEAD, OPTIONS, PUT"));
    // Its pattern does not reach below `inbox/`.
    assert_eq!(put(&running, "/inbox/sub/x", b"x", &[]).status, 405);
}

#[test]
fn writes_are_refused_on_plain_http_unless_the_rule_says_tls_ended_in_front() {
    let site = Site::new();
    let strict = RULES.replace("plain-http = true\n", "");
    // Auth itself refuses a protected name on plain HTTP, before asking.
    let strict_auth = strict.replace(
        "htpasswd = \"users.htpasswd\"\n",
        "htpasswd = \"users.htpasswd\"\nplain-http = true\n",
    );
    let running = site.serve(&strict_auth);
    // The user is verified, then the write rule refuses the listener.
    assert_eq!(
        put(&running, "/drop/p.txt", b"p", &["-u", ALICE]).status,
        403
    );
    assert_eq!(put(&running, "/inbox/p.txt", b"p", &[]).status, 403);
    assert!(names(&site.root.join("drop")).is_empty());
    drop(running);

    // The same rules over TLS: written.
    let pki = TestPki::new();
    let mut rt = site.runtime(&strict_auth);
    let tls = pki.runtime();
    rt.listen = tls.listen;
    rt.tls_cert = tls.tls_cert;
    rt.tls_key = tls.tls_key;
    let running = serve_dir(&site.root, rt, false, false);
    let mut c = nikaia_tests::TlsClient::connect_tls(running.local_addr(), pki.client_config());
    c.send(format!(
        "PUT /drop/p.txt HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {}\r\nContent-Length: 3\r\n\r\ntls",
        basic(ALICE)
    ));
    assert_eq!(c.reply().unwrap().status, 201);
    assert_eq!(std::fs::read(site.root.join("drop/p.txt")).unwrap(), b"tls");
}

#[test]
fn a_refused_put_reads_no_body_and_sends_no_continue() {
    let site = Site::new();
    let running = site.serve(RULES);
    let port = running.local_addr().port();
    // A writer's PUT: `100 Continue` once the credentials, the rule and
    // the preconditions passed, then the body, then 201.
    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    c.send(format!(
        "PUT /drop/go.bin HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {}\r\n\
         If-None-Match: *\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n",
        basic(ALICE)
    ));
    assert_eq!(c.reply().unwrap().status, 100);
    c.send("body");
    assert_eq!(c.reply().unwrap().status, 201);
    assert_eq!(
        std::fs::read(site.root.join("drop/go.bin")).unwrap(),
        b"body"
    );
    // The same with a precondition that fails: 412, and no 100.
    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    c.send(format!(
        "PUT /drop/go.bin HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {}\r\n\
         If-None-Match: *\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n",
        basic(ALICE)
    ));
    assert_eq!(c.reply().unwrap().status, 412);
    for (path, auth, want) in [
        ("/drop/e.bin", String::new(), 401),
        (
            "/drop/e.bin",
            format!("Authorization: Basic {}\r\n", basic(BOB)),
            403,
        ),
        ("/public/e.bin", String::new(), 405),
    ] {
        let mut c = Client::connect(([127, 0, 0, 1], port).into());
        c.send(format!(
            "PUT {path} HTTP/1.1\r\nHost: t\r\n{auth}Content-Length: 10485760\r\nExpect: 100-continue\r\n\r\n"
        ));
        let r = c.reply().unwrap();
        assert_eq!(r.status, want, "{path}: the final answer, not 100");
        assert_eq!(r.header("connection"), Some("close"), "{path}");
    }
    // Without Expect, a small refused body is thrown away and the
    // connection kept: the next request on it is answered.
    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    let junk = "GET /public/nope HTTP/1.1\r\nHost: t\r\n\r\n";
    c.send(format!(
        "PUT /drop/small.bin HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{junk}",
        junk.len()
    ));
    assert_eq!(c.reply().unwrap().status, 401);
    let next = c.get("/public/a.txt");
    assert_eq!((next.status, &next.body[..]), (200, &b"public"[..]));
    // Without Expect, a large refused body closes the connection after the
    // answer; it is never parsed as a request.
    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    c.send("PUT /drop/f.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 4194304\r\n\r\n");
    let _ = c.stream().set_nonblocking(false);
    let chunk = b"GET /public/a.txt HTTP/1.1\r\nHost: t\r\n\r\n".repeat(1000);
    let mut written = 0;
    while written < 4 << 20 {
        use std::io::Write;
        match (&mut c.stream()).write(&chunk) {
            Ok(n) => written += n,
            Err(_) => break,
        }
        if written > 512 << 10 {
            break;
        }
    }
    let r = c.reply().unwrap();
    assert_eq!(r.status, 401);
    assert!(c.is_closed(), "the rest of the body is no request");
    assert_eq!(names(&site.root.join("drop")), ["go.bin"]);
}

#[test]
fn a_full_file_system_is_507_and_leaves_each_name_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let Some(_tmpfs) = nikaia_tests::tmpfs::Tmpfs::mount(&mnt, "4m") else {
        eprintln!("SKIPPED: cannot mount a tmpfs here");
        return;
    };
    std::fs::write(mnt.join("keep"), b"old").unwrap();
    let before = nikaia_tests::tmpfs::free_bytes(&mnt);
    let rules =
        "write-free-floor = 0\n[[write]]\nmatch = \"*\"\nanyone = true\nplain-http = true\n";
    let file = tmp.path().join("runtime.toml");
    std::fs::write(&file, rules).unwrap();
    let mut rt = Runtime::load(&file).unwrap();
    rt.listen = test_runtime().listen;
    rt.access_log = LogTarget::Off;
    let running = serve_dir(&mnt, rt, false, false);
    let port = running.local_addr().port();
    // A length past the free space: 507 from the head, nothing read.
    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    c.send(
        "PUT /keep HTTP/1.1\r\nHost: t\r\nContent-Length: 8388608\r\nExpect: 100-continue\r\n\r\n",
    );
    assert_eq!(c.reply().unwrap().status, 507);
    // Chunked: the disk fills mid-body.
    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    c.send("PUT /keep HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    let chunk = vec![b'z'; 256 << 10];
    for _ in 0..32 {
        let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
        framed.extend_from_slice(&chunk);
        framed.extend_from_slice(b"\r\n");
        use std::io::Write;
        if (&mut c.stream()).write_all(&framed).is_err() {
            break;
        }
    }
    let _ = std::io::Write::write_all(&mut c.stream(), b"0\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 507);
    assert_eq!(names(&mnt), ["keep"]);
    assert_eq!(std::fs::read(mnt.join("keep")).unwrap(), b"old");
    // The unnamed file closed before the answer went.
    assert_eq!(
        nikaia_tests::tmpfs::free_bytes(&mnt),
        before,
        "the space came back"
    );
    assert_eq!(running.report().writes.refused, [(507, 2)]);
}

#[test]
fn a_name_that_is_not_utf8_is_written_and_removed_by_its_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let site = Site::new();
    let running = site.serve(RULES);
    let port = running.local_addr().port();
    let auth = format!("Authorization: Basic {}\r\n", basic(ALICE));
    // A decoy with the lossy name must be left alone.
    let lossy = site.root.join("drop/caf\u{fffd}.txt");
    std::fs::write(&lossy, b"decoy").unwrap();
    assert_eq!(
        raw_put(port, "/drop/caf%E9.txt", &auth, b"latin-1").status,
        201
    );
    let exact = site
        .root
        .join(std::ffi::OsStr::from_bytes(b"drop/caf\xe9.txt"));
    assert_eq!(std::fs::read(&exact).unwrap(), b"latin-1");
    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    c.send(format!(
        "DELETE /drop/caf%E9.txt HTTP/1.1\r\nHost: t\r\n{auth}\r\n"
    ));
    assert_eq!(c.reply().unwrap().status, 204);
    assert!(!exact.exists());
    assert_eq!(std::fs::read(&lossy).unwrap(), b"decoy");
}

#[test]
fn a_put_name_no_file_can_have_is_400_and_reads_of_names_stay_as_they_were() {
    let site = Site::new();
    let running = site.serve(RULES);
    let port = running.local_addr().port();
    let auth = format!("Authorization: Basic {}\r\n", basic(ALICE));
    let long = "x".repeat(256);
    for path in [
        format!("/drop/{long}"),
        format!("/drop/{long}/a.txt"),
        "/drop/a%0Ab.txt".to_owned(),
        "/drop/a%0Db.txt".to_owned(),
        "/drop/tab%09.txt".to_owned(),
        "/drop/del%7F.txt".to_owned(),
        "/drop/c1%C2%85.txt".to_owned(),
        "/inbox/esc%1B%5B31m".to_owned(),
    ] {
        let r = raw_put(port, &path, &auth, b"bytes");
        assert_eq!(r.status, 400, "{path}: {}", r.text());
    }
    let h2 = put(
        &running,
        "/drop/a%0Ab.txt",
        b"bytes",
        &["-u", ALICE, "--http2-prior-knowledge"],
    );
    assert_eq!(h2.status, 400);
    assert_eq!(names(&site.root.join("drop")), Vec::<String>::new());
    assert_eq!(running.report().writes.refused, [(400, 9)]);
    // The longest component a file system takes is written.
    let longest = format!("/drop/{}", "y".repeat(255));
    assert_eq!(raw_put(port, &longest, &auth, b"ok").status, 201);
    // Reads: a name too long is missing; an existing name with a control
    // character is read, and removed, as before.
    assert_eq!(get(&running, &format!("/public/{long}"), &[]).status, 404);
    std::fs::write(site.root.join("drop/old\nname"), b"old").unwrap();
    let read = get(&running, "/drop/old%0Aname", &["-u", BOB]);
    assert_eq!((read.status, &read.body[..]), (200, &b"old"[..]));
    assert_eq!(
        delete(&running, "/drop/old%0Aname", &["-u", ALICE]).status,
        204
    );
    assert!(!site.root.join("drop/old\nname").exists());
}

#[test]
fn past_max_writes_a_write_is_503_from_its_head_and_counted() {
    let site = Site::new();
    let running = site.serve(&format!("max-writes = 1\n{RULES}"));
    let port = running.local_addr().port();
    // The one write allowed: its file is open once `100 Continue` came.
    let mut first = Client::connect(([127, 0, 0, 1], port).into());
    first.send(
        "PUT /inbox/first HTTP/1.1\r\nHost: t\r\nContent-Length: 8\r\nExpect: 100-continue\r\n\r\n",
    );
    assert_eq!(first.reply().unwrap().status, 100);
    let busy = raw_put(port, "/inbox/second", "", b"x");
    assert_eq!(busy.status, 503);
    assert_eq!(busy.header("retry-after"), Some("1"));
    first.send("8 bytes!");
    assert_eq!(first.reply().unwrap().status, 201);
    assert_eq!(raw_put(port, "/inbox/second", "", b"x").status, 201);
    assert_eq!(running.report().writes.refused, [(503, 1)]);
}

#[test]
fn a_writes_only_auth_rule_lets_anyone_read_and_only_writers_write() {
    let site = Site::new();
    let text = RULES.replace(
        "match = [\"drop/**\", \"trusted/**\"]\nhtpasswd = \"users.htpasswd\"\n",
        "match = [\"drop/**\", \"trusted/**\"]\nhtpasswd = \"users.htpasswd\"\nwrites-only = true\n",
    );
    assert_ne!(text, RULES);
    let running = site.serve(&text);
    assert_eq!(put(&running, "/drop/pub.txt", b"x", &[]).status, 401);
    assert_eq!(
        put(&running, "/drop/pub.txt", b"x", &["-u", BOB]).status,
        403
    );
    assert_eq!(
        put(&running, "/drop/pub.txt", b"x", &["-u", ALICE]).status,
        201
    );
    let read = get(&running, "/drop/pub.txt", &[]);
    assert_eq!((read.status, &read.body[..]), (200, &b"x"[..]));
    assert_eq!(read.header("cache-control"), None, "not a protected answer");
}
