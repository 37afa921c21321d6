//! Writes and removals under a site's write rules (`spec/fs-root.md`,
//! "Guarded writes"): no symbolic link is followed in any component —
//! each directory is opened with `O_NOFOLLOW` relative to the one before
//! it, which is what `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` does in one
//! call, and the last component, if a link, is replaced or removed itself
//! — missing directories are made one level at a time by the same walk,
//! and the files and directories the operator's runtime file names are
//! never written into, replaced or removed (by identity, when it acts).

use super::put::{denied, io_error, serialize, split};
use super::{Conditions, Durability, Error, Guard, Outside, Removable};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode as Perm, OFlags, Stat};
use rustix::io::Errno;
use std::path::Path;

impl Guard {
    /// [`Error`] (403) when `st` is one of the protected.
    #[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
    pub(crate) fn check(&self, st: &Stat, name: &Path) -> Result<(), Error> {
        let id = (st.st_dev as u64, st.st_ino as u64);
        if self.protected.contains(&id) {
            let why = format!("{} is one of the server's own files", name.display());
            return Err(denied(&why));
        }
        Ok(())
    }
}

/// How a directory on the way is opened: to write in, sync and list.
const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Opens the directory `dir` (a name under `root`, `.` for the root
/// itself) component by component, following no link; makes what is
/// missing when the guard says so.
pub(crate) fn open_dir(root: BorrowedFd<'_>, dir: &Path, guard: &Guard) -> Result<OwnedFd, Error> {
    use std::os::unix::ffi::OsStrExt;
    let mut at = rustix::fs::openat(root, ".", DIR, Perm::empty()).map_err(|e| io_error(e, dir))?;
    for component in dir.as_os_str().as_bytes().split(|&b| b == b'/') {
        match component {
            b"" | b"." => continue,
            b".." => return Err(Error::Outside(Outside::new(dir))),
            _ => {}
        }
        let next = match rustix::fs::openat(&at, component, DIR, Perm::empty()) {
            Err(Errno::NOENT) if guard.make_dirs => {
                match rustix::fs::mkdirat(&at, component, Perm::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(io_error(e, dir)),
                }
                rustix::fs::openat(&at, component, DIR, Perm::empty())
            }
            opened => opened,
        };
        at = match next {
            Ok(fd) => fd,
            // O_NOFOLLOW met a link (ELOOP), or O_DIRECTORY a link or a file.
            Err(Errno::LOOP | Errno::NOTDIR) => return Err(on_the_way(&at, component, dir)),
            Err(e) => return Err(io_error(e, dir)),
        };
        let st = rustix::fs::fstat(&at).map_err(|e| io_error(e, dir))?;
        guard.check(&st, dir)?;
    }
    Ok(at)
}

/// Why a component could not be entered: a link (never followed: 403), or
/// a file where a directory should be (409).
fn on_the_way(at: &OwnedFd, component: &[u8], dir: &Path) -> Error {
    match rustix::fs::statat(at, component, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode as _) == FileType::Symlink => denied(
            &format!("{}: writes follow no symbolic link", dir.display()),
        ),
        _ => Error::NotFound,
    }
}

/// Begins a guarded write of `name` under the directory `root`.
pub(crate) fn begin_write(
    root: BorrowedFd<'_>,
    name: &Path,
    mode: super::Mode,
    guard: &Guard,
) -> Result<super::Writing, Error> {
    let (dir, entry) = split(name, true)?;
    let dir_fd = open_dir(root, dir, guard)?;
    super::Writing::begin(dir_fd, entry, name, mode, Some(guard.clone()))
}

/// The (device, inode) at `name` under `root`, found by the same walk
/// (no link followed, nothing made): whether a name is a given file.
#[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
pub(crate) fn identity(root: BorrowedFd<'_>, name: &Path) -> Option<(u64, u64)> {
    let (dir, entry) = split(name, true).ok()?;
    let walk = Guard {
        make_dirs: false,
        protected: Vec::new(),
    };
    let dir_fd = open_dir(root, dir, &walk).ok()?;
    let st = rustix::fs::statat(&dir_fd, entry, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    Some((st.st_dev as u64, st.st_ino as u64))
}

/// Takes a complete file written elsewhere (`temp` in `from`) to become
/// `name` under the directory `root`, under the same guard as a write.
#[allow(clippy::too_many_arguments)]
pub(crate) fn adopt(
    root: BorrowedFd<'_>,
    name: &Path,
    mode: super::Mode,
    guard: &Guard,
    file: std::fs::File,
    from: OwnedFd,
    temp: Vec<u8>,
) -> Result<super::Writing, Error> {
    let (dir, entry) = split(name, true)?;
    let dir_fd = open_dir(root, dir, guard)?;
    super::Writing::adopt(
        dir_fd,
        entry,
        name,
        mode,
        Some(guard.clone()),
        file,
        from,
        temp,
    )
}

/// Removes `name` under the directory `root` as `what` allows, if the
/// request's preconditions hold for it (checked with the name held against
/// writers, so none slips in between). A trailing `/` asks for a
/// directory. A directory that is not empty is
/// [`std::io::ErrorKind::DirectoryNotEmpty`]: nothing is removed level by
/// level.
pub(crate) fn remove(
    root: BorrowedFd<'_>,
    name: &Path,
    c: &Conditions,
    what: Removable,
    guard: &Guard,
    durability: Durability,
) -> Result<(), Error> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = name.as_os_str().as_bytes();
    let dir_asked = bytes.ends_with(b"/");
    let end = bytes.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    let bare = Path::new(std::ffi::OsStr::from_bytes(&bytes[..end]));
    let (dir, entry) = split(bare, true)?;
    let dir_fd = open_dir(root, dir, guard)?;
    let _serial = serialize(dir_fd.as_fd(), entry);
    let st = match rustix::fs::statat(&dir_fd, entry, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(e) => return Err(io_error(e, name)),
    };
    guard.check(&st, name)?;
    let kind = FileType::from_raw_mode(st.st_mode as _);
    let id = (kind == FileType::RegularFile).then(|| super::fd::identity(&st));
    let etag = id.map(|id| id.etag());
    let modified = id.map(|id| id.mtime_ns.div_euclid(1_000_000_000).max(0) as u64);
    if !c.hold(Some(etag.as_deref().zip(modified))) {
        return Err(Error::Precondition);
    }
    let flags = match kind {
        FileType::Directory if what.dirs => AtFlags::REMOVEDIR,
        FileType::Directory => return Err(denied("the rule does not let this remove directories")),
        _ if dir_asked => return Err(Error::NotFound),
        FileType::RegularFile | FileType::Symlink if what.files => AtFlags::empty(),
        FileType::RegularFile | FileType::Symlink => {
            return Err(denied("the rule does not let this remove files"))
        }
        _ => return Err(Error::NotAFile { directory: false }),
    };
    match rustix::fs::unlinkat(&dir_fd, entry, flags) {
        Ok(()) => {}
        Err(Errno::NOTEMPTY | Errno::EXIST) => {
            return Err(Error::Io(std::io::ErrorKind::DirectoryNotEmpty.into()))
        }
        Err(e) => return Err(io_error(e, name)),
    }
    if durability == Durability::Full {
        rustix::fs::fsync(&dir_fd).map_err(|e| io_error(e, name))?;
    }
    Ok(())
}
