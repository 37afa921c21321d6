//! A `PATCH`'s body: its offset checked, its runs written at their offset
//! by the writer threads under the upload's hold, its sum checked at the
//! end, its bytes synced, and the file named once the upload is whole.

use super::acts::Opened;
use super::{lock, Inner, Patch, St};
use crate::fs;
use crate::http::site::resume::{self, Algorithm, Ask, Checksum, Id};
use crate::http::site::write::{self, Op, Permit};
use crate::http::Response;
use crate::linux::resume::{now_ms, Known};
use aws_lc_rs::digest;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, MutexGuard};

impl Inner {
    /// `PATCH`: checks the offset, then lets the body come.
    pub(super) fn append(
        self: Arc<Self>,
        permit: Box<Permit>,
        id: Id,
        offset: u64,
        checksum: Option<Checksum>,
    ) {
        let answer = self.begin_append(&permit, id, offset, checksum);
        lock(&self.st).permit = Some(permit);
        match answer {
            Some(resp) => self.finish(resp),
            None => {
                let resume = lock(&self.st).paused.take();
                drop(resume); // the body may come
                let st = lock(&self.st);
                self.clone().run_writer(st);
            }
        }
    }

    /// What a `PATCH` finds before its body: `None` when the body may come.
    pub(super) fn begin_append(
        &self,
        permit: &Permit,
        id: Id,
        asked: u64,
        checksum: Option<Checksum>,
    ) -> Option<Response> {
        let Some(known) = lock(&self.st).known.clone() else {
            return Some(resume::tus(Response::status_page(404)));
        };
        let length = known.record.length;
        let Some(mut hold) = known.try_hold() else {
            return Some(super::acts::locked());
        };
        let ghost = self.take_over(&mut hold, id);
        let generation = hold.generation;
        let (file, offset) = match ghost {
            _ if known.record.done.is_some() => return Some(self.already_done(asked, length)),
            // Taken from a PATCH of this process: its counted bytes.
            Some(file) => (file, hold.offset),
            None => match self.open(id, &known) {
                Opened::File(file) => {
                    let len = file.metadata().map_or(0, |m| m.len());
                    (file, len)
                }
                Opened::Done => return Some(self.already_done(asked, length)),
                Opened::Answer(resp) => return Some(resp),
            },
        };
        if asked != offset {
            self.uploads.stats.conflicts.fetch_add(1, Relaxed);
            return Some(resume::tus(Response::status_page(409)).header("Upload-Offset", offset));
        }
        if offset >= length {
            return Some(match self.commit(id, &known, file, permit) {
                Ok(()) => resume::appended(length, None),
                Err(refusal) => refusal,
            });
        }
        let declared = self
            .req
            .header("content-length")
            .and_then(|n| n.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > length - offset) {
            return Some(Response::status_page(413));
        }
        let floor = self.runtime().write_free_floor;
        if self.uploads.dir.free_space() < (length - offset).saturating_add(floor) {
            return Some(Response::status_page(507));
        }
        let durable = permit.durability != fs::Durability::None;
        let sum = match checksum {
            None => None,
            Some(c) => {
                if let Err(e) = self.uploads.dir.set_pending(&id.hex(), offset, durable) {
                    return Some(write::answer(&self.runtime(), &self.req, permit, Err(e)));
                }
                let algorithm = match c.algorithm {
                    Algorithm::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
                    Algorithm::Sha256 => &digest::SHA256,
                    Algorithm::Sha512 => &digest::SHA512,
                };
                Some((c, digest::Context::new(algorithm)))
            }
        };
        if offset > 0 {
            self.uploads.stats.resumed.fetch_add(1, Relaxed);
        }
        hold.writer = Some(generation);
        hold.file = Some(file);
        hold.offset = offset;
        drop(hold);
        *lock(&self.patch) = Some(Patch {
            generation,
            start: offset,
            written: 0,
            sum,
        });
        lock(&self.st).writing = true;
        None
    }

    /// A `PATCH` of an upload that is its file already: 204 at its end (a
    /// client whose answer was lost asks again), 409 elsewhere.
    pub(super) fn already_done(&self, asked: u64, length: u64) -> Response {
        match asked == length {
            true => resume::appended(length, None),
            false => {
                self.uploads.stats.conflicts.fetch_add(1, Relaxed);
                resume::tus(Response::status_page(409)).header("Upload-Offset", length)
            }
        }
    }

    /// Queues a writer turn unless one is queued or running.
    pub(super) fn run_writer(self: Arc<Self>, mut st: MutexGuard<'_, St>) {
        if st.running || st.over || !st.writing {
            return;
        }
        st.running = true;
        drop(st);
        let me = self.clone();
        self.shared.writers.pool.submit(move || me.turn());
    }

    /// Writes the queued runs at their offset; at the body's end, checks
    /// the sum, syncs, and names the file once it is whole.
    pub(super) fn turn(self: Arc<Self>) {
        let Some(known) = lock(&self.st).known.clone() else {
            return;
        };
        loop {
            let mut st = lock(&self.st);
            let Some(run) = st.queue.pop_front() else {
                st.running = false;
                let (ended, aborted) = (st.ended, st.aborted);
                drop(st);
                if ended || aborted {
                    self.end_patch(&known, aborted);
                }
                return;
            };
            let resume = st.paused.take();
            drop(st);
            drop(resume); // room again: the body goes on
            if let Err(resp) = self.write_run(&known, &run) {
                let mut st = lock(&self.st);
                st.running = false;
                st.queue.clear();
                drop(st);
                self.release(&known);
                return self.finish(resp);
            }
        }
    }

    /// Writes one run under the hold, if the upload is still this
    /// request's.
    pub(super) fn write_run(&self, known: &Known, run: &[u8]) -> Result<(), Response> {
        let mut patch = lock(&self.patch);
        let Some(patch) = patch.as_mut() else {
            return Ok(());
        };
        let mut hold = lock(&known.hold);
        if hold.generation != patch.generation {
            self.uploads.stats.conflicts.fetch_add(1, Relaxed);
            return Err(resume::tus(Response::status_page(409)));
        }
        let at = patch.start + patch.written;
        if at + run.len() as u64 > known.record.length {
            return Err(Response::status_page(413));
        }
        let Some(file) = hold.file.as_ref() else {
            return Err(Response::status_page(500));
        };
        let name = std::path::Path::new(known.record.name.as_str());
        if let Err(e) = fs::write_at(file, run, at, name) {
            let status = write::status(Op::Put, &e);
            return Err(Response::status_page(status));
        }
        patch.written += run.len() as u64;
        match patch.sum.as_mut() {
            Some((_, ctx)) => ctx.update(run),
            None => hold.offset = at + run.len() as u64,
        }
        known.last.store(now_ms(), Relaxed);
        self.uploads
            .stats
            .bytes
            .fetch_add(run.len() as u64, Relaxed);
        Ok(())
    }

    /// The body ended (or its client left): the sum checked, the bytes
    /// synced, the file named once whole, and the answer.
    pub(super) fn end_patch(&self, known: &Known, aborted: bool) {
        let Some(patch) = lock(&self.patch).take() else {
            return;
        };
        lock(&self.st).writing = false;
        let mut hold = lock(&known.hold);
        if hold.generation != patch.generation {
            drop(hold);
            if !aborted {
                self.uploads.stats.conflicts.fetch_add(1, Relaxed);
                self.finish(resume::tus(Response::status_page(409)));
            }
            return;
        }
        let hex = known_hex(&self.ask);
        let matched = match &patch.sum {
            None => true,
            Some((want, ctx)) => {
                !aborted && ctx.clone().finish().as_ref() == want.digest.as_slice()
            }
        };
        if patch.sum.is_some() {
            if matched {
                hold.offset = patch.start + patch.written;
            } else if let Some(file) = hold.file.as_ref() {
                // A chunk whose sum does not hold is discarded whole.
                let _ = file.set_len(patch.start);
                hold.offset = patch.start;
            }
            self.uploads.dir.clear_pending(&hex);
        }
        if aborted {
            hold.writer = None;
            hold.file = None;
            drop(hold);
            lock(&self.st).over = true;
            return;
        }
        if !matched {
            hold.writer = None;
            hold.file = None;
            drop(hold);
            self.uploads.stats.checksum_mismatches.fetch_add(1, Relaxed);
            return self.finish(resume::tus(Response::status_page(460)));
        }
        let permit = lock(&self.st).permit.take();
        let Some(permit) = permit else {
            return;
        };
        if permit.durability != fs::Durability::None {
            if let Some(file) = hold.file.as_ref() {
                if let Err(e) = file.sync_data() {
                    hold.writer = None;
                    hold.file = None;
                    return self
                        .finish(Response::internal_error(format!("upload {hex}: sync: {e}")));
                }
            }
        }
        let offset = hold.offset;
        let length = known.record.length;
        hold.writer = None;
        let file = hold.file.take();
        drop(hold);
        let resp = match (offset >= length, file) {
            (true, Some(file)) => {
                let id = self.ask.id().unwrap_or(Id([0; 16]));
                match self.commit(id, known, file, &permit) {
                    Ok(()) => resume::appended(length, None),
                    Err(refusal) => refusal,
                }
            }
            _ => {
                let expire = self
                    .runtime()
                    .resumable
                    .as_ref()
                    .map_or(0, |r| r.expire.as_secs());
                resume::appended(offset, Some(known.last.load(Relaxed) / 1000 + expire))
            }
        };
        lock(&self.st).permit = Some(permit);
        self.finish(resp);
    }

    /// Lets the upload go after a failed write (its counted bytes stay).
    pub(super) fn release(&self, known: &Known) {
        let generation = lock(&self.patch).take().map(|p| p.generation);
        lock(&self.st).writing = false;
        let mut hold = lock(&known.hold);
        if generation.is_some() && generation == hold.writer {
            hold.writer = None;
            if let Some(file) = hold.file.take() {
                let _ = file.set_len(hold.offset);
            }
            self.uploads.dir.clear_pending(&known_hex(&self.ask));
        }
    }
}

/// The upload's hexadecimal identifier.
fn known_hex(ask: &Ask) -> String {
    ask.id().map(|id| id.hex()).unwrap_or_default()
}
