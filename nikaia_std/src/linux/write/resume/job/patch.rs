//! A `PATCH`: its offset compared with the one counted before it takes
//! anything, its runs written at their offset by the writer threads under
//! the upload's hold and its `.part`'s lock, its sum checked at the end,
//! its bytes synced, and the file named once the upload is whole. Who may
//! write an upload is said twice: by the hold's generation in the process,
//! and by the `.part`'s writer note across processes (the one an upgrade
//! replaced, or started).

use super::acts::Opened;
use super::{Job, Patch};
use crate::fs;
use crate::http::site::resume::{self, Algorithm, Checksum, Id};
use crate::http::site::write::{self, Permit};
use crate::http::to_file::Wrote;
use crate::http::Response;
use crate::linux::write::resume::{now_ms, Known};
use crate::sync::lock;
use aws_lc_rs::digest;
use std::sync::atomic::Ordering::Relaxed;

impl Job {
    /// What a `PATCH` finds before its body: `None` when the body may
    /// come. Its `Upload-Offset` is compared with the offset counted, under
    /// the `.part`'s lock, before anything is taken: a mismatch changes
    /// nothing. A match takes the upload over, from a `PATCH` of this
    /// process or another that still writes it (its client went quiet and
    /// came back with this one), which is 409 if it ever sends more.
    pub(super) fn begin_append(
        &mut self,
        permit: &Permit,
        id: Id,
        asked: u64,
        body: Option<u64>,
        checksum: Option<Checksum>,
    ) -> Option<Response> {
        let Some(known) = self.known.clone() else {
            return Some(resume::tus(Response::status_page(404)));
        };
        let length = known.record.length;
        let Some(mut hold) = known.try_hold() else {
            return Some(super::acts::locked());
        };
        if known.record.done.is_some() {
            return Some(self.already_done(asked, length, body));
        }
        let file = match self.open(id, &known) {
            Opened::File(file) => file,
            Opened::Done => return Some(self.already_done(asked, length, body)),
            Opened::Answer(resp) => return Some(resp),
        };
        let (dir, hex) = (&self.uploads.dir, id.hex());
        let fault = |e: fs::Error| Some(Response::internal_error(format!("upload {hex}: {e}")));
        // Another process at the bytes this moment (a run, the name): 423.
        let held = match dir.lock(&file, false) {
            Ok(Some(held)) => held,
            Ok(None) => return Some(super::acts::locked()),
            Err(e) => return fault(e),
        };
        let offset = match dir.counted(&hex, &file) {
            Ok(offset) => offset,
            Err(e) => return fault(e),
        };
        if asked != offset {
            self.uploads.stats.conflicts.fetch_add(1, Relaxed);
            return Some(resume::tus(Response::status_page(409)).header("Upload-Offset", offset));
        }
        let left = length.saturating_sub(offset);
        if left == 0 {
            // Whole, never named (its writer was killed before it named
            // it, or is naming it now): named, unless bytes came with this.
            if body != Some(0) {
                return Some(Response::status_page(413));
            }
            return Some(match self.commit(id, &known, file, permit) {
                Ok(()) => resume::appended(length, None),
                Err(refusal) => refusal,
            });
        }
        if body.is_some_and(|n| n > left) {
            return Some(Response::status_page(413));
        }
        let floor = self.runtime().write_free_floor;
        if dir.free_space() < left.saturating_add(floor) {
            return Some(Response::status_page(507));
        }
        // Taken over: from here the upload is this request's.
        let writing_elsewhere = dir.writer(&hex).is_some();
        if hold.writer.take().is_some() || writing_elsewhere {
            self.uploads.stats.taken_over.fetch_add(1, Relaxed);
        }
        hold.generation += 1;
        hold.file = None;
        let generation = hold.generation;
        let durable = permit.durability != fs::Durability::None;
        let taken = dir.cut_pending(&hex, &file).and_then(|()| {
            dir.set_writer(&hex, &self.uploads.writer_note(generation))?;
            match &checksum {
                Some(_) => dir.set_pending(&hex, offset, durable),
                None => Ok(()),
            }
        });
        if let Err(e) = taken {
            dir.clear_writer(&hex);
            return Some(write::answer(&self.runtime(), &self.req, permit, Err(e)));
        }
        let sum = checksum.map(|c| {
            let algorithm = match c.algorithm {
                Algorithm::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
                Algorithm::Sha256 => &digest::SHA256,
                Algorithm::Sha512 => &digest::SHA512,
            };
            (c, digest::Context::new(algorithm))
        });
        if offset > 0 {
            self.uploads.stats.resumed.fetch_add(1, Relaxed);
        }
        hold.writer = Some(generation);
        hold.file = Some(file);
        hold.offset = offset;
        drop(held);
        drop(hold);
        self.patch = Some(Patch {
            generation,
            start: offset,
            written: 0,
            sum,
        });
        None
    }

    /// A `PATCH` of an upload that is its file already: 204 at its end
    /// without bytes (a client whose answer was lost asks again), 413 with
    /// bytes (or a body of no said length) there, 409 elsewhere.
    pub(super) fn already_done(&self, asked: u64, length: u64, body: Option<u64>) -> Response {
        match (asked == length, body) {
            (true, Some(0)) => resume::appended(length, None),
            (true, _) => Response::status_page(413),
            (false, _) => {
                self.uploads.stats.conflicts.fetch_add(1, Relaxed);
                resume::tus(Response::status_page(409)).header("Upload-Offset", length)
            }
        }
    }

    /// Writes one run under the hold and the `.part`'s lock, if the upload
    /// is still this request's: no request of this process or another took
    /// it over.
    pub(super) fn write_run(&mut self, known: &Known, run: &[u8]) -> Result<(), Response> {
        let id = self.ask.id().unwrap_or(Id([0; 16]));
        let Some(patch) = self.patch.as_mut() else {
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
        let held = match self.uploads.dir.lock(file, true) {
            Ok(held) => held,
            Err(e) => {
                return Err(Response::internal_error(format!(
                    "upload {}: {e}",
                    id.hex()
                )))
            }
        };
        if !self.uploads.still_writes(id, patch.generation) {
            drop(held);
            hold.writer = None;
            hold.file = None;
            self.uploads.stats.conflicts.fetch_add(1, Relaxed);
            return Err(resume::tus(Response::status_page(409)));
        }
        let name = std::path::Path::new(known.record.name.as_str());
        if let Err(e) = fs::write_at(file, run, at, name) {
            let status = crate::http::to_file::failed(Wrote::Made, &e);
            return Err(Response::status_page(status));
        }
        drop(held);
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
    /// synced, the file named once whole, and the answer (none once the
    /// client left) — all under the `.part`'s lock, if the upload is still
    /// this request's.
    pub(super) fn end_patch(&mut self, known: &Known, aborted: bool) -> Option<Response> {
        let patch = self.patch.take()?;
        let id = self.ask.id().unwrap_or(Id([0; 16]));
        let hex = id.hex();
        let mut hold = lock(&known.hold);
        let mine = hold.generation == patch.generation;
        let held = match (mine, hold.file.as_ref()) {
            (true, Some(file)) => self.uploads.dir.lock(file, true).ok().flatten(),
            _ => None,
        };
        if held.is_none() || !self.uploads.still_writes(id, patch.generation) {
            if mine {
                // Taken over by a request of another process.
                hold.writer = None;
                hold.file = None;
            }
            drop((held, hold));
            if aborted {
                return None;
            }
            self.uploads.stats.conflicts.fetch_add(1, Relaxed);
            return Some(resume::tus(Response::status_page(409)));
        }
        // Whatever comes next, this request lets the upload go: no writer
        // here, and its note gone (still under the lock).
        let dir = &self.uploads.dir;
        hold.writer = None;
        dir.clear_writer(&hex);
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
            dir.clear_pending(&hex);
        }
        let file = hold.file.take();
        let (offset, length) = (hold.offset, known.record.length);
        drop(hold);
        if aborted {
            return None;
        }
        if !matched {
            drop((held, file));
            self.uploads.stats.checksum_mismatches.fetch_add(1, Relaxed);
            return Some(resume::tus(Response::status_page(460)));
        }
        let permit = self.permit.take();
        let (Some(permit), Some(file)) = (permit, file) else {
            return Some(Response::internal_error(format!("upload {hex}: no file")));
        };
        if permit.durability != fs::Durability::None {
            if let Err(e) = file.sync_data() {
                drop((held, file));
                self.permit = Some(permit);
                return Some(Response::internal_error(format!("upload {hex}: sync: {e}")));
            }
        }
        let resp = match offset >= length {
            true => match self.commit(id, known, file, &permit) {
                Ok(()) => resume::appended(length, None),
                Err(refusal) => refusal,
            },
            false => {
                drop(file);
                let expire = self
                    .runtime()
                    .resumable
                    .as_ref()
                    .map_or(0, |r| r.expire.as_secs());
                resume::appended(offset, Some(known.last.load(Relaxed) / 1000 + expire))
            }
        };
        drop(held);
        self.permit = Some(permit);
        Some(resp)
    }

    /// Lets the upload go after a failed write (its counted bytes stay),
    /// if it is still this request's.
    pub(super) fn release(&mut self, known: &Known) {
        let generation = self.patch.take().map(|p| p.generation);
        let mut hold = lock(&known.hold);
        let Some(generation) = generation.filter(|&g| hold.writer == Some(g)) else {
            return;
        };
        hold.writer = None;
        let Some(file) = hold.file.take() else {
            return;
        };
        let id = self.ask.id().unwrap_or(Id([0; 16]));
        let dir = &self.uploads.dir;
        if let Ok(Some(_held)) = dir.lock(&file, true) {
            if self.uploads.still_writes(id, generation) {
                let _ = file.set_len(hold.offset);
                dir.clear_pending(&id.hex());
                dir.clear_writer(&id.hex());
            }
        }
    }
}
