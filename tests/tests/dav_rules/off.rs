//! Without `webdav` anywhere every WebDAV method is 405 with the `Allow`
//! a method the server does not know gets, and `OPTIONS` says no `DAV`;
//! with it, the same answers to PROPFIND and MKCOL over HTTP/1.1 and
//! HTTP/2 (h2c and h2 over TLS).

use super::*;
use nikaia_tests::curl::{curl_answer, CurlAnswer};
use nikaia_tests::TestPki;

#[test]
fn without_webdav_every_dav_method_is_405_as_before() {
    let rules = RULES.replace("webdav = true\n", "");
    assert!(!rules.contains("webdav"));
    let d = Drive::new("off", &rules);
    let running = d.serve();
    let addr = running.local_addr();
    let before = snapshot(d.path());
    let mut problems = Vec::new();
    for path in ["/drive/a.txt", "/drive/dir/", "/public/p.txt", "/drive/new"] {
        // What a method nobody serves gets here: the baseline.
        let base = req("BREW", path).send(addr);
        assert_eq!(base.status, 405, "BREW {path}");
        let allow = base.header("allow").expect("Allow").to_owned();
        let options = req("OPTIONS", path).send(addr);
        if options.header("dav").is_some() || options.header("ms-author-via").is_some() {
            problems.push(format!("OPTIONS {path} says DAV: {:?}", options.headers));
        }
        if let Some(a) = options.header("allow").filter(|a| *a != allow) {
            problems.push(format!("OPTIONS {path} allows {a}, a 405 {allow}"));
        }
        for method in [
            "PROPFIND",
            "PROPPATCH",
            "MKCOL",
            "COPY",
            "MOVE",
            "LOCK",
            "UNLOCK",
        ] {
            let reply = req(method, path)
                .h("Destination", "/drive/copied")
                .h("Depth", "0")
                .send(addr);
            if reply.status != 405 || reply.header("allow") != Some(allow.as_str()) {
                problems.push(format!(
                    "{method} {path}: {} Allow {:?}, want 405 Allow {allow:?}",
                    reply.status,
                    reply.header("allow")
                ));
            }
            for dav in ["PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE"] {
                if allow.contains(dav) {
                    problems.push(format!("{path}: Allow names {dav}: {allow}"));
                }
            }
        }
    }
    // A collection's DELETE without webdav: as before, a directory that
    // is not empty stays.
    let reply = req("DELETE", "/drive/dir/").send(addr);
    if (200..300).contains(&reply.status) {
        problems.push(format!(
            "DELETE of a full directory without webdav: {}",
            reply.status
        ));
    }
    assert_eq!(changes(&before, &snapshot(d.path())), Vec::<String>::new());
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn with_webdav_options_says_dav_1_and_allows_the_methods() {
    let d = Drive::new("on", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let reply = req("OPTIONS", "/drive/a.txt").send(addr);
    assert_eq!(reply.header("dav"), Some("1"), "{:?}", reply.headers);
    let allow = reply.header("allow").unwrap();
    for m in ["PROPFIND", "PROPPATCH", "COPY", "MOVE", "MKCOL"] {
        assert!(allow.contains(m), "{m} not in {allow}");
    }
    // Read-only: the top-level key alone.
    let reply = req("OPTIONS", "/public/p.txt").send(addr);
    assert_eq!(reply.header("dav"), Some("1"));
    let allow = reply.header("allow").unwrap();
    assert!(allow.contains("PROPFIND"), "{allow}");
    assert!(
        !allow.contains("MKCOL") && !allow.contains("MOVE"),
        "{allow}"
    );
    let reply = req("MKCOL", "/public/new/").send(addr);
    assert_eq!(reply.status, 405);
    assert!(!d.root().join("public/new").exists());
}

/// curl's answer, its `date`, `connection` and framing fields left out,
/// the rest sorted.
fn seen(dir: &Path, flags: &[&str], args: &[&str], url: &str) -> CurlAnswer {
    let mut all = flags.to_vec();
    all.extend_from_slice(args);
    let mut a = curl_answer(dir, &all, url);
    // The framing differs by protocol: HTTP/2 has no chunked coding.
    let framing = ["date", "connection", "transfer-encoding", "content-length"];
    a.headers.retain(|(n, _)| !framing.contains(&n.as_str()));
    a.headers.sort();
    a
}

#[test]
fn propfind_and_mkcol_answer_the_same_over_http_1_1_and_http_2() {
    let d = Drive::new("h2", RULES);
    let pki = TestPki::new();
    let plain = d.serve();
    let tls = d.0.serve(Some(&pki));
    let work = d.path().join("curl");
    std::fs::create_dir(&work).unwrap();
    let ca = pki.ca_pem.to_str().unwrap().to_owned();
    let propfind_body = "<?xml version=\"1.0\"?><D:propfind xmlns:D=\"DAV:\"><D:prop><D:getetag/>\
                         <D:resourcetype/><D:getcontentlength/></D:prop></D:propfind>";
    // (label, curl arguments, path): MKCOL rows name a new collection per
    // transport (`T`), then the same one again (405).
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            "PROPFIND 0",
            vec!["-X", "PROPFIND", "-H", "Depth: 0"],
            "/drive/a.txt",
        ),
        (
            "PROPFIND 1",
            vec!["-X", "PROPFIND", "-H", "Depth: 1"],
            "/drive/dir/",
        ),
        (
            "PROPFIND 1 coll",
            vec!["-X", "PROPFIND", "-H", "Depth: 1"],
            "/drive/coll/",
        ),
        (
            "PROPFIND prop",
            vec![
                "-X",
                "PROPFIND",
                "-H",
                "Depth: 1",
                "--data-binary",
                propfind_body,
            ],
            "/drive/dir/",
        ),
        (
            "PROPFIND infinity",
            vec!["-X", "PROPFIND", "-H", "Depth: infinity"],
            "/drive/",
        ),
        (
            "PROPFIND hidden",
            vec!["-X", "PROPFIND", "-H", "Depth: 0"],
            "/drive/.env",
        ),
        (
            "PROPFIND denied",
            vec!["-X", "PROPFIND", "-H", "Depth: 0"],
            "/drive/forbidden/",
        ),
        (
            "PROPFIND bad xml",
            vec![
                "-X",
                "PROPFIND",
                "-H",
                "Depth: 0",
                "--data-binary",
                "<D:propfind xmlns:D=\"DAV:\">",
            ],
            "/drive/a.txt",
        ),
        (
            "PROPFIND read-only",
            vec!["-X", "PROPFIND", "-H", "Depth: 1"],
            "/public/",
        ),
        ("MKCOL", vec!["-X", "MKCOL"], "/drive/newT/"),
        ("MKCOL again", vec!["-X", "MKCOL"], "/drive/newT/"),
        (
            "MKCOL missing parent",
            vec!["-X", "MKCOL"],
            "/drive/nothere/x/",
        ),
        ("MKCOL dot-name", vec!["-X", "MKCOL"], "/drive/.newT/"),
        (
            "MKCOL with a body",
            vec!["-X", "MKCOL", "--data-binary", "x"],
            "/drive/bodyT/",
        ),
        ("MKCOL no rule", vec!["-X", "MKCOL"], "/public/newT/"),
    ];
    let mut failures = Vec::new();
    for (transport, server, h1, h2, scheme) in [
        (
            "h2c",
            &plain,
            vec!["--http1.1"],
            vec!["--http2-prior-knowledge"],
            "http://127.0.0.1",
        ),
        (
            "h2",
            &tls,
            vec!["--http1.1", "--cacert", &ca],
            vec!["--http2", "--cacert", &ca],
            "https://localhost",
        ),
    ] {
        for (label, args, path) in &cases {
            let mut args = args.clone();
            args.extend_from_slice(&["-u", ALICE]);
            let url = |v: &str| {
                let path = path.replace('T', &format!("{transport}{v}"));
                format!("{scheme}:{}{path}", server.local_addr().port())
            };
            let mut one = seen(&work, &h1, &args, &url("1"));
            let mut two = seen(&work, &h2, &args, &url("2"));
            // The names differ by transport in MKCOL's rows: their
            // bodies and Location may too.
            for a in [&mut one, &mut two] {
                a.headers.retain(|(n, _)| n != "location");
                let text = String::from_utf8_lossy(&a.body)
                    .replace(&format!("{transport}1"), "T")
                    .replace(&format!("{transport}2"), "T");
                a.body = text.into_bytes();
            }
            let line = format!("{transport} {label} {path}");
            eprintln!("{line}: {} / {}", one.status, two.status);
            if one.version != "1.1" || two.version != "2" {
                failures.push(format!("{line}: versions {} {}", one.version, two.version));
            }
            if one.status != two.status || one.headers != two.headers || one.body != two.body {
                failures.push(format!(
                    "{line}: HTTP/1.1 {} {:?} {:?}\n  HTTP/2 {} {:?} {:?}",
                    one.status,
                    one.headers,
                    String::from_utf8_lossy(&one.body),
                    two.status,
                    two.headers,
                    String::from_utf8_lossy(&two.body)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} difference(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
