//! A file written under a root (`spec/files.md`, "A body written under a
//! root"; `spec/fs-root.md`, `fs::write`): the bytes go to an unnamed file
//! in the target's directory (`O_TMPFILE`, or a named temporary where the
//! file system has none), and the name appears only once they are all
//! there and synced as asked — by `linkat` for a create (which refuses a
//! name that exists), by a link to a temporary name and `renameat2` over
//! the target for a replace. No name ever holds anything but the old bytes
//! or the new ones.
//!
//! Everything here may wait for the disk: a server runs it on its writer
//! threads, never on a worker.

use super::parent::Made;
pub(crate) use super::temp::{free_space, serialize};
use super::temp::{sweep_once, temporary, temporary_name};
use super::whole::{sync_name_sync, Syncs};
use super::Guard;
use super::{Conditions, Durability, Error, Mode, Written};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, RenameFlags, CWD};
use rustix::io::Errno;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

/// A file being written under a root: unnamed until [`Writing::commit`].
/// Dropped without a commit, nothing of it stays under any name and its
/// space comes back.
#[derive(Debug)]
pub struct Writing {
    dir: OwnedFd,
    /// The name's last component, the one entry this writes.
    entry: Vec<u8>,
    /// The name as given, for errors.
    name: String,
    file: File,
    /// Where the file is until it takes the name.
    unnamed: Unnamed,
    mode: Mode,
    written: u64,
    /// A write under a site's rules: the last component, if a link, is
    /// replaced (never followed), and protected files are refused.
    guard: Option<Guard>,
    /// Whether the file takes the dead properties of the file it replaces
    /// (a body written: yes; a copy, which brings its own: no).
    carry: bool,
    /// The levels its walk made, removed again if it ends without its
    /// name (declared last: dropped after the file and its directory).
    made: Made,
}

/// Where a [`Writing`]'s file is until it takes its name.
#[derive(Debug)]
enum Unnamed {
    /// An `O_TMPFILE`: it goes with its descriptor.
    Tmpfile,
    /// A named temporary in the name's directory (where the file system
    /// has no `O_TMPFILE`): removed when the write ends without a name.
    Temporary(Vec<u8>),
    /// A complete file adopted from its name `temp` in the directory
    /// `from` (a resumable upload's `.part`): not named, it stays there
    /// for its owner to decide.
    Adopted { from: OwnedFd, temp: Vec<u8> },
    /// Linked, renamed, or given up after a failed try: nothing is left
    /// to remove.
    Gone,
}

/// A complete file written elsewhere, to be given a name under a site's
/// write rules as a write would be ([`super::Root::adopt_guarded`]): a
/// resumable upload's `.part`. One value, handed on whole: the writing it
/// becomes takes the file and its directory.
#[derive(Debug)]
pub(crate) struct Adoption<'a> {
    /// The name it takes under the root.
    pub(crate) name: &'a Path,
    /// What the name must be, checked now and when it is given.
    pub(crate) mode: Mode,
    /// The write rules' guard: no link followed, protected files refused.
    pub(crate) guard: &'a Guard,
    /// The file, open.
    pub(crate) file: File,
    /// The directory it is in now (on the root's file system).
    pub(crate) from: OwnedFd,
    /// Its name there.
    pub(crate) temp: Vec<u8>,
}

/// The most one `pwrite` gives the page cache. A larger write makes the
/// kernel allocate larger folios for it, and on the machines measured
/// (docs/performance.md, "A body written to a file") memory taken in large
/// blocks cost several times the CPU of the same bytes taken 16 KiB at a
/// time: 1 GiB in 0.3–0.8 s of CPU by 16 KiB against 4–8 s by 32 KiB to
/// 256 KiB, most runs. The extra calls cost about 30 ms per GiB.
const WRITE_STEP: usize = 16 << 10;

/// Test switch: milliseconds every commit waits before its sync, as a
/// slow disk would (tests that a waiting writer holds up no worker).
static SYNC_DELAY_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Makes every commit wait `ms` milliseconds before it syncs (tests only).
#[doc(hidden)]
pub fn delay_syncs(ms: u64) {
    SYNC_DELAY_MS.store(ms, Ordering::SeqCst);
}

impl Writing {
    /// Begins a write of `name` in the directory `dir` (opened confined by
    /// the root): checks what `mode` asks of the name as it is now (it is
    /// checked again when the name appears), and opens the unnamed file.
    pub(crate) fn begin(
        dir: OwnedFd,
        entry: &[u8],
        name: &Path,
        mode: Mode,
        guard: Option<Guard>,
    ) -> Result<Writing, Error> {
        let entry = entry.to_vec();
        sweep_once(&dir);
        check_mode(dir.as_fd(), &entry, &mode, name, guard.as_ref())?;
        let (file, named) = temporary(dir.as_fd()).map_err(|e| io_error(e, name))?;
        Ok(Writing {
            dir,
            entry,
            name: name.to_string_lossy().into_owned(),
            file,
            unnamed: named.map_or(Unnamed::Tmpfile, Unnamed::Temporary),
            mode,
            written: 0,
            guard,
            carry: true,
            made: Made::default(),
        })
    }

    /// Takes the adopted file to be given the name `entry` of `dir` (the
    /// directory of the adoption's name, on the same file system) by
    /// [`Writing::commit`], as a write would be: checks what its mode asks
    /// of the name now (and again when it is given). Not named (dropped,
    /// or the commit refused), the file stays where it is.
    pub(crate) fn adopt(dir: OwnedFd, entry: &[u8], a: Adoption<'_>) -> Result<Writing, Error> {
        let written = a.file.metadata().map_or(0, |m| m.len());
        let guard = Some(a.guard.clone());
        let writing = Writing {
            dir,
            entry: entry.to_vec(),
            name: a.name.to_string_lossy().into_owned(),
            file: a.file,
            unnamed: Unnamed::Adopted {
                from: a.from,
                temp: a.temp,
            },
            mode: a.mode,
            written,
            guard,
            carry: true,
            made: Made::default(),
        };
        let dir = writing.dir.as_fd();
        check_mode(
            dir,
            &writing.entry,
            &writing.mode,
            a.name,
            writing.guard.as_ref(),
        )?;
        Ok(writing)
    }

    /// Appends `bytes`, at most [`WRITE_STEP`] per `pwrite`. A full disk
    /// or quota is [`Error::NoSpace`].
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        write_at(&self.file, bytes, self.written, Path::new(&self.name))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Fills the file with a copy of `src` (WebDAV's `COPY`): its bytes
    /// and its dead properties.
    pub(crate) fn copy_from(&mut self, src: &File) -> Result<(), Error> {
        let copied = super::dav::copy_bytes(src, &self.file, Path::new(&self.name))?;
        self.written += copied;
        // The Destination is replaced by the source, properties and all
        // (RFC 4918 §9.8.4): nothing of the old file's is carried.
        self.carry = false;
        Ok(())
    }

    /// How many bytes were written.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The bytes free for an unprivileged writer on the file's file system.
    pub fn free_space(&self) -> u64 {
        free_space(self.dir.as_fd())
    }

    /// Keeps the levels the walk made for this write until it ends.
    pub(crate) fn holding(mut self, made: Made) -> Writing {
        self.made = made;
        self
    }

    /// Syncs as `durability` says, then gives the file its name as the mode
    /// says: the name holds the new bytes from this moment, or — on an
    /// error — still what it held.
    pub fn commit(mut self, durability: Durability) -> Result<Written, Error> {
        let name = Path::new(&self.name).to_path_buf();
        let delay = SYNC_DELAY_MS.load(Ordering::SeqCst);
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_millis(delay));
        }
        let (file, dir) = (&self.file, self.dir.as_fd());
        let give_name = || {
            let _serial = serialize(dir, &self.entry);
            let found = check_mode(dir, &self.entry, &self.mode, &name, self.guard.as_ref())?;
            stamp(file, found.previous_mtime).map_err(|e| io_error(e, &name))?;
            let replace = match self.mode {
                Mode::Create => false,
                // What was found decides: a name that was free is linked,
                // so one that appeared meanwhile is not overwritten.
                Mode::Conditional(_) => !found.created,
                Mode::Replace | Mode::ReplaceIf(_) => true,
            };
            // A site's write keeps what WebDAV said of the file it
            // replaces (RFC 4918 §9.7.1).
            if replace && !found.created && self.guard.is_some() && self.carry {
                super::dav::carry_dead(dir, &self.entry, file);
            }
            let linked = self
                .unnamed
                .link(file, dir, &self.entry, replace, found.created);
            linked.map_err(|e| match e {
                Errno::EXIST => Error::Exists,
                e => io_error(e, &name),
            })?;
            Ok(found.created)
        };
        let syncs = Syncs::of(durability);
        let created = sync_name_sync(file.as_fd(), dir, syncs, give_name, |_, e| {
            io_error(e, &name)
        })?;
        let st = rustix::fs::fstat(&self.file).map_err(|e| io_error(e, &name))?;
        Ok(Written {
            id: super::fd::identity(&st),
            created,
        })
    }
}

impl Unnamed {
    /// Gives `file` the name `entry` of `dir`: `replace`, by a rename over
    /// it (an `O_TMPFILE` is linked to a temporary name first, unless the
    /// name was free when `created`); else by a link (`EEXIST` if the name
    /// appeared meanwhile, from outside this process). Whatever happens,
    /// nothing is left to remove afterwards.
    fn link(
        &mut self,
        file: &File,
        dir: BorrowedFd<'_>,
        entry: &[u8],
        replace: bool,
        created: bool,
    ) -> Result<(), Errno> {
        let temp = match std::mem::replace(self, Unnamed::Gone) {
            Unnamed::Temporary(temp) => temp,
            Unnamed::Adopted { from, temp } => {
                let done = give(from.as_fd(), &temp, dir, entry, replace);
                // An adopted file stays where it was when it could not be
                // named: its owner decides.
                if done.is_ok() && !replace {
                    let _ = rustix::fs::unlinkat(&from, &*temp, AtFlags::empty());
                }
                return done;
            }
            Unnamed::Tmpfile | Unnamed::Gone if !replace || created => {
                return link_unnamed(file, dir, entry)
            }
            Unnamed::Tmpfile | Unnamed::Gone => loop {
                let temp = temporary_name();
                match link_unnamed(file, dir, &temp) {
                    Ok(()) => break temp,
                    Err(Errno::EXIST) => continue,
                    Err(e) => return Err(e),
                }
            },
        };
        let done = give(dir, &temp, dir, entry, replace);
        if done.is_err() || !replace {
            let _ = rustix::fs::unlinkat(dir, &*temp, AtFlags::empty());
        }
        done
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        // An unnamed file goes with its descriptor; a named temporary is
        // removed; an adopted file stays for its owner to decide.
        if let Unnamed::Temporary(temp) = &self.unnamed {
            let _ = rustix::fs::unlinkat(&self.dir, &**temp, AtFlags::empty());
        }
    }
}

/// Writes all of `bytes` at `at` in `file`, at most [`WRITE_STEP`] per
/// `pwrite`. A full disk or quota is [`Error::NoSpace`]; `name` is for
/// the other errors.
pub(crate) fn write_at(file: &File, bytes: &[u8], at: u64, name: &Path) -> Result<(), Error> {
    pwrite_all(file.as_fd(), bytes, at).map_err(|e| io_error(e, name))
}

/// Writes all of `bytes` at `at` in `file`, at most [`WRITE_STEP`] per
/// `pwrite`; a `pwrite` that takes nothing is no space (`ENOSPC`).
pub(crate) fn pwrite_all(file: BorrowedFd<'_>, bytes: &[u8], at: u64) -> Result<(), Errno> {
    let mut done = 0;
    while done < bytes.len() {
        let step = &bytes[done..bytes.len().min(done + WRITE_STEP)];
        match rustix::io::pwrite(file, step, at + done as u64) {
            Ok(0) => return Err(Errno::NOSPC),
            Ok(n) => done += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Gives the file named `temp` in `from` the name `entry` of `dir`: by
/// `renameat2` over it (no flags: it replaces) when `replace`, else by
/// `linkat`, which refuses a name that exists.
fn give(
    from: BorrowedFd<'_>,
    temp: &[u8],
    dir: BorrowedFd<'_>,
    entry: &[u8],
    replace: bool,
) -> Result<(), Errno> {
    match replace {
        true => rustix::fs::renameat_with(from, temp, dir, entry, RenameFlags::empty()),
        false => rustix::fs::linkat(from, temp, dir, entry, AtFlags::empty()),
    }
}

/// Links an unnamed (`O_TMPFILE`) file as `entry` of `dir`: by the
/// descriptor where the process may (`AT_EMPTY_PATH` needs
/// `CAP_DAC_READ_SEARCH`), else through its `/proc/self/fd` link.
pub(in crate::fs) fn link_unnamed(
    file: &File,
    dir: BorrowedFd<'_>,
    entry: &[u8],
) -> Result<(), Errno> {
    match rustix::fs::linkat(file, "", dir, entry, AtFlags::EMPTY_PATH) {
        Err(Errno::NOENT | Errno::PERM | Errno::ACCESS | Errno::INVAL) => {
            use std::os::fd::AsRawFd;
            let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
            rustix::fs::linkat(CWD, proc.as_str(), dir, entry, AtFlags::SYMLINK_FOLLOW)
        }
        done => done,
    }
}

/// What checking a name found: whether the write creates it, and the
/// modification time of the file it replaces.
struct Found {
    created: bool,
    previous_mtime: Option<i64>,
}

/// What `mode` asks of `entry` as it is now (and, under `guard`, that it
/// is no protected file).
fn check_mode(
    dir: BorrowedFd<'_>,
    entry: &[u8],
    mode: &Mode,
    name: &Path,
    guard: Option<&Guard>,
) -> Result<Found, Error> {
    let now = match rustix::fs::statat(dir, entry, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Some(st),
        Err(Errno::NOENT) => None,
        Err(e) => return Err(io_error(e, name)),
    };
    if let (Some(guard), Some(st)) = (guard, &now) {
        guard.check(st, name)?;
    }
    let kind = now
        .as_ref()
        .map(|st| FileType::from_raw_mode(st.st_mode as _));
    let id = now
        .as_ref()
        .filter(|_| kind == Some(FileType::RegularFile))
        .map(super::fd::identity);
    let previous_mtime = id.map(|id| id.mtime_ns);
    let created = now.is_none();
    let found = Found {
        created,
        previous_mtime,
    };
    if let Mode::Conditional(c) = mode {
        conditional(c, kind, id, guard.is_some())?;
        if let Some(guard) = guard {
            guard
                .held
                .ask(id.map(|id| id.etag()).as_deref(), !created)?;
        }
        return Ok(found);
    }
    let Some(kind) = kind else {
        return match mode {
            Mode::ReplaceIf(_) => Err(Error::Precondition),
            _ => Ok(found),
        };
    };
    if *mode == Mode::Create {
        return Err(Error::Exists);
    }
    match kind {
        FileType::RegularFile => {}
        FileType::Directory => return Err(Error::NotAFile { directory: true }),
        _ => return Err(Error::NotAFile { directory: false }),
    }
    if let (Mode::ReplaceIf(list), Some(id)) = (mode, id) {
        if list.trim() != "*" && !super::etag_listed(list, &id.etag(), super::Compare::Strong) {
            return Err(Error::Precondition);
        }
    }
    Ok(found)
}

/// A [`Mode::Conditional`] write against what is at the name: the
/// preconditions first, then what the rule allows. Under a guard a link
/// is replaced like a file (never followed); it has no ETag to match.
fn conditional(
    c: &Conditions,
    kind: Option<FileType>,
    id: Option<super::Identity>,
    links_replaced: bool,
) -> Result<(), Error> {
    let etag = id.map(|id| id.etag());
    let seen = kind.map(|_| {
        let modified = id.map(|id| id.mtime_ns.div_euclid(1_000_000_000).max(0) as u64);
        etag.as_deref().zip(modified)
    });
    if !c.hold(seen) {
        return Err(Error::Precondition);
    }
    let replaceable = match kind {
        None if c.create => return Ok(()),
        None => return Err(denied("the rule does not let this create a name")),
        Some(FileType::RegularFile) => true,
        Some(FileType::Symlink) => links_replaced,
        Some(FileType::Directory) => return Err(Error::NotAFile { directory: true }),
        Some(_) => false,
    };
    match (replaceable, c.replace) {
        (false, _) => Err(Error::NotAFile { directory: false }),
        (true, false) => Err(denied("the rule does not let this replace a file")),
        (true, true) => Ok(()),
    }
}

/// A write or removal a rule does not allow: 403.
pub(crate) fn denied(why: &str) -> Error {
    Error::Denied(why.to_owned())
}

/// Gives the file a modification time later than the one it replaces,
/// from the server's clock at full resolution, so that every version a
/// name takes has its own ETag (two replaces of one size in one clock
/// tick would otherwise share one). Where the file system keeps coarser
/// times, it steps by a second until the time it keeps has moved.
fn stamp(file: &File, previous: Option<i64>) -> Result<(), Errno> {
    use rustix::fs::{Timespec, Timestamps, UTIME_OMIT};
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    let mut at = match previous {
        Some(p) if now <= p => p + 1,
        _ => now,
    };
    for _ in 0..3 {
        let times = Timestamps {
            last_access: Timespec {
                tv_sec: 0,
                tv_nsec: UTIME_OMIT,
            },
            last_modification: Timespec {
                tv_sec: at.div_euclid(1_000_000_000),
                tv_nsec: at.rem_euclid(1_000_000_000) as _,
            },
        };
        rustix::fs::futimens(file, &times)?;
        let kept = super::fd::identity(&rustix::fs::fstat(file)?).mtime_ns;
        if previous.is_none_or(|p| kept > p) {
            return Ok(());
        }
        at = (kept.div_euclid(1_000_000_000) + 1) * 1_000_000_000;
    }
    Ok(())
}

/// An errno of a write, as an outcome.
pub(crate) fn io_error(e: Errno, name: &Path) -> Error {
    match e {
        Errno::NOSPC | Errno::DQUOT => Error::NoSpace,
        Errno::ROFS => Error::Io(std::io::Error::from(std::io::ErrorKind::ReadOnlyFilesystem)),
        e => super::fd::from_errno(e, name),
    }
}

#[cfg(test)]
#[path = "put_tests.rs"]
mod tests;
