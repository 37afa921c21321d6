//! A Unix socket's path, which may be ours: the stats socket and Unix
//! listeners (`spec/runtime-file.md`, "What the server may delete").
//!
//! The path is the operator's, not ours: the server removes only a socket it
//! can tell is a dead server's (nothing answers on it) before binding, and
//! later only the very socket it bound (same device and inode), and not
//! once it handed the socket to a successor. Anything else found there (a
//! regular file, a directory, a symlink to anything, a FIFO, a live socket)
//! stops the server from starting and is left as it was.

use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
use std::fs::FileType;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// What is at a socket path that the server may bind.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Vacancy {
    /// Nothing: bind it.
    Empty,
    /// A socket no server answers on, with its (device, inode): the one
    /// thing the server removes before binding.
    StaleSocket(u64, u64),
}

/// Looks at `path` without following a symlink and says whether the server
/// may take it; the error names `what` (`stats socket /x`, `listener
/// unix:/x`) and what is there.
pub(crate) fn inspect(path: &Path, what: &str) -> io::Result<Vacancy> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vacancy::Empty),
        Err(e) => return Err(refusal(what, e.kind(), &format!("cannot look at it: {e}"))),
    };
    if !meta.file_type().is_socket() {
        let kind = describe(meta.file_type());
        return Err(refusal(
            what,
            io::ErrorKind::AlreadyExists,
            &format!(
                "{kind} is there, not a socket; nikaia replaces only a socket a dead server \
                 left, so move it away or choose another path"
            ),
        ));
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(refusal(
            what,
            io::ErrorKind::AddrInUse,
            "another server answers on it",
        )),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            Ok(Vacancy::StaleSocket(meta.dev(), meta.ino()))
        }
        Err(e) => Err(refusal(
            what,
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

fn refusal(what: &str, kind: io::ErrorKind, why: &str) -> io::Error {
    io::Error::new(kind, format!("{what}: {why}"))
}

/// (device, inode) of what is at `path` now, if it is a socket.
pub(crate) fn socket_identity(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.file_type()
        .is_socket()
        .then(|| (meta.dev(), meta.ino()))
}

/// A socket path this process bound (or was handed by the process it
/// replaced): removed when dropped if it is still that socket and was not
/// handed on.
#[derive(Debug)]
pub(crate) struct Claim {
    path: PathBuf,
    /// (device, inode) of the socket file this process bound.
    bound: (u64, u64),
    handed: AtomicBool,
}

impl Claim {
    /// Binds a stream socket at `path` with permission bits `mode`, set
    /// before it listens (so no one may connect in between), and listens
    /// with `backlog`. See [`inspect`] for what may already be there.
    pub(crate) fn bind(
        path: &Path,
        what: &str,
        mode: u32,
        backlog: i32,
        flags: SocketFlags,
    ) -> io::Result<(OwnedFd, Claim)> {
        if let Vacancy::StaleSocket(dev, ino) = inspect(path, what)? {
            // Look again right before removing: only the same dead socket
            // goes, not whatever replaced it since.
            if socket_identity(path) != Some((dev, ino)) {
                return Err(refusal(
                    what,
                    io::ErrorKind::AlreadyExists,
                    "it changed while nikaia looked at it; start again",
                ));
            }
            std::fs::remove_file(path).map_err(|e| {
                refusal(
                    what,
                    e.kind(),
                    &format!("cannot remove a stale socket: {e}"),
                )
            })?;
        }
        let fd = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC | flags,
            None,
        )?;
        let addr = SocketAddrUnix::new(path)?;
        // bind never replaces anything: whatever appeared since is EADDRINUSE.
        rustix::net::bind(&fd, &addr).map_err(|e| {
            let why = match e {
                rustix::io::Errno::ADDRINUSE => "address already in use".to_owned(),
                e => io::Error::from(e).to_string(),
            };
            refusal(what, io::Error::from(e).kind(), &why)
        })?;
        let bound = std::fs::symlink_metadata(path).map(|m| (m.dev(), m.ino()))?;
        let claim = Claim {
            path: path.to_path_buf(),
            bound,
            handed: AtomicBool::new(false),
        };
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        rustix::net::listen(&fd, backlog)?;
        Ok((fd, claim))
    }

    /// The claim a successor takes over from the process that bound the
    /// socket (`bound` as that process recorded it). It starts as not yet
    /// this process's ([`Claim::set_handed`]`(true)`): a successor that
    /// fails before it said ready must not remove a path the old process
    /// still serves on; it owns the path once it said ready.
    pub(crate) fn adopted(path: &Path, bound: (u64, u64)) -> Claim {
        Claim {
            path: path.to_path_buf(),
            bound,
            handed: AtomicBool::new(true),
        }
    }

    /// (device, inode) of the socket file, for a successor.
    pub(crate) fn bound(&self) -> (u64, u64) {
        self.bound
    }

    /// `true`: the socket belongs to another process (a successor, or the
    /// process this one replaces until it said ready): this process never
    /// removes the path. `false`: it is this process's to remove.
    pub(crate) fn set_handed(&self, handed: bool) {
        self.handed.store(handed, Ordering::SeqCst);
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if !self.handed.load(Ordering::SeqCst) && socket_identity(&self.path) == Some(self.bound) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
