//! The kept-mapping table (D8): small files under a `Dir` root, mapped once
//! and written to the socket on later requests without an open.
//!
//! Bounded by entries (`static-cache`) and bytes (`static-cache-bytes`);
//! keyed by the resolved file's (dev, ino), reached through the names that
//! led to it; every hit revalidated by a `statx` of its name, made after
//! the request was read and shared by the hits of requests read before it
//! ([`Window`]); invisible to programs.
//! Normative text: `spec/files.md`.

use super::send::KEEP_MAX;
use crate::fs::{self, Identity, Opened, Root};
use bytes::Bytes;
mod ids;
mod window;

pub(crate) use window::Window;

use ids::Ids;
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A file whose ctime is this close to now is not kept: a second change
/// within one timestamp tick could leave its identity unchanged.
const TICK_NS: i64 = 10_000_000;

/// The most names that lead to one kept file. Names are their bytes, so a
/// handler that passes a client's spelling on (`a//b`, `a///b`, …) could
/// otherwise grow a hot entry's list without end; a name past these is
/// answered from the kept bytes when its open found the same file, and
/// opened again next time.
const MAX_NAMES: usize = 8;

/// A root's (dev, ino) and a name under it, as its bytes: names are
/// compared and hashed as the bytes asked for, not as a path's components
/// (two spellings of one file are two names, each checked on its own).
type Name = ((u64, u64), Box<[u8]>);

/// The names kept under one root, each to where it led.
type Names = HashMap<Box<[u8]>, Led>;

fn bytes_of(name: &Path) -> &[u8] {
    name.as_os_str().as_bytes()
}

/// How long a sidecar found absent is taken as absent without an open: a
/// sidecar that appears (`nikaia compress` on a live tree) is served within
/// this, and a file asked for a thousand times a second costs one failed
/// open per coding a second instead of a thousand.
pub(crate) const ABSENT_FOR: Duration = Duration::from_secs(1);

struct Entry<M> {
    bytes: Bytes,
    id: Identity,
    /// What the caller derived from the file once (its headers), reused by
    /// every hit.
    meta: M,
    names: Vec<Name>,
    /// The table's clock when a hit last used it, for the LRU order: set
    /// by a hit without taking the table's lock again after its check.
    last_used: Arc<AtomicU64>,
}

/// Where a name led, and the [`Window`] whose `statx` last showed it still
/// leads there unchanged (set by the check, outside the table's lock: a
/// name led elsewhere meanwhile has a `Led` of its own).
#[derive(Debug)]
struct Led {
    file: (u64, u64),
    checked: Arc<AtomicU64>,
}

struct Table<M> {
    /// Root (dev, ino) → name → the file (dev, ino) it led to.
    by_name: HashMap<(u64, u64), Names, Ids>,
    entries: HashMap<(u64, u64), Entry<M>, Ids>,
    /// Names seen once: a file is kept on its second request, so a name
    /// asked for only once never costs a mapping.
    seen: HashMap<Name, ()>,
    /// Sidecar names whose open found nothing, and when.
    absent: HashMap<Name, Instant>,
    bytes: u64,
}

impl<M> Default for Table<M> {
    fn default() -> Self {
        Table {
            by_name: HashMap::default(),
            entries: HashMap::default(),
            seen: HashMap::new(),
            absent: HashMap::new(),
            bytes: 0,
        }
    }
}

/// Counters for `nikaia explain`.
#[derive(Default)]
pub(crate) struct CacheCounters {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub evictions: AtomicU64,
    pub invalidations: AtomicU64,
    /// `statx` calls of kept names (one per name per [`Window`] at most).
    pub checks: AtomicU64,
}

/// What the table holds now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Occupancy {
    pub entries: u64,
    pub bytes: u64,
}

/// How the table holds a kept file's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// A read-only mapping, written by the kernel (`sendmsg`): plain HTTP.
    Mappings,
    /// A copy read once: TLS, where rustls reads the bytes in user mode and
    /// a mapping of a file someone truncates would raise SIGBUS.
    Copies,
}

pub(crate) struct Cache<M> {
    table: Mutex<Table<M>>,
    keep: Keep,
    /// `static-cache` and `static-cache-bytes`; a reload changes them.
    max_entries: AtomicUsize,
    max_bytes: AtomicU64,
    /// Ticks once per kept hit or kept file: the LRU order's clock.
    clock: AtomicU64,
    pub(crate) counters: CacheCounters,
}

impl<M: Clone> Cache<M> {
    pub(crate) fn new(max_entries: usize, max_bytes: u64, keep: Keep) -> Cache<M> {
        Cache {
            table: Mutex::new(Table::default()),
            keep,
            max_entries: AtomicUsize::new(max_entries),
            max_bytes: AtomicU64::new(max_bytes),
            clock: AtomicU64::new(0),
            counters: CacheCounters::default(),
        }
    }

    fn max_entries(&self) -> usize {
        self.max_entries.load(Ordering::Relaxed)
    }

    fn max_bytes(&self) -> u64 {
        self.max_bytes.load(Ordering::Relaxed)
    }

    fn enabled(&self) -> bool {
        self.max_entries() > 0 && self.max_bytes() > 0
    }

    /// New bounds (a reload): the least recently used entries are evicted
    /// until both hold; entries that stay are still checked against their
    /// file before every answer, so none answers stale.
    pub(crate) fn resize(&self, max_entries: usize, max_bytes: u64) {
        let mut t = self.lock();
        self.max_entries.store(max_entries, Ordering::Relaxed);
        self.max_bytes.store(max_bytes, Ordering::Relaxed);
        if t.entries.len() > max_entries || t.bytes > max_bytes {
            // One sort, oldest first, then evictions until both hold.
            let mut by_age: Vec<_> = (t.entries.iter())
                .map(|(k, e)| (e.last_used.load(Ordering::Relaxed), *k))
                .collect();
            by_age.sort_unstable();
            for (_, key) in by_age {
                if t.entries.len() <= max_entries && t.bytes <= max_bytes {
                    break;
                }
                t.remove(key);
                self.counters.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
        if max_entries == 0 || max_bytes == 0 {
            t.absent.clear();
            t.seen.clear();
        }
    }

    /// The next tick of the LRU clock.
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table<M>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn occupancy(&self) -> Occupancy {
        let t = self.lock();
        Occupancy {
            entries: t.entries.len() as u64,
            bytes: t.bytes,
        }
    }

    /// The kept bytes for `name` under `root`, if it is kept and a `statx`
    /// of the name shows the same file, unchanged. A changed file's entry is
    /// dropped. A name already checked in the caller's `window` is not
    /// checked again.
    pub(crate) fn lookup(
        &self,
        root: &Root,
        name: &Path,
        window: &Window,
    ) -> Option<(Bytes, Identity, M)> {
        if !self.enabled() {
            return None;
        }
        let root_key = root.cache_key()?;
        let (bytes, kept_id, meta, checked, last_used) = {
            let t = self.lock();
            let led = t.by_name.get(&root_key)?.get(bytes_of(name))?;
            let e = t.entries.get(&led.file)?;
            if window.id() != 0 && led.checked.load(Ordering::Relaxed) == window.id() {
                // Checked in this window already.
                e.last_used.fetch_max(self.tick(), Ordering::Relaxed);
                self.counters.hits.fetch_add(1, Ordering::Relaxed);
                return Some((e.bytes.clone(), e.id, e.meta.clone()));
            }
            let (checked, last_used) = (led.checked.clone(), e.last_used.clone());
            (e.bytes.clone(), e.id, e.meta.clone(), checked, last_used)
        };
        self.counters.checks.fetch_add(1, Ordering::Relaxed);
        window.checked();
        match root.stat(name) {
            Ok(now) if now == kept_id => {
                // The name's and the entry's own marks: if the name was led
                // elsewhere or the entry dropped meanwhile, these are no
                // longer the table's, and marking them changes nothing.
                last_used.fetch_max(self.tick(), Ordering::Relaxed);
                checked.store(window.id(), Ordering::Relaxed);
                self.counters.hits.fetch_add(1, Ordering::Relaxed);
                Some((bytes, kept_id, meta))
            }
            _ => {
                let mut t = self.lock();
                if t.remove((kept_id.dev, kept_id.ino)) {
                    self.counters.invalidations.fetch_add(1, Ordering::Relaxed);
                }
                None
            }
        }
    }

    /// Whether `name` (a precompressed sidecar) was found absent under
    /// `root` less than [`ABSENT_FOR`] ago, so its open can be skipped.
    pub(crate) fn known_absent(&self, root: &Root, name: &Path) -> bool {
        let Some(key) = self.absent_key(root, name) else {
            return false;
        };
        let mut t = self.lock();
        match t.absent.get(&key) {
            Some(at) if at.elapsed() < ABSENT_FOR => true,
            Some(_) => {
                t.absent.remove(&key);
                false
            }
            None => false,
        }
    }

    /// Notes that the open of `name` (a sidecar) under `root` found nothing.
    pub(crate) fn note_absent(&self, root: &Root, name: &Path) {
        let Some(key) = self.absent_key(root, name) else {
            return;
        };
        let mut t = self.lock();
        // Bounded like `seen`; the notes are cheap to make again.
        if t.absent.len() >= self.max_entries().saturating_mul(4).max(64) {
            t.absent.clear();
        }
        t.absent.insert(key, Instant::now());
    }

    /// The key of an absence note: none while the table is off or for a
    /// root the table does not serve.
    fn absent_key(&self, root: &Root, name: &Path) -> Option<Name> {
        if !self.enabled() {
            return None;
        }
        Some((root.cache_key()?, bytes_of(name).into()))
    }

    /// Offers a file just opened under `root` for keeping. Returns its kept
    /// bytes when it was kept now (the second time its name was asked for).
    pub(crate) fn offer(
        &self,
        root: &Root,
        name: &Path,
        opened: &Opened,
        meta: impl FnOnce() -> M,
    ) -> Option<Bytes> {
        if !self.enabled() {
            return None;
        }
        let root_key = root.cache_key()?;
        self.counters.misses.fetch_add(1, Ordering::Relaxed);
        let id = opened.id;
        if id.size == 0 || id.size > KEEP_MAX || id.size > self.max_bytes() || recently_changed(&id)
        {
            return None;
        }
        let key: Name = (root_key, bytes_of(name).into());
        let file = (id.dev, id.ino);
        {
            let mut t = self.lock();
            if t.seen.remove(&key).is_none() {
                if t.seen.len() >= self.max_entries().saturating_mul(4).max(64) {
                    t.seen.clear();
                }
                t.seen.insert(key, ());
                return None;
            }
            // Kept already under another name (a link, a symlink): one
            // mapping serves every name that leads to the file.
            if let Some(bytes) = t.adopt(&key, file, &id) {
                return Some(bytes);
            }
        }
        let bytes = match self.keep {
            Keep::Mappings => Bytes::from(fs::map_opened(opened).ok()?),
            Keep::Copies => copy_opened(opened)?,
        };
        let mut t = self.lock();
        // Another worker may have kept it meanwhile.
        if let Some(kept) = t.adopt(&key, file, &id) {
            return Some(kept);
        }
        if t.remove(file) {
            self.counters.invalidations.fetch_add(1, Ordering::Relaxed);
        }
        while t.entries.len() >= self.max_entries() || t.bytes + id.size > self.max_bytes() {
            let Some(oldest) = t
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used.load(Ordering::Relaxed))
                .map(|(k, _)| *k)
            else {
                break;
            };
            t.remove(oldest);
            self.counters.evictions.fetch_add(1, Ordering::Relaxed);
        }
        let clock = self.tick();
        t.bytes += id.size;
        t.link(key.clone(), file);
        t.entries.insert(
            file,
            Entry {
                bytes: bytes.clone(),
                id,
                meta: meta(),
                names: vec![key],
                last_used: Arc::new(AtomicU64::new(clock)),
            },
        );
        Some(bytes)
    }
}

impl<M> Table<M> {
    /// Drops an entry and the names that led to it. A send still holding its
    /// bytes keeps the mapping alive until it ends; it no longer counts here.
    fn remove(&mut self, file: (u64, u64)) -> bool {
        let Some(e) = self.entries.remove(&file) else {
            return false;
        };
        self.bytes -= e.id.size;
        for (root, name) in e.names {
            if let Some(names) = self.by_name.get_mut(&root) {
                if names.get(&name).map(|l| l.file) == Some(file) {
                    names.remove(&name);
                }
            }
        }
        true
    }

    /// If `file` is kept with identity `id`, makes `key` lead to it too
    /// (unless [`MAX_NAMES`] already do) and returns its bytes.
    fn adopt(&mut self, key: &Name, file: (u64, u64), id: &Identity) -> Option<Bytes> {
        let e = self.entries.get_mut(&file).filter(|e| e.id == *id)?;
        let bytes = e.bytes.clone();
        if !e.names.contains(key) {
            if e.names.len() >= MAX_NAMES {
                return Some(bytes);
            }
            e.names.push(key.clone());
        }
        self.link(key.clone(), file);
        Some(bytes)
    }

    fn link(&mut self, (root, name): Name, file: (u64, u64)) {
        // Not checked yet: the first hit of any window checks it.
        let led = Led {
            file,
            checked: Arc::new(AtomicU64::new(0)),
        };
        self.by_name.entry(root).or_default().insert(name, led);
    }
}

/// The whole file read by `pread` (the descriptor's offset is left for the
/// send), kept only if an `fstat` after the read shows the same identity:
/// a file changed while it was read is not kept.
fn copy_opened(opened: &Opened) -> Option<Bytes> {
    let mut data = vec![0u8; usize::try_from(opened.id.size).ok()?];
    if fs::read_full_at(&opened.file, &mut data, 0).ok()? < data.len() {
        return None;
    }
    let after = rustix::fs::fstat(&opened.file).ok()?;
    (fs::identity_of(&after) == opened.id).then(|| Bytes::from(data))
}

/// Whether the file changed less than [`TICK_NS`] ago: then neither the
/// kept table nor the kept variants take it yet.
pub(crate) fn recently_changed(id: &Identity) -> bool {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    now - id.ctime_ns < TICK_NS
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn kept(dir: &Path) -> (Root, Cache<()>) {
        if !dir.join("page.html").exists() {
            std::fs::write(dir.join("page.html"), b"version one").unwrap();
        }
        std::thread::sleep(Duration::from_millis(30));
        let root = Root::dir(dir).unwrap();
        let cache = Cache::new(16, 1 << 20, Keep::Copies);
        let name = Path::new("page.html");
        for _ in 0..2 {
            let opened = root.open(name).unwrap();
            cache.offer(&root, name, &opened, || ());
        }
        (root, cache)
    }

    /// One `statx` per name per window: the hits of requests read before
    /// it share it; bytes read after it end the window, so the next hit
    /// checks again and sees a change made before those bytes came.
    #[test]
    fn a_check_is_shared_until_bytes_are_read_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let (root, cache) = kept(dir.path());
        let name = Path::new("page.html");
        let checks = || cache.counters.checks.load(Ordering::Relaxed);
        let window = Window::new();
        // Reads before any check do not end the window.
        window.bytes_read();
        for _ in 0..5 {
            let (bytes, _, ()) = cache.lookup(&root, name, &window).unwrap();
            assert_eq!(&bytes[..], b"version one");
        }
        assert_eq!(checks(), 1);
        // A change after the check, and a request read after the change:
        // its hit checks again, sees the change and drops the entry.
        std::fs::write(dir.path().join("page.html"), b"version two").unwrap();
        window.bytes_read();
        assert!(cache.lookup(&root, name, &window).is_none());
        assert_eq!(checks(), 2);
        assert_eq!(cache.counters.invalidations.load(Ordering::Relaxed), 1);
        assert_eq!(cache.occupancy().entries, 0);
    }

    /// The window the shared check leaves: a change after the check is not
    /// seen by requests read before it (they were read before the change
    /// too), and a read with no check since the last one keeps the window.
    #[test]
    fn requests_read_before_the_check_share_it() {
        let dir = tempfile::tempdir().unwrap();
        let (root, cache) = kept(dir.path());
        let name = Path::new("page.html");
        let checks = || cache.counters.checks.load(Ordering::Relaxed);
        let window = Window::new();
        assert!(cache.lookup(&root, name, &window).is_some());
        std::fs::write(dir.path().join("page.html"), b"version two").unwrap();
        assert!(cache.lookup(&root, name, &window).is_some());
        assert_eq!(checks(), 1);
        window.bytes_read();
        window.bytes_read();
        assert!(cache.lookup(&root, name, &window).is_none());
        assert_eq!(checks(), 2);
    }

    /// Names are their bytes, so one file may be asked for under many
    /// spellings: at most MAX_NAMES of them lead to its entry; the others
    /// are answered from its bytes and opened again next time.
    #[test]
    fn a_kept_file_is_reached_by_a_bounded_number_of_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("page.html"), b"version one").unwrap();
        let links: Vec<String> = (0..12).map(|i| format!("link{i}.html")).collect();
        for link in &links {
            std::fs::hard_link(dir.path().join("page.html"), dir.path().join(link)).unwrap();
        }
        let (root, cache) = kept(dir.path());
        for link in &links {
            let name = Path::new(link);
            let first = cache.offer(&root, name, &root.open(name).unwrap(), || ());
            assert!(first.is_none(), "{link}: kept on its first request");
            let second = cache.offer(&root, name, &root.open(name).unwrap(), || ());
            assert_eq!(second.as_deref(), Some(&b"version one"[..]), "{link}");
        }
        let led: Vec<bool> = (links.iter())
            .map(|l| cache.lookup(&root, Path::new(l), &Window::none()).is_some())
            .collect();
        let expected: Vec<bool> = (0..12).map(|i| i + 1 < MAX_NAMES).collect();
        assert_eq!(
            led, expected,
            "page.html and the first links lead to the entry"
        );
        assert_eq!(cache.occupancy().entries, 1);
    }

    #[test]
    fn without_a_window_every_hit_checks_and_another_name_checks_its_own() {
        let dir = tempfile::tempdir().unwrap();
        // A second name for the file (a hard link, made before it is kept:
        // the link changes its ctime).
        std::fs::write(dir.path().join("page.html"), b"version one").unwrap();
        std::fs::hard_link(dir.path().join("page.html"), dir.path().join("two.html")).unwrap();
        let (root, cache) = kept(dir.path());
        let name = Path::new("page.html");
        let checks = || cache.counters.checks.load(Ordering::Relaxed);
        for _ in 0..3 {
            assert!(cache.lookup(&root, name, &Window::none()).is_some());
        }
        assert_eq!(checks(), 3);
        // Kept by adoption; its own check, even in a window whose check of
        // the first name is fresh.
        let two = Path::new("two.html");
        for _ in 0..2 {
            let opened = root.open(two).unwrap();
            cache.offer(&root, two, &opened, || ());
        }
        assert_eq!(cache.occupancy().entries, 1);
        let window = Window::new();
        assert!(cache.lookup(&root, name, &window).is_some());
        assert!(cache.lookup(&root, two, &window).is_some());
        assert!(cache.lookup(&root, two, &window).is_some());
        assert_eq!(checks(), 5);
    }
}
