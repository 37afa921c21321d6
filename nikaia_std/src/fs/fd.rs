//! Linux: names opened relative to descriptors. openat2 first (`linux.rs`),
//! else the walk (`walk.rs`) over [`FdLookup`]: descriptors this code opened
//! itself, one component at a time.

use super::open::{check_name, walk_forced, Identity, Opened, Purpose};
use super::walk::{self, Lookup, Miss};
use super::{Error, Outside};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use std::fs::File;
use std::path::Path;

/// How an intermediate directory is opened: only to look up names in it.
const DIR_FLAGS: OFlags = OFlags::PATH
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Purpose {
    /// The flags of the final open. `O_NONBLOCK` keeps a FIFO from blocking
    /// the open (read: it opens and is refused by fstat; write: `ENXIO`).
    pub(crate) fn flags(self) -> OFlags {
        let common = OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
        match self {
            Purpose::Read | Purpose::ReadCached => OFlags::RDONLY | common,
            Purpose::List => OFlags::RDONLY | OFlags::DIRECTORY | common,
        }
    }

    /// The mode of a created file: none is created by an open.
    pub(crate) fn mode(self) -> Mode {
        Mode::empty()
    }
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
    if !walk_forced() {
        if let Some(done) = super::linux::open_beneath(root, name, purpose) {
            return done;
        }
    }
    walk::open_beneath(&FdLookup { root }, name, purpose)
}

/// The walk's lookup over descriptors, relative to the root's descriptor.
pub(crate) struct FdLookup<'a> {
    pub(crate) root: BorrowedFd<'a>,
}

/// A directory in the walk: the root (borrowed) or one it opened.
pub(crate) enum DirFd<'a> {
    Root(BorrowedFd<'a>),
    Entered(OwnedFd),
}

impl AsFd for DirFd<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            DirFd::Root(fd) => *fd,
            DirFd::Entered(fd) => fd.as_fd(),
        }
    }
}

/// An errno as the walk sees it.
fn miss(e: Errno) -> Miss {
    match e {
        // O_NOFOLLOW refused a symlink (EMLINK on the BSDs).
        Errno::LOOP | Errno::MLINK => Miss::Symlink,
        // O_DIRECTORY refused it: not a directory, or a symlink.
        Errno::NOTDIR => Miss::NotDir,
        Errno::XDEV => Miss::Outside,
        // from_errno needs the name only for ELOOP and EXDEV, handled above.
        e => Miss::Other(from_errno(e, Path::new(""))),
    }
}

impl<'a> Lookup for FdLookup<'a> {
    type Dir = DirFd<'a>;
    type File = OwnedFd;

    fn root(&self) -> DirFd<'a> {
        DirFd::Root(self.root)
    }

    fn open_dir(&self, at: &DirFd<'a>, component: &[u8]) -> Result<DirFd<'a>, Miss> {
        let fd = rustix::fs::openat(at, component, DIR_FLAGS, Mode::empty()).map_err(miss)?;
        refuse_procfs(&fd)?;
        Ok(DirFd::Entered(fd))
    }

    fn open_file(
        &self,
        at: &DirFd<'a>,
        component: &[u8],
        purpose: Purpose,
    ) -> Result<OwnedFd, Miss> {
        rustix::fs::openat(
            at,
            component,
            purpose.flags() | OFlags::NOFOLLOW,
            purpose.mode(),
        )
        .map_err(miss)
    }

    fn readlink(&self, at: &DirFd<'a>, component: &[u8]) -> Result<Vec<u8>, Miss> {
        match rustix::fs::readlinkat(at, component, Vec::new()) {
            Ok(target) => Ok(target.into_bytes()),
            Err(Errno::INVAL) => Err(Miss::NotALink),
            Err(e) => Err(miss(e)),
        }
    }
}

/// A directory on procfs holds magic links, which openat2 refuses with
/// `RESOLVE_NO_MAGICLINKS` and readlink cannot tell apart: the walk refuses
/// to enter procfs at all.
fn refuse_procfs(dir: &OwnedFd) -> Result<(), Miss> {
    let fs = rustix::fs::fstatfs(dir).map_err(|e| Miss::Other(Error::Io(e.into())))?;
    if fs.f_type == rustix::fs::PROC_SUPER_MAGIC {
        return Err(Miss::Outside);
    }
    Ok(())
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
