//! The fallback resolution: one component at a time, relative to descriptors
//! this code opened itself, for kernels without openat2 (or with it filtered).
//!
//! No path string is ever built: each component is opened relative to the
//! directory reached so far, symlinks are read and their targets' components
//! spliced in front of the remaining ones, and `..` pops a stack of the
//! directories entered, so it can never rise above the root.

use super::open::{from_errno, Purpose, PATH_MAX};
use super::{Error, Outside};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Stands for a trailing `/` among the pending components (a real component
/// never contains `/`). Before the last component it is skipped; as the last
/// it is `.`, so the name before it must be a directory.
const TRAILING: &[u8] = b"/";

/// The kernel's limit on symlinks followed in one lookup (`MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// How an intermediate directory is opened: only to look up names in it.
#[cfg(any(target_os = "linux", target_os = "android"))]
const DIR_FLAGS: OFlags = OFlags::PATH
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Opens `name` (already checked lexically) beneath `root`, refusing what
/// openat2 with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` refuses.
pub(crate) fn open_beneath(
    root: BorrowedFd<'_>,
    name: &Path,
    purpose: Purpose,
) -> Result<OwnedFd, Error> {
    let bytes = name.as_os_str().as_bytes();
    if bytes.len() >= PATH_MAX {
        return Err(from_errno(Errno::NAMETOOLONG, name));
    }
    let outside = || Error::Outside(Outside::new(name));
    // The directories entered below the root; the last one is current.
    let mut entered: Vec<OwnedFd> = Vec::new();
    // The components still to resolve, the next one last.
    let mut pending: Vec<Vec<u8>> = Vec::new();
    splice(&mut pending, bytes);
    let mut links = 0;

    while let Some(mut component) = pending.pop() {
        let last = pending.is_empty();
        if component == TRAILING {
            if !last {
                continue;
            }
            component = b".".to_vec();
        }
        if component == b".." {
            if entered.pop().is_none() {
                return Err(outside());
            }
            if !last {
                continue;
            }
            component = b".".to_vec();
        } else if component == b"." && !last {
            continue;
        } else if purpose.creates() && component != b"." && pending == [TRAILING] {
            // Like the kernel: creating a name with a trailing `/` is EISDIR,
            // decided before the name is looked up.
            return Err(from_errno(Errno::ISDIR, name));
        }
        let dir = entered.last().map_or(root, |fd| fd.as_fd());

        let opened = if last {
            rustix::fs::openat(
                dir,
                component.as_slice(),
                purpose.flags() | OFlags::NOFOLLOW,
                purpose.mode(),
            )
        } else {
            rustix::fs::openat(dir, component.as_slice(), DIR_FLAGS, Mode::empty())
        };
        match opened {
            Ok(fd) if last => return Ok(fd),
            Ok(fd) => {
                refuse_procfs(&fd, name)?;
                entered.push(fd);
            }
            // The component may be a symlink: O_NOFOLLOW refused it (ELOOP;
            // EMLINK on the BSDs), or O_DIRECTORY did (ENOTDIR).
            Err(e @ (Errno::LOOP | Errno::MLINK | Errno::NOTDIR)) => {
                let target = match rustix::fs::readlinkat(dir, component.as_slice(), Vec::new()) {
                    Ok(target) => target,
                    // Not a symlink: the first error stands.
                    Err(Errno::INVAL) => return Err(from_errno(e, name)),
                    Err(other) => return Err(from_errno(other, name)),
                };
                links += 1;
                if links > MAX_LINKS {
                    return Err(from_errno(Errno::LOOP, name));
                }
                let target = target.as_bytes();
                match target.first() {
                    None => return Err(from_errno(Errno::NOENT, name)),
                    Some(b'/') => return Err(outside()),
                    Some(_) => splice(&mut pending, target),
                }
            }
            Err(e) => return Err(from_errno(e, name)),
        }
    }
    // A name that is not empty and not absolute always has a last
    // component, so this is not reached; refuse rather than guess.
    Err(outside())
}

/// Puts the components of `path` in front of the pending ones, with
/// [`TRAILING`] for a trailing `/`.
fn splice(pending: &mut Vec<Vec<u8>>, path: &[u8]) {
    if path.ends_with(b"/") {
        pending.push(TRAILING.to_vec());
    }
    let parts = path.split(|&b| b == b'/').filter(|c| !c.is_empty());
    let at = pending.len();
    pending.extend(parts.map(<[u8]>::to_vec));
    pending[at..].reverse();
}

/// A directory on procfs holds magic links, which openat2 refuses with
/// `RESOLVE_NO_MAGICLINKS` and readlink cannot tell apart: the walk refuses
/// to enter procfs at all.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn refuse_procfs(dir: &OwnedFd, name: &Path) -> Result<(), Error> {
    let fs = rustix::fs::fstatfs(dir).map_err(|e| Error::Io(e.into()))?;
    if fs.f_type == rustix::fs::PROC_SUPER_MAGIC {
        return Err(Error::Outside(Outside::new(name)));
    }
    Ok(())
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn refuse_procfs(_dir: &OwnedFd, _name: &Path) -> Result<(), Error> {
    Ok(())
}
