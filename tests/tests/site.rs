//! A site's rules (`spec/site.md`) on real sockets, with curl and raw
//! clients: header rules on every kind of answer, the security preset,
//! CORS and preflights, the client's address through `X-Forwarded-For`
//! and PROXY headers, Basic authentication (and the ways around it that
//! must not work), a flood of wrong passwords, deny lists, and the name
//! normaliser.

use nikaia_std::fs::Root;
use nikaia_std::http::{dir_handler, Running, Server};
use nikaia_std::rt::{LogTarget, Runtime};
use nikaia_tests::curl::curl;
use nikaia_tests::{start, test_runtime, Client, TestPki, TlsClient};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// `htpasswd -nbB -C 5 alice 'open sesame'`, and bob's `b0b:pass`.
const USERS: &str = "\
# staging
alice:$2y$05$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K
bob:$2y$05$3Ti.SB88ruvccek7oAgm3e8koIVqVED9LvYhxKKGWocrGZZLjHSu6
";

struct Site {
    tmp: tempfile::TempDir,
    root: PathBuf,
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn site() -> Site {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    write(&root.join("index.html"), b"<h1>top</h1>");
    write(&root.join("a.txt"), b"0123456789abcdef");
    write(&root.join("page.css"), b"body { color: red }");
    std::thread::sleep(Duration::from_millis(5));
    write(&root.join("page.css.gz"), b"pretend gzip bytes");
    write(&root.join("docs/report.pdf"), b"%PDF-1.7 pretend");
    write(&root.join("docs/old.bak"), b"old");
    write(&root.join("404.html"), b"<h1>not here</h1>");
    write(&root.join("staging/index.html"), b"<h1>staging</h1>");
    write(&root.join("staging/secret.txt"), b"the secret");
    std::thread::sleep(Duration::from_millis(5));
    write(&root.join("staging/secret.txt.gz"), b"secret, coded");
    write(&root.join("backup.bak"), b"old");
    write(&root.join("private/x.txt"), b"private");
    write(&tmp.path().join("users.htpasswd"), USERS.as_bytes());
    std::thread::sleep(Duration::from_millis(30));
    Site { tmp, root }
}

/// The runtime of `text` (written beside the site, so `htpasswd` is found),
/// on a loopback port with two workers; `pki` makes it HTTPS.
fn runtime(site: &Site, text: &str, pki: Option<&TestPki>) -> Runtime {
    let file = site.tmp.path().join("runtime.toml");
    std::fs::write(&file, text).unwrap();
    let parsed = Runtime::load(&file).unwrap_or_else(|e| panic!("{e:?}"));
    let base = pki.map_or_else(test_runtime, TestPki::runtime);
    let mut rt = parsed;
    if rt.listen == Runtime::default().listen {
        rt.listen = base.listen;
    }
    rt.workers = 2;
    rt.tls_cert = base.tls_cert;
    rt.tls_key = base.tls_key;
    if rt.access_log == LogTarget::Stderr {
        rt.access_log = LogTarget::Off;
    }
    rt
}

/// `nikaia serve`'s routes: the directory handler for GET, HEAD and
/// OPTIONS, and `/who` answering the request's client and peer.
fn serve(site: &Site, rt: Runtime) -> Running {
    let handler = Arc::new(dir_handler(Root::dir(&site.root).unwrap(), false, false));
    let options = handler.clone();
    start(
        Server::with_runtime(rt)
            .route("/who", |req| format!("{} {}", req.client(), req.peer()))
            .route("/*path", move |req| handler(req))
            .method("OPTIONS", "/*path", move |req| options(req)),
    )
}

fn url(running: &Running, path: &str) -> String {
    format!("http://127.0.0.1:{}{path}", running.local_addr().port())
}

fn tls_url(running: &Running, path: &str) -> String {
    format!("https://localhost:{}{path}", running.local_addr().port())
}

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
// The client's address.

fn read_log(path: &Path, lines: usize) -> Vec<String> {
    for _ in 0..200 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let got: Vec<String> = text.lines().map(str::to_owned).collect();
        if got.len() >= lines {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the access log has fewer than {lines} lines");
}

#[test]
fn x_forwarded_for_is_believed_only_from_a_trusted_peer() {
    let s = site();
    let who = |trusted: &str, xff: &[&str]| {
        let text = format!("trusted-proxies = [{trusted}]\n");
        let running = serve(&s, runtime(&s, &text, None));
        let mut args = Vec::new();
        for v in xff {
            args.push("-H".to_owned());
            args.push(format!("X-Forwarded-For: {v}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        String::from_utf8(curl(&url(&running, "/who"), &args).body).unwrap()
    };
    // Untrusted: the header is ignored, whatever it says.
    let seen = who("\"10.0.0.0/8\"", &["198.51.100.7"]);
    assert!(seen.starts_with("127.0.0.1:"), "{seen}");
    // Trusted: the rightmost address that is not trusted.
    let seen = who(
        "\"127.0.0.1\", \"10.0.0.0/8\"",
        &["6.6.6.6, 198.51.100.7, 10.2.3.4"],
    );
    assert!(seen.starts_with("198.51.100.7:0 127.0.0.1:"), "{seen}");
    let seen = who("\"127.0.0.0/8\"", &["6.6.6.6", "[2001:db8::5]:443"]);
    assert!(seen.starts_with("[2001:db8::5]:0 "), "{seen}");
}

#[test]
fn the_access_log_names_the_client_and_the_user() {
    let s = site();
    let log = s.tmp.path().join("access.log");
    let text = format!(
        "access-log = {:?}\ntrusted-proxies = [\"127.0.0.1\"]\n\
         [[auth]]\nmatch = \"staging/**\"\nhtpasswd = \"users.htpasswd\"\nplain-http = true\n",
        log.to_str().unwrap()
    );
    let running = serve(&s, runtime(&s, &text, None));
    let ok = curl(
        &url(&running, "/staging/secret.txt"),
        &[
            "-u",
            "alice:open sesame",
            "-H",
            "X-Forwarded-For: 203.0.113.5",
        ],
    );
    assert_eq!((ok.status, &ok.body[..]), (200, &b"the secret"[..]));
    let lines = read_log(&log, 1);
    assert!(lines[0].starts_with("203.0.113.5 - alice ["), "{lines:?}");
}

/// A v1 PROXY header for a client at `src`.
fn proxy_v1(src: &str) -> String {
    format!("PROXY TCP4 {src} 127.0.0.1 51000 8080\r\n")
}

/// A v2 PROXY header, TCP over IPv6, from `[2001:db8::9]:40000`.
fn proxy_v2() -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.extend_from_slice(&[0x21, 0x21, 0, 36]);
    let src: std::net::Ipv6Addr = "2001:db8::9".parse().unwrap();
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
    h.extend_from_slice(&40000u16.to_be_bytes());
    h.extend_from_slice(&443u16.to_be_bytes());
    h
}

/// Sends `bytes` on a new connection and reads until the server closes.
fn exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    out
}

fn proxied_site(s: &Site, trusted: &str, pki: Option<&TestPki>) -> Running {
    let text = format!(
        "trusted-proxies = [{trusted}]\nlisten = {{ address = \"127.0.0.1:0\", proxy-protocol = true }}\n"
    );
    serve(s, runtime(s, &text, pki))
}

#[test]
fn proxy_headers_are_required_taken_from_trusted_peers_and_bounded() {
    let s = site();
    let running = proxied_site(&s, "\"127.0.0.1\"", None);
    let addr = running.local_addr();
    let get = b"GET /who HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";

    let v1 = exchange(addr, &[proxy_v1("192.0.2.44").as_bytes(), get].concat());
    let v1 = String::from_utf8_lossy(&v1);
    assert!(v1.starts_with("HTTP/1.1 200"), "{v1}");
    assert!(v1.contains("192.0.2.44:51000 127.0.0.1:"), "{v1}");

    let v2 = exchange(addr, &[&proxy_v2()[..], get].concat());
    let v2 = String::from_utf8_lossy(&v2);
    assert!(v2.contains("[2001:db8::9]:40000 127.0.0.1:"), "{v2}");

    // curl's own PROXY v1, and h2c's preface after the header.
    let seen = curl(&url(&running, "/who"), &["--haproxy-protocol"]);
    assert_eq!(seen.status, 200);
    let seen = curl(
        &url(&running, "/a.txt"),
        &["--haproxy-protocol", "--http2-prior-knowledge"],
    );
    assert_eq!(
        (seen.status, &seen.body[..]),
        (200, &b"0123456789abcdef"[..])
    );

    // Without a header, with a malformed one, or one past the bound: closed
    // without an answer.
    for bad in [
        get.to_vec(),
        b"PROXY TCP4 192.0.2.1 127.0.0.1 1 2\n".to_vec(),
        b"PROXY TCP4 999.0.2.1 127.0.0.1 1 2\r\n".to_vec(),
        b"PROXY TCP4 192.0.2.1  127.0.0.1 1 2\r\n".to_vec(),
        [b"PROXY UNKNOWN ".to_vec(), vec![b'x'; 200]].concat(),
        {
            let mut h = proxy_v2();
            h[15] = 0xff; // a length past the bound
            h[14] = 0xff;
            h
        },
    ] {
        assert_eq!(
            exchange(addr, &bad),
            b"",
            "{:?}",
            String::from_utf8_lossy(&bad)
        );
    }
    // Everyone else is still served.
    let seen = curl(&url(&running, "/a.txt"), &["--haproxy-protocol"]);
    assert_eq!(seen.status, 200);

    // From a peer that is not trusted, even a good header is refused.
    let untrusted = proxied_site(&s, "\"10.0.0.0/8\"", None);
    let closed = exchange(
        untrusted.local_addr(),
        &[proxy_v1("192.0.2.44").as_bytes(), get].concat(),
    );
    assert_eq!(closed, b"");
}

#[test]
fn a_proxy_header_comes_before_the_tls_handshake() {
    let s = site();
    let pki = TestPki::new();
    let running = proxied_site(&s, "\"127.0.0.1\"", Some(&pki));
    let mut tcp = TcpStream::connect(running.local_addr()).unwrap();
    tcp.write_all(proxy_v1("192.0.2.80").as_bytes()).unwrap();
    let mut tls = TlsClient::over(tcp, pki.client_config());
    let reply = tls.get("/who");
    assert_eq!(reply.status, 200);
    assert!(
        reply.text().starts_with("192.0.2.80:51000 "),
        "{}",
        reply.text()
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

fn base64(text: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, &b| n << 8 | b as u32) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
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
    let file = s.tmp.path().join("runtime.toml");
    let text =
        "[[auth]]\nmatch = \"staging/**\"\nhtpasswd = \"users.htpasswd\"\nplain-http = true\n";
    let rt = runtime(&s, text, None);
    let handler = dir_handler(Root::dir(&s.root).unwrap(), false, false);
    let running = start(
        Server::with_runtime(rt)
            .route("/*path", handler)
            .reload_from(&file, |rt| {
                rt.listen = vec![SocketAddr::from(([127, 0, 0, 1], 0)).into()];
                rt.access_log = LogTarget::Off;
            }),
    );
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
