//! What can go wrong when a name is opened under a root.

use std::fmt;
use std::io;

/// The name would leave its root: `..` past the top, an absolute name, a
/// symlink that points out, a `/proc` magic link, a NUL byte, an empty name.
///
/// A handler answers it with 404. The name is kept (lossily, for the log)
/// and is never rewritten into another name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outside {
    pub(crate) name: String,
}

impl Outside {
    pub(crate) fn new(name: &std::path::Path) -> Outside {
        Outside {
            name: name.to_string_lossy().into_owned(),
        }
    }

    /// The refused name, as given (lossy UTF-8).
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for Outside {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} leaves its root", self.name)
    }
}

impl std::error::Error for Outside {}

/// Why a name under a root did not give a readable regular file.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The name leaves the root. Nothing outside was opened.
    Outside(Outside),
    /// No such file (or a component that is not a directory, or a name too long).
    NotFound,
    /// The name is a directory, FIFO, device or socket; it was not read.
    NotAFile {
        /// True when it is a directory (a file server may look for an index).
        directory: bool,
    },
    /// The open would have to wait for the disk (only from the cached probe).
    WouldBlock,
    /// A write's name exists and the write only creates.
    Exists,
    /// A write's name does not hold the version its condition names.
    Precondition,
    /// The file system is full, or the owner's quota is (a write).
    NoSpace,
    /// A rule of the caller's refuses the write (the site's write rules,
    /// the runtime file's own files): why. A server answers 403.
    Denied(String),
    /// The name, a collection above it or a member under it is locked
    /// (WebDAV, `spec/site.md` "WebDAV class 2: locks") and the request
    /// did not submit the lock's token as its owner: the hrefs of the
    /// locks' roots. A server answers 423.
    Locked(Vec<String>),
    /// Any other failure of the system. A server answers 500 and logs it,
    /// but the kernel's refusal of a write (`EACCES`, `EPERM`: the
    /// directory or file is not the server's to change), which it
    /// answers 403 and logs.
    Io(io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Outside(o) => o.fmt(f),
            Error::NotFound => f.write_str("no such file"),
            Error::NotAFile { directory: true } => f.write_str("is a directory"),
            Error::NotAFile { directory: false } => f.write_str("not a regular file"),
            Error::WouldBlock => f.write_str("open would wait for the disk"),
            Error::Exists => f.write_str("the name exists"),
            Error::Precondition => f.write_str("the name does not hold the version asked for"),
            Error::NoSpace => f.write_str("no space left for the file"),
            Error::Denied(why) => write!(f, "refused: {why}"),
            Error::Locked(roots) => write!(f, "locked: {}", roots.join(", ")),
            Error::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Outside(o) => Some(o),
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<Outside> for Error {
    fn from(o: Outside) -> Error {
        Error::Outside(o)
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e {
            Error::Io(e) => e,
            Error::NotFound => io::Error::from(io::ErrorKind::NotFound),
            Error::WouldBlock => io::Error::from(io::ErrorKind::WouldBlock),
            Error::Exists => io::Error::from(io::ErrorKind::AlreadyExists),
            Error::NoSpace => io::Error::from(io::ErrorKind::StorageFull),
            Error::Denied(why) => io::Error::new(io::ErrorKind::PermissionDenied, why),
            other => io::Error::other(other),
        }
    }
}
