//! The directory of partial uploads (`spec/site.md`, "Resumable
//! uploads"): for each upload, `ID.part` (the bytes that arrived, its
//! length the offset), `ID.info` (what the upload is: written whole by a
//! rename, never in place), while a chunk with a checksum is being
//! written, `ID.pending` (the offset it began at: a process killed before
//! the sum was checked leaves bytes past it, which the next one cuts off),
//! and while a `PATCH` writes it, `ID.writer` (which request of which
//! process may: one that finds another named there was taken over).
//! Whoever is at an upload's bytes — a run written, a take-over, the name
//! given — holds the `.part`'s `flock`, and only while it is at them: a
//! `PATCH` that waits for its client holds nothing another process waits
//! on.
//! Every name here is made by the server from an identifier's digits;
//! nothing else in the directory is read, changed or removed.
//!
//! Everything here may wait for the disk: a server runs it on its writer
//! threads, never on a worker.

use crate::fs::whole::{Step, Syncs, Temp, Whole};
use crate::fs::{free_space, io_error, Durability, Error};
use crate::http::site::resume::Id;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, FlockOperation, Mode as Perm, OFlags};
use rustix::io::Errno;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The directory partial uploads live in, opened once.
#[derive(Debug)]
pub(crate) struct PartialDir {
    fd: OwnedFd,
    path: PathBuf,
    dev: u64,
}

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

impl PartialDir {
    /// Opens `path`, making it (mode 0700) if it is missing.
    #[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
    pub(crate) fn open(path: &Path) -> std::io::Result<PartialDir> {
        let fd = match rustix::fs::open(path, DIR, Perm::empty()) {
            Err(Errno::NOENT) => {
                match rustix::fs::mkdir(path, Perm::from_raw_mode(0o700)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                rustix::fs::open(path, DIR, Perm::empty())?
            }
            opened => opened?,
        };
        let dev = rustix::fs::fstat(&fd)?.st_dev as u64;
        Ok(PartialDir {
            fd,
            path: path.to_path_buf(),
            dev,
        })
    }

    /// The file system it is on (`st_dev`).
    pub(crate) fn dev(&self) -> u64 {
        self.dev
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// A second descriptor of the directory (a commit takes one).
    pub(crate) fn dup(&self) -> Result<OwnedFd, Error> {
        rustix::fs::openat(&self.fd, ".", DIR, Perm::empty()).map_err(|e| io_error(e, &self.path))
    }

    fn err(&self, e: Errno) -> Error {
        io_error(e, &self.path)
    }

    /// Makes a new upload: its empty `.part` (mode 0644 less the umask,
    /// which the final file keeps), then its `.info` from what `info`
    /// makes of the `.part`'s identity (device, inode).
    #[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
    pub(crate) fn create(
        &self,
        id: &str,
        durable: bool,
        info: impl FnOnce(u64, u64) -> Vec<u8>,
    ) -> Result<(), Error> {
        let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC;
        let made = rustix::fs::openat(&self.fd, part(id), flags, Perm::from_raw_mode(0o644))
            .map_err(|e| self.err(e))?;
        let st = rustix::fs::fstat(&made).map_err(|e| self.err(e))?;
        let text = info(st.st_dev as u64, st.st_ino as u64);
        if let Err(e) = self.write_info(id, &text, durable) {
            let _ = rustix::fs::unlinkat(&self.fd, part(id), AtFlags::empty());
            return Err(e);
        }
        Ok(())
    }

    /// Writes `ID.info` whole: to `ID.info.new`, then renamed over it (its
    /// data synced before and the directory after when `durable`).
    pub(crate) fn write_info(&self, id: &str, info: &[u8], durable: bool) -> Result<(), Error> {
        let new = format!("{id}.info.new");
        let name = info_name(id);
        let whole = Whole {
            dir: self.fd.as_fd(),
            temp: Temp::Shared(new.as_bytes()),
            name: name.as_bytes(),
            mode: 0o600,
            syncs: Syncs::of(match durable {
                true => Durability::Full,
                false => Durability::None,
            }),
        };
        whole.write(
            info,
            |_| Ok(()),
            |step, e| match step {
                Step::Write | Step::File => Error::Io(e.into()),
                Step::Temp | Step::Name | Step::Dir => self.err(e),
            },
        )
    }

    /// What `ID.info` holds; `None` when there is no such upload.
    pub(crate) fn read_info(&self, id: &str) -> Option<Vec<u8>> {
        let fd = rustix::fs::openat(
            &self.fd,
            info_name(id),
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Perm::empty(),
        )
        .ok()?;
        let mut out = Vec::new();
        File::from(fd).take(64 << 10).read_to_end(&mut out).ok()?;
        Some(out)
    }

    /// Opens `ID.part` to write; nothing is locked or changed.
    pub(crate) fn open_part(&self, id: &str) -> Result<File, Error> {
        let flags = OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(&self.fd, part(id), flags, Perm::empty())
            .map_err(|e| self.err(e))?;
        Ok(File::from(fd))
    }

    /// The lock of the `.part` `file` is (`flock`, exclusive, shared with
    /// every process): `Ok(None)` while another descriptor of it holds the
    /// lock and `wait` is false. Let go when the [`PartLock`] is dropped.
    pub(crate) fn lock(&self, file: &File, wait: bool) -> Result<Option<PartLock>, Error> {
        // A second descriptor of the same open file: its lock is the
        // file's, and letting it go needs no borrow of `file`.
        let fd = rustix::io::fcntl_dupfd_cloexec(file, 0).map_err(|e| self.err(e))?;
        let how = match wait {
            true => FlockOperation::LockExclusive,
            false => FlockOperation::NonBlockingLockExclusive,
        };
        loop {
            match rustix::fs::flock(&fd, how) {
                Ok(()) => return Ok(Some(PartLock(fd))),
                Err(Errno::INTR) => continue,
                Err(Errno::WOULDBLOCK) => return Ok(None),
                Err(e) => return Err(self.err(e)),
            }
        }
    }

    /// The bytes the upload counts (its `.part` being `file`, locked): its
    /// length, or where a chunk whose sum was never checked began.
    pub(crate) fn counted(&self, id: &str, file: &File) -> Result<u64, Error> {
        let len = file.metadata().map_err(Error::Io)?.len();
        Ok(self.pending(id).map_or(len, |at| at.min(len)))
    }

    /// Cuts off a chunk whose sum was never checked (`file` locked).
    pub(crate) fn cut_pending(&self, id: &str, file: &File) -> Result<(), Error> {
        if let Some(at) = self.pending(id) {
            let len = file.metadata().map_err(Error::Io)?.len();
            file.set_len(at.min(len)).map_err(Error::Io)?;
            self.clear_pending(id);
        }
        Ok(())
    }

    /// Who may write the upload now, as [`PartialDir::set_writer`] said
    /// (read under the lock).
    pub(crate) fn writer(&self, id: &str) -> Option<String> {
        let fd = rustix::fs::openat(
            &self.fd,
            writer(id),
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Perm::empty(),
        )
        .ok()?;
        let mut text = String::new();
        File::from(fd).take(128).read_to_string(&mut text).ok()?;
        Some(text)
    }

    /// Says that `who` writes the upload now (under the lock). Never
    /// synced: it only matters to processes alive together.
    pub(crate) fn set_writer(&self, id: &str, who: &str) -> Result<(), Error> {
        let flags = OFlags::CREATE | OFlags::TRUNC | OFlags::WRONLY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, writer(id), flags, Perm::from_raw_mode(0o600))
            .map_err(|e| self.err(e))?;
        File::from(fd).write_all(who.as_bytes()).map_err(Error::Io)
    }

    /// No `PATCH` writes the upload now (under the lock).
    pub(crate) fn clear_writer(&self, id: &str) {
        let _ = rustix::fs::unlinkat(&self.fd, writer(id), AtFlags::empty());
    }

    /// `ID.part`'s length, last change (milliseconds since the epoch) and
    /// inode.
    #[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
    pub(crate) fn part_stat(&self, id: &str) -> Option<(u64, u64, u64)> {
        let st = rustix::fs::statat(&self.fd, part(id), AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let regular = FileType::from_raw_mode(st.st_mode as _) == FileType::RegularFile;
        regular.then_some((
            st.st_size as u64,
            (st.st_mtime.max(0) as u64) * 1000 + st.st_mtime_nsec as u64 / 1_000_000,
            st.st_ino as u64,
        ))
    }

    /// Notes that a chunk with a checksum begins at `offset`.
    pub(crate) fn set_pending(&self, id: &str, offset: u64, durable: bool) -> Result<(), Error> {
        let name = pending(id);
        let flags = OFlags::CREATE | OFlags::TRUNC | OFlags::WRONLY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, &*name, flags, Perm::from_raw_mode(0o600))
            .map_err(|e| self.err(e))?;
        let mut file = File::from(fd);
        file.write_all(offset.to_string().as_bytes())
            .map_err(Error::Io)?;
        if durable {
            file.sync_data().map_err(Error::Io)?;
            rustix::fs::fsync(&self.fd).map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn pending(&self, id: &str) -> Option<u64> {
        let fd = rustix::fs::openat(
            &self.fd,
            pending(id),
            OFlags::RDONLY | OFlags::CLOEXEC,
            Perm::empty(),
        )
        .ok()?;
        let mut text = String::new();
        File::from(fd).take(32).read_to_string(&mut text).ok()?;
        text.trim().parse().ok()
    }

    pub(crate) fn clear_pending(&self, id: &str) {
        let _ = rustix::fs::unlinkat(&self.fd, pending(id), AtFlags::empty());
    }

    /// Removes every file of the upload: its record first, so that a
    /// process killed midway leaves bytes no record claims (swept as an
    /// orphan), never a record whose bytes are gone.
    pub(crate) fn remove(&self, id: &str) {
        let names = [
            info_name(id),
            part(id),
            pending(id),
            writer(id),
            format!("{id}.info.new"),
        ];
        for name in names {
            let _ = rustix::fs::unlinkat(&self.fd, &*name, AtFlags::empty());
        }
    }

    /// Removes the `.part` if it is the file `(dev, ino)` (given its final
    /// name by a process killed before it could remove this one).
    #[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
    pub(crate) fn unlink_part_if(&self, id: &str, dev: u64, ino: u64) {
        let st = rustix::fs::statat(&self.fd, part(id), AtFlags::SYMLINK_NOFOLLOW);
        if st.is_ok_and(|st| (st.st_dev as u64, st.st_ino as u64) == (dev, ino)) {
            let _ = rustix::fs::unlinkat(&self.fd, part(id), AtFlags::empty());
        }
    }

    /// The files of uploads without a record (a process killed while it
    /// removed one, or while it made one), unchanged for `older_than`
    /// seconds: their identifiers.
    #[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
    pub(crate) fn orphans(&self, older_than: u64, now: u64) -> Vec<String> {
        let mut out = Vec::new();
        for (id, suffix) in self.entries() {
            if !matches!(
                suffix.as_str(),
                ".part" | ".pending" | ".writer" | ".info.new"
            ) {
                continue;
            }
            let recorded = rustix::fs::statat(&self.fd, info_name(&id), AtFlags::SYMLINK_NOFOLLOW);
            let name = format!("{id}{suffix}");
            let stale = rustix::fs::statat(&self.fd, &*name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| now.saturating_sub(st.st_mtime.max(0) as u64) >= older_than);
            if recorded.is_err() && stale && !out.contains(&id) {
                out.push(id);
            }
        }
        out
    }

    /// The identifiers with an `.info` here: the uploads a process left.
    pub(crate) fn list(&self) -> Vec<String> {
        let records = self
            .entries()
            .into_iter()
            .filter(|(_, suffix)| suffix == ".info");
        records.map(|(id, _)| id).collect()
    }

    /// The names here that are an identifier and one of this directory's
    /// suffixes, split so: nothing else here is ever looked at further.
    fn entries(&self) -> Vec<(String, String)> {
        let Ok(fd) = rustix::fs::openat(&self.fd, ".", DIR, Perm::empty()) else {
            return Vec::new();
        };
        let Ok(mut entries) = rustix::fs::Dir::read_from(&fd) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        while let Some(Ok(entry)) = entries.read() {
            let name = entry.file_name().to_bytes();
            let Some((id, suffix)) = name.split_at_checked(32) else {
                continue;
            };
            let ours = [
                &b".part"[..],
                b".info",
                b".pending",
                b".writer",
                b".info.new",
            ];
            let ours = ours.contains(&suffix);
            if ours && Id::parse(id).is_some() {
                let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                out.push((text(id), text(suffix)));
            }
        }
        out
    }

    /// The `.part`'s own name, for a commit that renames it.
    pub(crate) fn part_name(id: &str) -> Vec<u8> {
        part(id).into_bytes()
    }

    /// The bytes free for an unprivileged writer on its file system.
    pub(crate) fn free_space(&self) -> u64 {
        free_space(self.fd.as_fd())
    }
}

fn part(id: &str) -> String {
    format!("{id}.part")
}

fn info_name(id: &str) -> String {
    format!("{id}.info")
}

fn pending(id: &str) -> String {
    format!("{id}.pending")
}

fn writer(id: &str) -> String {
    format!("{id}.writer")
}

/// A `.part`'s lock, held until dropped.
pub(crate) struct PartLock(OwnedFd);

impl Drop for PartLock {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.0, FlockOperation::Unlock);
    }
}
