//! Where ACME keeps what it must not lose (`spec/tls.md`, "Storage"): the
//! account, each name's key and chain in one file, an order in flight, and
//! the challenges another process may have to answer; written so that a
//! crash or a full disk never leaves a torn pair, and locked per name
//! with `flock`, which dies with its holder.
//!
//! ```text
//! STORAGE/                      0700, ours
//!   <ca>/                       one per directory URL (a new URL: a new account)
//!     account.key               0600, the account's PKCS#8 key (PEM)
//!     account.json              the account's URL
//!     account.lock              held while an account is made
//!     <name>.pem                0600, key then chain (PEM): switched by one rename
//!     <name>.prev.pem           the pair before it, for a <name>.pem that does not load
//!     <name>.order.json         0600, an order in flight: its URL and the new key
//!     <name>.challenge.json     the tokens of an authorization in flight
//!     <name>.lock               held while the name's order runs
//! ```

use crate::fs::whole::{FileSync, Step, Syncs, Temp, Whole};
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{self as rfs, Mode, OFlags, CWD};
use rustix::io::Errno;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// One CA's part of the storage directory.
pub(super) struct Store {
    /// The CA's directory under the storage directory, opened.
    dir: OwnedFd,
    /// Its path, for messages.
    pub(super) path: PathBuf,
}

/// A file's identity as a poll compares it: a rename over it, or a write
/// to it, changes this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Version {
    ino: u64,
    size: i64,
    mtime: (i64, i64),
}

/// A name's lock: held until dropped (the descriptor closes), and by the
/// kernel only as long as this process lives.
pub(super) struct Lock(#[allow(dead_code)] OwnedFd);

/// This process's mark in a CA's directory: `present.<pid>.lock`, locked
/// while it lives, so another process sees it shares the storage. Removed
/// when dropped (a clean exit, a reload that leaves the storage); a
/// crashed process's is swept by the next that looks
/// ([`Store::others_present`]).
pub(super) struct Presence {
    /// The CA's directory it is in, and its path (a reload that keeps the
    /// storage keeps the mark).
    dir: OwnedFd,
    path: PathBuf,
    name: String,
    _lock: Lock,
}

impl Presence {
    /// Whether it is the mark in `store`.
    pub(super) fn is_in(&self, store: &Store) -> bool {
        self.path == store.path
    }
}

impl Drop for Presence {
    fn drop(&mut self) {
        // Unlinked while still locked (the lock goes after this body): a
        // process that looks now finds the mark held, or no mark.
        let _ = rfs::unlinkat(&self.dir, self.name.as_str(), rfs::AtFlags::empty());
    }
}

const DIR_MODE: u32 = 0o700;
const FILE_MODE: u32 = 0o600;
/// A temporary file older than this is a crashed writer's, swept at open.
const STALE_TEMP: Duration = Duration::from_secs(600);

impl Store {
    /// Opens (creating it, 0700, where missing) `storage` and in it the
    /// directory of the CA at `directory`. Refused when either is not a
    /// directory of this user's, or can be written by its group or others:
    /// keys live there.
    pub(super) fn open(storage: &Path, directory: &str) -> io::Result<Store> {
        create_private(storage)?;
        let top = rfs::open(
            storage,
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        check_private(&top, storage)?;
        let slug = slug(directory);
        match rfs::mkdirat(&top, slug.as_str(), Mode::from_raw_mode(DIR_MODE)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(at(storage, e)),
        }
        let path = storage.join(&slug);
        let dir = rfs::openat(
            &top,
            slug.as_str(),
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| at(&path, e))?;
        check_private(&dir, &path)?;
        let store = Store { dir, path };
        store.sweep();
        Ok(store)
    }

    /// Reads a file of this CA's directory; `None` when there is none.
    pub(super) fn read(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let fd = match rfs::openat(
            &self.dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(self.at(name, e)),
        };
        let mut file = std::fs::File::from(fd);
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut file, &mut bytes)?;
        Ok(Some(bytes))
    }

    /// The identity of a file, to notice it changed; `None`: there is none.
    pub(super) fn version(&self, name: &str) -> Option<Version> {
        let st = rfs::statat(&self.dir, name, rfs::AtFlags::SYMLINK_NOFOLLOW).ok()?;
        Some(Version {
            ino: st.st_ino,
            size: st.st_size,
            mtime: (st.st_mtime, st.st_mtime_nsec as i64),
        })
    }

    /// Replaces `name` with `bytes` whole: a new file (0600, created, never
    /// followed) written and synced, renamed over the name, and the
    /// directory synced. A failure (a full disk) leaves the old file as it
    /// was and no temporary behind. `keep_previous`: the file it replaces
    /// is kept as `<stem>.prev.pem` (a pair that does not load falls back
    /// to it).
    pub(super) fn write(
        &self,
        name: &str,
        bytes: &[u8],
        keep_previous: Option<&str>,
    ) -> io::Result<()> {
        let temp = format!(".{name}.tmp.{:016x}", random_u64());
        let whole = Whole {
            dir: self.dir.as_fd(),
            temp: Temp::Own(temp.as_bytes()),
            name: name.as_bytes(),
            mode: FILE_MODE,
            syncs: Syncs {
                file: FileSync::All,
                dir: true,
            },
        };
        // The crash points of ACME's tests, and the pair it replaces kept.
        let at = |step| {
            if step == Step::Dir {
                super::checkpoint("renamed");
                return Ok(());
            }
            super::checkpoint("a temporary written and synced");
            if let Some(previous) = keep_previous {
                match rfs::renameat(&self.dir, name, &self.dir, previous) {
                    Ok(()) | Err(Errno::NOENT) => {}
                    Err(e) => return Err(self.at(name, e)),
                }
                super::checkpoint("the previous file kept");
            }
            Ok(())
        };
        whole.write(bytes, at, |step, e| match step {
            Step::Temp => self.at(&temp, e),
            Step::Write | Step::File => e.into(),
            Step::Name => self.at(name, e),
            Step::Dir => self.at(".", e),
        })
    }

    /// Removes a file of ours, if it is there.
    pub(super) fn remove(&self, name: &str) -> io::Result<()> {
        match rfs::unlinkat(&self.dir, name, rfs::AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(self.at(name, e)),
        }
    }

    /// Takes `<what>.lock` without waiting: `None` while another process
    /// (or another thread of this one) holds it.
    pub(super) fn try_lock(&self, what: &str) -> io::Result<Option<Lock>> {
        self.take(what, rfs::FlockOperation::NonBlockingLockExclusive)
    }

    /// Takes `<what>.lock`, waiting for it.
    pub(super) fn lock(&self, what: &str) -> io::Result<Lock> {
        let taken = self.take(what, rfs::FlockOperation::LockExclusive)?;
        taken.ok_or_else(|| io::Error::other("a lock taken with waiting was refused"))
    }

    /// Opens (creating) `<what>.lock` and locks it with `how`.
    fn take(&self, what: &str, how: rfs::FlockOperation) -> io::Result<Option<Lock>> {
        let name = format!("{what}.lock");
        let fd = rfs::openat(
            &self.dir,
            name.as_str(),
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(FILE_MODE),
        )
        .map_err(|e| self.at(&name, e))?;
        match rfs::flock(&fd, how) {
            Ok(()) => Ok(Some(Lock(fd))),
            Err(Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(self.at(&name, e)),
        }
    }

    /// Marks this process present (for as long as the mark lives). Once
    /// per storage: a second mark of this process's in the same directory
    /// is refused by its own lock (`flock` locks each open file apart).
    pub(super) fn present(&self) -> io::Result<Presence> {
        let me = format!("present.{}", rustix::process::getpid().as_raw_nonzero());
        let lock = self
            .try_lock(&me)?
            .ok_or_else(|| io::Error::other("the presence mark is taken"))?;
        Ok(Presence {
            dir: self.dir.try_clone()?,
            path: self.path.clone(),
            name: format!("{me}.lock"),
            _lock: lock,
        })
    }

    /// Whether another live process marked itself present; the marks of
    /// dead ones (their lock gone with them) are removed.
    pub(super) fn others_present(&self) -> bool {
        let me = format!(
            "present.{}.lock",
            rustix::process::getpid().as_raw_nonzero()
        );
        let Ok(dir) = rfs::Dir::read_from(&self.dir) else {
            return false;
        };
        let mut others = false;
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("present.") || !name.ends_with(".lock") || name == me {
                continue;
            }
            let stem = name.trim_end_matches(".lock");
            match self.try_lock(stem) {
                Ok(Some(_dead)) => {
                    let _ = rfs::unlinkat(&self.dir, name.as_str(), rfs::AtFlags::empty());
                }
                Ok(None) => others = true,
                Err(_) => {}
            }
        }
        others
    }

    /// Removes the temporary files of writers that crashed (older than ten
    /// minutes, so a live writer's is never taken).
    fn sweep(&self) {
        let Ok(dir) = rfs::Dir::read_from(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !(name.starts_with('.') && name.contains(".tmp.")) {
                continue;
            }
            let old = rfs::statat(&self.dir, name.as_str(), rfs::AtFlags::SYMLINK_NOFOLLOW)
                .ok()
                .and_then(|st| {
                    SystemTime::UNIX_EPOCH
                        .checked_add(Duration::from_secs(st.st_mtime.max(0) as u64))
                })
                .is_some_and(|mtime| now.duration_since(mtime).unwrap_or_default() > STALE_TEMP);
            if old {
                let _ = rfs::unlinkat(&self.dir, name.as_str(), rfs::AtFlags::empty());
            }
        }
    }

    fn at(&self, name: &str, e: Errno) -> io::Error {
        at(&self.path.join(name), e)
    }
}

fn at(path: &Path, e: Errno) -> io::Error {
    let e = io::Error::from(e);
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Creates `path` and its missing parents; the directories made are 0700.
fn create_private(path: &Path) -> io::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_private(parent)?;
    }
    match rfs::mkdirat(CWD, path, Mode::from_raw_mode(DIR_MODE)) {
        Ok(()) | Err(Errno::EXIST) => Ok(()),
        Err(e) => Err(at(path, e)),
    }
}

/// Refuses a directory that is not this user's, or that its group or
/// others may write or read.
fn check_private(fd: &impl AsFd, path: &Path) -> io::Result<()> {
    let st = rfs::fstat(fd).map_err(|e| at(path, e))?;
    let me = rustix::process::geteuid().as_raw();
    let mode = st.st_mode & 0o777;
    let problem = if st.st_uid != me {
        Some(format!(
            "it belongs to user {}, not to this process's user {me}",
            st.st_uid
        ))
    } else if mode & 0o077 != 0 {
        Some(format!(
            "its mode is {mode:04o}; keys are kept there, so it must be 0700 (chmod 700 it)"
        ))
    } else {
        None
    };
    match problem {
        Some(why) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("ACME storage {}: {why}", path.display()),
        )),
        None => Ok(()),
    }
}

/// A directory URL as a directory name: its host and path, every other
/// character `-` (`acme-v02.api.letsencrypt.org-directory`).
fn slug(url: &str) -> String {
    let rest = url.strip_prefix("https://").unwrap_or(url);
    let slug: String = rest
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let slug = slug.trim_matches(['-', '.']).to_owned();
    match slug.is_empty() {
        true => "ca".to_owned(),
        false => slug,
    }
}

/// 64 random bits from the system (temporary names, jitter).
pub(super) fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SystemRandom fails only without a kernel source of randomness.
    let _ = aws_lc_rs::rand::SecureRandom::fill(&aws_lc_rs::rand::SystemRandom::new(), &mut b);
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_url_names_a_directory() {
        assert_eq!(
            slug("https://acme-v02.api.letsencrypt.org/directory"),
            "acme-v02.api.letsencrypt.org-directory"
        );
        assert_eq!(slug("https://127.0.0.1:14000/dir"), "127.0.0.1-14000-dir");
        assert_eq!(slug("https://../../"), "ca");
    }

    #[test]
    fn writes_replace_whole_and_storage_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let storage = tmp.path().join("a/b");
        let store = Store::open(&storage, "https://ca.example/dir").unwrap();
        assert_eq!(
            std::fs::metadata(&storage).unwrap().permissions().mode() & 0o777,
            0o700
        );
        store.write("x.pem", b"one", Some("x.prev.pem")).unwrap();
        let v1 = store.version("x.pem").unwrap();
        store.write("x.pem", b"two", Some("x.prev.pem")).unwrap();
        assert_eq!(store.read("x.pem").unwrap().unwrap(), b"two");
        assert_eq!(store.read("x.prev.pem").unwrap().unwrap(), b"one");
        assert_ne!(store.version("x.pem").unwrap(), v1);
        let mode = std::fs::metadata(storage.join("ca.example-dir/x.pem"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // No temporary is left.
        let left: Vec<_> = std::fs::read_dir(storage.join("ca.example-dir"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
        // A lock is held until dropped.
        let held = store.try_lock("x").unwrap().unwrap();
        assert!(store.try_lock("x").unwrap().is_none());
        drop(held);
        assert!(store.try_lock("x").unwrap().is_some());
        // A storage directory others may read is refused.
        std::fs::set_permissions(&storage, std::fs::Permissions::from_mode(0o755)).unwrap();
        let refused = Store::open(&storage, "https://ca.example/dir")
            .err()
            .unwrap()
            .to_string();
        assert!(refused.contains("must be 0700"), "{refused}");
    }
}
