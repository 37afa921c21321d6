//! The stats socket (`stats-socket`): a Unix socket, mode 0600, on which a
//! running server answers every connection with its [`Report`] as JSON and
//! closes. `nikaia explain` reads it.
//!
//! The path is the operator's, not ours: the server removes only a socket it
//! can tell is a dead server's (nothing answers on it) before binding, and at
//! shutdown only the very socket it bound (same device and inode). Anything
//! else found there (a regular file, a directory, a symlink to anything, a
//! FIFO, a live socket) stops the server from starting and is left as it was
//! (`spec/runtime-file.md`, "What the server may delete").

use crate::rt::Report;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
use std::fs::FileType;
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// What is at a stats-socket path that the server may bind.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Vacancy {
    /// Nothing: bind it.
    Empty,
    /// A socket no server answers on, with its (device, inode): the one
    /// thing the server removes before binding.
    StaleSocket(u64, u64),
}

/// Looks at `path` without following a symlink and says whether the server
/// may take it; the error names the path and what is there.
pub(crate) fn inspect(path: &Path) -> io::Result<Vacancy> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vacancy::Empty),
        Err(e) => return Err(refusal(path, e.kind(), &format!("cannot look at it: {e}"))),
    };
    if !meta.file_type().is_socket() {
        let what = describe(meta.file_type());
        return Err(refusal(
            path,
            io::ErrorKind::AlreadyExists,
            &format!(
                "{what} is there, not a socket; nikaia replaces only a socket a dead server \
                 left, so move it away or choose another path"
            ),
        ));
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(refusal(
            path,
            io::ErrorKind::AddrInUse,
            "another server answers on it",
        )),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            Ok(Vacancy::StaleSocket(meta.dev(), meta.ino()))
        }
        Err(e) => Err(refusal(
            path,
            e.kind(),
            &format!("cannot tell whether a server answers on it: {e}"),
        )),
    }
}

/// "a regular file", "a directory", … for an error message.
fn describe(kind: FileType) -> &'static str {
    if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_file() {
        "a regular file"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "something"
    }
}

fn refusal(path: &Path, kind: io::ErrorKind, why: &str) -> io::Error {
    io::Error::new(kind, format!("stats socket {}: {why}", path.display()))
}

/// (device, inode) of what is at `path` now, if it is a socket.
fn socket_identity(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.file_type()
        .is_socket()
        .then(|| (meta.dev(), meta.ino()))
}

pub(crate) struct StatsSocket {
    path: PathBuf,
    /// (device, inode) of the socket this process bound: the one thing it
    /// removes at shutdown.
    bound: (u64, u64),
    /// The listening socket, kept to wake the accept at shutdown.
    listener: UnixListener,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StatsSocket {
    /// Binds `path` (mode 0600 before it listens, so no one else can
    /// connect in between) and answers with `report()` until stopped. See
    /// [`inspect`] for what may already be at `path`.
    pub(crate) fn start(
        path: &Path,
        report: impl Fn() -> Report + Send + 'static,
    ) -> io::Result<StatsSocket> {
        if let Vacancy::StaleSocket(dev, ino) = inspect(path)? {
            // Look again right before removing: only the same dead socket
            // goes, not whatever replaced it since.
            if socket_identity(path) != Some((dev, ino)) {
                return Err(refusal(
                    path,
                    io::ErrorKind::AlreadyExists,
                    "it changed while nikaia looked at it; start again",
                ));
            }
            std::fs::remove_file(path).map_err(|e| {
                refusal(
                    path,
                    e.kind(),
                    &format!("cannot remove a stale socket: {e}"),
                )
            })?;
        }
        let fd = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )?;
        let addr = SocketAddrUnix::new(path)?;
        // bind never replaces anything: whatever appeared since is EADDRINUSE.
        rustix::net::bind(&fd, &addr)
            .map_err(|e| refusal(path, io::Error::from(e).kind(), &e.to_string()))?;
        let bound = std::fs::symlink_metadata(path).map(|m| (m.dev(), m.ino()))?;
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        rustix::net::listen(&fd, 16)?;
        let listener = UnixListener::from(fd);
        let accepting = listener.try_clone()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("nikaia-stats".into())
            .spawn(move || {
                for conn in accepting.incoming() {
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
            bound,
            listener,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for StatsSocket {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept: on Linux, shutting a listening socket
        // down makes accept fail at once (connecting to the path would not
        // reach us if the path is someone else's by now).
        let _ = rustix::net::shutdown(&self.listener, rustix::net::Shutdown::Read);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if socket_identity(&self.path) == Some(self.bound) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
