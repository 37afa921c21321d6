//! What makes `nikaia serve`'s writes safe to share a site's origin with
//! (`spec/site.md`, "Writes"): the sandbox headers on an uploaded page,
//! CORS preflights only where a rule covers the name, the listing's upload
//! control for writers only, the runtime file's own files, dot-names and
//! sidecars never written, no link followed, a replaced file served new at
//! once under readers, and what the operator sees (the counters, the JSON
//! log's bytes received).

use nikaia_tests::curl::curl;
use nikaia_tests::serve::serve_dir;
use nikaia_tests::uploads::{
    basic, delete, get, put, raw_put, url, Site, ALICE, BOB, RULES, USERS,
};
use nikaia_tests::{names, Client};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn an_uploaded_page_is_served_sandboxed_unless_its_rule_trusts_it() {
    let site = Site::new();
    let running = site.serve(RULES);
    let page = b"<script>fetch('/drop/').then(r => r.text()).then(alert)</script>";
    assert_eq!(
        put(&running, "/drop/evil.html", page, &["-u", ALICE]).status,
        201
    );
    let served = get(&running, "/drop/evil.html", &["-u", BOB]);
    assert_eq!(served.status, 200);
    assert_eq!(served.header("content-security-policy"), Some("sandbox"));
    assert_eq!(served.header("x-content-type-options"), Some("nosniff"));
    // A HEAD and a 304 carry them too.
    let etag = served.header("etag").unwrap().to_owned();
    let again = get(
        &running,
        "/drop/evil.html",
        &["-u", BOB, "-H", &format!("If-None-Match: {etag}")],
    );
    assert_eq!(again.status, 304);
    assert_eq!(again.header("content-security-policy"), Some("sandbox"));
    // A rule that trusts its content: none.
    assert_eq!(
        put(&running, "/trusted/page.html", page, &["-u", ALICE]).status,
        201
    );
    let trusted = get(&running, "/trusted/page.html", &["-u", BOB]);
    assert_eq!(trusted.status, 200);
    assert_eq!(trusted.header("content-security-policy"), None);
    // A file no write rule covers: none.
    assert_eq!(
        get(&running, "/public/a.txt", &[]).header("content-security-policy"),
        None
    );
}

#[test]
fn cors_preflights_allow_writes_only_where_a_rule_covers_the_name() {
    let site = Site::new();
    let rules =
        format!("{RULES}\n[cors]\norigins = [\"https://app.example\"]\ncredentials = true\n");
    let running = site.serve(&rules);
    let preflight = |path: &str, method: &str, headers: &str| {
        curl(
            &url(&running, path),
            &[
                "-X",
                "OPTIONS",
                "-H",
                "Origin: https://app.example",
                "-H",
                &format!("Access-Control-Request-Method: {method}"),
                "-H",
                &format!("Access-Control-Request-Headers: {headers}"),
            ],
        )
    };
    let ok = preflight("/drop/x.txt", "PUT", "if-match, content-type");
    assert_eq!(ok.status, 204);
    assert_eq!(
        ok.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    let methods = ok.header("access-control-allow-methods").unwrap();
    assert!(
        methods.contains("PUT") && methods.contains("DELETE"),
        "{methods}"
    );
    assert!(ok
        .header("access-control-allow-headers")
        .unwrap()
        .contains("If-Match"));
    // No rule: the preflight refuses (no CORS headers), as for any method
    // the site does not allow.
    let refused = preflight("/public/a.txt", "PUT", "if-match");
    assert_eq!(refused.status, 204);
    assert_eq!(refused.header("access-control-allow-origin"), None);
    // A rule that creates only allows PUT, not DELETE.
    let inbox = preflight("/inbox/n.txt", "DELETE", "");
    assert_eq!(inbox.header("access-control-allow-origin"), None);
    // Plain OPTIONS says the methods.
    let allow = curl(&url(&running, "/drop/x.txt"), &["-X", "OPTIONS"]);
    assert_eq!(
        allow.header("allow"),
        Some("GET, HEAD, OPTIONS, PUT, DELETE")
    );
    // The write's own answer carries the origin, so the page can read it.
    let put = put(
        &running,
        "/drop/cors.txt",
        b"c",
        &["-u", ALICE, "-H", "Origin: https://app.example"],
    );
    assert_eq!(put.status, 201);
    assert_eq!(
        put.header("access-control-allow-origin"),
        Some("https://app.example")
    );
}

#[test]
fn the_listing_has_an_upload_control_for_writers_only() {
    let site = Site::new();
    let running = site.serve(RULES);
    let control = "<form id=\"upload\"";
    let alice = get(&running, "/drop/", &["-u", ALICE]);
    assert_eq!(alice.status, 200);
    assert!(String::from_utf8_lossy(&alice.body).contains(control));
    let bob = get(&running, "/drop/", &["-u", BOB]);
    assert_eq!(bob.status, 200);
    assert!(!String::from_utf8_lossy(&bob.body).contains(control));
    assert_ne!(
        alice.header("etag"),
        bob.header("etag"),
        "two pages, two tags"
    );
    // Anyone may create in the inbox; nobody in public/.
    let inbox = get(&running, "/inbox/", &[]);
    assert!(String::from_utf8_lossy(&inbox.body).contains(control));
    let public = get(&running, "/public/", &[]);
    assert!(!String::from_utf8_lossy(&public.body).contains(control));
}

#[test]
fn the_runtime_files_own_files_dot_names_and_sidecars_are_never_written() {
    let site = Site::new();
    let text =
        format!("{RULES}\n[[write]]\nmatch = \"**\"\nwriters = [\"alice\"]\nplain-http = true\n");
    let text = text.replace("match = [\"drop/**\", \"trusted/**\"]", "match = \"**\"");
    let running = site.serve(&text);
    let tmp = site.tmp.path();
    // Hard links of the users file and the runtime file into the drop
    // folder: the same files, refused by identity.
    std::fs::hard_link(tmp.join("users.htpasswd"), site.root.join("drop/users")).unwrap();
    std::fs::hard_link(tmp.join("runtime.toml"), site.root.join("drop/rt.toml")).unwrap();
    for name in ["/drop/users", "/drop/rt.toml"] {
        assert_eq!(
            put(&running, name, b"owned", &["-u", ALICE]).status,
            403,
            "{name}"
        );
        assert_eq!(delete(&running, name, &["-u", ALICE]).status, 403, "{name}");
    }
    assert_eq!(
        std::fs::read_to_string(tmp.join("users.htpasswd")).unwrap(),
        USERS
    );
    // A symbolic link to one of them is a name like any other: a write
    // never follows it, so the link itself is replaced, then removed, and
    // the file it pointed at is never touched.
    std::os::unix::fs::symlink(tmp.join("users.htpasswd"), site.root.join("drop/link")).unwrap();
    assert_eq!(
        put(&running, "/drop/link", b"owned", &["-u", ALICE]).status,
        204
    );
    let link = site.root.join("drop/link");
    assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(std::fs::read(&link).unwrap(), b"owned");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(tmp.join("users.htpasswd"), &link).unwrap();
    assert_eq!(delete(&running, "/drop/link", &["-u", ALICE]).status, 204);
    assert!(std::fs::symlink_metadata(&link).is_err());
    assert_eq!(
        std::fs::read_to_string(tmp.join("users.htpasswd")).unwrap(),
        USERS
    );
    // The not-found page, by its name under the root.
    assert_eq!(
        put(&running, "/404.html", b"owned", &["-u", ALICE]).status,
        403
    );
    assert_eq!(
        std::fs::read(site.root.join("404.html")).unwrap(),
        b"<h1>not here</h1>"
    );
    // Dot-names and .well-known: never (404 when hidden names are hidden).
    for name in [
        "/drop/.htaccess",
        "/.well-known/acme-challenge/t",
        "/drop/.nikaia-tmp-0",
    ] {
        assert_eq!(
            put(&running, name, b"x", &["-u", ALICE]).status,
            404,
            "{name}"
        );
    }
    assert!(!site.root.join(".well-known").exists());
    // With --hidden they are shown, and still never written: 403.
    let hidden = serve_dir(&site.root, site.runtime(&text), true, false);
    assert_eq!(
        put(
            &hidden,
            "/.well-known/acme-challenge/t",
            b"x",
            &["-u", ALICE]
        )
        .status,
        403
    );
    assert_eq!(put(&hidden, "/drop/.env", b"x", &["-u", ALICE]).status, 403);
    assert!(!site.root.join(".well-known").exists() && !site.root.join("drop/.env").exists());
    // A sidecar is written only where its file is: `drop/**` covers both;
    // `inbox/*` covers `inbox/a.gz` but not... its file `inbox/a` is, so
    // it is; `public/` has no rule of its own beyond `**`.
    assert_eq!(
        put(&running, "/drop/app.js.gz", b"gz", &["-u", ALICE]).status,
        201
    );
    let only_sidecars = format!(
        "{}\n[[write]]\nmatch = \"*.gz\"\nanyone = true\nplain-http = true\n",
        RULES
    );
    let narrow = serve_dir(&site.root, site.runtime(&only_sidecars), false, false);
    assert_eq!(put(&narrow, "/public/a.txt.gz", b"gz", &[]).status, 405);
    assert!(!site.root.join("public/a.txt.gz").exists());
}

#[test]
fn writes_follow_no_link_and_missing_directories_are_409_without_make_dirs() {
    let site = Site::new();
    let outside = site.tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, site.root.join("drop/out")).unwrap();
    std::os::unix::fs::symlink("../public", site.root.join("drop/pub")).unwrap();
    std::os::unix::fs::symlink("../public/a.txt", site.root.join("drop/alias.txt")).unwrap();
    let running = site.serve(RULES);
    // A link on the way, out or in: 403, nothing written through it.
    assert_eq!(
        put(&running, "/drop/out/x", b"x", &["-u", ALICE]).status,
        403
    );
    assert_eq!(
        put(&running, "/drop/pub/x", b"x", &["-u", ALICE]).status,
        403
    );
    assert_eq!(
        delete(&running, "/drop/pub/a.txt", &["-u", ALICE]).status,
        403
    );
    assert!(names(&outside).is_empty());
    assert_eq!(names(&site.root.join("public")), ["a.txt"]);
    // A link as the last component is replaced (or removed) itself.
    assert_eq!(
        put(&running, "/drop/alias.txt", b"mine", &["-u", ALICE]).status,
        204
    );
    assert!(!site.root.join("drop/alias.txt").is_symlink());
    assert_eq!(
        std::fs::read(site.root.join("public/a.txt")).unwrap(),
        b"public"
    );
    // Reads still follow links inside the root.
    std::os::unix::fs::symlink("../public/a.txt", site.root.join("drop/read.txt")).unwrap();
    assert_eq!(
        get(&running, "/drop/read.txt", &["-u", BOB]).body,
        b"public"
    );
    assert_eq!(
        delete(&running, "/drop/read.txt", &["-u", ALICE]).status,
        204
    );
    assert!(site.root.join("public/a.txt").exists());
    // No make-dirs (the inbox): a missing directory is 409.
    let text = RULES.replace("match = \"inbox/*\"", "match = \"inbox/**\"");
    let inbox = site.serve(&text);
    assert_eq!(put(&inbox, "/inbox/new/x.txt", b"x", &[]).status, 409);
    assert!(!site.root.join("inbox/new").exists());
}

#[test]
fn a_replaced_file_is_served_new_at_once_under_a_load_of_readers() {
    let site = Site::new();
    let running = site.serve(RULES);
    let port = running.local_addr().port();
    let auth = format!("Authorization: Basic {}\r\n", basic(ALICE));
    // A compressible page, so the kept table and the compressed variants
    // both hold it.
    let version = |i: u32| format!("<p>version {i:04}</p>{}", " lorem ipsum".repeat(300));
    assert_eq!(
        raw_put(port, "/drop/page.html", &auth, version(0).as_bytes()).status,
        201
    );
    let current = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|n| {
            let (current, stop, auth) = (current.clone(), stop.clone(), auth.clone());
            std::thread::spawn(move || {
                let mut c = Client::connect(([127, 0, 0, 1], port).into());
                let coding = if n % 2 == 0 {
                    "Accept-Encoding: gzip\r\n"
                } else {
                    ""
                };
                let mut reads = 0;
                while !stop.load(Ordering::Relaxed) {
                    // What was current before the request was sent is the
                    // oldest version the answer may show.
                    let floor = current.load(Ordering::SeqCst);
                    c.send(format!(
                        "GET /drop/page.html HTTP/1.1\r\nHost: t\r\n{auth}{coding}\r\n"
                    ));
                    let r = c.reply().unwrap();
                    assert_eq!(r.status, 200);
                    let body = match r.header("content-encoding") {
                        Some("gzip") => {
                            use std::io::Read;
                            let mut out = Vec::new();
                            flate2::read::GzDecoder::new(&r.body[..])
                                .read_to_end(&mut out)
                                .unwrap();
                            out
                        }
                        _ => r.body,
                    };
                    let text = String::from_utf8(body).unwrap();
                    let shown: u32 = text[11..15].parse().unwrap();
                    assert!(
                        shown >= floor,
                        "a stale page: {shown} after {floor} was answered"
                    );
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for i in 1..=30 {
        // Long enough for the kept table and the compressor to take each
        // version (they wait until a file has not changed for a tick), so
        // stale entries would be there to be served.
        std::thread::sleep(std::time::Duration::from_millis(60));
        let r = raw_put(port, "/drop/page.html", &auth, version(i).as_bytes());
        assert_eq!(r.status, 204);
        current.store(i, Ordering::SeqCst);
    }
    stop.store(true, Ordering::Relaxed);
    let reads: u32 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads > 30, "{reads} reads");
    let report = running.report();
    assert!(report.cache_hits > 0, "the kept table answered some");
    assert!(report.cache_invalidations > 0, "{report:?}");
}

#[test]
fn explain_counts_uploads_and_the_json_log_the_bytes_received() {
    let site = Site::new();
    let log = site.tmp.path().join("access.log");
    let text = format!(
        "access-log = \"{}\"\naccess-log-format = \"json\"\n{RULES}",
        log.display()
    );
    let running = site.serve(&text);
    assert_eq!(
        put(&running, "/drop/a.bin", &[7u8; 1000], &["-u", ALICE]).status,
        201
    );
    assert_eq!(
        put(&running, "/drop/a.bin", &[8u8; 2000], &["-u", ALICE]).status,
        204
    );
    assert_eq!(delete(&running, "/drop/a.bin", &["-u", ALICE]).status, 204);
    assert_eq!(put(&running, "/drop/b.bin", b"x", &[]).status, 401);
    assert_eq!(put(&running, "/public/b.bin", b"x", &[]).status, 405);
    let w = running.report().writes;
    assert_eq!((w.created, w.replaced, w.deleted, w.bytes), (1, 1, 1, 3000));
    let refused: BTreeMap<u16, u64> = w.refused.into_iter().collect();
    assert_eq!(refused, BTreeMap::from([(401, 1), (405, 1)]));
    drop(running);
    let lines = std::fs::read_to_string(&log).unwrap();
    let puts: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["method"] == "PUT")
        .collect();
    let received: Vec<(u64, u64)> = puts
        .iter()
        .map(|v| {
            (
                v["status"].as_u64().unwrap(),
                v["received"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(received[..2], [(201, 1000), (204, 2000)]);
    assert_eq!(puts[0]["user"], "alice");
}
