//! A file given its name durably, in the one order every writer here
//! keeps: the file synced, then named (a link or a rename), then the
//! directory synced, each as its writer asks ([`sync_name_sync`]). A
//! write under a root (`put.rs`: `spec/files.md`, "Durability") names a
//! file it wrote piece by piece; ACME's storage (`linux/acme/store.rs`:
//! `spec/tls.md`) and the records of resumable uploads
//! (`linux/write/resume/partial.rs`: `spec/site.md`) write a small file
//! whole to a temporary beside its name and rename it over ([`Whole`]).

use super::put::pwrite_all;
use super::Durability;
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// What is synced around a naming.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Syncs {
    /// The file, before it takes its name.
    pub(crate) file: FileSync,
    /// The directory (`fsync`), once the name is in it.
    pub(crate) dir: bool,
}

/// How a file is synced before it takes its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileSync {
    /// Not at all.
    Nothing,
    /// Its data (`fdatasync`).
    Data,
    /// Its data and its metadata (`fsync`).
    #[cfg_attr(not(feature = "acme"), allow(dead_code))] // ACME's storage
    All,
}

impl Syncs {
    /// What `durability` asks: the file's data before the name (but for
    /// `None`), the directory after it (`Full`).
    pub(crate) fn of(durability: Durability) -> Syncs {
        Syncs {
            file: match durability {
                Durability::None => FileSync::Nothing,
                Durability::Data | Durability::Full => FileSync::Data,
            },
            dir: durability == Durability::Full,
        }
    }
}

/// The step of a naming that failed, for its writer to say so its way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Making the temporary ([`Whole`]).
    Temp,
    /// Writing the bytes to it ([`Whole`]).
    Write,
    /// Syncing the file.
    File,
    /// Renaming the temporary over the name ([`Whole`]).
    Name,
    /// Syncing the directory.
    Dir,
}

/// The one order: `file` synced as `syncs` says, then `name` gives it its
/// name in `dir`, then `dir` synced as `syncs` says. It stops at the first
/// failure: a sync that fails before the name leaves the name as it was;
/// `fault` says what a failed sync is to the writer.
pub(crate) fn sync_name_sync<T, E>(
    file: BorrowedFd<'_>,
    dir: BorrowedFd<'_>,
    syncs: Syncs,
    name: impl FnOnce() -> Result<T, E>,
    fault: impl Fn(Step, Errno) -> E,
) -> Result<T, E> {
    let synced = match syncs.file {
        FileSync::Nothing => Ok(()),
        FileSync::Data => rustix::fs::fdatasync(file),
        FileSync::All => rustix::fs::fsync(file),
    };
    synced.map_err(|e| fault(Step::File, e))?;
    let named = name()?;
    if syncs.dir {
        rustix::fs::fsync(dir).map_err(|e| fault(Step::Dir, e))?;
    }
    Ok(named)
}

/// A small file written whole to a temporary beside its name, then
/// renamed over it by [`sync_name_sync`]: the name holds the old bytes or
/// the new ones, never a part.
pub(crate) struct Whole<'a> {
    /// The directory of the temporary and of the name.
    pub(crate) dir: BorrowedFd<'a>,
    /// The temporary, and how it is made.
    pub(crate) temp: Temp<'a>,
    /// The name it takes.
    pub(crate) name: &'a [u8],
    /// Its permissions (before the umask).
    pub(crate) mode: u32,
    /// What is synced around the rename.
    pub(crate) syncs: Syncs,
}

/// The temporary of a [`Whole`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Temp<'a> {
    /// A name of its own, made `O_CREAT | O_EXCL | O_NOFOLLOW`: removed
    /// when the write fails before the rename.
    #[cfg_attr(not(feature = "acme"), allow(dead_code))] // ACME's storage
    Own(&'a [u8]),
    /// The one temporary of its name, made or emptied (`O_CREAT |
    /// O_TRUNC`): a failure leaves it for its owner's sweep.
    Shared(&'a [u8]),
}

impl Whole<'_> {
    /// Writes `bytes` to the temporary and renames it over the name, in
    /// the one order. `at` runs once the file is synced, right before the
    /// rename (with [`Step::Name`]: ACME keeps the file it replaces
    /// there), and right after it, before the directory's sync (with
    /// [`Step::Dir`]); an error there stops the write. `fault` says what a
    /// failed step is to the writer.
    pub(crate) fn write<E>(
        &self,
        bytes: &[u8],
        mut at: impl FnMut(Step) -> Result<(), E>,
        fault: impl Fn(Step, Errno) -> E,
    ) -> Result<(), E> {
        let common = OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC;
        let (temp, flags) = match self.temp {
            Temp::Own(temp) => (temp, common | OFlags::EXCL | OFlags::NOFOLLOW),
            Temp::Shared(temp) => (temp, common | OFlags::TRUNC),
        };
        let perm = Mode::from_raw_mode(self.mode);
        let file =
            rustix::fs::openat(self.dir, temp, flags, perm).map_err(|e| fault(Step::Temp, e))?;
        let mut renamed = false;
        let done = pwrite_all(file.as_fd(), bytes, 0)
            .map_err(|e| fault(Step::Write, e))
            .and_then(|()| {
                let rename = || {
                    at(Step::Name)?;
                    rustix::fs::renameat(self.dir, temp, self.dir, self.name)
                        .map_err(|e| fault(Step::Name, e))?;
                    renamed = true;
                    at(Step::Dir)
                };
                sync_name_sync(file.as_fd(), self.dir, self.syncs, rename, &fault)
            });
        if done.is_err() && !renamed && matches!(self.temp, Temp::Own(_)) {
            let _ = rustix::fs::unlinkat(self.dir, temp, AtFlags::empty());
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("nikaia-whole-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// A file of mode 0600 written whole as `name` of `dir`.
    fn whole<'a>(dir: BorrowedFd<'a>, temp: Temp<'a>, name: &'a [u8], syncs: Syncs) -> Whole<'a> {
        Whole {
            dir,
            temp,
            name,
            mode: 0o600,
            syncs,
        }
    }

    #[test]
    fn a_whole_file_replaces_its_name_and_leaves_no_temporary() {
        let dir = scratch("replace");
        std::fs::write(dir.join("n"), b"old").unwrap();
        let fd = rustix::fs::open(&dir, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let syncs = Syncs {
            file: FileSync::All,
            dir: true,
        };
        for temp in [Temp::Own(b".n.tmp"), Temp::Shared(b"n.new")] {
            let whole = whole(fd.as_fd(), temp, b"n", syncs);
            let mut seen = Vec::new();
            let at = |step| {
                seen.push((step, std::fs::read(dir.join("n")).unwrap()));
                Ok::<(), Errno>(())
            };
            whole.write(b"new", at, |_, e| e).unwrap();
            // Before the rename the name holds the old bytes, after it the
            // new ones.
            assert_eq!(seen[0], (Step::Name, b"old".to_vec()));
            assert_eq!(seen[1], (Step::Dir, b"new".to_vec()));
            assert_eq!(names(&dir), vec!["n"]);
            let mode = std::fs::metadata(dir.join("n"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
            std::fs::write(dir.join("n"), b"old").unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_rename_removes_only_a_temporary_of_its_own() {
        let dir = scratch("fail");
        // A directory that is not empty cannot be renamed over.
        std::fs::create_dir_all(dir.join("n/x")).unwrap();
        let fd = rustix::fs::open(&dir, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let syncs = Syncs::of(Durability::None);
        let write = |temp| {
            let whole = whole(fd.as_fd(), temp, b"n", syncs);
            whole.write(b"new", |_| Ok(()), |step, e| (step, e))
        };
        let failed = write(Temp::Own(b".n.tmp")).unwrap_err();
        assert_eq!(failed.0, Step::Name);
        assert_eq!(names(&dir), vec!["n"]);
        // A shared temporary stays for its owner's sweep.
        let failed = write(Temp::Shared(b"n.new")).unwrap_err();
        assert_eq!(failed.0, Step::Name);
        assert_eq!(names(&dir), vec!["n", "n.new"]);
        // An error before the rename stops it there too.
        let whole = whole(fd.as_fd(), Temp::Own(b".m.tmp"), b"m", syncs);
        let stop = whole.write(b"new", |_| Err("stop"), |_, _| "fault");
        assert_eq!(stop, Err("stop"));
        assert_eq!(names(&dir), vec!["n", "n.new"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
