//! Writes and removals under a site's write rules (`spec/fs-root.md`,
//! "Guarded writes"): the files and directories the operator's runtime
//! file names are never written into, replaced or removed (by identity,
//! when it acts), and a removal takes one entry, checked with its name
//! held. The name is reached by the parent walker (`parent.rs`,
//! `Reach::NoLinks`): no symbolic link followed in any component, missing
//! directories made one level at a time, the last component, if a link,
//! replaced or removed itself.

use super::parent::{in_parent, Reach};
use super::put::{denied, io_error, serialize};
use super::{Conditions, Durability, Error, Guard, Removable, Root};
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, FileType, Stat};
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

/// Removes `name` under `root` as `what` allows, if the request's
/// preconditions hold for it (checked with the name held against writers,
/// so none slips in between). A trailing `/` asks for a directory. A
/// directory that is not empty is [`std::io::ErrorKind::DirectoryNotEmpty`]:
/// nothing is removed level by level.
pub(crate) fn remove(
    root: &Root,
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
    in_parent(root, bare, Reach::NoLinks(guard), |dir_fd, entry| {
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
        guard.held.ask(etag.as_deref(), true)?;
        let flags = match kind {
            FileType::Directory if what.dirs => AtFlags::REMOVEDIR,
            FileType::Directory => {
                return Err(denied("the rule does not let this remove directories"))
            }
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
    })
}
