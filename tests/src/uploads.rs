//! The site the upload tests write to (`tests/tests/uploads*.rs`): a drop
//! folder behind a password, an inbox anyone may create in, a page whose
//! uploads are trusted, and the clients that write to it (curl, a raw
//! HTTP/1.1 client).

use crate::curl::{curl, Seen};
use crate::serve::serve_dir;
pub use crate::site::{url, USERS};
use crate::{test_runtime, Client};
use nikaia_std::rt::{LogTarget, Runtime};
use std::path::PathBuf;

pub const ALICE: &str = "alice:open sesame";
pub const BOB: &str = "bob:b0b:pass";

/// A drop folder behind auth (alice writes, bob reads), a public inbox
/// anyone may create in, a page whose uploads are trusted, and no rule
/// for the rest.
pub const RULES: &str = r#"
not-found = "404.html"

[[auth]]
match = ["drop/**", "trusted/**"]
htpasswd = "users.htpasswd"
plain-http = true

[[write]]
match = "drop/**"
writers = ["alice"]
delete = true
delete-dirs = true
make-dirs = true
max-size = "1MiB"
plain-http = true

[[write]]
match = "inbox/*"
anyone = true
replace = false
plain-http = true

[[write]]
match = "trusted/**"
writers = ["alice"]
trusted = true
plain-http = true

[[write]]
match = "nolink/**"
writers = ["alice"]
plain-http = true
"#;

/// A folder anyone reads and only alice fills, beside [`RULES`] (whose
/// drop folder's rule protects reads too): `writes-only` auth.
pub const OPEN: &str = r#"
[[auth]]
match = "open/**"
htpasswd = "users.htpasswd"
writes-only = true
plain-http = true

[[write]]
match = "open/**"
writers = ["alice"]
plain-http = true
"#;

pub struct Site {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
}

impl Default for Site {
    fn default() -> Site {
        Site::new()
    }
}

impl Site {
    pub fn new() -> Site {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        for dir in ["drop", "inbox", "trusted", "public", "nolink"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("public/a.txt"), b"public").unwrap();
        std::fs::write(root.join("404.html"), b"<h1>not here</h1>").unwrap();
        std::fs::write(tmp.path().join("users.htpasswd"), USERS).unwrap();
        Site { tmp, root }
    }

    /// The runtime of `text` written beside the site, on a loopback port.
    pub fn runtime(&self, text: &str) -> Runtime {
        let file = self.tmp.path().join("runtime.toml");
        std::fs::write(&file, text).unwrap();
        let mut rt = Runtime::load(&file).unwrap_or_else(|e| panic!("{e:?}"));
        let base = test_runtime();
        rt.listen = base.listen;
        rt.workers = 2;
        if rt.access_log == LogTarget::Stderr {
            rt.access_log = LogTarget::Off;
        }
        rt
    }

    pub fn serve(&self, text: &str) -> nikaia_std::http::Running {
        serve_dir(&self.root, self.runtime(text), false, true)
    }
}

/// curl uploads `data` to `path` with `args` (`-u`, `-H`), by `-T`.
pub fn put(running: &nikaia_std::http::Running, path: &str, data: &[u8], args: &[&str]) -> Seen {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), data).unwrap();
    let mut all = vec!["-T", file.path().to_str().unwrap()];
    all.extend_from_slice(args);
    curl(&url(running, path), &all)
}

pub fn delete(running: &nikaia_std::http::Running, path: &str, args: &[&str]) -> Seen {
    let mut all = vec!["-X", "DELETE"];
    all.extend_from_slice(args);
    curl(&url(running, path), &all)
}

pub fn get(running: &nikaia_std::http::Running, path: &str, args: &[&str]) -> Seen {
    curl(&url(running, path), args)
}

/// `user:password` as Basic credentials.
pub fn basic(pair: &str) -> String {
    crate::site::base64(pair)
}

/// A raw `PUT` of `data` to `path` with `extra` header lines.
pub fn raw_put(port: u16, path: &str, extra: &str, data: &[u8]) -> crate::Reply {
    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    c.send(format!(
        "PUT {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n{extra}\r\n",
        data.len()
    ));
    c.send(data);
    c.reply().unwrap()
}
