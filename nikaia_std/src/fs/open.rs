//! The portable entry for opening a name under a root: one function, one
//! implementation per platform behind it (`linux.rs`: openat2; `walk.rs`: the
//! per-component fallback).

use super::{Error, Outside};
use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::fs::{FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};

/// What identifies a file's contents at one moment: used to validate a kept
/// mapping (D8) and to build validators (ETag, Last-Modified).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Status-change time, nanoseconds since the Unix epoch.
    pub ctime_ns: i64,
}

/// A regular file opened under a root: the one descriptor every later step
/// (stat, map, read, send) uses, and its identity taken from that descriptor.
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    pub id: Identity,
}

/// Why a name is opened: it decides the open flags and whether the
/// resolution may only use the kernel's dentry cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Read a regular file.
    Read,
    /// Read, but fail with [`Error::WouldBlock`] rather than wait for the
    /// disk during the lookup (openat2 `RESOLVE_CACHED`).
    ReadCached,
    /// Create or truncate a regular file, then write it.
    Write,
    /// Read a directory's entries.
    List,
}

impl Purpose {
    /// The flags of the final open. `O_NONBLOCK` keeps a FIFO from blocking
    /// the open (read: it opens and is refused by fstat; write: `ENXIO`).
    pub(crate) fn flags(self) -> OFlags {
        let common = OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
        match self {
            Purpose::Read | Purpose::ReadCached => OFlags::RDONLY | common,
            Purpose::Write => OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | common,
            Purpose::List => OFlags::RDONLY | OFlags::DIRECTORY | common,
        }
    }

    /// Whether the open may create the file (`O_CREAT`).
    pub(crate) fn creates(self) -> bool {
        self == Purpose::Write
    }

    /// The mode of a created file.
    pub(crate) fn mode(self) -> Mode {
        match self {
            Purpose::Write => Mode::from_raw_mode(0o644),
            _ => Mode::empty(),
        }
    }
}

/// Names longer than this (in bytes) are refused the way the kernel refuses
/// them (`ENAMETOOLONG`, counted with the terminating NUL as `PATH_MAX`).
pub(crate) const PATH_MAX: usize = 4096;

/// The lexical checks, made on the name as given and never rewriting it:
/// empty, a NUL byte, or absolute (a leading `/`) is [`Outside`].
pub(crate) fn check_name(name: &Path) -> Result<(), Outside> {
    let bytes = name.as_os_str().as_bytes();
    if bytes.is_empty() || bytes.contains(&0) || bytes[0] == b'/' {
        return Err(Outside::new(name));
    }
    Ok(())
}

/// Opens `name` beneath the directory `root`: the confined open every `Dir`
/// root goes through. Checks the name lexically, then uses openat2 where the
/// kernel has it and the per-component walk otherwise.
pub(crate) fn open_beneath(
    root: BorrowedFd<'_>,
    name: &Path,
    purpose: Purpose,
) -> Result<OwnedFd, Error> {
    check_name(name)?;
    #[cfg(target_os = "linux")]
    if !walk_forced() {
        if let Some(done) = super::linux::open_beneath(root, name, purpose) {
            return done;
        }
    }
    super::walk::open_beneath(root, name, purpose)
}

/// Keeps `fd` only if it is a regular file, and takes its identity from
/// that same descriptor.
pub(crate) fn regular(fd: OwnedFd) -> Result<Opened, Error> {
    let st = rustix::fs::fstat(&fd).map_err(|e| Error::Io(e.into()))?;
    check_regular(&st)?;
    Ok(Opened {
        file: File::from(fd),
        id: identity(&st),
    })
}

/// `NotAFile` unless the stat describes a regular file.
pub(crate) fn check_regular(st: &Stat) -> Result<(), Error> {
    match FileType::from_raw_mode(st.st_mode as _) {
        FileType::RegularFile => Ok(()),
        FileType::Directory => Err(Error::NotAFile { directory: true }),
        _ => Err(Error::NotAFile { directory: false }),
    }
}

/// The identity in a `stat` result.
#[allow(clippy::unnecessary_cast)] // the field types differ between targets
pub(crate) fn identity(st: &Stat) -> Identity {
    Identity {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        size: st.st_size as u64,
        mtime_ns: st.st_mtime as i64 * 1_000_000_000 + st.st_mtime_nsec as i64,
        ctime_ns: st.st_ctime as i64 * 1_000_000_000 + st.st_ctime_nsec as i64,
    }
}

/// The one mapping from an open's errno to an outcome, shared by both
/// resolution paths so that they agree.
pub(crate) fn from_errno(e: Errno, name: &Path) -> Error {
    match e {
        Errno::NOENT | Errno::NOTDIR | Errno::NAMETOOLONG => Error::NotFound,
        // EXDEV: openat2 saw the name leave the root. ELOOP: a magic link
        // (refused by RESOLVE_NO_MAGICLINKS) or more than 40 symlinks; the
        // kernel does not say which, so both are Outside.
        Errno::XDEV | Errno::LOOP => Error::Outside(Outside::new(name)),
        Errno::ISDIR => Error::NotAFile { directory: true },
        // A socket, a device without a driver, or a FIFO opened for writing
        // with no reader.
        Errno::NXIO => Error::NotAFile { directory: false },
        e => Error::Io(e.into()),
    }
}

/// 0: not read yet; 1: resolve with openat2 where possible; 2: always walk.
static FORCE_WALK: AtomicU8 = AtomicU8::new(0);

/// Test switch: `true` makes every `Dir` open use the per-component walk
/// (process-wide), `false` goes back to openat2. Overrides the environment
/// variable `NIKAIA_FS_FORCE_WALK=1`, which sets the initial value.
#[doc(hidden)]
pub fn force_fallback_walk(on: bool) {
    FORCE_WALK.store(if on { 2 } else { 1 }, Ordering::SeqCst);
}

/// The implementation a `Dir` open would use now: `"openat2"` or `"walk"`
/// (for tests and `nikaia explain`; a filtered openat2 is only noticed at
/// the first open that meets the filter).
#[doc(hidden)]
pub fn resolver() -> &'static str {
    #[cfg(target_os = "linux")]
    if !walk_forced() && super::linux::available() {
        return "openat2";
    }
    "walk"
}

/// Whether the walk is forced (by the switch, else by the environment).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn walk_forced() -> bool {
    match FORCE_WALK.load(Ordering::SeqCst) {
        0 => {
            let env = std::env::var_os("NIKAIA_FS_FORCE_WALK").is_some_and(|v| v == "1");
            let state = if env { 2 } else { 1 };
            // A concurrent `force_fallback_walk` wins over the environment.
            let _ = FORCE_WALK.compare_exchange(0, state, Ordering::SeqCst, Ordering::SeqCst);
            FORCE_WALK.load(Ordering::SeqCst) == 2
        }
        state => state == 2,
    }
}
