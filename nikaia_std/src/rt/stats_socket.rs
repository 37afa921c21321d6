//! The stats socket (`stats-socket`): a Unix socket, mode 0600, on which a
//! running server answers every connection with its [`Report`] as JSON and
//! closes. `nikaia explain` reads it. Removed when the server stops.

use super::Report;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
use std::io::{self, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub(crate) struct StatsSocket {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StatsSocket {
    /// Binds `path` (mode 0600 before it listens, so no one else can
    /// connect in between) and answers with `report()` until stopped. A
    /// stale socket left by a server that died is replaced; one that a live
    /// server answers on is an error.
    pub(crate) fn start(
        path: &Path,
        report: impl Fn() -> Report + Send + 'static,
    ) -> io::Result<StatsSocket> {
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "stats socket {}: another server answers on it",
                    path.display()
                ),
            ));
        }
        if path.exists() {
            std::fs::remove_file(path)?;
        }
        let fd = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )?;
        let addr = SocketAddrUnix::new(path)?;
        rustix::net::bind(&fd, &addr).map_err(|e| {
            io::Error::new(
                io::Error::from(e).kind(),
                format!("stats socket {}: {e}", path.display()),
            )
        })?;
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        rustix::net::listen(&fd, 16)?;
        let listener = UnixListener::from(fd);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("nikaia-stats".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if flag.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(mut c) = conn {
                        let _ = c.write_all(report().to_json().as_bytes());
                    }
                }
            })?;
        Ok(StatsSocket {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for StatsSocket {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = UnixStream::connect(&self.path);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}
