//! The kept variants: compressed copies of files that have no sidecar,
//! made once by the compressor thread and kept in a bounded table, each
//! answering only for the exact file identity it was made from
//! (`spec/files.md`, "Compression kept like files").

use super::pool::{at_lowest_priority, IoPool};
use crate::encode::{encode_bytes, method, GENERATION};
use crate::fs::{self, Identity, Root};
use crate::http::conditional::Validators;
use crate::http::file::Variant as Found;
use crate::rt::Coding;
use bytes::Bytes;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Variants kept at most, whatever their bytes.
const MAX_ENTRIES: usize = 4096;

/// Jobs waiting for the compressor or running at most: past it a request
/// queues nothing, and a later one queues it again.
const MAX_PENDING: usize = 16;

/// A file changed less than this long ago is not compressed yet: its
/// identity must have stood still for longer than any timestamp tick and
/// any one write (a second change within a tick, or a write read halfway,
/// could otherwise leave the identity equal to bytes that are not the
/// file's). A variant is never in a hurry: the file goes out meanwhile.
const SETTLED: Duration = Duration::from_secs(1);

/// A file and a coding.
type Key = ((u64, u64), Coding);

struct Entry {
    /// The identity the bytes were made from.
    id: Identity,
    /// None: noted, not kept: compressing did not make the file smaller,
    /// the variant would not fit the bound, or the compressor failed. The
    /// file goes out as it is until it changes.
    made: Option<(Bytes, Validators)>,
    last_used: u64,
}

#[derive(Default)]
struct Table {
    entries: HashMap<Key, Entry>,
    /// Jobs queued or running.
    pending: HashSet<Key>,
    /// Files and codings asked for once: a variant is made on the second
    /// request, so a name asked for only once (a crawler's) costs no work.
    seen: HashSet<Key>,
    bytes: u64,
    clock: u64,
}

/// Counters for `nikaia explain`.
#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    made: AtomicU64,
    no_gain: AtomicU64,
    evictions: AtomicU64,
    invalidations: AtomicU64,
    dropped: AtomicU64,
}

struct Inner {
    table: Mutex<Table>,
    /// Off (`compress = false`, or a bound of 0): nothing is looked up,
    /// queued or kept.
    on: AtomicBool,
    /// Set at shutdown: queued jobs end without compressing.
    closed: AtomicBool,
    max_bytes: AtomicU64,
    counters: Counters,
}

pub(crate) struct Variants {
    inner: Arc<Inner>,
    compressor: IoPool,
}

impl Variants {
    pub(crate) fn new(on: bool, max_bytes: u64) -> std::io::Result<Variants> {
        Ok(Variants {
            inner: Arc::new(Inner {
                table: Mutex::default(),
                on: AtomicBool::new(on && max_bytes > 0),
                closed: AtomicBool::new(false),
                max_bytes: AtomicU64::new(max_bytes),
                counters: Counters::default(),
            }),
            compressor: IoPool::with_start("nikaia-compress", 1, at_lowest_priority)?,
        })
    }

    pub(crate) fn on(&self) -> bool {
        self.inner.on.load(Relaxed)
    }

    /// New settings (a reload): off empties the table; a lower bound
    /// evicts the least recently used variants until it holds.
    pub(crate) fn configure(&self, on: bool, max_bytes: u64) {
        let on = on && max_bytes > 0;
        let inner = &self.inner;
        let evicted = {
            let mut t = inner.lock();
            inner.on.store(on, Relaxed);
            inner.max_bytes.store(max_bytes, Relaxed);
            let (bytes, entries) = if on { (max_bytes, MAX_ENTRIES) } else { (0, 0) };
            if !on {
                t.seen.clear();
            }
            inner.evict_to(&mut t, bytes, entries)
        };
        drop(evicted);
    }

    /// The variant of file `id` in `coding`, if one is kept and was made
    /// from exactly this identity. A variant of an older identity (the file
    /// changed) is dropped; one of a newer identity (this request saw the
    /// file before it changed) is left for the requests after it. On a
    /// miss, `queue` queues the compression (on the file's second miss).
    ///
    /// The workers never wait on the compressor's hold of the table: when
    /// it is held, the answer is a miss.
    pub(crate) fn get(
        &self,
        root: &Root,
        name: &Path,
        id: &Identity,
        coding: Coding,
        queue: bool,
    ) -> Found {
        let inner = &self.inner;
        if !self.on() || root.cache_key().is_none() {
            return Found::Missing;
        }
        let mut t = match inner.table.try_lock() {
            Ok(t) => t,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return Found::Missing,
        };
        let key = ((id.dev, id.ino), coding);
        let mut dropped = None;
        if let Some(e) = t.entries.get(&key) {
            if e.id == *id {
                let made = e.made.clone();
                t.clock += 1;
                let clock = t.clock;
                if let Some(e) = t.entries.get_mut(&key) {
                    e.last_used = clock;
                }
                return match made {
                    Some((bytes, validators)) => {
                        inner.counters.hits.fetch_add(1, Relaxed);
                        Found::Kept(bytes, validators)
                    }
                    None => Found::Noted,
                };
            }
            if e.id.ctime_ns > id.ctime_ns {
                // Made from a later state of the file than this request saw.
                return Found::Missing;
            }
            dropped = t.remove(&key);
            inner.counters.invalidations.fetch_add(1, Relaxed);
        }
        if !queue {
            return Found::Missing;
        }
        inner.counters.misses.fetch_add(1, Relaxed);
        if t.pending.contains(&key) || !settled(id) {
            return Found::Missing;
        }
        if t.seen.insert(key) {
            // First sight: remembered, bounded like the kept table's.
            if t.seen.len() > MAX_ENTRIES * 4 {
                t.seen.clear();
            }
            return Found::Missing;
        }
        if t.pending.len() >= MAX_PENDING {
            inner.counters.dropped.fetch_add(1, Relaxed);
            return Found::Missing;
        }
        t.seen.remove(&key);
        t.pending.insert(key);
        drop(t);
        drop(dropped);
        let job = Job {
            inner: inner.clone(),
            key,
            root: root.clone(),
            name: name.to_path_buf(),
            id: *id,
            coding,
        };
        self.compressor.submit(move || job.run());
        Found::Missing
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

    /// Stops compressing: queued jobs end without their work, and the one
    /// running (seconds of brotli at most) is not waited for.
    pub(crate) fn close(&self) {
        self.inner.on.store(false, Relaxed);
        self.inner.closed.store(true, Relaxed);
        self.compressor.detach();
    }
}

/// One compression: a file by its name under its root, expected to have
/// the identity a request saw.
struct Job {
    inner: Arc<Inner>,
    key: Key,
    root: Root,
    name: PathBuf,
    id: Identity,
    coding: Coding,
}

impl Job {
    fn run(self) {
        // Whatever happens below (a panic in a compressor included), the
        // key is no longer pending afterwards.
        let _pending = Pending(&self);
        let made = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.compress()))
        {
            Ok(Some(made)) => Some(made),
            // The file changed, or shutdown: nothing is noted, a later
            // request queues it again.
            Ok(None) => return,
            // A compressor failed on these bytes: noted, never retried for
            // this identity.
            Err(_) => None,
        };
        let inner = &self.inner;
        let max_bytes = inner.max_bytes.load(Relaxed);
        let made = made
            .filter(|m| (m.len() as u64) < self.id.size)
            .filter(|m| m.len() as u64 <= max_bytes);
        let made = match made {
            Some(made) => {
                let method = format!("{}-{GENERATION}", method(self.coding, self.id.size));
                // A boxed slice: the table counts exactly the bytes it holds
                // (a Vec's spare capacity would stay allocated behind it).
                let bytes = Bytes::from(made.into_boxed_slice());
                Some((bytes, Validators::compressed(&self.id, &method)))
            }
            None => {
                inner.counters.no_gain.fetch_add(1, Relaxed);
                None
            }
        };
        let size = made.as_ref().map_or(0, |(b, _)| b.len() as u64);
        let evicted = {
            let mut t = inner.lock();
            // Off since the job was queued (a reload): nothing is kept.
            if !inner.on.load(Relaxed) {
                return;
            }
            let old = t.remove(&self.key);
            let mut evicted = inner.evict_to(&mut t, max_bytes - size, MAX_ENTRIES - 1);
            evicted.extend(old);
            if made.is_some() {
                inner.counters.made.fetch_add(1, Relaxed);
            }
            t.clock += 1;
            let last_used = t.clock;
            t.bytes += size;
            t.entries.insert(
                self.key,
                Entry {
                    id: self.id,
                    made,
                    last_used,
                },
            );
            evicted
        };
        // Freed outside the lock: the workers may want it meanwhile.
        drop(evicted);
    }

    /// The file's bytes, compressed; None when the file is not the one the
    /// request saw, before or after the read, or has not settled.
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
        if fs::identity_of(&after) != self.id || !settled(&self.id) {
            return None;
        }
        if self.inner.closed.load(Relaxed) {
            return None;
        }
        encode_bytes(self.coding, &data).ok()
    }
}

/// Removes a job's key from the pending set when the job ends, however.
struct Pending<'a>(&'a Job);

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.0.inner.lock().pending.remove(&self.0.key);
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Evicts the least recently used variants until the table holds at
    /// most `bytes` in at most `entries` variants; returns them, to be
    /// freed once the lock is let go.
    fn evict_to(&self, t: &mut Table, bytes: u64, entries: usize) -> Vec<Entry> {
        let mut out = Vec::new();
        if t.bytes <= bytes && t.entries.len() <= entries {
            return out;
        }
        let mut by_age: Vec<_> = t.entries.iter().map(|(k, e)| (e.last_used, *k)).collect();
        by_age.sort_unstable_by_key(|(age, _)| *age);
        for (_, key) in by_age {
            if t.bytes <= bytes && t.entries.len() <= entries {
                break;
            }
            out.extend(t.remove(&key));
            self.counters.evictions.fetch_add(1, Relaxed);
        }
        out
    }
}

impl Table {
    fn remove(&mut self, key: &Key) -> Option<Entry> {
        let e = self.entries.remove(key)?;
        self.bytes -= e.made.as_ref().map_or(0, |(b, _)| b.len() as u64);
        Some(e)
    }
}

/// Whether the file's last change (its ctime) is at least [`SETTLED`] old.
fn settled(id: &Identity) -> bool {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    now - id.ctime_ns >= SETTLED.as_nanos() as i64
}
