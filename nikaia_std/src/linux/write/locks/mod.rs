//! WebDAV's locks (`spec/site.md`, "WebDAV class 2: locks"): the table
//! every worker and both processes of an upgrade share through one file
//! (`file.rs`), the decisions made from it (`table.rs`), and the check
//! every write under `[webdav-locks]` makes when it acts — `If:`
//! evaluated against the names it tags, then the locks the write meets,
//! each needing its token submitted by its owner.
//!
//! A process keeps the table it last read and reads the file again when
//! its identity or modification time changed: one `stat` per decision. A
//! change (a lock taken, refreshed or released, the locks of a removed
//! name dropped) is made under the file's `flock`, on the table as the
//! file holds it then, and written whole by a rename. An expired lock is
//! ignored by every decision and dropped by the next change.

mod file;
pub(crate) mod table;

use crate::fs::{self, Root};
use crate::http::site::lock::Cond;
use crate::rt::WebdavLocks;
use rustix::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use table::{By, Lock, Reach, Table};

/// The locks of one `[webdav-locks] dir`, as this process sees them.
pub(crate) struct Locks {
    dir: OwnedFd,
    path: PathBuf,
    cache: Mutex<Cache>,
    /// Held by a `LOCK` taking a new lock, from its first look at the
    /// table to the lock written.
    creating: Mutex<()>,
    /// Held by a change of the table, from its read to its rename.
    changing: Mutex<()>,
    pub(crate) stats: LockStats,
}

/// The table last read, and the file's version it was read from.
struct Cache {
    seen: Option<file::Seen>,
    table: Arc<Table>,
}

/// What `nikaia explain` counts of the locks (this process's decisions).
#[derive(Default)]
pub(crate) struct LockStats {
    pub taken: AtomicU64,
    pub refreshed: AtomicU64,
    pub released: AtomicU64,
    pub expired: AtomicU64,
    /// `LOCK`s refused: a conflict (423) or a bound (503).
    pub refused: AtomicU64,
    /// Writes refused because a lock's token was not submitted (423).
    pub writes_refused: AtomicU64,
}

/// Milliseconds since the epoch: a lock lives the seconds it was
/// granted from the moment it was, not from a second's start.
pub(crate) fn now() -> u64 {
    super::resume::now_ms()
}

impl Locks {
    /// Opens (making it, mode 0700, if it is missing) the directory the
    /// runtime names.
    pub(crate) fn open(c: &WebdavLocks) -> std::io::Result<Arc<Locks>> {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let dir = match rustix::fs::open(&c.dir, flags, Mode::empty()) {
            Err(rustix::io::Errno::NOENT) => {
                match rustix::fs::mkdir(&c.dir, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                rustix::fs::open(&c.dir, flags, Mode::empty())?
            }
            opened => opened?,
        };
        let locks = Locks {
            dir,
            path: c.dir.clone(),
            cache: Mutex::new(Cache {
                seen: None,
                table: Arc::default(),
            }),
            creating: Mutex::new(()),
            changing: Mutex::new(()),
            stats: LockStats::default(),
        };
        // A file that cannot be read is said now, not at the first LOCK.
        file::read(locks.dir.as_fd())?;
        Ok(Arc::new(locks))
    }

    /// The directory it was opened from.
    pub(crate) fn dir(&self) -> &Path {
        &self.path
    }

    /// One new lock at a time (see `dav/lock.rs`).
    pub(crate) fn creating(&self) -> std::sync::MutexGuard<'_, ()> {
        self.creating.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The table as the file holds it now (the one last read, if the
    /// file did not change since).
    pub(crate) fn table(&self) -> Arc<Table> {
        let mut cache = self.cache();
        self.fresh(&mut cache);
        cache.table.clone()
    }

    /// Reads the file again if it changed since `cache` was read. A file
    /// that cannot be read leaves the table as it was (said in the log).
    fn fresh(&self, cache: &mut Cache) {
        match file::seen(self.dir.as_fd()) {
            Ok(seen) if seen == cache.seen => return,
            Ok(_) => {}
            Err(e) => {
                eprintln!("nikaia: [webdav-locks] {}: {e}", self.path.display());
                return;
            }
        }
        match file::read(self.dir.as_fd()) {
            Ok((seen, bytes)) => {
                let (table, bad) = file::decode(&bytes);
                if bad > 0 {
                    eprintln!(
                        "nikaia: [webdav-locks] {}/locks: {bad} line(s) not read (kept as they are)",
                        self.path.display()
                    );
                }
                *cache = Cache {
                    seen,
                    table: Arc::new(table),
                };
            }
            Err(e) => eprintln!("nikaia: [webdav-locks] {}: {e}", self.path.display()),
        }
    }

    /// Changes the table under the file's `flock`: `change` is given it
    /// as the file holds it now (expired locks dropped) and says what to
    /// answer and whether it changed anything; a change is written whole
    /// before this returns. Changes are made one at a time (in this
    /// process by `changing`, across processes by the `flock`); decisions
    /// go on meanwhile with the table as it was, and take the new one once
    /// it is renamed into place.
    pub(crate) fn change<T>(
        &self,
        now: u64,
        change: impl FnOnce(&mut Table) -> (T, bool),
    ) -> std::io::Result<T> {
        let _one = self.changing.lock().unwrap_or_else(|e| e.into_inner());
        let _held = file::hold(self.dir.as_fd())?;
        // The file as it is now: read again only if another process
        // changed it since (each rename gives it a new inode).
        let mut table = {
            let mut cache = self.cache();
            self.fresh(&mut cache);
            (*cache.table).clone()
        };
        let expired = table.remove_if(|l| l.expires <= now);
        let (answer, changed) = change(&mut table);
        if changed || expired > 0 {
            file::write(self.dir.as_fd(), &table)?;
            self.stats.expired.fetch_add(expired as u64, Relaxed);
            let seen = file::seen(self.dir.as_fd())?;
            *self.cache() = Cache {
                seen,
                table: Arc::new(table),
            };
        }
        Ok(answer)
    }

    /// What `nikaia explain` shows: this process's counts, and the locks
    /// held now (expired ones dropped first, and counted).
    pub(crate) fn report(&self) -> crate::rt::LocksReport {
        let now = now();
        let table = self.table();
        if table.all().any(|l| l.expires <= now) {
            if let Err(e) = self.change(now, |_| ((), false)) {
                eprintln!("nikaia: [webdav-locks] {}: {e}", self.path.display());
            }
        }
        let load = |c: &AtomicU64| c.load(Relaxed);
        let s = &self.stats;
        crate::rt::LocksReport {
            taken: load(&s.taken),
            refreshed: load(&s.refreshed),
            released: load(&s.released),
            expired: load(&s.expired),
            refused: load(&s.refused),
            writes_refused: load(&s.writes_refused),
            held: self.table().counts(None, now).0 as u64,
        }
    }

    /// Drops the locks rooted at `name` or under it whose names are gone
    /// from `root`: the name was removed or moved away (a lock stays with
    /// its name, RFC 4918 §7.4). A name made again meanwhile (a `LOCK` of
    /// it, which makes an empty file) keeps the lock taken on it.
    pub(crate) fn drop_under(&self, root: &Root, name: &[u8]) {
        self.drop_if(root, |at| at == name || table::under(at, name));
    }

    /// Drops the locks rooted strictly under `name` whose names are gone:
    /// a collection there was replaced whole (`COPY` or `MOVE` with
    /// `Overwrite: T`), its members with it.
    pub(crate) fn drop_below(&self, root: &Root, name: &[u8]) {
        self.drop_if(root, |at| table::under(at, name));
    }

    fn drop_if(&self, root: &Root, under: impl Fn(&[u8]) -> bool) {
        // Always under the file's lock, never from the table last read: a
        // LOCK being written now (it looked before the name went) is
        // waited for, then dropped with the rest; one after this change
        // finds the name gone and looks again.
        let done = self.change(now(), |t| {
            let n = t.remove_if(|l| under(&l.root) && !exists(root, &l.root));
            (n, n > 0)
        });
        if let Err(e) = done {
            eprintln!("nikaia: [webdav-locks] {}: {e}", self.path.display());
        }
    }
}

/// Whether anything is at `name` under `root` (no link followed; a name
/// that cannot be looked at counts as there: its lock is kept).
pub(crate) fn exists(root: &Root, name: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt;
    if name.is_empty() {
        return true;
    }
    let path = Path::new(std::ffi::OsStr::from_bytes(name));
    let look = root.dav_at(path, &fs::Guard::default(), |dir, entry| {
        fs::dav::look(dir.as_fd(), entry, path)
    });
    !matches!(look, Ok(None) | Err(fs::Error::NotFound))
}

/// Whether a lock's owner, as the locks file keeps it (percent-encoded
/// past printable ASCII), takes at most 4 KiB: every change rewrites every
/// lock's, so its size is bounded as it is kept.
pub(crate) fn owner_fits(owner: &str) -> bool {
    file::kept_len(owner.as_bytes()) <= 4 << 10
}

/// A new lock token: `urn:uuid:` and a version 4 UUID from the kernel's
/// generator (RFC 4918 §6.5 recommends the URN).
pub(crate) fn new_token() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    fs::random(&mut b)?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    ))
}

/// What one write asks of the locks: the name it writes, who writes, and
/// its `If:`.
#[derive(Clone)]
pub(crate) struct Gate {
    pub locks: Arc<Locks>,
    pub root: Root,
    /// The name's bytes under the served directory, no `/` at either end.
    pub name: Vec<u8>,
    /// The name a check made with it held asks of ([`held`]): the
    /// request's own, or the Destination a `COPY` names.
    pub at: Vec<u8>,
    pub user: Option<String>,
    pub cond: Option<Arc<Cond>>,
}

impl Gate {
    /// The write of the name, reaching `reach`, as the locks and `If:`
    /// decide now: `etag` is the name's (known where the caller holds it;
    /// otherwise looked up). A false `If:` is [`fs::Error::Precondition`]
    /// (412), a lock whose token is missing [`fs::Error::Locked`] (423).
    pub(crate) fn decide(
        &self,
        reach: Reach,
        etag: Option<Option<String>>,
    ) -> Result<(), fs::Error> {
        self.decide_at(&self.at, reach, etag)
    }

    /// As [`Gate::decide`], for another name the same request writes (a
    /// `COPY`'s or `MOVE`'s Destination): its untagged `If:` lists are
    /// still about the request's own name.
    pub(crate) fn decide_at(
        &self,
        name: &[u8],
        reach: Reach,
        etag: Option<Option<String>>,
    ) -> Result<(), fs::Error> {
        let table = self.locks.table();
        let now = now();
        let tokens = match &self.cond {
            Some(cond) => {
                let etag = etag.unwrap_or_else(|| etag_of(&self.root, name));
                if !self.holds(cond, &table, (name, etag.as_deref()), now) {
                    return Err(fs::Error::Precondition);
                }
                cond.submitted()
            }
            None => Vec::new(),
        };
        let by = By {
            user: self.user.as_deref(),
            tokens: &tokens,
        };
        let blocked = table.blocking(name, reach, &by, now);
        if blocked.is_empty() {
            return Ok(());
        }
        self.locks.stats.writes_refused.fetch_add(1, Relaxed);
        Err(fs::Error::Locked(blocked.iter().map(|l| href(l)).collect()))
    }

    /// Whether the request's `If:` is true of its own name (no `If:` is):
    /// all a `LOCK` of a name that exists, a refresh and an `UNLOCK` ask
    /// before they act.
    pub(crate) fn cond_holds(&self) -> bool {
        let Some(cond) = &self.cond else {
            return true;
        };
        let etag = etag_of(&self.root, &self.name);
        let known = (self.name.as_slice(), etag.as_deref());
        self.holds(cond, &self.locks.table(), known, now())
    }

    /// Whether the `If:` is true: each list about the name it tags (the
    /// request's own where untagged), with its ETag (`known`: a name whose
    /// ETag the caller has) and the locks whose scope holds it.
    fn holds(&self, cond: &Cond, table: &Table, known: (&[u8], Option<&str>), now: u64) -> bool {
        let mut about = |tag: Option<&str>| {
            let at: &[u8] = match tag {
                None => &self.name,
                Some(tag) => cond.name_of(tag)?,
            };
            let etag = match at == known.0 {
                true => known.1.map(str::to_owned),
                false => etag_of(&self.root, at),
            };
            let covering = table.covering(at, now);
            let locked_by = Box::new(move |t: &str| covering.iter().any(|l| l.token == t));
            Some(crate::http::dav::cond::State { etag, locked_by })
        };
        cond.holds(&mut about)
    }
}

/// The ETag of the regular file at `name` (no file: `None`).
fn etag_of(root: &Root, name: &[u8]) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(name));
    match root.dav_target(path) {
        Ok((_, stat)) if !stat.dir => Some(stat.etag()),
        _ => None,
    }
}

/// A lock root's href.
pub(crate) fn href(lock: &Lock) -> String {
    super::dav::href(&lock.root, lock.collection)
}

/// The check a guarded write makes with its name held: `made` is the
/// reach of a write that makes the name, `replaced` of one that replaces
/// what is there.
pub(crate) fn held(gate: Gate, made: Reach, replaced: Reach) -> fs::Held {
    let check: fs::HeldCheck = Arc::new(move |etag: Option<&str>, exists: bool| {
        let reach = if exists { replaced } else { made };
        gate.decide(reach, Some(etag.map(str::to_owned)))
    });
    fs::Held(Some(check))
}
