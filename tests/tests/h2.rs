//! HTTP/2 over real sockets with real clients: h2c by prior knowledge on a
//! plain listener, `h2` by ALPN on a TLS one (curl, nghttp, h2load, httpwg,
//! openssl, rustls, and a minimal client written here). Every answer must be
//! the one HTTP/1.1 gives, but for the connection's own headers.

use nikaia_std::fs::{self, Root};
use nikaia_std::http::{dir_handler, File, Response, Running, Server};
use nikaia_std::rt::{LogTarget, Runtime};
use nikaia_std::{html, Bytes};
use nikaia_tests::{start, test_runtime, TestPki, TlsClient};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Random-looking bytes (xorshift64*), reproducible from `seed`.
fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

fn write(path: &Path, bytes: &[u8]) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

/// A runtime for tests from runtime-file text (loopback, port 0, two
/// workers, no access log), over TLS with `pki`'s pair when given.
fn runtime_from(toml: &str, pki: Option<&TestPki>) -> Runtime {
    let parsed = Runtime::parse(toml, Path::new("test.toml")).expect("the runtime text parses");
    let base = match pki {
        Some(pki) => pki.runtime(),
        None => test_runtime(),
    };
    let mut rt = parsed;
    rt.listen = base.listen;
    rt.workers = base.workers;
    rt.access_log = base.access_log;
    rt.tls_cert = base.tls_cert;
    rt.tls_key = base.tls_key;
    rt
}

/// `nikaia serve DIR`'s handler for every path.
fn dir_server(rt: Runtime, root: &Path, list: bool) -> Running {
    let root = Root::dir(root).unwrap();
    start(Server::with_runtime(rt).route("/*path", dir_handler(root, false, list)))
}

fn curl(args: &[&str]) -> Output {
    Command::new("curl")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("curl runs (test.sh installs it)")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn base(server: &Running) -> String {
    format!("http://127.0.0.1:{}", server.local_addr().port())
}

fn tls_base(server: &Running) -> String {
    format!("https://localhost:{}", server.local_addr().port())
}

// ---------------------------------------------------------------------------
// 1. Byte-exact downloads over h2c and h2.

#[test]
fn downloads_are_byte_exact_over_h2c_and_h2_with_tls() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let sizes = [
        0usize,
        1,
        16_375,
        16_384,
        16_385,
        100_000,
        1 << 20,
        64 << 20,
    ];
    let contents: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| random(len, i as u64 + 1))
        .collect();
    for (i, c) in contents.iter().enumerate() {
        write(&root.join(format!("s{i}.bin")), c);
    }
    std::thread::sleep(Duration::from_millis(30));
    let pki = TestPki::new();
    let plain = dir_server(test_runtime(), &root, false);
    let tls = dir_server(pki.runtime(), &root, false);
    let ca = pki.ca_pem.to_str().unwrap().to_owned();
    let transports: [(&str, String, Vec<&str>); 2] = [
        ("h2c", base(&plain), vec!["--http2-prior-knowledge"]),
        ("h2", tls_base(&tls), vec!["--http2", "--cacert", &ca]),
    ];
    for (label, url, flags) in &transports {
        let out_dir = tmp.path().join(label);
        std::fs::create_dir(&out_dir).unwrap();
        // One connection for every URL over TLS. For h2c, one curl each:
        // curl 7.88 (Debian 12) breaks a reused prior-knowledge connection
        // itself, "Error in the HTTP2 framing layer" before its second
        // request is sent (curl/curl#10634, fixed in 8.0.0).
        let groups: Vec<Vec<usize>> = match *label {
            "h2c" => (0..sizes.len()).map(|i| vec![i]).collect(),
            _ => vec![(0..sizes.len()).collect()],
        };
        let mut lines = Vec::new();
        for group in &groups {
            let mut args: Vec<String> = ["-sS", "--fail"].map(String::from).to_vec();
            args.extend(flags.iter().map(|s| s.to_string()));
            args.push("-w".into());
            args.push("%{http_version} %{http_code} %{num_connects} %{size_download}\n".into());
            for &i in group {
                args.push(format!("{url}/s{i}.bin"));
                args.push("-o".into());
                args.push(out_dir.join(i.to_string()).to_str().unwrap().into());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let run = curl(&args);
            assert!(run.status.success(), "{label}: {run:?}");
            lines.extend(text(&run.stdout).lines().map(String::from));
        }
        assert_eq!(lines.len(), sizes.len(), "{label}: {lines:?}");
        let mut connects = 0;
        for (i, line) in lines.iter().enumerate() {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f[0], "2", "{label}: HTTP version of s{i}.bin: {line}");
            assert_eq!(f[1], "200", "{label}: s{i}.bin: {line}");
            assert_eq!(f[3], sizes[i].to_string(), "{label}: s{i}.bin: {line}");
            connects += f[2].parse::<usize>().unwrap();
        }
        assert_eq!(
            connects,
            groups.len(),
            "{label}: one connection per curl: {lines:?}"
        );
        for (i, want) in contents.iter().enumerate() {
            // curl -o writes no file for an empty body.
            let got = std::fs::read(out_dir.join(i.to_string())).unwrap_or_default();
            assert!(
                got == *want,
                "{label}: s{i}.bin ({} bytes): {} bytes came, first difference at {:?}",
                want.len(),
                got.len(),
                got.iter().zip(want).position(|(a, b)| a != b)
            );
        }
    }
    assert!(
        plain.report().h2.connections >= 1,
        "{:?}",
        plain.report().h2
    );
    assert!(tls.report().h2.connections >= 1, "{:?}", tls.report().h2);
}

// ---------------------------------------------------------------------------
// 2. The same answer over HTTP/1.1 and HTTP/2, for every row and file case.

struct Site {
    tmp: tempfile::TempDir,
    root: PathBuf,
}

fn site() -> Site {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    write(&root.join("index.html"), b"<h1>top</h1>");
    write(&root.join("big.bin"), &random(100_000, 7));
    write(&root.join("small.txt"), &random(4096, 8));
    write(&root.join("sp ace.txt"), b"a name with a space");
    write(&root.join("docs/index.html"), b"<h1>docs</h1>");
    write(&root.join("sub/a.txt"), b"a");
    write(&root.join("homes/home.html"), b"<h1>home</h1>");
    write(&root.join("sub/b&<c>.txt"), b"b");
    write(&root.join("404.html"), b"<h1>not here</h1>");
    write(&root.join("app.html"), b"<div id=app></div>");
    write(&root.join("assets/app-1a2b3c.js"), b"console.log(1)");
    write(&root.join("assets/logo.txt"), b"logo");
    write(&root.join(".env"), b"SECRET=1");
    write(&root.join("mapped.bin"), &random(70_000, 9));
    // Text with no sidecar: the server compresses it and keeps the result.
    write(
        &root.join("app.js"),
        &b"console.log(\"hello\");\n".repeat(1000),
    );
    // Names that are not UTF-8 (Latin-1 `café.txt`, a directory `d\xff/`).
    let bytes = |b: &[u8]| root.join(std::ffi::OsStr::from_bytes(b));
    write(&bytes(b"caf\xe9.txt"), b"a Latin-1 name");
    write(&bytes(b"d\xff/index.html"), b"<h1>d</h1>");
    write(&bytes(b"d\xff/x\xfe.txt"), b"inside");
    write(&bytes(b"x\xff.secret"), b"denied");
    write(&tmp.path().join("secret.txt"), b"outside");
    std::os::unix::fs::symlink("../secret.txt", root.join("out")).unwrap();
    // Sidecars, written after their file (a sidecar older than its file is
    // stale).
    write(&root.join("page.css"), &random(5000, 10));
    std::thread::sleep(Duration::from_millis(5));
    write(&root.join("page.css.gz"), &random(1200, 11));
    write(&root.join("page.css.br"), &random(900, 12));
    // Old enough for the kept table (it skips files changed this tick).
    std::thread::sleep(Duration::from_millis(30));
    Site { tmp, root }
}

/// Every row of the body table on its own route, a program's own
/// `http::File`, and `dir_handler` (with listings) for the rest.
fn rows_app(rt: Runtime, root: &Path) -> Running {
    let dir = Root::dir(root).unwrap();
    let mapped = fs::map("mapped.bin", &dir).unwrap();
    let page = html::Raw::new("<p>raw</p>");
    let blob = Bytes::from(random(3000, 13));
    let files = dir.clone();
    let wrapped = dir.clone();
    start(
        Server::with_runtime(rt)
            .route("/row/string", |req| format!("you asked for {}", req.path()))
            .route("/row/static", |_| "a static str")
            .route("/row/html", move |_| page.clone())
            .route("/row/bytes", move |_| blob.clone())
            .route("/row/mapped", move |_| mapped.clone())
            .route("/row/response", |_| {
                Response::new(201)
                    .header("Content-Type", "text/css")
                    .header("X-Extra", "one")
                    .header("Cache-Control", "max-age=5")
                    .body("body{}")
            })
            .route("/row/ok", |_| -> Result<&'static str, String> {
                Ok("fine")
            })
            .route("/row/err", |_| -> Result<&'static str, String> {
                Err("secret detail".into())
            })
            .route("/row/panic", |_| -> &'static str { panic!("handler bug") })
            .method("POST", "/row/echo", |req| req.body().clone())
            .route("/row/wrapped", move |_| {
                Response::new(200)
                    .header("Content-Type", "text/plain")
                    .header("X-Wrapped", "yes")
                    .body(File::new("big.bin", &wrapped))
            })
            .route("/file/*name", move |req| {
                File::new(req.param().unwrap_or(""), &files)
            })
            .route("/*path", dir_handler(dir, false, true)),
    )
}

const ROWS_RUNTIME: &str = r#"
not-found = "404.html"
[cache-control]
default = "no-cache"
"assets/*-[0-9a-f]*.*" = "public, max-age=31536000, immutable"
"assets/**" = "public, max-age=3600"
"#;

/// A site's rules (`spec/site.md`); `HTPASSWD` is replaced by the file's
/// absolute path. `alice:open sesame`, bcrypt cost 5.
const SITE_RUNTIME: &str = r#"
security-headers = true

[cors]
origins = ["https://app.example"]
headers = ["range"]

[[headers]]
match = "**"
set = { X-Frame-Options = "DENY" }
always = true

[[headers]]
match = "*.html"
set = { Content-Security-Policy = "default-src 'self'" }

[[headers]]
match = "sub/*.txt"
set = { Content-Disposition = "attachment" }

[[deny]]
match = "*.bin"
status = 403

[[deny]]
match = "*.secret"
status = 403

[[auth]]
match = "docs/**"
htpasswd = "HTPASSWD"
plain-http = true
"#;

const USERS: &str = "alice:$2y$05$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K\n";

/// `nikaia serve`'s routes: the directory handler for GET, HEAD and OPTIONS.
fn site_server(rt: Runtime, root: &Path) -> Running {
    let handler = Arc::new(dir_handler(Root::dir(root).unwrap(), false, false));
    let options = handler.clone();
    start(
        Server::with_runtime(rt)
            .route("/*path", move |req| handler(req))
            .method("OPTIONS", "/*path", move |req| options(req)),
    )
}

const FALLBACK_RUNTIME: &str = r#"
not-found = "404.html"
fallback = "app.html"
index = ["index.html", "home.html"]
cache-control = "public, max-age=60"
"#;

/// What curl read: status, headers (names lowercased), body.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    version: String,
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Runs curl with `flags` and `args` on `url`, the head and body to files.
fn curl_seen(dir: &Path, flags: &[&str], args: &[&str], url: &str) -> Seen {
    let head = dir.join("head");
    let body = dir.join("body");
    let _ = std::fs::remove_file(&head);
    let _ = std::fs::remove_file(&body);
    let mut all = vec!["-s", "--max-time", "20", "-w", "%{http_version}"];
    all.extend_from_slice(flags);
    all.extend_from_slice(args);
    all.extend_from_slice(&[
        "-D",
        head.to_str().unwrap(),
        "-o",
        body.to_str().unwrap(),
        url,
    ]);
    let out = curl(&all);
    assert!(
        out.status.success(),
        "curl {all:?}: {out:?}\n{}",
        text(&out.stderr)
    );
    let head = std::fs::read_to_string(&head).unwrap();
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {head:?}"));
    let mut headers: Vec<(String, String)> = lines
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .filter(|(n, _)| n != "date" && n != "connection")
        .collect();
    headers.sort();
    Seen {
        version: text(&out.stdout),
        status,
        headers,
        // With -I, curl writes the head where the body would go.
        body: match args.contains(&"-I") {
            true => Vec::new(),
            false => std::fs::read(&body).unwrap_or_default(),
        },
    }
}

struct Case {
    name: &'static str,
    /// Which server: 0 the rows app, 1 the fallback one, 2 the site's
    /// rules.
    server: usize,
    path: &'static str,
    args: Vec<String>,
    status: u16,
}

fn case(name: &'static str, server: usize, path: &'static str, args: &[&str], status: u16) -> Case {
    Case {
        name,
        server,
        path,
        args: args.iter().map(|s| s.to_string()).collect(),
        status,
    }
}

#[test]
fn every_row_and_file_answer_is_the_same_over_http_1_1_and_http_2() {
    let s = site();
    let pki = TestPki::new();
    let htpasswd = s.tmp.path().join("users.htpasswd");
    std::fs::write(&htpasswd, USERS).unwrap();
    let site_rules = SITE_RUNTIME.replace("HTPASSWD", htpasswd.to_str().unwrap());
    let plain = [
        rows_app(runtime_from(ROWS_RUNTIME, None), &s.root),
        dir_server(runtime_from(FALLBACK_RUNTIME, None), &s.root, false),
        site_server(runtime_from(&site_rules, None), &s.root),
    ];
    let tls = [
        rows_app(runtime_from(ROWS_RUNTIME, Some(&pki)), &s.root),
        dir_server(runtime_from(FALLBACK_RUNTIME, Some(&pki)), &s.root, false),
        site_server(runtime_from(&site_rules, Some(&pki)), &s.root),
    ];
    let work = s.tmp.path().join("curl");
    std::fs::create_dir(&work).unwrap();
    let first = curl_seen(
        &work,
        &["--http1.1"],
        &[],
        &format!("{}/big.bin", base(&plain[0])),
    );
    let header = |n: &str| {
        first
            .headers
            .iter()
            .find(|(k, _)| k == n)
            .unwrap_or_else(|| panic!("{n} in {:?}", first.headers))
            .1
            .clone()
    };
    let etag = header("etag");
    let modified = header("last-modified");
    let inm = format!("If-None-Match: {etag}");
    let ims = format!("If-Modified-Since: {modified}");
    let small = curl_seen(
        &work,
        &["--http1.1"],
        &[],
        &format!("{}/small.txt", base(&plain[2])),
    );
    let small_etag = &small.headers.iter().find(|(k, _)| k == "etag").unwrap().1;
    let small_inm = format!("If-None-Match: {small_etag}");
    // The kept variants of app.js, made before the cases are asked (each
    // server keeps its own): the first answers are the identity.
    let mut variant_etag = String::new();
    for server in [&plain[0], &tls[0]] {
        for coding in ["gzip", "br"] {
            let started = Instant::now();
            let (flags, url) = if std::ptr::eq(server, &plain[0]) {
                (vec!["--http1.1"], format!("{}/app.js", base(server)))
            } else {
                let ca = pki.ca_pem.to_str().unwrap();
                (
                    vec!["--http1.1", "--cacert", ca],
                    format!("{}/app.js", tls_base(server)),
                )
            };
            let ae = format!("Accept-Encoding: {coding}");
            loop {
                let seen = curl_seen(&work, &flags, &["-H", &ae], &url);
                let got = |n: &str| {
                    seen.headers
                        .iter()
                        .find(|(k, _)| k == n)
                        .map(|(_, v)| v.clone())
                };
                if got("content-encoding").as_deref() == Some(coding) {
                    if coding == "gzip" {
                        variant_etag = got("etag").unwrap();
                    }
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "{url} never {coding}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    let variant_inm = format!("If-None-Match: {variant_etag}");
    let listing = curl_seen(
        &work,
        &["--http1.1"],
        &[],
        &format!("{}/sub/?format=json", base(&plain[0])),
    );
    let list_etag = listing.headers.iter().find(|(k, _)| k == "etag");
    let list_inm = format!("If-None-Match: {}", list_etag.expect("an ETag").1);
    let origin = "Origin: https://app.example";
    let acrm = "Access-Control-Request-Method: GET";
    let cases = vec![
        case("String", 0, "/row/string?q=1", &[], 200),
        case("&'static str", 0, "/row/static", &[], 200),
        case("html::Raw", 0, "/row/html", &[], 200),
        case("Bytes", 0, "/row/bytes", &[], 200),
        case("fs::Mapped", 0, "/row/mapped", &[], 200),
        case("Response with headers", 0, "/row/response", &[], 201),
        case("HEAD of a Response", 0, "/row/response", &["-I"], 201),
        case("Result Ok", 0, "/row/ok", &[], 200),
        case("Result Err: 500, the error hidden", 0, "/row/err", &[], 500),
        case("a panicking handler: 500", 0, "/row/panic", &[], 500),
        case(
            "a request body echoed",
            0,
            "/row/echo",
            &["-d", "hello body"],
            200,
        ),
        case(
            "a wrong method: 405",
            0,
            "/row/static",
            &["-X", "DELETE"],
            405,
        ),
        case("Response wrapping a File", 0, "/row/wrapped", &[], 200),
        case("http::File", 0, "/file/big.bin", &[], 200),
        case("http::File, missing", 0, "/file/nope.bin", &[], 404),
        case("dir: a file", 0, "/big.bin", &[], 200),
        case("dir: a file again (kept)", 0, "/small.txt", &[], 200),
        case("dir: a file once more", 0, "/small.txt", &[], 200),
        case("dir: percent-encoded name", 0, "/sp%20ace.txt", &[], 200),
        case(
            "206 single range",
            0,
            "/big.bin",
            &["-H", "Range: bytes=10-19"],
            206,
        ),
        case(
            "206 suffix range",
            0,
            "/big.bin",
            &["-H", "Range: bytes=-7"],
            206,
        ),
        // spec/files.md: several ranges are answered with the whole file.
        case(
            "multi-range",
            0,
            "/big.bin",
            &["-H", "Range: bytes=0-1,5-9"],
            200,
        ),
        case("304 via If-None-Match", 0, "/big.bin", &["-H", &inm], 304),
        case(
            "304 via If-Modified-Since",
            0,
            "/big.bin",
            &["-H", &ims],
            304,
        ),
        case(
            "412 via If-Match",
            0,
            "/big.bin",
            &["-H", "If-Match: \"other\""],
            412,
        ),
        case("416", 0, "/big.bin", &["-H", "Range: bytes=999999-"], 416),
        case("HEAD of a file", 0, "/big.bin", &["-I"], 200),
        case("POST to a file", 0, "/big.bin", &["-d", "x"], 405),
        case("dir: a name not UTF-8", 0, "/caf%E9.txt", &[], 200),
        case("dir: its UTF-8 spelling", 0, "/caf%C3%A9.txt", &[], 404),
        case("dir: a directory not UTF-8", 0, "/d%FF/", &[], 200),
        case("dir: a file in it", 0, "/d%FF/x%FE.txt", &[], 200),
        case("dir: its slash redirect", 0, "/d%FF?x=1", &[], 301),
        case("dir: an encoded NUL", 0, "/caf%00.txt", &[], 400),
        case("dir: a bad escape", 0, "/d%FF/%zz", &[], 400),
        case(
            "dir: an encoded dot-dot",
            0,
            "/d%FF/%2E%2E/caf%E9.txt",
            &[],
            404,
        ),
        case(
            "http::File by the lossy param",
            0,
            "/file/caf%E9.txt",
            &[],
            404,
        ),
        case("directory index", 0, "/docs/", &[], 200),
        case("the top index", 0, "/", &[], 200),
        case("directory without slash: 301", 0, "/docs?x=1", &[], 301),
        case("a listing", 0, "/sub/", &[], 200),
        case(
            "a listing as JSON",
            0,
            "/sub/",
            &["-H", "Accept: application/json"],
            200,
        ),
        case(
            "a listing sorted",
            0,
            "/sub/?sort=size&order=desc&format=json",
            &[],
            200,
        ),
        case(
            "a listing sorted, HTML",
            0,
            "/sub/?sort=mtime&order=desc",
            &[],
            200,
        ),
        case(
            "a listing's 304",
            0,
            "/sub/?format=json",
            &["-H", &list_inm],
            304,
        ),
        case("HEAD of a listing", 0, "/sub/", &["-I"], 200),
        case(
            "sidecar .gz",
            0,
            "/page.css",
            &["-H", "Accept-Encoding: gzip"],
            200,
        ),
        case(
            "sidecar .br",
            0,
            "/page.css",
            &["-H", "Accept-Encoding: gzip, br"],
            200,
        ),
        case(
            "sidecar ranged",
            0,
            "/page.css",
            &["-H", "Accept-Encoding: gzip", "-H", "Range: bytes=5-9"],
            206,
        ),
        case("no sidecar asked", 0, "/page.css", &[], 200),
        case(
            "a kept gzip variant",
            0,
            "/app.js",
            &["-H", "Accept-Encoding: gzip"],
            200,
        ),
        case(
            "a kept br variant",
            0,
            "/app.js",
            &["-H", "Accept-Encoding: gzip, deflate, br, zstd"],
            200,
        ),
        case(
            "a kept variant, ranged",
            0,
            "/app.js",
            &["-H", "Accept-Encoding: gzip", "-H", "Range: bytes=10-99"],
            206,
        ),
        case(
            "a kept variant, 304",
            0,
            "/app.js",
            &["-H", "Accept-Encoding: gzip", "-H", &variant_inm],
            304,
        ),
        case(
            "a kept variant, HEAD",
            0,
            "/app.js",
            &["-I", "-H", "Accept-Encoding: br"],
            200,
        ),
        case("a sidecar by its name", 0, "/page.css.gz", &[], 200),
        case(
            "cache-control: hashed asset",
            0,
            "/assets/app-1a2b3c.js",
            &[],
            200,
        ),
        case("cache-control: assets/**", 0, "/assets/logo.txt", &[], 200),
        case(
            "not-found page for a missing name",
            0,
            "/missing.txt",
            &[],
            404,
        ),
        case("not-found page for HEAD", 0, "/missing.txt", &["-I"], 404),
        case("not-found page for a hidden name", 0, "/.env", &[], 404),
        case("not-found page for a symlink out", 0, "/out", &[], 404),
        case(
            "fallback for a missing name",
            1,
            "/some/app/route",
            &[],
            200,
        ),
        case("fallback HEAD", 1, "/some/app/route", &["-I"], 200),
        case(
            "fallback ranged",
            1,
            "/nope",
            &["-H", "Range: bytes=0-3"],
            206,
        ),
        case("fallback keeps hidden 404", 1, "/.env", &[], 404),
        case("the second index name", 1, "/homes/", &[], 200),
        case(
            "fallback: a missing asset stays 404",
            1,
            "/assets/app.3f2a.js",
            &["-H", "Accept: */*"],
            404,
        ),
        case(
            "fallback: a navigation with a dot",
            1,
            "/v1.2",
            &["-H", "Accept: text/html,*/*;q=0.8"],
            200,
        ),
        case("fallback server: a file", 1, "/small.txt", &[], 200),
        case(
            "fallback server: a directory without index",
            1,
            "/sub/",
            &[],
            200,
        ),
        case(
            "OPTIONS without rules: 204 Allow",
            0,
            "/small.txt",
            &["-X", "OPTIONS"],
            204,
        ),
        case("site: header rules on a file", 2, "/index.html", &[], 200),
        case("site: rules on the index", 2, "/", &[], 200),
        case(
            "site: rules on a 206",
            2,
            "/small.txt",
            &["-H", "Range: bytes=1-5"],
            206,
        ),
        case(
            "site: rules on a 304",
            2,
            "/small.txt",
            &["-H", &small_inm],
            304,
        ),
        case("site: Content-Disposition", 2, "/sub/a.txt", &[], 200),
        case(
            "site: a sidecar",
            2,
            "/page.css",
            &["-H", "Accept-Encoding: gzip"],
            200,
        ),
        case(
            "site: a 404 with the always rules",
            2,
            "/missing.txt",
            &[],
            404,
        ),
        case("site: the slash redirect", 2, "/sub", &[], 301),
        case("site: denied", 2, "/big.bin", &[], 403),
        case("site: denied HEAD", 2, "/big.bin", &["-I"], 403),
        case(
            "site: denied, a name not UTF-8",
            2,
            "/x%FF.secret",
            &[],
            403,
        ),
        case(
            "site: a CORS preflight",
            2,
            "/small.txt",
            &[
                "-X",
                "OPTIONS",
                "-H",
                origin,
                "-H",
                acrm,
                "-H",
                "Access-Control-Request-Headers: range",
            ],
            204,
        ),
        case(
            "site: a refused preflight",
            2,
            "/small.txt",
            &[
                "-X",
                "OPTIONS",
                "-H",
                "Origin: https://evil.example",
                "-H",
                acrm,
            ],
            204,
        ),
        case("site: OPTIONS", 2, "/small.txt", &["-X", "OPTIONS"], 204),
        case("site: a CORS GET", 2, "/small.txt", &["-H", origin], 200),
        case(
            "site: another origin's GET",
            2,
            "/small.txt",
            &["-H", "Origin: https://evil.example"],
            200,
        ),
        case("site: 401 without credentials", 2, "/docs/", &[], 401),
        case(
            "site: 401 with a wrong password",
            2,
            "/docs/",
            &["-u", "alice:nope"],
            401,
        ),
        case(
            "site: 200 with credentials",
            2,
            "/docs/",
            &["-u", "alice:open sesame"],
            200,
        ),
        case(
            "site: merged slashes",
            2,
            "//sub//a.txt",
            &["--path-as-is"],
            200,
        ),
        case(
            "site: a dot segment",
            2,
            "/sub/../small.txt",
            &["--path-as-is"],
            404,
        ),
    ];
    let mut failures = Vec::new();
    let mut statuses = Vec::new();
    for c in &cases {
        let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
        for (transport, servers, h1, h2) in [
            (
                "h2c",
                &plain,
                vec!["--http1.1"],
                vec!["--http2-prior-knowledge"],
            ),
            (
                "h2 over TLS",
                &tls,
                vec!["--http1.1", "--cacert", pki.ca_pem.to_str().unwrap()],
                vec!["--http2", "--cacert", pki.ca_pem.to_str().unwrap()],
            ),
        ] {
            let server = &servers[c.server];
            let url = match transport {
                "h2c" => format!("{}{}", base(server), c.path),
                _ => format!("{}{}", tls_base(server), c.path),
            };
            let one = curl_seen(&work, &h1, &args, &url);
            let two = curl_seen(&work, &h2, &args, &url);
            statuses.push(one.status);
            let mut wrong = Vec::new();
            if one.version != "1.1" || two.version != "2" {
                wrong.push(format!(
                    "versions {:?} and {:?}, not 1.1 and 2",
                    one.version, two.version
                ));
            }
            if one.status != c.status {
                wrong.push(format!(
                    "HTTP/1.1 status {} (expected {})",
                    one.status, c.status
                ));
            }
            if one.status != two.status {
                wrong.push(format!(
                    "status: HTTP/1.1 {}, HTTP/2 {}",
                    one.status, two.status
                ));
            }
            if one.headers != two.headers {
                let only1: Vec<_> = one
                    .headers
                    .iter()
                    .filter(|h| !two.headers.contains(h))
                    .collect();
                let only2: Vec<_> = two
                    .headers
                    .iter()
                    .filter(|h| !one.headers.contains(h))
                    .collect();
                wrong.push(format!(
                    "headers only in HTTP/1.1: {only1:?}; only in HTTP/2: {only2:?}"
                ));
            }
            if one.body != two.body {
                wrong.push(format!(
                    "body: HTTP/1.1 {} bytes {:?}, HTTP/2 {} bytes {:?}",
                    one.body.len(),
                    text(&one.body[..one.body.len().min(80)]),
                    two.body.len(),
                    text(&two.body[..two.body.len().min(80)]),
                ));
            }
            if c.name.contains("hidden")
                || c.name.starts_with("Result Err")
                || c.name.contains("panic")
            {
                for b in [&one.body, &two.body] {
                    let t = text(b);
                    assert!(
                        !t.contains("SECRET")
                            && !t.contains("secret")
                            && !t.contains("handler bug"),
                        "{}: a detail leaked: {t}",
                        c.name
                    );
                }
            }
            if !wrong.is_empty() {
                failures.push(format!(
                    "[{transport}] {} (GET {} {:?}):\n    {}",
                    c.name,
                    c.path,
                    c.args,
                    wrong.join("\n    ")
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} case×transport pairs differ:\n{}",
        failures.len(),
        cases.len() * 2,
        failures.join("\n")
    );
    for want in [
        200, 201, 204, 206, 301, 304, 400, 401, 403, 404, 405, 412, 416, 500,
    ] {
        assert!(statuses.contains(&want), "{want} not in {statuses:?}");
    }
}

// ---------------------------------------------------------------------------
// 3. Many concurrent streams on one connection: nghttp and h2load.

fn tool(name: &str) -> Command {
    assert!(
        Command::new(name).arg("--version").output().is_ok(),
        "{name} is needed (test.sh installs nghttp2-client)"
    );
    Command::new(name)
}

#[test]
fn nghttp_and_h2load_run_many_streams_on_one_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    write(&root.join("a.bin"), &random(4096, 1));
    write(&root.join("b.bin"), &random(4096, 2));
    write(&root.join("c.bin"), &random(4096, 3));
    write(&root.join("big.bin"), &random(1 << 20, 4));
    std::thread::sleep(Duration::from_millis(30));
    let server = dir_server(test_runtime(), &root, false);
    let url = base(&server);

    // 4 URIs, 100 times each: 400 streams, at most 100 at once.
    let out = tool("nghttp")
        .args(["-n", "-s", "-m", "100"])
        .args(["a.bin", "b.bin", "c.bin", "big.bin"].map(|n| format!("{url}/{n}")))
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "nghttp: {out:?}\n{stdout}");
    // The timing table: "... code size request path" per stream.
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.trim_end().ends_with(".bin"))
        .collect();
    assert_eq!(rows.len(), 400, "one row per stream:\n{stdout}");
    for row in &rows {
        let f: Vec<&str> = row.split_whitespace().collect();
        let n = f.len();
        assert_eq!(f[n - 3], "200", "{row}");
        let size = if f[n - 1].ends_with("big.bin") {
            "1M"
        } else {
            "4K"
        };
        assert_eq!(f[n - 2], size, "{row}");
    }

    // h2load: 2 connections, 1000 streams each, 64 at once.
    let out = tool("h2load")
        .args(["-n", "2000", "-c", "2", "-m", "64"])
        .arg(format!("{url}/a.bin"))
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "h2load: {out:?}\n{stdout}");
    assert!(
        stdout.contains("2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed, 0 errored"),
        "{stdout}"
    );
    assert!(stdout.contains("status codes: 2000 2xx"), "{stdout}");
    assert!(stdout.contains("Application protocol: h2c"), "{stdout}");
    let h2 = server.report().h2;
    assert_eq!(h2.connections, 3, "{h2:?}");
    assert!(h2.streams >= 2400, "{h2:?}");
}

// ---------------------------------------------------------------------------
// 4. A minimal HTTP/2 client (RFC 9113, no HPACK decoding beyond `:status`).

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A header field without indexing, name from the static table, no Huffman.
fn literal(name_index: u8, value: &str) -> Vec<u8> {
    assert!(value.len() < 127);
    let mut b = vec![name_index, value.len() as u8];
    b.extend_from_slice(value.as_bytes());
    b
}

/// `:status` from the first field of a header block: the static table's
/// indexed entries (RFC 7541 Appendix A, 8 to 14), after any table size
/// update.
fn status_of(block: &[u8]) -> Option<u16> {
    let mut i = 0;
    while i < block.len() && block[i] & 0xE0 == 0x20 {
        // A dynamic table size update; one byte unless its value is >= 31.
        i += 1;
        if block[i - 1] & 0x1F == 0x1F {
            while i < block.len() && block[i] & 0x80 != 0 {
                i += 1;
            }
            i += 1;
        }
    }
    let statuses = [200, 204, 206, 304, 400, 404, 500];
    match block.get(i)? {
        b @ 0x88..=0x8E => Some(statuses[(b - 0x88) as usize]),
        _ => None,
    }
}

/// What one stream received.
#[derive(Debug, Default)]
struct Stream {
    status: Option<u16>,
    body: Vec<u8>,
    /// END_STREAM came.
    done: bool,
    /// RST_STREAM came, with this error code.
    reset: Option<u32>,
}

/// One client connection: requests out, frames in, per stream.
struct H2<S: Read + Write> {
    io: S,
    authority: String,
    https: bool,
    streams: BTreeMap<u32, Stream>,
    next: u32,
    /// Credit is returned for every DATA frame read (else the windows are
    /// set so large none is needed).
    returns_credit: bool,
    /// GOAWAY came, or the server closed the connection.
    gone: bool,
}

impl<S: Read + Write> H2<S> {
    /// The preface and SETTINGS: each stream may be sent `window` bytes
    /// before its credit is returned; `None`, 2^31 - 1 and no credit ever.
    fn new(mut io: S, authority: &str, https: bool, window: Option<u32>) -> H2<S> {
        let w = window.unwrap_or(0x7FFF_FFFF);
        let mut out = PREFACE.to_vec();
        let mut settings = vec![0, 4];
        settings.extend_from_slice(&w.to_be_bytes());
        out.extend(frame(0x4, 0, 0, &settings));
        // The connection's window: 2^31 - 1.
        out.extend(frame(0x8, 0, 0, &(0x7FFF_FFFFu32 - 65_535).to_be_bytes()));
        io.write_all(&out).unwrap();
        H2 {
            io,
            authority: authority.to_owned(),
            https,
            streams: BTreeMap::new(),
            next: 1,
            returns_credit: window.is_some(),
            gone: false,
        }
    }

    /// Sends a GET for `path`; its stream's id.
    fn get(&mut self, path: &str) -> u32 {
        let mut block = vec![0x82]; // :method GET
        block.push(if self.https { 0x87 } else { 0x86 });
        block.extend(literal(0x04, path));
        block.extend(literal(0x01, &self.authority));
        let id = self.next;
        self.next += 2;
        self.io
            .write_all(&frame(0x1, 0x4 | 0x1, id, &block))
            .unwrap();
        self.io.flush().unwrap();
        self.streams.insert(id, Stream::default());
        id
    }

    /// Reads and handles one frame; false when the connection is gone.
    fn step(&mut self) -> bool {
        let mut head = [0u8; 9];
        if self.io.read_exact(&mut head).is_err() {
            self.gone = true;
            return false;
        }
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7FFF_FFFF;
        let mut payload = vec![0; len];
        if self.io.read_exact(&mut payload).is_err() {
            self.gone = true;
            return false;
        }
        let mut body = &payload[..];
        if matches!(kind, 0x0 | 0x1) && flags & 0x8 != 0 {
            let pad = body[0] as usize;
            body = &body[1..body.len() - pad];
        }
        match kind {
            0x0 => {
                let s = self
                    .streams
                    .get_mut(&id)
                    .expect("DATA on a stream asked for");
                assert!(s.status.is_some(), "DATA before HEADERS on {id}");
                assert!(!s.done, "DATA after END_STREAM on {id}");
                s.body.extend_from_slice(body);
                s.done |= flags & 0x1 != 0;
                if self.returns_credit && len > 0 {
                    let credit = (len as u32).to_be_bytes();
                    let mut out = frame(0x8, 0, 0, &credit);
                    if !s.done {
                        out.extend(frame(0x8, 0, id, &credit));
                    }
                    let _ = self.io.write_all(&out);
                }
            }
            0x1 => {
                if flags & 0x20 != 0 {
                    body = &body[5..];
                }
                assert!(flags & 0x4 != 0, "a header block in one frame");
                let s = self
                    .streams
                    .get_mut(&id)
                    .expect("HEADERS on a stream asked for");
                s.status = status_of(body);
                s.done |= flags & 0x1 != 0;
            }
            0x3 => {
                let s = self
                    .streams
                    .get_mut(&id)
                    .expect("RST_STREAM on a stream asked for");
                s.reset = Some(u32::from_be_bytes(payload[..4].try_into().unwrap()));
            }
            0x4 if flags & 0x1 == 0 => {
                let _ = self.io.write_all(&frame(0x4, 0x1, 0, &[]));
            }
            0x6 if flags & 0x1 == 0 => {
                let _ = self.io.write_all(&frame(0x6, 0x1, 0, &payload));
            }
            0x7 => self.gone = true,
            _ => {}
        }
        true
    }

    /// Reads frames until `until` holds or the connection is gone.
    fn run(&mut self, until: impl Fn(&BTreeMap<u32, Stream>) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !until(&self.streams) && self.step() {
            assert!(
                Instant::now() < deadline,
                "no end after 30 s: {:?}",
                self.summary()
            );
        }
    }

    /// Per stream: id, status, bytes, ended, reset code; for messages.
    fn summary(&self) -> String {
        self.streams
            .iter()
            .map(|(id, s)| {
                let end = match (s.done, s.reset) {
                    (true, _) => "ended".to_owned(),
                    (false, Some(code)) => format!("reset {code}"),
                    (false, None) => "open".to_owned(),
                };
                format!("#{id} {:?} {} B {end}; ", s.status, s.body.len())
            })
            .collect()
    }
}

/// GETs every path on one connection, all streams open at once; (status,
/// body) per path, in order.
fn h2_get_all(
    io: impl Read + Write,
    authority: &str,
    https: bool,
    paths: &[&str],
) -> Vec<(u16, Vec<u8>)> {
    let mut c = H2::new(io, authority, https, None);
    let ids: Vec<u32> = paths.iter().map(|p| c.get(p)).collect();
    c.run(|s| s.values().all(|s| s.done || s.reset.is_some()));
    assert!(!c.gone, "the connection went away: {}", c.summary());
    ids.iter()
        .map(|id| {
            let s = c.streams.remove(id).unwrap();
            assert_eq!(s.reset, None, "stream {id} reset");
            (s.status.expect(":status from the static table"), s.body)
        })
        .collect()
}

#[test]
fn a_hand_written_h2_client_gets_the_same_bytes_over_h2c_and_h2() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let sizes = [0usize, 5000, 16_384, 100_000, (1 << 20) + 3];
    let contents: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| random(n, 50 + i as u64))
        .collect();
    for (i, c) in contents.iter().enumerate() {
        write(&root.join(format!("f{i}.bin")), c);
    }
    std::thread::sleep(Duration::from_millis(30));
    let paths: Vec<String> = (0..sizes.len()).map(|i| format!("/f{i}.bin")).collect();
    let mut paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    paths.push("/missing");
    let check = |label: &str, got: Vec<(u16, Vec<u8>)>| {
        for (i, want) in contents.iter().enumerate() {
            assert_eq!(got[i].0, 200, "{label}: f{i}.bin");
            assert!(
                got[i].1 == *want,
                "{label}: f{i}.bin: {} bytes of {}",
                got[i].1.len(),
                want.len()
            );
        }
        assert_eq!(got[sizes.len()].0, 404, "{label}: /missing");
    };

    let plain = dir_server(test_runtime(), &root, false);
    let sock = TcpStream::connect(plain.local_addr()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let authority = format!("127.0.0.1:{}", plain.local_addr().port());
    check("h2c", h2_get_all(sock, &authority, false, &paths));

    let pki = TestPki::new();
    let tls = dir_server(pki.runtime(), &root, false);
    let c = tls_connect(tls.local_addr(), alpn_config(&pki, &["h2"]));
    assert_eq!(alpn(&c), Some(&b"h2"[..]));
    check("h2", h2_get_all(c, "localhost", true, &paths));
}

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A TLS connection to `addr` with its handshake done, read and written
/// raw (no HTTP parsing).
fn tls_connect(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> Tls {
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    sock.set_nodelay(true).unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(config, name).unwrap();
    let mut s = rustls::StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).expect("TLS handshake");
    }
    s
}

fn alpn(s: &Tls) -> Option<&[u8]> {
    s.conn.alpn_protocol()
}

/// A client configuration trusting the test CA, offering `alpn`.
fn alpn_config(pki: &TestPki, alpn: &[&str]) -> Arc<rustls::ClientConfig> {
    let mut config = (*pki.client_config()).clone();
    config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    Arc::new(config)
}

// ---------------------------------------------------------------------------
// 5. Conformance: httpwg against h2c.

#[test]
fn httpwg_conformance_suite_passes_over_h2c() {
    assert!(
        Command::new("httpwg").arg("-h").output().is_ok(),
        "httpwg is needed (test.sh runs `cargo install httpwg-cli --locked`)"
    );
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("index.html"), b"<h1>index</h1>");
    let root = Root::dir(tmp.path()).unwrap();
    let server = start(
        Server::with_runtime(test_runtime())
            .route("/", |_| "root")
            .method("POST", "/", |req| format!("{} bytes", req.body().len()))
            .route("/*path", dir_handler(root, false, false)),
    );
    let out = Command::new("httpwg")
        .args([
            "-v",
            "-a",
            &format!("127.0.0.1:{}", server.local_addr().port()),
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let log = text(&out.stderr);
    let names = |prefix: &str| -> Vec<String> {
        log.lines()
            .filter_map(|l| l.split_once(prefix).map(|(_, n)| n.trim().to_owned()))
            .collect()
    };
    let ran = names("Running test: ");
    let passed = names("Test passed: ");
    let failed: Vec<&String> = ran.iter().filter(|n| !passed.contains(n)).collect();
    let summary = log
        .lines()
        .find(|l| l.contains("Passed"))
        .unwrap_or("no summary line")
        .replace("\x1b[1;32m", "")
        .replace("\x1b[1;33m", "")
        .replace("\x1b[1;36m", "")
        .replace("\x1b[0m", "");
    assert!(
        out.status.success() && failed.is_empty() && !ran.is_empty(),
        "httpwg: {summary}\nfailed ({}):\n  {}",
        failed.len(),
        failed
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
    let n = ran.len();
    assert!(
        summary.contains(&format!("Passed {n}/{n} tests")),
        "{summary}"
    );
}

// ---------------------------------------------------------------------------
// 6. Files truncated and renamed over under h2 downloads.

/// `curl --parallel` downloads of `url` to `outs`, each on a connection
/// of its own (`--parallel-immediate`: curl 7.88 cannot reuse an h2c
/// connection, curl/curl#10634), each at most `rate` bytes a second.
fn parallel_downloads(url: &str, outs: &[PathBuf], rate: &str) -> std::process::Child {
    for out in outs {
        let _ = std::fs::remove_file(out);
    }
    let mut cmd = Command::new("curl");
    cmd.args([
        "-s",
        "--http2-prior-knowledge",
        "--parallel",
        "--parallel-immediate",
    ])
    .args(["--limit-rate", rate, "--max-time", "30"])
    .args([
        "-w",
        "%{urlnum} %{exitcode} %{http_code} %{size_download}\n",
    ]);
    for (i, out) in outs.iter().enumerate() {
        cmd.arg(format!("{url}?n={i}")).arg("-o").arg(out);
    }
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until every transfer has written its first bytes, so the server
/// has the file open ([`parallel_downloads`] removed the last round's).
fn wait_started(outs: &[PathBuf]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !outs
        .iter()
        .all(|o| std::fs::metadata(o).is_ok_and(|m| m.len() > 0))
    {
        assert!(Instant::now() < deadline, "the downloads did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
}

/// Per transfer: (curl's exit code, bytes received).
fn results(child: std::process::Child, n: usize) -> Vec<(u32, u64)> {
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    let mut r = vec![(u32::MAX, 0u64); n];
    for line in stdout.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let i: usize = f[0].parse().unwrap();
        r[i] = (f[1].parse().unwrap(), f[3].parse().unwrap());
    }
    assert!(
        r.iter().all(|x| x.0 != u32::MAX),
        "every transfer reported: {stdout}"
    );
    r
}

#[test]
fn files_truncated_or_renamed_over_under_h2_downloads() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let log = tmp.path().join("error.log");
    let victim = root.join("victim.bin");
    let original = random(64 << 20, 21);
    write(&victim, &original);
    std::thread::sleep(Duration::from_millis(30));
    let mut rt = test_runtime();
    rt.error_log = LogTarget::File(log.clone());
    let server = dir_server(rt, &root, false);
    let url = format!("{}/victim.bin", base(&server));
    let outs: Vec<PathBuf> = (0..3).map(|i| tmp.path().join(format!("t{i}"))).collect();

    let truncate = |path: &Path| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(1000)
            .unwrap()
    };

    // Three streams on one connection, each given 256 KiB of credit at a
    // time; truncated once each has 1 MiB: none can be whole, each must be
    // reset (or the connection closed), none ended as if complete.
    let sock = TcpStream::connect(server.local_addr()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let authority = format!("127.0.0.1:{}", server.local_addr().port());
    let mut c = H2::new(sock, &authority, false, Some(256 << 10));
    let ids: Vec<u32> = (0..3).map(|_| c.get("/victim.bin")).collect();
    c.run(|s| s.values().all(|s| s.body.len() >= 1 << 20));
    assert!(!c.gone, "{}", c.summary());
    truncate(&victim);
    c.run(|s| s.values().all(|s| s.done || s.reset.is_some()));
    for id in &ids {
        let s = &c.streams[id];
        assert_eq!(s.status, Some(200), "stream {id}");
        assert!(
            s.body[..] == original[..s.body.len()],
            "stream {id}: the bytes that came are the file's"
        );
        assert!(
            !s.done,
            "stream {id} ended cleanly after {} of {} bytes: {}",
            s.body.len(),
            original.len(),
            c.summary()
        );
        assert!(
            s.reset.is_some() || c.gone,
            "stream {id} neither reset nor its connection closed: {}",
            c.summary()
        );
    }
    // The same connection, when it lives on, answers the file as it is now.
    if !c.gone {
        let id = c.get("/victim.bin");
        c.run(|s| s[&id].done || s[&id].reset.is_some());
        let s = &c.streams[&id];
        assert!(
            s.done && s.body[..] == original[..1000],
            "{:?}",
            c.summary()
        );
    }
    let resets: Vec<Option<u32>> = ids.iter().map(|id| c.streams[id].reset).collect();
    eprintln!(
        "truncated under one connection: resets {resets:?}, connection gone: {}",
        c.gone
    );
    drop(c);

    // Separate connections (curl): each transfer whole or an error.
    write(&victim, &original);
    std::thread::sleep(Duration::from_millis(30));
    let child = parallel_downloads(&url, &outs, "16M");
    wait_started(&outs);
    truncate(&victim);
    let r = results(child, outs.len());
    for (i, (code, size)) in r.iter().enumerate() {
        if *code == 0 {
            let got = std::fs::read(&outs[i]).unwrap();
            assert!(
                got == original,
                "transfer {i} succeeded with {} wrong bytes",
                got.len()
            );
        } else {
            assert!(
                *size < original.len() as u64,
                "transfer {i}: error {code} after all bytes"
            );
            // 92: the stream was reset; 18: cut short; 56: the
            // connection closed. Not 16 (a framing error).
            assert!(
                [18, 56, 92].contains(code),
                "transfer {i}: curl error {code}: {r:?}"
            );
        }
    }
    assert!(
        r.iter().any(|x| x.0 != 0),
        "a truncation at 400 ms cut no stream short: {r:?}"
    );
    let after = curl(&["-sS", "--http2-prior-knowledge", "--max-time", "10", &url]);
    assert!(after.status.success(), "{after:?}");
    assert!(
        after.stdout == original[..1000],
        "the file as it is now: {} bytes",
        after.stdout.len()
    );
    let report = server.report();
    assert!(report.truncated >= 1, "{report:?}");
    let text_log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text_log.contains("victim.bin"),
        "the error log names the file: {text_log}"
    );

    // Renamed over mid-download: the open file goes on, whole and right.
    let old = random(64 << 20, 22);
    write(&victim, &old);
    std::thread::sleep(Duration::from_millis(30));
    let child = parallel_downloads(&url, &outs, "48M");
    wait_started(&outs);
    let fresh = root.join("fresh.bin");
    write(&fresh, &random(5000, 23));
    std::fs::rename(&fresh, &victim).unwrap();
    let r = results(child, outs.len());
    for (i, (code, _)) in r.iter().enumerate() {
        assert_eq!(*code, 0, "transfer {i} after a rename over: {r:?}");
        let got = std::fs::read(&outs[i]).unwrap();
        assert!(
            got == old,
            "transfer {i}: the old bytes, whole ({} bytes came)",
            got.len()
        );
    }
    std::thread::sleep(Duration::from_millis(30));
    let after = curl(&["-sS", "--http2-prior-knowledge", "--max-time", "10", &url]);
    assert!(
        after.stdout == random(5000, 23),
        "the new file: {} bytes",
        after.stdout.len()
    );
    // The process and its other answers go on.
    let still = curl(&[
        "-sS",
        "--http2-prior-knowledge",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        &format!("{}/", base(&server)),
    ]);
    assert_eq!(text(&still.stdout), "404");
}

// ---------------------------------------------------------------------------
// 7. `http2 = false`.

#[test]
fn http2_false_turns_off_h2c_and_alpn_h2() {
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("a.txt"), b"aaa");
    let rt = runtime_from("http2 = false", None);
    assert!(!rt.http2);
    let plain = dir_server(rt, tmp.path(), false);
    let pki = TestPki::new();
    let tls = dir_server(runtime_from("http2 = false", Some(&pki)), tmp.path(), false);

    let url = format!("{}/a.txt", base(&plain));
    let out = curl(&[
        "-s",
        "--http2-prior-knowledge",
        "--max-time",
        "10",
        "-w",
        "%{http_version} %{http_code}",
        "-o",
        "/dev/null",
        &url,
    ]);
    let seen = text(&out.stdout);
    assert!(
        !out.status.success() || !seen.starts_with("2 "),
        "h2c by prior knowledge was served with http2 = false: {seen}"
    );
    // The preface, sent raw: answered as HTTP/1.1 (400 or 505) or closed.
    let mut sock = TcpStream::connect(plain.local_addr()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    sock.write_all(PREFACE).unwrap();
    sock.write_all(&frame(0x4, 0, 0, &[])).unwrap();
    let mut got = Vec::new();
    let _ = sock.read_to_end(&mut got);
    let got = text(&got);
    assert!(
        got.is_empty() || got.starts_with("HTTP/1.1 400") || got.starts_with("HTTP/1.1 505"),
        "{got:?}"
    );
    // HTTP/1.1 goes on.
    let out = curl(&["-sS", "--http1.1", &url]);
    assert_eq!(out.stdout, b"aaa");

    let ca = pki.ca_pem.to_str().unwrap();
    let turl = format!("{}/a.txt", tls_base(&tls));
    let out = curl(&[
        "-sS",
        "--http2",
        "--cacert",
        ca,
        "-w",
        " %{http_version}",
        &turl,
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "aaa 1.1");
    let c = tls_connect(tls.local_addr(), alpn_config(&pki, &["h2", "http/1.1"]));
    assert_eq!(alpn(&c), Some(&b"http/1.1"[..]));
    assert_eq!(
        plain.report().h2.connections + tls.report().h2.connections,
        0
    );
}

// ---------------------------------------------------------------------------
// 8. ALPN: none, h2 preferred, and nothing in common.

#[test]
fn alpn_absent_stays_http_1_1_and_alpn_without_a_match_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("a.txt"), b"aaa");
    let pki = TestPki::new();
    let tls = dir_server(pki.runtime(), tmp.path(), false);
    let addr = tls.local_addr();

    // No ALPN: HTTP/1.1.
    let mut c = TlsClient::over(TcpStream::connect(addr).unwrap(), alpn_config(&pki, &[]));
    assert_eq!(c.session().alpn_protocol(), None);
    let r = c.get("/a.txt");
    assert_eq!((r.status, &r.body[..]), (200, &b"aaa"[..]));
    // Both offered, in either order: the server's preference, h2.
    for offer in [&["h2", "http/1.1"][..], &["http/1.1", "h2"]] {
        let c = tls_connect(addr, alpn_config(&pki, offer));
        assert_eq!(alpn(&c), Some(&b"h2"[..]), "{offer:?}");
    }
    let c = tls_connect(addr, alpn_config(&pki, &["http/1.1"]));
    assert_eq!(alpn(&c), Some(&b"http/1.1"[..]));

    // Nothing in common: the handshake fails with an alert.
    let err = handshake_error(addr, alpn_config(&pki, &["spdy/3"]));
    assert!(
        matches!(
            err,
            rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)
        ),
        "{err:?}"
    );

    // openssl without -alpn: no ALPN, HTTP/1.1.
    let mut child = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{}", addr.port()),
        ])
        .args(["-servername", "localhost", "-ign_eof", "-CAfile"])
        .arg(&pki.ca_pem)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl runs (test.sh installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let t = text(&out.stdout);
    assert!(t.contains("No ALPN negotiated"), "{t}");
    assert!(t.contains("HTTP/1.1 200 OK"), "{t}");
    // And openssl with only an unknown protocol: refused.
    let out = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{}", addr.port()),
        ])
        .args(["-servername", "localhost", "-alpn", "spdy/3", "-CAfile"])
        .arg(&pki.ca_pem)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let t = text(&out.stdout) + &text(&out.stderr);
    assert!(t.contains("no application protocol"), "{t}");
}

/// The error of a handshake the server refuses.
fn handshake_error(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> rustls::Error {
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(config, name).unwrap();
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut sock) {
            let inner = e.into_inner().expect("a TLS error, not only I/O");
            return *inner.downcast::<rustls::Error>().expect("a rustls::Error");
        }
    }
    panic!("the handshake succeeded, ALPN {:?}", conn.alpn_protocol());
}
