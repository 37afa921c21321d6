//! The drive the WebDAV tests serve (`tests/tests/dav_*.rs`): a scratch
//! directory holding the served `root/`, a users file
//! (`users.htpasswd`) and a runtime file (`runtime.toml`) beside it, and
//! `nikaia serve`'s routes over it (`Server::serve_dir`, dot-names
//! hidden, listings on) under that runtime file, on a loopback port with
//! two workers and no access log, HTTPS with a [`TestPki`].

use crate::serve::serve_dir;
use crate::{test_runtime, TestPki};
use nikaia_std::http::Running;
use nikaia_std::rt::{LogTarget, Runtime};
use std::path::{Path, PathBuf};

/// A scratch directory with `root/`, `users.htpasswd` and `runtime.toml`;
/// it goes when the drive drops (stop its server first).
pub struct Drive {
    pub tmp: tempfile::TempDir,
}

/// Writes `bytes` to `path`, making its directories.
pub fn file(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

impl Drive {
    /// A drive in a new temporary directory: `users` as its users file,
    /// `runtime` as its runtime file (`{TMP}` in it stands for the
    /// scratch directory's path), `root/` empty.
    pub fn new(users: &str, runtime: &str) -> Drive {
        Drive::in_dir(tempfile::tempdir().unwrap(), users, runtime)
    }

    /// [`Drive::new`] in a directory named `prefix…` under `parent` (a
    /// test's `CARGO_TARGET_TMPDIR`).
    pub fn under(parent: impl AsRef<Path>, prefix: &str, users: &str, runtime: &str) -> Drive {
        let tmp = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in(parent)
            .unwrap();
        Drive::in_dir(tmp, users, runtime)
    }

    fn in_dir(tmp: tempfile::TempDir, users: &str, runtime: &str) -> Drive {
        let t = tmp.path();
        std::fs::create_dir_all(t.join("root")).unwrap();
        file(&t.join("users.htpasswd"), users.as_bytes());
        let runtime = runtime.replace("{TMP}", t.to_str().unwrap());
        file(&t.join("runtime.toml"), runtime.as_bytes());
        Drive { tmp }
    }

    /// The scratch directory.
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// The served directory.
    pub fn root(&self) -> PathBuf {
        self.path().join("root")
    }

    pub fn runtime_file(&self) -> PathBuf {
        self.path().join("runtime.toml")
    }

    /// The runtime file as read, on a loopback port with two workers and
    /// no access log (unless it names a file); `pki` makes it HTTPS with
    /// the PKI's pair as the runtime's own (the one served without SNI).
    pub fn runtime(&self, pki: Option<&TestPki>) -> Runtime {
        let file = self.runtime_file();
        let mut rt = Runtime::load(&file).unwrap_or_else(|e| {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            panic!("the WebDAV runtime file is refused: {e:?}\n{text}")
        });
        let base = pki.map_or_else(test_runtime, TestPki::runtime);
        rt.listen = base.listen;
        rt.tls_cert = base.tls_cert;
        rt.tls_key = base.tls_key;
        rt.workers = 2;
        if rt.access_log == LogTarget::Stderr {
            rt.access_log = LogTarget::Off;
        }
        rt
    }

    /// `nikaia serve root` under [`Drive::runtime`].
    pub fn serve(&self, pki: Option<&TestPki>) -> Running {
        serve_dir(&self.root(), self.runtime(pki), false, true)
    }
}
