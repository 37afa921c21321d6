//! The kept variants: compressed copies of files that have no sidecar,
//! made once by the compressor thread and kept in a bounded table, each
//! answering only for the exact file identity it was made from
//! (`spec/files.md`, "Compression kept like files").

use super::cache::recently_changed;
use super::pool::{at_lowest_priority, IoPool};
use crate::encode::{encode_bytes, method, GENERATION};
use crate::fs::{self, Identity, Root};
use crate::http::conditional::Validators;
use crate::rt::Coding;
use bytes::Bytes;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// Variants kept at most, whatever their bytes.
const MAX_ENTRIES: usize = 4096;

/// Jobs waiting for the compressor at most: past it a request queues
/// nothing, and a later one queues it again.
const MAX_QUEUED: usize = 16;

/// A file and a coding.
type Key = ((u64, u64), Coding);

struct Entry {
    /// The identity the bytes were made from.
    id: Identity,
    /// None: compressing did not make it smaller ("no gain").
    made: Option<(Bytes, Validators)>,
    last_used: u64,
}

#[derive(Default)]
struct Table {
    entries: HashMap<Key, Entry>,
    /// Jobs queued or running.
    pending: HashSet<Key>,
    bytes: u64,
    clock: u64,
}

/// Counters for `nikaia explain`.
#[derive(Default)]
pub(crate) struct VariantCounters {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub made: AtomicU64,
    pub no_gain: AtomicU64,
    pub evictions: AtomicU64,
    pub invalidations: AtomicU64,
    pub dropped: AtomicU64,
}

struct Inner {
    table: Mutex<Table>,
    /// Set at shutdown: queued jobs end without compressing.
    closed: AtomicBool,
    max_bytes: AtomicU64,
    counters: VariantCounters,
}

pub(crate) struct Variants {
    inner: Arc<Inner>,
    on: AtomicBool,
    compressor: IoPool,
}

impl Variants {
    pub(crate) fn new(on: bool, max_bytes: u64) -> std::io::Result<Variants> {
        Ok(Variants {
            inner: Arc::new(Inner {
                table: Mutex::default(),
                closed: AtomicBool::new(false),
                max_bytes: AtomicU64::new(max_bytes),
                counters: VariantCounters::default(),
            }),
            on: AtomicBool::new(on && max_bytes > 0),
            compressor: IoPool::with_start("nikaia-compress", 1, at_lowest_priority)?,
        })
    }

    pub(crate) fn on(&self) -> bool {
        self.on.load(Relaxed)
    }

    /// New settings (a reload): off empties the table; a lower bound
    /// evicts the least recently used variants until it holds.
    pub(crate) fn configure(&self, on: bool, max_bytes: u64) {
        let on = on && max_bytes > 0;
        self.on.store(on, Relaxed);
        self.inner.max_bytes.store(max_bytes, Relaxed);
        let mut t = self.inner.lock();
        let bound = if on { max_bytes } else { 0 };
        self.inner
            .evict_to(&mut t, bound, if on { MAX_ENTRIES } else { 0 });
    }

    /// The variant of file `id` in `coding`, if one is kept and was made
    /// from exactly this identity; a variant of another identity (the file
    /// changed) is dropped. On a miss, `queue` queues the compression.
    pub(crate) fn get(
        &self,
        root: &Root,
        name: &Path,
        id: &Identity,
        coding: Coding,
        queue: bool,
    ) -> Option<(Bytes, Validators)> {
        if !self.on() || root.cache_key().is_none() {
            return None;
        }
        let inner = &self.inner;
        let key = ((id.dev, id.ino), coding);
        {
            let mut t = inner.lock();
            match t.entries.get(&key).map(|e| e.id == *id) {
                Some(true) => {
                    t.clock += 1;
                    let clock = t.clock;
                    let e = t.entries.get_mut(&key)?;
                    e.last_used = clock;
                    let made = e.made.clone();
                    if made.is_some() {
                        inner.counters.hits.fetch_add(1, Relaxed);
                    }
                    // No gain: the identity body, nothing to queue.
                    return made;
                }
                Some(false) => {
                    t.remove(&key);
                    inner.counters.invalidations.fetch_add(1, Relaxed);
                }
                None => {}
            }
            inner.counters.misses.fetch_add(1, Relaxed);
            // A file changed less than a tick ago waits (the kept table's rule).
            if !queue || t.pending.contains(&key) || recently_changed(id) {
                return None;
            }
            if t.pending.len() >= MAX_QUEUED {
                inner.counters.dropped.fetch_add(1, Relaxed);
                return None;
            }
            t.pending.insert(key);
        }
        let job = Job {
            inner: inner.clone(),
            root: root.clone(),
            name: name.to_path_buf(),
            id: *id,
            coding,
        };
        self.compressor.submit(move || job.run());
        None
    }

    pub(crate) fn report(&self) -> crate::rt::CompressedReport {
        let c = &self.inner.counters;
        let (entries, bytes) = {
            let t = self.inner.lock();
            (t.entries.len() as u64, t.bytes)
        };
        crate::rt::CompressedReport {
            entries,
            bytes,
            hits: c.hits.load(Relaxed),
            misses: c.misses.load(Relaxed),
            made: c.made.load(Relaxed),
            no_gain: c.no_gain.load(Relaxed),
            evictions: c.evictions.load(Relaxed),
            invalidations: c.invalidations.load(Relaxed),
            dropped: c.dropped.load(Relaxed),
        }
    }

    /// Finishes the job running, ends the queued ones without their work,
    /// stops the thread.
    pub(crate) fn close(&self) {
        self.on.store(false, Relaxed);
        self.inner.closed.store(true, Relaxed);
        self.compressor.close();
    }
}

/// One compression: a file by its name under its root, expected to have
/// the identity a request saw.
struct Job {
    inner: Arc<Inner>,
    root: Root,
    name: PathBuf,
    id: Identity,
    coding: Coding,
}

impl Job {
    fn run(self) {
        let key = ((self.id.dev, self.id.ino), self.coding);
        let made = self.compress();
        let mut t = self.inner.lock();
        t.pending.remove(&key);
        let Some(made) = made else {
            return;
        };
        let made = if made.len() as u64 >= self.id.size {
            self.inner.counters.no_gain.fetch_add(1, Relaxed);
            None
        } else {
            self.inner.counters.made.fetch_add(1, Relaxed);
            let method = format!("{}-{GENERATION}", method(self.coding, self.id.size));
            let validators = Validators::compressed(&self.id, &method);
            Some((Bytes::from(made), validators))
        };
        let size = made.as_ref().map_or(0, |(b, _)| b.len() as u64);
        let max_bytes = self.inner.max_bytes.load(Relaxed);
        if size > max_bytes {
            return;
        }
        t.remove(&key);
        self.inner
            .evict_to(&mut t, max_bytes - size, MAX_ENTRIES.saturating_sub(1));
        t.clock += 1;
        let last_used = t.clock;
        t.bytes += size;
        t.entries.insert(
            key,
            Entry {
                id: self.id,
                made,
                last_used,
            },
        );
    }

    /// The file's bytes, compressed; None when the file is not the one the
    /// request saw, before or after the read.
    fn compress(&self) -> Option<Vec<u8>> {
        if self.inner.closed.load(Relaxed) {
            return None;
        }
        let opened = self.root.open(&self.name).ok()?;
        if opened.id != self.id {
            return None;
        }
        let mut data = vec![0u8; usize::try_from(self.id.size).ok()?];
        if fs::read_full_at(&opened.file, &mut data, 0).ok()? < data.len() {
            return None;
        }
        let after = rustix::fs::fstat(&opened.file).ok()?;
        if fs::identity_of(&after) != self.id {
            return None;
        }
        encode_bytes(self.coding, &data).ok()
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Evicts the least recently used variants until the table holds at
    /// most `bytes` in at most `entries` variants.
    fn evict_to(&self, t: &mut Table, bytes: u64, entries: usize) {
        if t.bytes <= bytes && t.entries.len() <= entries {
            return;
        }
        let mut by_age: Vec<_> = t.entries.iter().map(|(k, e)| (e.last_used, *k)).collect();
        by_age.sort_unstable_by_key(|(age, _)| *age);
        for (_, key) in by_age {
            if t.bytes <= bytes && t.entries.len() <= entries {
                break;
            }
            t.remove(&key);
            self.counters.evictions.fetch_add(1, Relaxed);
        }
    }
}

impl Table {
    fn remove(&mut self, key: &Key) -> bool {
        let Some(e) = self.entries.remove(key) else {
            return false;
        };
        self.bytes -= e.made.map_or(0, |(b, _)| b.len() as u64);
        true
    }
}
