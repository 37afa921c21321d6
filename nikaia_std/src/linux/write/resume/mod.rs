//! Resumable uploads on Linux (`spec/site.md`, "Resumable uploads"): the
//! table of uploads this process knows, each with its record in the
//! partial directory, the caps, and the sweep that removes what expired.
//! The requests themselves are [`job`]'s, on the writer threads.
//!
//! The partial directory is the truth: an upload's record is read from it
//! by each request, and its offset is its `.part`'s length, so a restarted
//! process and the one an upgrade started find what the other left. What
//! the table keeps is only this process's hold on an upload: which request
//! writes it now, and the file it writes.

mod job;
mod partial;

pub(in crate::linux::write) use job::request;

use crate::fs::Root;
use crate::http::site::resume::Id;
use crate::rt::Resumable;
use partial::PartialDir;
use std::collections::HashMap;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

/// What an upload is: written once, when it is created, in its `.info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    /// Who created it (`None`: a rule that lets anyone write).
    pub user: Option<String>,
    /// The name it becomes under the served directory.
    pub name: String,
    pub length: u64,
    /// The `.part`'s (device, inode): the final name is this file once
    /// renamed or linked into place.
    pub dev: u64,
    pub ino: u64,
    /// When it was created (seconds since the epoch).
    pub created: u64,
    /// `Upload-Metadata` as the client sent it.
    pub metadata: String,
    /// The creation's preconditions (`If-Match`, `If-None-Match`,
    /// `If-Unmodified-Since`), held against the final name when it is
    /// given, as a `PUT`'s are.
    pub if_match: Option<String>,
    pub if_none_match: Option<String>,
    pub if_unmodified_since: Option<u64>,
    /// When it became the file (seconds since the epoch).
    pub done: Option<u64>,
}

impl Record {
    /// The `.info` text: one `key value` line each, names and users in
    /// base64url (any bytes, one line).
    pub(crate) fn to_text(&self) -> String {
        let b64 = |s: &str| crate::text::base64::url(s.as_bytes());
        let mut text = format!(
            "nikaia-tus 1\nuser {}\nname {}\nlength {}\ndev {}\nino {}\ncreated {}\nmetadata {}\n",
            self.user.as_deref().map_or_else(|| "-".to_owned(), b64),
            b64(&self.name),
            self.length,
            self.dev,
            self.ino,
            self.created,
            self.metadata,
        );
        for (key, value) in [
            ("if-match", &self.if_match),
            ("if-none-match", &self.if_none_match),
        ] {
            if let Some(v) = value {
                text.push_str(&format!("{key} {}\n", b64(v)));
            }
        }
        if let Some(t) = self.if_unmodified_since {
            text.push_str(&format!("if-unmodified-since {t}\n"));
        }
        if let Some(done) = self.done {
            text.push_str(&format!("done {done}\n"));
        }
        text
    }

    /// The preconditions the final name is held to: the creation's, under
    /// what the rule lets a write do now (`rule`: the permit's).
    pub(crate) fn conditions(&self, rule: &crate::fs::Conditions) -> crate::fs::Conditions {
        crate::fs::Conditions {
            create: rule.create,
            replace: rule.replace,
            if_match: self.if_match.clone(),
            if_none_match: self.if_none_match.clone(),
            if_unmodified_since: self.if_unmodified_since,
        }
    }

    /// A `.info` text back; `None` for anything this process did not write.
    pub(crate) fn parse(text: &[u8]) -> Option<Record> {
        let text = std::str::from_utf8(text).ok()?;
        let mut lines = text.lines();
        if lines.next()? != "nikaia-tus 1" {
            return None;
        }
        let mut fields: HashMap<&str, &str> = HashMap::new();
        for line in lines {
            let (k, v) = line.split_once(' ').unwrap_or((line, ""));
            fields.insert(k, v);
        }
        let text_of = |v: &str| String::from_utf8(crate::text::base64::decode(v)?).ok();
        let number = |k: &str| fields.get(k)?.parse::<u64>().ok();
        let user = match *fields.get("user")? {
            "-" => None,
            v => Some(text_of(v)?),
        };
        Some(Record {
            user,
            name: text_of(fields.get("name")?)?,
            length: number("length")?,
            dev: number("dev")?,
            ino: number("ino")?,
            created: number("created")?,
            metadata: fields.get("metadata").copied().unwrap_or("").to_owned(),
            if_match: fields.get("if-match").and_then(|v| text_of(v)),
            if_none_match: fields.get("if-none-match").and_then(|v| text_of(v)),
            if_unmodified_since: number("if-unmodified-since"),
            done: number("done"),
        })
    }
}

/// This process's hold on one upload.
#[derive(Default)]
pub(crate) struct Hold {
    /// Bumped by each request that takes the upload (a `PATCH` at the
    /// offset counted, a termination): a `PATCH` that finds it no longer
    /// its own stops (its client left, and came back with another
    /// request). Across processes the `.part`'s writer note says the same.
    pub generation: u64,
    /// The generation of the `PATCH` writing it now.
    pub writer: Option<u64>,
    /// The `.part`, open while a `PATCH` writes it (locked only while a
    /// run is written).
    pub file: Option<File>,
    /// The bytes counted while a `PATCH` writes: those before it, and the
    /// ones it wrote (a chunk with a checksum counts only once it held).
    pub offset: u64,
}

/// The uploads of the tus endpoint, and their directory.
pub(crate) struct Uploads {
    pub(crate) dir: PartialDir,
    /// Every upload this process knows: its record, and its hold.
    table: Mutex<HashMap<Id, Known>>,
    pub(crate) stats: ResumeStats,
    /// `expire` in seconds, as the last request saw the runtime (the
    /// sweep reads it: a reload changes it).
    pub(crate) expire: AtomicU64,
    /// Held by a creation from its caps check to its record: creations
    /// racing stay within the caps.
    pub(crate) creating: Mutex<()>,
    /// This process's name in an upload's writer note: 64 bits from the
    /// kernel's generator, drawn at start.
    token: String,
}

#[derive(Clone)]
pub(crate) struct Known {
    pub record: Record,
    pub hold: Arc<Mutex<Hold>>,
    /// The last byte that arrived (milliseconds since the epoch, as the
    /// `.part`'s modification time keeps it): it expires `expire` after.
    pub last: Arc<AtomicU64>,
}

impl Known {
    /// The upload's hold, unless a writer thread has it now (writing a
    /// run, syncing, naming the file): no one waits on another's disk work
    /// with a thread of its own.
    pub(crate) fn try_hold(&self) -> Option<std::sync::MutexGuard<'_, Hold>> {
        match self.hold.try_lock() {
            Ok(hold) => Some(hold),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// What the endpoint counts (`rt::ResumableReport`).
#[derive(Default)]
pub(crate) struct ResumeStats {
    pub created: AtomicU64,
    pub completed: AtomicU64,
    pub bytes: AtomicU64,
    pub resumed: AtomicU64,
    pub taken_over: AtomicU64,
    pub conflicts: AtomicU64,
    pub checksum_mismatches: AtomicU64,
    pub expired: AtomicU64,
    pub terminated: AtomicU64,
    pub refused: AtomicU64,
}

/// Milliseconds since the epoch: an upload's last byte, to the precision
/// an `expire` of a second needs.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Seconds since the epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Uploads {
    /// Opens the partial directory the runtime names and reads the uploads
    /// a process left in it; starts the sweep of the expired.
    pub(crate) fn open(r: &Resumable) -> std::io::Result<Arc<Uploads>> {
        let dir = PartialDir::open(&r.dir)?;
        let uploads = Arc::new(Uploads {
            dir,
            table: Mutex::new(HashMap::new()),
            stats: ResumeStats::default(),
            expire: AtomicU64::new(r.expire.as_secs()),
            creating: Mutex::new(()),
            token: token()?,
        });
        for hex in uploads.dir.list() {
            if let Some(id) = Id::parse(hex.as_bytes()) {
                uploads.load(id);
            }
        }
        let weak = Arc::downgrade(&uploads);
        std::thread::Builder::new()
            .name("nikaia-tus-sweep".into())
            .spawn(move || sweep_loop(weak))?;
        Ok(uploads)
    }

    /// What the writer note of a `PATCH` of this process says: the
    /// process, and the hold's generation that request took.
    pub(crate) fn writer_note(&self, generation: u64) -> String {
        format!("{} {generation}", self.token)
    }

    /// Whether the `PATCH` of `generation` here still writes the upload
    /// `id` (its `.part` locked): no request of another process took it.
    pub(crate) fn still_writes(&self, id: Id, generation: u64) -> bool {
        self.dir.writer(&id.hex()) == Some(self.writer_note(generation))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Id, Known>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The upload `id`, as its record says now (read from the directory:
    /// another process may have completed, ended or made it).
    pub(crate) fn load(&self, id: Id) -> Option<Known> {
        let hex = id.hex();
        let record = self.dir.read_info(&hex).and_then(|t| Record::parse(&t));
        let mut table = self.lock();
        let Some(record) = record else {
            table.remove(&id);
            return None;
        };
        let last = match record.done {
            Some(done) => done * 1000,
            None => (self.dir.part_stat(&hex)).map_or(record.created * 1000, |(_, mtime, _)| mtime),
        };
        let known = table.entry(id).or_insert_with(|| Known {
            record: record.clone(),
            hold: Arc::default(),
            last: Arc::new(AtomicU64::new(last)),
        });
        known.record = record;
        known.last.fetch_max(last, Relaxed);
        Some(known.clone())
    }

    /// Adds an upload this process just created.
    pub(crate) fn insert(&self, id: Id, record: Record) {
        let last = Arc::new(AtomicU64::new(now_ms()));
        let hold = Arc::default();
        self.lock().insert(id, Known { record, hold, last });
    }

    /// Forgets an upload whose files were removed.
    pub(crate) fn forget(&self, id: Id) {
        self.lock().remove(&id);
    }

    /// Marks an upload complete in the table.
    pub(crate) fn completed(&self, id: Id, record: Record) {
        if let Some(k) = self.lock().get_mut(&id) {
            k.record = record;
        }
    }

    /// Whether one more upload of `length` bytes by `user` stays within
    /// the caps on uploads not yet complete.
    pub(crate) fn within_caps(&self, r: &Resumable, user: Option<&str>, length: u64) -> bool {
        let table = self.lock();
        let pending = table.values().filter(|k| k.record.done.is_none());
        let (mut all, mut all_bytes, mut mine, mut mine_bytes) = (0usize, 0u64, 0usize, 0u64);
        for k in pending {
            all += 1;
            all_bytes = all_bytes.saturating_add(k.record.length);
            if k.record.user.as_deref() == user {
                mine += 1;
                mine_bytes = mine_bytes.saturating_add(k.record.length);
            }
        }
        all < r.max_pending
            && mine < r.max_pending_per_user
            && all_bytes.saturating_add(length) <= r.max_pending_bytes
            && mine_bytes.saturating_add(length) <= r.max_pending_bytes_per_user
    }

    /// Uploads not yet complete, and the bytes they announced.
    pub(crate) fn pending(&self) -> (u64, u64) {
        let table = self.lock();
        let pending = table.values().filter(|k| k.record.done.is_none());
        pending.fold((0, 0), |(n, b), k| (n + 1, b + k.record.length))
    }

    /// Whether `known` expired by `now`: `expire` since its last byte (or
    /// since it became the file, for the record of one complete).
    /// (`now_ms`: milliseconds since the epoch.)
    pub(crate) fn expired(known: &Known, expire: Duration, now_ms: u64) -> bool {
        now_ms.saturating_sub(known.last.load(Relaxed)) >= expire.as_millis() as u64
    }

    /// Removes the uploads that expired and that no request holds here
    /// (nor, by its lock, in another process), and the files of uploads
    /// whose record is gone. Each is read again from the directory first:
    /// the process an upgrade started (or the one it replaced) may have
    /// made it, or written to it since. How many.
    fn sweep(&self, expire: Duration) -> usize {
        let now = now();
        let mut removed = 0;
        for hex in self.dir.list() {
            let Some(id) = Id::parse(hex.as_bytes()) else {
                continue;
            };
            let Some(known) = self.load(id) else {
                continue;
            };
            if Uploads::expired(&known, expire, now_ms()) && self.remove_expired(id, &known) {
                removed += 1;
            }
        }
        for hex in self.dir.orphans(expire.as_secs(), now) {
            self.dir.remove(&hex);
        }
        removed
    }

    /// Removes one expired upload unless a `PATCH` of this process writes
    /// it or another process is at its bytes now (their lock, held here
    /// until they are gone); its record read again just before. A `PATCH`
    /// of another process that waited on its client all that time finds
    /// its writer note gone, and stops.
    pub(crate) fn remove_expired(&self, id: Id, known: &Known) -> bool {
        let Some(hold) = known.try_hold() else {
            return false;
        };
        if hold.writer.is_some() {
            return false;
        }
        let hex = id.hex();
        let expire = Duration::from_secs(self.expire.load(Relaxed));
        let fresh = match self.load(id) {
            Some(fresh) => fresh,
            None => return false,
        };
        if !Uploads::expired(&fresh, expire, now_ms()) {
            return false;
        }
        let bytes = match fresh.record.done {
            Some(_) => None,
            None => self.dir.open_part(&hex).ok(),
        };
        let _locked = match bytes.as_ref().map(|f| self.dir.lock(f, false)) {
            Some(Ok(None)) => return false,
            Some(Ok(Some(held))) => Some(held),
            _ => None,
        };
        self.dir.remove(&hex);
        drop(hold);
        self.forget(id);
        self.stats.expired.fetch_add(1, Relaxed);
        true
    }

    /// Whether the served directory `root` is on the partial directory's
    /// file system (a complete upload is renamed into place).
    pub(crate) fn same_fs(&self, root: &Root) -> bool {
        root.dev() == Some(self.dir.dev())
    }

    pub(crate) fn report(&self) -> crate::rt::ResumableReport {
        let load = |c: &AtomicU64| c.load(Relaxed);
        let s = &self.stats;
        let (pending, pending_bytes) = self.pending();
        crate::rt::ResumableReport {
            created: load(&s.created),
            completed: load(&s.completed),
            bytes: load(&s.bytes),
            resumed: load(&s.resumed),
            taken_over: load(&s.taken_over),
            conflicts: load(&s.conflicts),
            checksum_mismatches: load(&s.checksum_mismatches),
            expired: load(&s.expired),
            terminated: load(&s.terminated),
            refused: load(&s.refused),
            pending,
            pending_bytes,
        }
    }
}

/// A process's name in writer notes: 64 bits from the kernel's generator.
fn token() -> std::io::Result<String> {
    let mut bits = [0u8; 8];
    crate::fs::random(&mut bits)?;
    Ok(bits.iter().map(|b| format!("{b:02x}")).collect())
}

/// Wakes often enough to remove an expired upload within a quarter of
/// `expire` (at most a minute late), until the server is gone.
fn sweep_loop(uploads: Weak<Uploads>) {
    loop {
        let Some(expire) = uploads.upgrade().map(|u| u.expire.load(Relaxed)) else {
            return;
        };
        let expire = Duration::from_secs(expire);
        let nap = (expire / 4).clamp(Duration::from_millis(250), Duration::from_secs(60));
        std::thread::sleep(nap);
        let Some(uploads) = uploads.upgrade() else {
            return;
        };
        uploads.sweep(expire);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back() {
        let r = Record {
            user: Some("al ice".into()),
            name: "in/b c.txt\n".into(),
            length: 7,
            dev: 1,
            ino: 2,
            created: 3,
            metadata: "filename aW4=".into(),
            if_match: Some("\"1-2\", \"3-4\"".into()),
            if_none_match: None,
            if_unmodified_since: Some(5),
            done: None,
        };
        assert_eq!(Record::parse(r.to_text().as_bytes()), Some(r.clone()));
        let done = Record {
            done: Some(9),
            user: None,
            ..r
        };
        assert_eq!(Record::parse(done.to_text().as_bytes()), Some(done));
        assert_eq!(Record::parse(b"user x\n"), None);
    }
}
