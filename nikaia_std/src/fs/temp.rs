//! The temporaries of writes under a root (`spec/files.md`, "A body
//! written under a root"): the unnamed file (or a named temporary where
//! the file system has none), their random names, the sweep of those a
//! killed process left, the free space, and the lock that serializes
//! writes to one name in the process.

use super::open::{is_temporary, Purpose, TEMPORARY_PREFIX};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode as Perm, OFlags};
use rustix::io::Errno;
use std::collections::HashSet;
use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, LazyLock, Mutex};
use std::time::SystemTime;

/// Test switch: every write uses a named temporary, as on a file system
/// without `O_TMPFILE`.
static FORCE_NAMED: AtomicBool = AtomicBool::new(false);

/// Makes every write use a named temporary (tests of that path).
#[doc(hidden)]
pub fn force_named_temporaries(on: bool) {
    FORCE_NAMED.store(on, Ordering::SeqCst);
}

/// The unnamed file in `dir`, or a named temporary where the file system
/// has no `O_TMPFILE`.
pub(crate) fn temporary(dir: BorrowedFd<'_>) -> Result<(File, Option<Vec<u8>>), Errno> {
    let perm = Perm::from_raw_mode(0o644);
    if !FORCE_NAMED.load(Ordering::SeqCst) {
        let flags = OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC;
        match rustix::fs::openat(dir, ".", flags, perm) {
            Ok(fd) => return Ok((File::from(fd), None)),
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {}
            Err(e) => return Err(e),
        }
    }
    let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    loop {
        let temp = temporary_name();
        match rustix::fs::openat(dir, &*temp, flags, perm) {
            Ok(fd) => return Ok((File::from(fd), Some(temp))),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Fills `bits` from the kernel's generator: the one source of the
/// random names and identifiers this crate makes (temporary names here,
/// tus upload identifiers, a process's writer notes). An error where the
/// kernel has none; each caller says what it does then.
pub(crate) fn random(bits: &mut [u8]) -> std::io::Result<()> {
    let mut got = 0;
    while got < bits.len() {
        match rustix::rand::getrandom(&mut bits[got..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => got += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// A fresh temporary name: the prefix and 128 random bits.
pub(crate) fn temporary_name() -> Vec<u8> {
    let mut bits = [0u8; 16];
    if random(&mut bits).is_err() {
        // No kernel randomness: the clock still makes the name unlikely
        // to be taken, and O_EXCL/EEXIST retries if it is.
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bits = t.to_le_bytes();
    }
    let mut name = TEMPORARY_PREFIX.as_bytes().to_vec();
    for b in bits {
        name.extend_from_slice(format!("{b:02x}").as_bytes());
    }
    name
}

/// The bytes free for an unprivileged writer on `dir`'s file system.
pub(crate) fn free_space(dir: BorrowedFd<'_>) -> u64 {
    match rustix::fs::fstatvfs(dir) {
        Ok(s) => s.f_bavail.saturating_mul(s.f_frsize),
        Err(_) => u64::MAX,
    }
}

/// Writes to one name, serialized in the process: the check of what the
/// mode asks and the link or rename are one step, so of writers racing
/// with one precondition exactly one wins.
type NameKey = (u64, u64, Vec<u8>);

/// The names between their check and their link now, and the writers
/// waiting for one of them.
static BUSY: LazyLock<(Mutex<HashSet<NameKey>>, Condvar)> = LazyLock::new(Default::default);

/// A name held by one writer until dropped.
pub(crate) struct Serial {
    key: NameKey,
}

#[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
pub(crate) fn serialize(dir: BorrowedFd<'_>, entry: &[u8]) -> Serial {
    let (dev, ino) = rustix::fs::fstat(dir).map_or((0, 0), |st| (st.st_dev as u64, st.st_ino));
    let key = (dev, ino, entry.to_vec());
    let (lock, cv) = &*BUSY;
    let mut busy = lock.lock().unwrap_or_else(|e| e.into_inner());
    while busy.contains(&key) {
        busy = cv.wait(busy).unwrap_or_else(|e| e.into_inner());
    }
    busy.insert(key.clone());
    Serial { key }
}

impl Drop for Serial {
    fn drop(&mut self) {
        let (lock, cv) = &*BUSY;
        lock.lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
        cv.notify_all();
    }
}

/// When this process began writing: a temporary older than that belongs
/// to a process that is gone (or was upgraded away).
pub(crate) static STARTED: LazyLock<SystemTime> = LazyLock::new(SystemTime::now);

/// Directories already swept by this process, by (dev, ino).
static SWEPT: LazyLock<Mutex<HashSet<(u64, u64)>>> = LazyLock::new(Mutex::default);

/// The first write into a directory in this process removes the
/// temporaries left there by processes killed mid-write: those whose last
/// change predates this process's first write (a live writer's moves on).
#[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
pub(crate) fn sweep_once(dir: &OwnedFd) {
    let started = *STARTED;
    let Ok(st) = rustix::fs::fstat(dir) else {
        return;
    };
    if !SWEPT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert((st.st_dev as u64, st.st_ino))
    {
        return;
    }
    sweep_dir(dir.as_fd(), started);
}

/// Removes the stale temporaries of one directory; how many.
#[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
pub(crate) fn sweep_dir(dir: BorrowedFd<'_>, before: SystemTime) -> usize {
    let Ok(fd) = rustix::fs::openat(dir, ".", Purpose::List.flags(), Perm::empty()) else {
        return 0;
    };
    let Ok(mut entries) = rustix::fs::Dir::read_from(&fd) else {
        return 0;
    };
    let cutoff = before
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let mut removed = 0;
    while let Some(Ok(entry)) = entries.read() {
        let raw = entry.file_name().to_bytes();
        if !is_temporary(raw) {
            continue;
        }
        let Ok(st) = rustix::fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let regular = FileType::from_raw_mode(st.st_mode as _) == FileType::RegularFile;
        if regular
            && (st.st_mtime as i128) * 1_000_000_000 + (st.st_mtime_nsec as i128) < cutoff
            && rustix::fs::unlinkat(&fd, entry.file_name(), AtFlags::empty()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}
