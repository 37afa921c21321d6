//! Linux: resolution with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`,
//! where the kernel itself refuses every escape.

use super::fd::from_errno;
use super::open::Purpose;
use super::Error;
use rustix::fd::{BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once openat2 turned out to be missing (ENOSYS) or filtered (EPERM
/// from seccomp): from then on, the walk resolves every name.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Set once `RESOLVE_CACHED` turned out to be unknown (EINVAL, before 5.12).
static NO_CACHED: AtomicBool = AtomicBool::new(false);

/// How many times a lookup that raced with a rename or mount (EAGAIN) is
/// tried before it is reported as an I/O error.
const ATTEMPTS: usize = 8;

/// False once openat2 was found missing or filtered in this process.
pub(crate) fn available() -> bool {
    !NO_OPENAT2.load(Ordering::Relaxed)
}

/// Opens `name` beneath `root` with openat2, or `None` when openat2 is not
/// available in this process (the caller then walks).
pub(crate) fn open_beneath(
    root: BorrowedFd<'_>,
    name: &Path,
    purpose: Purpose,
) -> Option<Result<OwnedFd, Error>> {
    if NO_OPENAT2.load(Ordering::Relaxed) {
        return None;
    }
    let base = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    let mut cached = purpose == Purpose::ReadCached && !NO_CACHED.load(Ordering::Relaxed);
    let mut attempt = 0;
    loop {
        let resolve = if cached {
            base | ResolveFlags::CACHED
        } else {
            base
        };
        match rustix::fs::openat2(root, name, purpose.flags(), purpose.mode(), resolve) {
            Ok(fd) => return Some(Ok(fd)),
            Err(Errno::AGAIN) if cached => return Some(Err(Error::WouldBlock)),
            Err(Errno::AGAIN) if attempt + 1 < ATTEMPTS => attempt += 1,
            Err(Errno::INVAL) if cached => {
                NO_CACHED.store(true, Ordering::Relaxed);
                cached = false;
            }
            Err(Errno::NOSYS) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
                return None;
            }
            Err(Errno::PERM) if filtered(root) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
                return None;
            }
            Err(e) => return Some(Err(from_errno(e, name))),
        }
    }
}

/// Tells a seccomp filter's EPERM from a file's own (an immutable file
/// opened for writing): an `O_PATH` open of the root itself cannot be refused
/// by the file system, so EPERM or ENOSYS there means openat2 is filtered.
fn filtered(root: BorrowedFd<'_>) -> bool {
    let probe = rustix::fs::openat2(
        root,
        ".",
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH,
    );
    matches!(probe, Err(Errno::PERM | Errno::NOSYS))
}
