//! A site's rules (`spec/site.md`) on real sockets, with curl and raw
//! clients: header rules on every kind of answer, the security preset,
//! CORS and preflights, Basic authentication (and the ways around it that
//! must not work), a flood of wrong passwords, deny lists, and the name
//! normaliser. The client's address (`X-Forwarded-For`, PROXY headers):
//! `site_client.rs`.

use nikaia_std::fs::Root;
use nikaia_std::http::{dir_handler, Server};
use nikaia_tests::curl::curl;
use nikaia_tests::{start, Client, TestPki};

use nikaia_tests::site::{base64, runtime, serve, serve_reloading, site, tls_url, url};

// ---------------------------------------------------------------------------
// Header rules and the security preset.

const RULES: &str = r#"
not-found = "404.html"
cache-control = { default = "no-cache", "*.css" = "max-age=60" }

[[headers]]
match = "**"
set = { X-Frame-Options = "DENY" }
add = { X-Site = "one" }
always = true

[[headers]]
match = "*.html"
set = { Content-Security-Policy = "default-src 'self'" }

[[headers]]
match = "docs/*.pdf"
set = { Content-Type = "application/pdf", Content-Disposition = "attachment" }
remove = ["Accept-Ranges"]

[[headers]]
match = "*.css"
add = { X-Site = "two" }
set = { Cache-Control = "max-age=120" }
"#;

#[test]
fn header_rules_apply_to_every_answer_of_the_file() {
    let s = site();
    let running = serve(&s, runtime(&s, RULES, None));
    let a = curl(&url(&running, "/index.html"), &[]);
    assert_eq!(a.status, 200);
    assert_eq!(a.header("x-frame-options"), Some("DENY"));
    assert_eq!(
        a.header("content-security-policy"),
        Some("default-src 'self'")
    );
    assert_eq!(a.header("cache-control"), Some("no-cache"));
    // The index of `/`: its rules are index.html's.
    let top = curl(&url(&running, "/"), &[]);
    assert_eq!(
        top.header("content-security-policy"),
        Some("default-src 'self'")
    );

    // 206 and 304 carry the same rules.
    let etag = a.header("etag").unwrap().to_owned();
    let part = curl(&url(&running, "/index.html"), &["-H", "Range: bytes=0-3"]);
    assert_eq!((part.status, &part.body[..]), (206, &b"<h1>"[..]));
    assert_eq!(
        part.header("content-security-policy"),
        Some("default-src 'self'")
    );
    let not_modified = curl(
        &url(&running, "/index.html"),
        &["-H", &format!("If-None-Match: {etag}")],
    );
    assert_eq!(not_modified.status, 304);
    assert_eq!(not_modified.header("x-frame-options"), Some("DENY"));
    assert_eq!(
        not_modified.header("content-security-policy"),
        Some("default-src 'self'")
    );

    // Every matching rule applies, in order; a later `set` wins over the
    // cache-control key; `add` appends.
    let css = curl(&url(&running, "/page.css"), &[]);
    assert_eq!(css.header("cache-control"), Some("max-age=120"));
    assert_eq!(css.all("x-site"), ["one", "two"]);
    // The sidecar is answered under its file's rules.
    let coded = curl(
        &url(&running, "/page.css"),
        &["-H", "Accept-Encoding: gzip"],
    );
    assert_eq!(coded.header("content-encoding"), Some("gzip"));
    assert_eq!(coded.header("cache-control"), Some("max-age=120"));
    assert_eq!(coded.all("x-site"), ["one", "two"]);

    // Content-Type and Content-Disposition override, on the file's bytes.
    let pdf = curl(&url(&running, "/docs/report.pdf"), &[]);
    assert_eq!(pdf.header("content-type"), Some("application/pdf"));
    assert_eq!(pdf.header("content-disposition"), Some("attachment"));
    assert_eq!(pdf.header("accept-ranges"), None);

    // A 404 gets the `always` rules only; the not-found page's own name
    // decides (404.html is not *.pdf).
    let missing = curl(&url(&running, "/docs/missing.pdf"), &[]);
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body, b"<h1>not here</h1>");
    assert_eq!(missing.header("x-frame-options"), Some("DENY"));
    assert_eq!(missing.header("content-security-policy"), None);
    assert_eq!(missing.header("content-disposition"), None);
    // The redirect to the slash is an answer of the handler too.
    let redirect = curl(&url(&running, "/docs"), &[]);
    assert_eq!(redirect.status, 301);
    assert_eq!(redirect.header("x-frame-options"), Some("DENY"));
    // HEAD is GET without the body.
    let head = curl(&url(&running, "/docs/report.pdf"), &["-I"]);
    assert_eq!(head.header("content-disposition"), Some("attachment"));
    // A program's own route is untouched.
    let who = curl(&url(&running, "/who"), &[]);
    assert_eq!(who.header("x-frame-options"), None);
}

#[test]
fn the_security_preset_sends_hsts_only_over_tls() {
    let s = site();
    let pki = TestPki::new();
    let text = "security-headers = { hsts-max-age = \"1h\", hsts-subdomains = true }\n";
    let plain = serve(&s, runtime(&s, text, None));
    let tls = serve(&s, runtime(&s, text, Some(&pki)));
    let cacert = pki.ca_pem.to_str().unwrap();
    for (seen, over_tls) in [
        (curl(&url(&plain, "/a.txt"), &[]), false),
        (curl(&url(&plain, "/nope"), &[]), false),
        (curl(&tls_url(&tls, "/a.txt"), &["--cacert", cacert]), true),
        (curl(&tls_url(&tls, "/nope"), &["--cacert", cacert]), true),
    ] {
        assert_eq!(seen.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(
            seen.header("referrer-policy"),
            Some("strict-origin-when-cross-origin")
        );
        let hsts = over_tls.then_some("max-age=3600; includeSubDomains");
        assert_eq!(seen.header("strict-transport-security"), hsts, "{seen:?}");
    }
}

// ---------------------------------------------------------------------------
// CORS and OPTIONS.

const CORS: &str = r#"
[cors]
origins = ["https://app.example"]
headers = ["range"]
expose = ["Content-Range"]
max-age = "10m"
credentials = true

[[auth]]
match = "staging/**"
htpasswd = "users.htpasswd"
plain-http = true
"#;

#[test]
fn a_preflight_is_204_with_the_cors_headers_and_no_file() {
    let s = site();
    let running = serve(&s, runtime(&s, CORS, None));
    let preflight = |origin: &str, method: &str, headers: &str, path: &str| {
        curl(
            &url(&running, path),
            &[
                "-X",
                "OPTIONS",
                "-H",
                &format!("Origin: {origin}"),
                "-H",
                &format!("Access-Control-Request-Method: {method}"),
                "-H",
                &format!("Access-Control-Request-Headers: {headers}"),
            ],
        )
    };
    let ok = preflight("https://app.example", "GET", "Range", "/a.txt");
    assert_eq!(ok.status, 204);
    assert!(ok.body.is_empty());
    assert_eq!(
        ok.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(ok.header("access-control-allow-methods"), Some("GET, HEAD"));
    assert_eq!(ok.header("access-control-allow-headers"), Some("range"));
    assert_eq!(ok.header("access-control-allow-credentials"), Some("true"));
    assert_eq!(ok.header("access-control-max-age"), Some("600"));
    assert_eq!(ok.header("vary"), Some("Origin"));
    assert_eq!(ok.header("content-length"), None);
    // Before authentication: browsers send none on a preflight. No bytes
    // of the protected file go out.
    let protected = preflight("https://app.example", "GET", "", "/staging/secret.txt");
    assert_eq!(protected.status, 204);
    assert!(protected.body.is_empty());
    assert_eq!(
        protected.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    // Refused: an origin, a method, a header.
    for refused in [
        preflight("https://evil.example", "GET", "", "/a.txt"),
        preflight("https://app.example", "DELETE", "", "/a.txt"),
        preflight("https://app.example", "GET", "X-Other", "/a.txt"),
        preflight("null", "GET", "", "/a.txt"),
    ] {
        assert_eq!(refused.status, 204);
        assert_eq!(refused.header("access-control-allow-origin"), None);
        assert_eq!(refused.header("vary"), Some("Origin"));
    }

    // Simple requests: allowed origin gets the headers; every answer
    // varies on Origin.
    let get = curl(
        &url(&running, "/a.txt"),
        &["-H", "Origin: https://app.example"],
    );
    assert_eq!(
        get.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(
        get.header("access-control-expose-headers"),
        Some("content-range")
    );
    assert_eq!(get.header("vary"), Some("Accept-Encoding, Origin"));
    let evil = curl(
        &url(&running, "/a.txt"),
        &["-H", "Origin: https://evil.example"],
    );
    assert_eq!(evil.status, 200);
    assert_eq!(evil.header("access-control-allow-origin"), None);
    assert_eq!(evil.header("vary"), Some("Accept-Encoding, Origin"));
    let none = curl(&url(&running, "/nope"), &[]);
    assert_eq!(none.status, 404);
    assert_eq!(none.header("vary"), Some("Origin"));

    // OPTIONS that is not a preflight: 204 with Allow.
    let options = curl(&url(&running, "/a.txt"), &["-X", "OPTIONS"]);
    assert_eq!(options.status, 204);
    assert_eq!(options.header("allow"), Some("GET, HEAD, OPTIONS"));
    // And on a program's route without an OPTIONS handler.
    let who = curl(&url(&running, "/who"), &["-X", "OPTIONS"]);
    assert_eq!(
        (who.status, who.header("allow")),
        (204, Some("GET, HEAD, OPTIONS"))
    );
}

#[test]
fn any_origin_is_on_every_answer_and_listings_leave_denied_names_out() {
    let s = site();
    let text = "[cors]\norigins = \"*\"\n[[deny]]\nmatch = \"*.bak\"\n";
    let handler = dir_handler(Root::dir(&s.root).unwrap(), false, true);
    let running = start(Server::with_runtime(runtime(&s, text, None)).route("/*path", handler));
    // Without an Origin too: a cache may keep this answer for every page.
    let plain = curl(&url(&running, "/a.txt"), &[]);
    assert_eq!(plain.header("access-control-allow-origin"), Some("*"));
    assert_eq!(plain.header("vary"), Some("Accept-Encoding"));
    let listing = curl(&url(&running, "/docs/"), &[]);
    let page = String::from_utf8_lossy(&listing.body);
    assert!(
        page.contains("report.pdf") && !page.contains("old.bak"),
        "{page}"
    );
}

// ---------------------------------------------------------------------------
// Basic authentication and deny lists.

const AUTH: &str = r#"
fallback = "staging/index.html"
not-found = "404.html"

[[auth]]
match = ["staging/**"]
htpasswd = "users.htpasswd"
realm = "staging area"

[[deny]]
match = ["*.bak"]

[[deny]]
match = "private/**"
status = 403
"#;

#[test]
fn protected_names_need_credentials_and_the_ways_around_do_not_work() {
    let s = site();
    let pki = TestPki::new();
    let cacert = pki.ca_pem.to_str().unwrap().to_owned();
    // Plain HTTP: refused outright, never asked for a password.
    let plain = serve(&s, runtime(&s, AUTH, None));
    let refused = curl(
        &url(&plain, "/staging/secret.txt"),
        &["-u", "alice:open sesame"],
    );
    assert_eq!(refused.status, 403);
    assert_eq!(refused.header("www-authenticate"), None);

    let tls = serve(&s, runtime(&s, AUTH, Some(&pki)));
    let get = |path: &str, extra: &[&str]| {
        let mut args = vec!["--cacert", &cacert, "--path-as-is"];
        args.extend_from_slice(extra);
        curl(&tls_url(&tls, path), &args)
    };
    let ok = get("/staging/secret.txt", &["-u", "alice:open sesame"]);
    assert_eq!((ok.status, &ok.body[..]), (200, &b"the secret"[..]));
    assert_eq!(ok.header("cache-control"), Some("private"));
    // A password with a colon in it.
    assert_eq!(
        get("/staging/secret.txt", &["-u", "bob:b0b:pass"]).status,
        200
    );
    // Verified a moment ago: the table answers (same result).
    assert_eq!(get("/staging/", &["-u", "alice:open sesame"]).status, 200);

    let challenge = "Basic realm=\"staging area\", charset=\"UTF-8\"";
    for (what, path, extra) in [
        ("no credentials", "/staging/secret.txt", vec![]),
        (
            "a wrong password",
            "/staging/secret.txt",
            vec!["-u", "alice:wrong"],
        ),
        (
            "an unknown user",
            "/staging/secret.txt",
            vec!["-u", "mallory:open sesame"],
        ),
        (
            "another scheme",
            "/staging/secret.txt",
            vec!["-H", "Authorization: Bearer x"],
        ),
        ("the directory", "/staging/", vec![]),
        ("an encoded slash", "/staging%2Fsecret.txt", vec![]),
        ("double slashes", "//staging//secret.txt", vec![]),
        ("a sidecar by name", "/staging/secret.txt.gz", vec![]),
        (
            "a sidecar by coding",
            "/staging/secret.txt",
            vec!["-H", "Accept-Encoding: gzip"],
        ),
        (
            "a range",
            "/staging/secret.txt",
            vec!["-H", "Range: bytes=0-3"],
        ),
        ("HEAD", "/staging/secret.txt", vec!["-I"]),
        (
            "a conditional",
            "/staging/secret.txt",
            vec!["-H", "If-None-Match: *"],
        ),
        ("encoded letters", "/st%61ging/secret.txt", vec![]),
    ] {
        let seen = get(path, &extra);
        assert_eq!(seen.status, 401, "{what}: {seen:?}");
        assert_eq!(seen.header("www-authenticate"), Some(challenge), "{what}");
        assert!(
            !String::from_utf8_lossy(&seen.body).contains("secret"),
            "{what}"
        );
    }
    // Dot segments never reach a rule or a file.
    for path in [
        "/x/../staging/secret.txt",
        "/staging/./secret.txt",
        "/%2e%2e/root/staging/secret.txt",
    ] {
        let seen = get(path, &[]);
        assert_eq!(seen.status, 404, "{path}: {seen:?}");
    }
    // The fallback is protected too: a missing name is not a way in.
    let fallback = get("/nothing-here", &[]);
    assert_eq!(fallback.status, 404, "{fallback:?}");
    assert!(!String::from_utf8_lossy(&fallback.body).contains("staging"));
    // Even with credentials: they are checked for the name asked for, which
    // no rule protects, so a protected fallback is not sent for it.
    let fallback = get("/nothing-here", &["-u", "alice:open sesame"]);
    assert_eq!(fallback.status, 404, "{fallback:?}");

    // Deny lists: every method, before anything else; a 404 is the
    // not-found page, as for a missing name.
    let denied = get("/backup.bak", &[]);
    assert_eq!(
        (denied.status, &denied.body[..]),
        (404, &b"<h1>not here</h1>"[..])
    );
    assert_eq!(get("/backup.bak", &["-I"]).status, 404);
    assert_eq!(get("/private/x.txt", &[]).status, 403);
    assert_eq!(get("/private/x.txt", &["-X", "OPTIONS"]).status, 403);
    assert_eq!(get("/private//x.txt", &[]).status, 403);
}

#[test]
fn a_flood_of_wrong_passwords_does_not_stall_the_others() {
    let s = site();
    let text =
        "[[auth]]\nmatch = \"staging/**\"\nhtpasswd = \"users.htpasswd\"\nplain-http = true\n";
    let running = serve(&s, runtime(&s, text, None));
    let addr = running.local_addr();
    let flood: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut c = Client::connect(addr);
                for i in 0..40 {
                    c.send(format!(
                        "GET /staging/secret.txt HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {}\r\n\r\n",
                        base64(&format!("alice:wrong-{t}-{i}"))
                    ));
                    seen.push(c.reply().expect("a reply").status);
                }
                seen
            })
        })
        .collect();
    // Meanwhile others are served by the workers, and a logged-in client
    // (verified once) too.
    let mut public = Client::connect(addr);
    let login = format!(
        "GET /staging/secret.txt HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {}\r\n\r\n",
        base64("alice:open sesame")
    );
    let mut user = Client::connect(addr);
    user.send(&login);
    let first = user.reply().unwrap().status;
    assert!(first == 200 || first == 503, "{first}");
    for _ in 0..200 {
        assert_eq!(public.get("/a.txt").status, 200);
    }
    let statuses: Vec<u16> = flood.into_iter().flat_map(|t| t.join().unwrap()).collect();
    assert!(
        statuses.iter().all(|&s| s == 401 || s == 503),
        "{statuses:?}"
    );
    assert!(statuses.contains(&401));
    user.send(&login);
    assert_eq!(user.reply().unwrap().status, 200);
}

// ---------------------------------------------------------------------------
// The name normaliser.

#[test]
fn empty_segments_merge_and_dot_segments_are_404() {
    let s = site();
    let running = serve(&s, runtime(&s, "", None));
    for path in ["/a.txt", "//a.txt", "///a.txt", "/docs//report.pdf"] {
        let seen = curl(&url(&running, path), &["--path-as-is"]);
        assert_eq!(seen.status, 200, "{path}");
    }
    for path in [
        "/./a.txt",
        "/docs/../a.txt",
        "/docs/%2e%2e/a.txt",
        "/docs/.",
    ] {
        let seen = curl(&url(&running, path), &["--path-as-is"]);
        assert_eq!(seen.status, 404, "{path}");
    }
}

#[test]
fn a_reload_reads_the_htpasswd_file_again() {
    let s = site();
    let text =
        "[[auth]]\nmatch = \"staging/**\"\nhtpasswd = \"users.htpasswd\"\nplain-http = true\n";
    let running = serve_reloading(&s, text);
    let secret = url(&running, "/staging/secret.txt");
    assert_eq!(curl(&secret, &["-u", "alice:open sesame"]).status, 200);
    assert_eq!(curl(&secret, &["-u", "carol:carol"]).status, 401);
    // alice leaves, carol comes (`htpasswd -nbB -C 5 carol carol`).
    std::fs::write(
        s.tmp.path().join("users.htpasswd"),
        "carol:$2y$05$nijZb76cjvljrEqb0fqX2eK7hh.RojIOCy7L5YmQaS40gXpwi9T9K\n",
    )
    .unwrap();
    running.reload().expect("the reload is taken");
    assert_eq!(curl(&secret, &["-u", "carol:carol"]).status, 200);
    // Verified a moment ago, but for the old file: checked again, refused.
    assert_eq!(curl(&secret, &["-u", "alice:open sesame"]).status, 401);
    // A file with a scheme that is not bcrypt refuses the reload whole.
    std::fs::write(
        s.tmp.path().join("users.htpasswd"),
        "carol:$apr1$0EcTl.Ch$gIRHd1QnuVCXCuARl2v6P0\n",
    )
    .unwrap();
    let problems = running.reload().expect_err("refused");
    assert!(
        problems.iter().any(|p| p.contains("htpasswd -B")),
        "{problems:?}"
    );
    assert_eq!(curl(&secret, &["-u", "carol:carol"]).status, 200);
}
