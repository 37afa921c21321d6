//! What the endpoint does for a request whose rules passed, but for a
//! `PATCH` (`patch.rs`): create an upload, report its offset, end it, and
//! give a complete upload its final name.

use super::super::partial::PartialDir;
use super::Job;
use crate::fs;
use crate::http::site::resume::{self, Id, Seen};
use crate::http::site::write::{self, Permit};
use crate::http::Response;
use crate::linux::write::locks::{self, table::Reach};
use crate::linux::write::resume::{now, Known, Record};
use crate::rt::Resumable;
use crate::sync::lock;
use std::fs::File;
use std::sync::atomic::Ordering::Relaxed;

impl Job {
    /// `POST`: a new upload, its record written before the answer.
    pub(super) fn create(
        &self,
        r: &Resumable,
        permit: &Permit,
        length: u64,
        name: &str,
        metadata: String,
    ) -> Response {
        if let Some(status) = permit.after_preconditions {
            return Response::status_page(status);
        }
        if !self.uploads.same_fs(&self.root) {
            return Response::internal_error(format!(
                "[resumable] dir {} is not on the served directory's file system",
                self.uploads.dir.path().display()
            ));
        }
        let user = permit.grant.user.clone();
        // The name as it is now: a create the rule does not allow, a link
        // on the way, one of the server's own files are refused before a
        // byte is sent (and again when the file is given its name).
        let mut guard = self.guard(permit, name.as_bytes());
        guard.make_dirs = false;
        let early = self.root.begin_write_guarded(
            name,
            fs::Mode::Conditional(permit.conditions.clone()),
            &guard,
        );
        match early {
            Ok(_) => {}
            Err(fs::Error::NotFound) if permit.make_dirs => {}
            Err(e) => return write::answer(&self.runtime(), &self.req, permit, Err(e)),
        }
        let floor = self.runtime().write_free_floor;
        if self.uploads.dir.free_space() < length.saturating_add(floor) {
            return Response::status_page(507);
        }
        // One creation at a time: the caps hold for creations racing.
        let _one = lock(&self.uploads.creating);
        if !self.uploads.within_caps(r, user.as_deref(), length) {
            return Response::status_page(507);
        }
        let Some(id) = random_id() else {
            return Response::internal_error("no randomness for an upload's identifier".into());
        };
        let created = now();
        let mut record = Record {
            user,
            name: name.to_owned(),
            length,
            dev: 0,
            ino: 0,
            created,
            metadata,
            if_match: permit.conditions.if_match.clone(),
            if_none_match: permit.conditions.if_none_match.clone(),
            if_unmodified_since: permit.conditions.if_unmodified_since,
            done: None,
        };
        let durable = permit.durability != fs::Durability::None;
        let made = self.uploads.dir.create(&id.hex(), durable, |dev, ino| {
            record.dev = dev;
            record.ino = ino;
            record.to_text().into_bytes()
        });
        if let Err(e) = made {
            return write::answer(&self.runtime(), &self.req, permit, Err(e));
        }
        self.uploads.insert(id, record);
        drop(_one);
        self.uploads.stats.created.fetch_add(1, Relaxed);
        if length == 0 {
            // No `PATCH` will come (clients send none for an empty file):
            // it is complete now, and named now.
            if let Err(refusal) = self.complete_empty(id, permit) {
                return refusal;
            }
        }
        resume::created(&r.endpoint, id, created + r.expire.as_secs())
    }

    /// Names an empty upload at its creation.
    fn complete_empty(&self, id: Id, permit: &Permit) -> Result<(), Response> {
        let Some(known) = self.uploads.load(id) else {
            return Err(Response::status_page(500));
        };
        let _hold = lock(&known.hold);
        match self.open(id, &known) {
            Opened::File(file) => self.commit(id, &known, file, permit),
            Opened::Done => Ok(()),
            Opened::Answer(resp) => Err(resp),
        }
    }

    /// `HEAD`: the offset counted. It takes nothing over: a `PATCH` still
    /// writing the upload, here or in another process, goes on.
    pub(super) fn offset(&self, r: &Resumable, permit: &Permit, id: Id) -> Response {
        let Some(known) = self.known.clone() else {
            return Response::status_page(404);
        };
        let Some(hold) = known.try_hold() else {
            return locked();
        };
        let record = &known.record;
        let seen = |offset, expires| Seen {
            offset,
            length: record.length,
            metadata: &record.metadata,
            expires,
        };
        if record.done.is_some() {
            return resume::offset(&seen(record.length, None));
        }
        let file = match self.open(id, &known) {
            Opened::File(file) => file,
            Opened::Done => return resume::offset(&seen(record.length, None)),
            Opened::Answer(resp) => return resp,
        };
        let dir = &self.uploads.dir;
        let held = match dir.lock(&file, false) {
            Ok(Some(held)) => held,
            Ok(None) => return locked(),
            Err(e) => return Response::internal_error(format!("upload {}: {e}", id.hex())),
        };
        let offset = match dir.counted(&id.hex(), &file) {
            Ok(offset) => offset,
            Err(e) => return Response::internal_error(format!("upload {}: {e}", id.hex())),
        };
        let expires = known.last.load(Relaxed) / 1000 + r.expire.as_secs();
        if offset >= record.length && hold.writer.is_none() {
            // Complete, never named (the process that wrote the last byte
            // was killed before it could, or a WebDAV lock of its name
            // held it back): named now, or — still locked — its bytes all
            // here all the same.
            return match self.commit(id, &known, file, permit) {
                Ok(()) => resume::offset(&seen(record.length, None)),
                Err(refusal) if refusal.status() == 423 => {
                    resume::offset(&seen(record.length, Some(expires)))
                }
                Err(refusal) => refusal,
            };
        }
        drop(held);
        resume::offset(&seen(offset, Some(expires)))
    }

    /// `DELETE`: the upload's files go (the file a complete one became
    /// stays: only its record goes). A `PATCH` writing it, here or in
    /// another process, finds it gone and stops.
    pub(super) fn terminate(&self, id: Id) -> Response {
        let Some(known) = self.known.clone() else {
            return Response::status_page(404);
        };
        let Some(mut hold) = known.try_hold() else {
            return locked();
        };
        let hex = id.hex();
        let bytes = match known.record.done {
            Some(_) => None,
            None => self.uploads.dir.open_part(&hex).ok(),
        };
        // Another process at its bytes now (a run, the name): not now.
        let _held = match bytes.as_ref().map(|f| self.uploads.dir.lock(f, false)) {
            Some(Ok(None)) => return locked(),
            Some(Ok(Some(held))) => Some(held),
            _ => None,
        };
        self.uploads.dir.remove(&hex);
        hold.generation += 1;
        hold.writer = None;
        hold.file = None;
        drop(hold);
        self.uploads.forget(id);
        self.uploads.stats.terminated.fetch_add(1, Relaxed);
        resume::tus(Response::new(204))
    }

    /// Opens the upload's `.part` (not locked): or it is complete (its
    /// file was named by a process killed before it said so), or the
    /// answer (404 when it is gone).
    pub(super) fn open(&self, id: Id, known: &Known) -> Opened {
        let hex = id.hex();
        match self.uploads.dir.open_part(&hex) {
            Ok(file) => Opened::File(file),
            Err(fs::Error::NotFound) => {
                let record = &known.record;
                let at = self.root.identity_guarded(&record.name);
                if at == Some((record.dev, record.ino)) {
                    self.mark_done(id, record.clone(), false);
                    return Opened::Done;
                }
                self.uploads.dir.remove(&hex);
                self.uploads.forget(id);
                Opened::Answer(resume::tus(Response::status_page(404)))
            }
            Err(e) => Opened::Answer(Response::internal_error(format!("upload {hex}: {e}"))),
        }
    }

    /// Records that the upload became its file.
    pub(super) fn mark_done(&self, id: Id, mut record: Record, durable: bool) {
        record.done = Some(now());
        let _ = self
            .uploads
            .dir
            .write_info(&id.hex(), record.to_text().as_bytes(), durable);
        self.uploads.completed(id, record);
    }

    /// The runtime file's own files, by identity now.
    /// The write rules' guard for the upload's final name, with what the
    /// locks and the request's `If:` say when the name is given.
    fn guard(&self, permit: &Permit, name: &[u8]) -> fs::Guard {
        let mut guard = permit.guard(self.own());
        if let Some(gate) = self.wing.lock_gate(&self.root, name, permit) {
            guard.held = locks::held(gate, Reach::Member, Reach::Own);
        }
        guard
    }

    pub(super) fn own(&self) -> Vec<(u64, u64)> {
        let rt = self.runtime();
        crate::linux::write::Own::of(&rt, true).identities(&self.root)
    }

    /// Gives the complete `.part` its final name through the write rules'
    /// guard, as a `PUT` of it would be. Refused (4xx, 507), the upload is
    /// removed; a fault of the server's leaves it as it was.
    pub(super) fn commit(
        &self,
        id: Id,
        known: &Known,
        file: File,
        permit: &Permit,
    ) -> Result<(), Response> {
        let hex = id.hex();
        let record = &known.record;
        let name = &record.name;
        // Named already, by a process killed before it removed the `.part`
        // or said so: only that is finished.
        if self.root.identity_guarded(name) == Some((record.dev, record.ino)) {
            drop(file);
            self.uploads
                .dir
                .unlink_part_if(&hex, record.dev, record.ino);
            self.mark_done(id, record.clone(), false);
            return Ok(());
        }
        let guard = self.guard(permit, name.as_bytes());
        let mode = fs::Mode::Conditional(record.conditions(&permit.conditions));
        let done = self.uploads.dir.dup().and_then(|from| {
            let temp = PartialDir::part_name(&hex);
            let writing = self.root.adopt_guarded(fs::Adoption {
                name: name.as_ref(),
                mode,
                guard: &guard,
                file,
                from,
                temp,
            })?;
            writing.commit(permit.durability)
        });
        let writes = &self.wing.writes;
        match done {
            Ok(written) => {
                let durable = permit.durability != fs::Durability::None;
                self.mark_done(id, known.record.clone(), durable);
                self.uploads.stats.completed.fetch_add(1, Relaxed);
                let counter = if written.created {
                    &writes.created
                } else {
                    &writes.replaced
                };
                counter.fetch_add(1, Relaxed);
                writes.bytes.fetch_add(written.id.size, Relaxed);
                Ok(())
            }
            Err(e) => {
                let rt = self.runtime();
                let resp = write::answer(&rt, &self.req, permit, Err(e));
                writes.refused(resp.status());
                // A refusal (and a full disk) ends the upload; a fault of
                // the server's (500, 503) leaves it for the next request,
                // and a lock (423) until the lock goes.
                let status = resp.status();
                if (400..500).contains(&status) && status != 423 || status == 507 {
                    self.uploads.dir.remove(&hex);
                    self.uploads.forget(id);
                }
                Err(resp)
            }
        }
    }
}

/// What opening an upload's `.part` found.
pub(super) enum Opened {
    File(File),
    /// It is the final file already.
    Done,
    Answer(Response),
}

/// 423: a writer thread of this process, or another process (the one an
/// upgrade replaces), is at the upload's bytes this moment (a run being
/// written, a sync, the name being given); tus clients try again.
pub(super) fn locked() -> Response {
    resume::tus(Response::status_page(423)).header("Retry-After", 1)
}

/// 128 bits from the kernel's generator; `None` where it has none (an
/// identifier is a capability: never made from the clock).
fn random_id() -> Option<Id> {
    let mut bits = [0u8; 16];
    crate::fs::random(&mut bits).ok()?;
    Some(Id(bits))
}
