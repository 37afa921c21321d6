//! The equality corpus: a site of files for every case, the three
//! servers that serve it (every row of the body table, a fallback site,
//! a site's rules) and the cases in curl's words (`cases.rs`), each to be
//! answered the same over every protocol. `tests/tests/h2.rs` asks them
//! over HTTP/1.1 and HTTP/2, plain and over TLS; `tests/tests/h3.rs` over
//! HTTP/1.1, HTTP/2 and HTTP/3, with its empty and large files too.

mod cases;

pub use cases::{case, cases, keep_variants, Case, Validators};

use crate::{start, test_runtime, TestPki};
use nikaia_std::fs::{self, Root};
use nikaia_std::http::{dir_handler, File, Response, Running, Server};
use nikaia_std::rt::Runtime;
use nikaia_std::{html, Bytes};
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

/// Writes `bytes` to `path`, its directories made first.
pub fn write(path: &Path, bytes: &[u8]) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

/// A runtime for tests from runtime-file text (loopback, port 0, two
/// workers, no access log), over TLS with `pki`'s pair when given.
pub fn runtime_from(toml: &str, pki: Option<&TestPki>) -> Runtime {
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
pub fn dir_server(rt: Runtime, root: &Path, list: bool) -> Running {
    let root = Root::dir(root).unwrap();
    start(Server::with_runtime(rt).route("/*path", dir_handler(root, false, list)))
}

/// The size of `large.bin` (HTTP/3's cases ask for it): many QUIC
/// packets, past the first flow control windows.
pub const LARGE: usize = (4 << 20) + 5;

/// The corpus's files (`root`) in a scratch directory; `empty.bin` and
/// `large.bin` are for HTTP/3's cases only.
pub struct Site {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
}

/// Writes the corpus's files: the rows' and sidecars' files, names that
/// are not UTF-8, a hidden one, a symlink out of the root, the pages the
/// runtimes name.
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

/// The corpus's three servers over `s`, each on the runtime `runtime`
/// makes of its runtime-file text: the rows app ([`ROWS_RUNTIME`]), the
/// fallback site ([`FALLBACK_RUNTIME`]) and the site's rules
/// ([`SITE_RUNTIME`], its users file written beside the root), in the
/// order [`Case::server`] names them.
pub fn servers(s: &Site, runtime: impl Fn(&str) -> Runtime) -> [Running; 3] {
    let htpasswd = s.tmp.path().join("users.htpasswd");
    std::fs::write(&htpasswd, USERS).unwrap();
    let site_rules = SITE_RUNTIME.replace("HTPASSWD", htpasswd.to_str().unwrap());
    [
        rows_app(runtime(ROWS_RUNTIME), &s.root),
        dir_server(runtime(FALLBACK_RUNTIME), &s.root, false),
        site_server(runtime(&site_rules), &s.root),
    ]
}
