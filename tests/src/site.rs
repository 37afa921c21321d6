//! The site the site-rule tests serve (`tests/tests/site*.rs`): files for
//! every rule to match, a users file beside them, a runtime file written
//! from a test's text, and `nikaia serve`'s read routes with `/who`.

use crate::{start, test_runtime, TestPki};
use nikaia_std::fs::Root;
use nikaia_std::http::{dir_handler, Running, Server};
use nikaia_std::rt::{LogTarget, Runtime};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// `htpasswd -nbB -C 5 alice 'open sesame'`, and bob's `b0b:pass`.
pub const USERS: &str = "\
# staging
alice:$2y$05$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K
bob:$2y$05$3Ti.SB88ruvccek7oAgm3e8koIVqVED9LvYhxKKGWocrGZZLjHSu6
";

/// A served directory (`root`) in a scratch directory that holds its
/// users file and runtime file beside it.
pub struct Site {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

pub fn site() -> Site {
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
pub fn runtime(site: &Site, text: &str, pki: Option<&TestPki>) -> Runtime {
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

/// The directory handler over the site, its runtime file `text` (written
/// where [`runtime`] writes it), read again on `Running::reload`: on a
/// port of its own and without an access log, at every reload as at
/// start.
pub fn serve_reloading(site: &Site, text: &str) -> Running {
    let file = site.tmp.path().join("runtime.toml");
    let rt = runtime(site, text, None);
    let handler = dir_handler(Root::dir(&site.root).unwrap(), false, false);
    start(
        Server::with_runtime(rt)
            .route("/*path", handler)
            .reload_from(&file, |rt| {
                rt.listen = vec![std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into()];
                rt.access_log = LogTarget::Off;
            }),
    )
}

/// `nikaia serve`'s routes: the directory handler for GET, HEAD and
/// OPTIONS, and `/who` answering the request's client and peer.
pub fn serve(site: &Site, rt: Runtime) -> Running {
    let handler = Arc::new(dir_handler(Root::dir(&site.root).unwrap(), false, false));
    let options = handler.clone();
    start(
        Server::with_runtime(rt)
            .route("/who", |req| format!("{} {}", req.client(), req.peer()))
            .route("/*path", move |req| handler(req))
            .method("OPTIONS", "/*path", move |req| options(req)),
    )
}

pub fn url(running: &Running, path: &str) -> String {
    format!("http://127.0.0.1:{}{path}", running.local_addr().port())
}

pub fn tls_url(running: &Running, path: &str) -> String {
    format!("https://localhost:{}{path}", running.local_addr().port())
}

/// `text` in base64 (RFC 4648), as `Authorization: Basic` carries
/// `user:password`.
pub fn base64(text: &str) -> String {
    base64_bytes(text.as_bytes())
}

/// `bytes` in base64 (RFC 4648, padded), as a CSP hash source carries a
/// digest.
pub fn base64_bytes(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
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
