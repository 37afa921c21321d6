//! What WebDAV asks of the file system (`spec/site.md`, "WebDAV class
//! 1"), each step relative to a directory descriptor the parent walker
//! (`parent.rs`) opened, never to a path resolved again: a name's
//! properties (one `statx`, and the dead ones in one extended attribute),
//! a collection made, a file copied into an unnamed file, a name moved,
//! and a collection's members walked — opened `O_NOFOLLOW | O_DIRECTORY`
//! level by level and removed by `unlinkat` in their own directory, so a
//! directory swapped for a link meanwhile changes nothing outside (the
//! `remove_dir_all` race, CVE-2022-21658, has nothing to race: `walk.rs`).

use super::parent::{in_parent, Reach};
pub(crate) use super::put::{denied, io_error};

mod walk;

use super::{Durability, Error, Guard, Root};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode as Perm, OFlags, StatxFlags, XattrFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
pub(crate) use walk::{check_tree, copy_file, copy_tree, remove_tree, Members};

/// The extended attribute that holds a name's dead properties, all of
/// them (one attribute: a `PROPPATCH` is all or nothing).
pub(crate) const DEAD: &std::ffi::CStr = c"user.nikaia.dav";
/// The most the dead properties of one name may hold.
pub(crate) const DEAD_MAX: usize = 16 << 10;

/// What `PROPFIND` tells of a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub dir: bool,
    pub size: u64,
    /// Nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Seconds since the Unix epoch, where the file system keeps it.
    pub born: Option<i64>,
    /// The file system's (device, inode).
    pub id: (u64, u64),
}

impl Stat {
    /// The ETag a `GET` of the file sends.
    pub(crate) fn etag(&self) -> String {
        super::open::etag_of(self.mtime_ns, self.size)
    }
}

/// One `statx` of `entry` in `dir` (`None`: of `dir` itself), links not
/// followed.
fn statx(dir: BorrowedFd<'_>, entry: Option<&[u8]>) -> Result<(FileType, Stat), Errno> {
    let mask = StatxFlags::TYPE
        | StatxFlags::INO
        | StatxFlags::SIZE
        | StatxFlags::MTIME
        | StatxFlags::BTIME;
    let (path, flags) = match entry {
        Some(e) => (OsStr::from_bytes(e), AtFlags::SYMLINK_NOFOLLOW),
        None => (OsStr::new(""), AtFlags::EMPTY_PATH),
    };
    let st = rustix::fs::statx(dir, path, flags, mask)?;
    let kind = FileType::from_raw_mode(st.stx_mode.into());
    let born = (st.stx_mask & StatxFlags::BTIME.bits() != 0).then_some(st.stx_btime.tv_sec);
    let stat = Stat {
        dir: kind == FileType::Directory,
        size: st.stx_size,
        mtime_ns: st.stx_mtime.tv_sec * 1_000_000_000 + i64::from(st.stx_mtime.tv_nsec),
        born,
        id: (
            rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
            st.stx_ino,
        ),
    };
    Ok((kind, stat))
}

/// The dead properties' record of an open file or directory, if it has
/// one (a file system without `user.` attributes has none).
pub(crate) fn read_dead(fd: BorrowedFd<'_>) -> Option<Vec<u8>> {
    // Most names have none, and most records are small: a buffer on the
    // stack first, the bound's only for a record that needs it.
    let mut small = [0u8; 512];
    match rustix::fs::fgetxattr(fd, DEAD, &mut small[..]) {
        Ok(n) => return Some(small[..n].to_vec()),
        Err(Errno::RANGE) => {}
        Err(_) => return None,
    }
    let mut buf = vec![0u8; DEAD_MAX];
    match rustix::fs::fgetxattr(fd, DEAD, &mut buf[..]) {
        Ok(n) => {
            buf.truncate(n);
            Some(buf)
        }
        Err(_) => None,
    }
}

/// Writes (or, `None`, removes) the dead properties' record: past what
/// the file system holds is [`Error::NoSpace`] (507), a file system
/// without `user.` attributes [`Error::Denied`] (403).
pub(crate) fn write_dead(
    fd: BorrowedFd<'_>,
    record: Option<&[u8]>,
    name: &Path,
) -> Result<(), Error> {
    let done = match record {
        Some(bytes) if bytes.len() > DEAD_MAX => return Err(Error::NoSpace),
        Some(bytes) => rustix::fs::fsetxattr(fd, DEAD, bytes, XattrFlags::empty()),
        None => match rustix::fs::fremovexattr(fd, DEAD) {
            Err(Errno::NODATA) => Ok(()),
            other => other,
        },
    };
    done.map_err(|e| match e {
        Errno::NOSPC | Errno::TOOBIG | Errno::RANGE | Errno::DQUOT => Error::NoSpace,
        Errno::OPNOTSUPP | Errno::PERM => {
            denied("this file system keeps no properties (no user. extended attributes)")
        }
        e => io_error(e, name),
    })
}

/// Carries the dead properties of `entry` in `dir` (the file a write
/// replaces) onto `file`, before it takes the name (RFC 4918 §9.7.1).
pub(crate) fn carry_dead(dir: BorrowedFd<'_>, entry: &[u8], file: &File) {
    if let Ok(old) = open_entry(dir, entry) {
        if let Some(record) = read_dead(old.as_fd()) {
            let _ = rustix::fs::fsetxattr(file, DEAD, &record, XattrFlags::empty());
        }
    }
}

/// Opens `entry` of `dir` for its attributes: never through a link, never
/// waiting on a FIFO.
fn open_entry(dir: BorrowedFd<'_>, entry: &[u8]) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    rustix::fs::openat(dir, OsStr::from_bytes(entry), flags, Perm::empty())
}

/// Opens `entry` of `dir` as a directory, no link followed.
fn open_dir(dir: BorrowedFd<'_>, entry: &[u8]) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(dir, OsStr::from_bytes(entry), flags, Perm::empty())
}

impl Root {
    /// The target of a `PROPFIND`, opened as a read opens it (links that
    /// stay inside followed): its descriptor and what it is.
    pub(crate) fn dav_target(&self, name: &Path) -> Result<(OwnedFd, Stat), Error> {
        use super::open::Purpose;
        let fd = match self.open_fd(name, Purpose::Read) {
            Err(Error::NotAFile { directory: true }) => self.open_fd(name, Purpose::List)?,
            other => other?,
        };
        let (_, stat) = statx(fd.as_fd(), None).map_err(|e| io_error(e, name))?;
        Ok((fd, stat))
    }

    /// Runs `step` with the directory `name` is in and its last
    /// component, reached as a guarded write reaches it (no link on the
    /// way, the guard's files refused, missing levels made if it says).
    pub(crate) fn dav_at<T>(
        &self,
        name: &Path,
        guard: &Guard,
        step: impl FnOnce(OwnedFd, &[u8]) -> Result<T, Error>,
    ) -> Result<T, Error> {
        in_parent(self, name, Reach::NoLinks(guard), step)
    }
}

/// What `entry` of `dir` is, no link followed; `None` where nothing is.
pub(crate) fn look(
    dir: BorrowedFd<'_>,
    entry: &[u8],
    name: &Path,
) -> Result<Option<(FileType, Stat)>, Error> {
    match statx(dir, Some(entry)) {
        Ok(found) => Ok(Some(found)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(io_error(e, name)),
    }
}

/// The dead properties of `entry` of `dir` (no link followed).
pub(crate) fn dead_of(dir: BorrowedFd<'_>, entry: &[u8]) -> Option<Vec<u8>> {
    open_entry(dir, entry)
        .ok()
        .and_then(|fd| read_dead(fd.as_fd()))
}

/// Sets the dead properties of `entry` of `dir` as `change` makes them
/// from what they were (no link followed: a link is 403).
pub(crate) fn change_dead(
    dir: BorrowedFd<'_>,
    entry: &[u8],
    name: &Path,
    change: impl FnOnce(Option<Vec<u8>>) -> Result<Option<Vec<u8>>, Error>,
) -> Result<(), Error> {
    // Held against every other write of the name (a `PUT` carrying the
    // record over, another `PROPPATCH`): read, changed and written as one.
    let _serial = super::temp::serialize(dir, entry);
    let fd = match open_entry(dir, entry) {
        Ok(fd) => fd,
        Err(Errno::LOOP) => return Err(denied("a link's properties are not written")),
        Err(e) => return Err(io_error(e, name)),
    };
    let record = change(read_dead(fd.as_fd()))?;
    write_dead(fd.as_fd(), record.as_deref(), name)
}

/// `MKCOL`: makes `entry` in `dir`. An existing name is
/// [`Error::Exists`].
pub(crate) fn make_dir(
    dir: BorrowedFd<'_>,
    entry: &[u8],
    name: &Path,
    durability: Durability,
) -> Result<(), Error> {
    match rustix::fs::mkdirat(dir, OsStr::from_bytes(entry), Perm::from_raw_mode(0o755)) {
        Ok(()) => {}
        Err(Errno::EXIST) => return Err(Error::Exists),
        Err(e) => return Err(io_error(e, name)),
    }
    if durability == Durability::Full {
        rustix::fs::fsync(dir).map_err(|e| io_error(e, name))?;
    }
    Ok(())
}

/// Moves `from_entry` of `from` to `to_entry` of `to` in one
/// `renameat2`: `replace` lets it take the place of a file there (never
/// of a directory: the caller removed that first); otherwise an existing
/// name is [`Error::Exists`]. Across file systems, `EXDEV`.
pub(crate) fn rename(
    from: BorrowedFd<'_>,
    from_entry: &[u8],
    to: BorrowedFd<'_>,
    to_entry: &[u8],
    replace: bool,
) -> Result<(), Errno> {
    use rustix::fs::RenameFlags;
    let flags = match replace {
        true => RenameFlags::empty(),
        false => RenameFlags::NOREPLACE,
    };
    rustix::fs::renameat_with(
        from,
        OsStr::from_bytes(from_entry),
        to,
        OsStr::from_bytes(to_entry),
        flags,
    )
}

/// Copies the bytes of `src` into `file` (`copy_file_range`, read and
/// write where the kernel cannot: another file system's files), and its
/// dead properties.
pub(crate) fn copy_bytes(src: &File, file: &File, name: &Path) -> Result<u64, Error> {
    use std::io::{Read, Write};
    let mut copied = 0u64;
    loop {
        match rustix::fs::copy_file_range(src, None, file, None, 1 << 30) {
            Ok(0) => break,
            Ok(n) => copied += n as u64,
            Err(Errno::XDEV | Errno::INVAL | Errno::OPNOTSUPP | Errno::NOSYS) if copied == 0 => {
                let (mut r, mut w) = (src, file);
                let mut buf = vec![0u8; 256 << 10];
                loop {
                    let n = r.read(&mut buf).map_err(Error::Io)?;
                    if n == 0 {
                        break;
                    }
                    w.write_all(&buf[..n]).map_err(|e| match e.raw_os_error() {
                        Some(28 | 122) => Error::NoSpace,
                        _ => Error::Io(e),
                    })?;
                    copied += n as u64;
                }
                break;
            }
            Err(Errno::NOSPC | Errno::DQUOT) => return Err(Error::NoSpace),
            Err(e) => return Err(io_error(e, name)),
        }
    }
    if let Some(record) = read_dead(src.as_fd()) {
        let _ = rustix::fs::fsetxattr(file, DEAD, &record, XattrFlags::empty());
    }
    Ok(copied)
}

/// Opens `entry` of `dir` to copy it: a regular file, no link followed
/// (a link is 403: a copy never reads through one).
pub(crate) fn open_source(
    dir: BorrowedFd<'_>,
    entry: &[u8],
    name: &Path,
) -> Result<(File, Stat), Error> {
    let fd = match open_entry(dir, entry) {
        Ok(fd) => fd,
        Err(Errno::LOOP) => return Err(denied("a link is not copied")),
        Err(Errno::NOENT) => return Err(Error::NotFound),
        Err(e) => return Err(io_error(e, name)),
    };
    let (kind, stat) = statx(fd.as_fd(), None).map_err(|e| io_error(e, name))?;
    match kind {
        FileType::RegularFile => Ok((File::from(fd), stat)),
        FileType::Directory => Err(Error::NotAFile { directory: true }),
        _ => Err(Error::NotAFile { directory: false }),
    }
}

/// The guard's check of what `entry` of `dir` is, for a walk that acts on
/// it: the runtime file's own files are never moved or removed.
pub(crate) fn guarded(guard: &Guard, stat: &Stat, name: &Path) -> Result<(), Error> {
    if guard.protected.contains(&stat.id) {
        let why = format!("{} is one of the server's own files", name.display());
        return Err(denied(&why));
    }
    Ok(())
}

/// Removes `entry` of `dir` if it is still the empty file `id` (device,
/// inode) names, with the name held against every other writer: an empty
/// file the server made for a `LOCK` that was then refused. Anything else
/// there — written since, replaced, removed — is left as it is.
/// `keep` is asked with the name held: where it says so, the file stays.
pub(crate) fn unmake_empty(
    dir: BorrowedFd<'_>,
    entry: &[u8],
    id: (u64, u64),
    name: &Path,
    keep: impl FnOnce() -> bool,
) {
    let _serial = super::temp::serialize(dir, entry);
    if let Ok(Some((FileType::RegularFile, stat))) = look(dir, entry, name) {
        if stat.id == id && stat.size == 0 && !keep() {
            let _ = rustix::fs::unlinkat(dir, OsStr::from_bytes(entry), AtFlags::empty());
        }
    }
}

/// Runs `f` with `entry` of `dir` held against every other writer of it
/// (as a `PUT` gives the name, a `DELETE` removes it): a `LOCK` takes its
/// lock so.
pub(crate) fn holding<T>(dir: BorrowedFd<'_>, entry: &[u8], f: impl FnOnce() -> T) -> T {
    let _serial = hold(dir, entry);
    f()
}

/// `entry` of `dir` held against every other writer of it until the
/// value is dropped.
pub(crate) fn hold(dir: BorrowedFd<'_>, entry: &[u8]) -> super::temp::Serial {
    super::temp::serialize(dir, entry)
}
