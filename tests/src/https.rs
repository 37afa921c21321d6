//! The site the HTTPS tests serve (`tests/tls.rs`, `tests/tls_refusals.rs`):
//! every row of the body table and `http::File` over files of known bytes,
//! a symlink out of the root among them.

use crate::{start, TestPki};
use nikaia_std::fs::{self, Root};
use nikaia_std::http::{File, Response, Server};
use nikaia_std::rt::{LogTarget, Runtime};
use nikaia_std::{html, Bytes};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Deterministic bytes of any length.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2654435761).to_le_bytes()[1] ^ seed)
        .collect()
}

pub struct Site {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
}

pub fn site() -> Site {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(tmp.path().join("secret.txt"), b"SECRET").unwrap();
    std::fs::write(root.join("docs/index.html"), b"<h1>docs</h1>").unwrap();
    std::fs::write(root.join("sub/a.txt"), b"a").unwrap();
    std::fs::write(root.join("file.bin"), pattern(100_000, 3)).unwrap();
    std::fs::write(root.join("small.css"), b"body { color: red }").unwrap();
    std::fs::write(root.join("mapped.bin"), pattern(70_000, 5)).unwrap();
    std::os::unix::fs::symlink("../secret.txt", root.join("out")).unwrap();
    // Old enough for the kept table (it skips files changed this tick).
    std::thread::sleep(Duration::from_millis(30));
    Site { tmp, root }
}

/// Every row of the body table and `http::File` with index and listing.
pub fn app(rt: Runtime, root: &Path) -> nikaia_std::http::Running {
    let root = Root::dir(root).unwrap();
    let mapped = fs::map("mapped.bin", &root).unwrap();
    start(
        Server::with_runtime(rt)
            .route("/html", |_| html::Raw::new("<b>raw</b>"))
            .route("/text", |_| "plain text")
            .route("/string", |req| format!("you asked for {}", req.path()))
            .route("/bytes", |_| Bytes::from_static(b"\x00\x01\x02"))
            .route("/mapped", move |_| mapped.clone())
            .route("/response", |_| {
                Response::new(201).header("X-Made", "by hand").body("made")
            })
            .route("/fails", |_| -> Result<&'static str, String> {
                Err("the detail stays in the log".into())
            })
            .route("/f/*name", move |req| {
                File::new(req.param().unwrap_or(""), &root)
                    .index("index.html")
                    .list(false)
            }),
    )
}

/// [`app`] over HTTPS, its error log written to a file in the site's
/// temporary directory; the server and the log's path.
pub fn app_logging_errors(s: &Site, pki: &TestPki) -> (nikaia_std::http::Running, PathBuf) {
    let log = s.tmp.path().join("error.log");
    let mut rt = pki.runtime();
    rt.error_log = LogTarget::File(log.clone());
    (app(rt, &s.root), log)
}
