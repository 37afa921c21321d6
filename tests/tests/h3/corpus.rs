//! The equality corpus of `tests/tests/h2.rs` ("The same answer over
//! HTTP/1.1 and HTTP/2"), its site, servers and cases, for HTTP/3: the
//! same three servers (every row of the body table, the fallback site,
//! the site's rules) and every case, plus an empty and a large file. Kept
//! in step with h2.rs's copy by hand.

use nikaia_std::fs::{self, Root};
use nikaia_std::http::{dir_handler, File, Response, Running, Server};
use nikaia_std::rt::Runtime;
use nikaia_std::{html, Bytes};
use nikaia_tests::{start, TestPki};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Random-looking bytes (xorshift64*), reproducible from `seed`.
pub fn random(len: usize, seed: u64) -> Vec<u8> {
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

pub fn write(path: &Path, bytes: &[u8]) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

/// A runtime from runtime-file text over TLS with `pki`'s pair and HTTP/3
/// on (loopback, port 0, two workers, no access log).
pub fn runtime_from(toml: &str, pki: &TestPki) -> Runtime {
    let mut rt = Runtime::parse(toml, Path::new("test.toml")).expect("the runtime text parses");
    let base = pki.runtime();
    rt.listen = base.listen;
    rt.workers = base.workers;
    rt.access_log = base.access_log;
    rt.tls_cert = base.tls_cert;
    rt.tls_key = base.tls_key;
    rt.http3 = true;
    rt
}

/// `nikaia serve DIR`'s handler for every path.
pub fn dir_server(rt: Runtime, root: &Path, list: bool) -> Running {
    let root = Root::dir(root).unwrap();
    start(Server::with_runtime(rt).route("/*path", dir_handler(root, false, list)))
}

/// The size of `large.bin`: many QUIC packets, past the first flow
/// control windows.
pub const LARGE: usize = (4 << 20) + 5;

pub struct Site {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
}

pub fn site() -> Site {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    write(&root.join("index.html"), b"<h1>top</h1>");
    write(&root.join("big.bin"), &random(100_000, 7));
    write(&root.join("small.txt"), &random(4096, 8));
    write(&root.join("empty.bin"), b"");
    write(&root.join("large.bin"), &random(LARGE, 14));
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
pub fn rows_app(rt: Runtime, root: &Path) -> Running {
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

pub const ROWS_RUNTIME: &str = r#"
not-found = "404.html"
[cache-control]
default = "no-cache"
"assets/*-[0-9a-f]*.*" = "public, max-age=31536000, immutable"
"assets/**" = "public, max-age=3600"
"#;

/// A site's rules (`spec/site.md`); `HTPASSWD` is replaced by the file's
/// absolute path. `alice:open sesame`, bcrypt cost 5.
pub const SITE_RUNTIME: &str = r#"
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

pub const USERS: &str = "alice:$2y$05$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K\n";

/// `nikaia serve`'s routes: the directory handler for GET, HEAD and OPTIONS.
pub fn site_server(rt: Runtime, root: &Path) -> Running {
    let handler = Arc::new(dir_handler(Root::dir(root).unwrap(), false, false));
    let options = handler.clone();
    start(
        Server::with_runtime(rt)
            .route("/*path", move |req| handler(req))
            .method("OPTIONS", "/*path", move |req| options(req)),
    )
}

pub const FALLBACK_RUNTIME: &str = r#"
not-found = "404.html"
fallback = "app.html"
index = ["index.html", "home.html"]
cache-control = "public, max-age=60"
"#;
