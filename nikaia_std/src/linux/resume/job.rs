//! One request of the tus endpoint (`spec/site.md`, "Resumable uploads"),
//! as the sink of its body: held (no `100 Continue`) until its upload is
//! found and its final name passed the write rules — credentials checked
//! on the verifier threads — then done on the writer threads, which may
//! wait for the disk. A `PATCH`'s bytes are gathered into runs on the
//! worker and written at their offset by the writer, the body paused while
//! a run waits, as a body written to a file is (`linux/write.rs`).

use super::{now, Known, Record, Uploads};
use crate::fs::{self, PartialDir, Root};
use crate::http::body::{Aborted, Erased, Flow, Reply, Resume};
use crate::http::site::resume::{self, Algorithm, Ask, Checksum, Id, Seen};
use crate::http::site::write::{self, Asked, Op, Permit};
use crate::http::site::{Check, Grant, Verdict};
use crate::http::{Request, Response};
use crate::linux::shared::Shared;
use crate::rt::{Resumable, Runtime};
use aws_lc_rs::digest;
use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard};

/// The sink of one request of the endpoint.
pub(crate) struct Job {
    inner: Arc<Inner>,
    /// The run being gathered on the worker.
    run: Vec<u8>,
}

struct Inner {
    shared: Arc<Shared>,
    uploads: Arc<Uploads>,
    root: Root,
    req: Request,
    ask: Ask,
    hidden: bool,
    tls: bool,
    st: Mutex<St>,
    /// A `PATCH` writing: where it began and what it wrote. Only the
    /// writer threads take it (they may hold it across a write); the
    /// worker takes only `st`, never across one.
    patch: Mutex<Option<Patch>>,
}

#[derive(Default)]
struct St {
    reply: Option<Reply>,
    /// The body, held until the `PATCH` may write (or never read).
    paused: Option<Resume>,
    /// What the rules let it do, once they have.
    permit: Option<Box<Permit>>,
    /// The upload, once found.
    known: Option<Known>,
    /// A `PATCH`'s body is being taken (its [`Patch`] is the writer's).
    writing: bool,
    queue: VecDeque<Vec<u8>>,
    /// A writer turn is queued or running.
    running: bool,
    /// The body arrived whole.
    ended: bool,
    /// The client left: what came counts (unless a checksum was owed).
    aborted: bool,
    /// Answered, or given up: nothing more is done.
    over: bool,
}

struct Patch {
    generation: u64,
    start: u64,
    written: u64,
    sum: Option<(Checksum, digest::Context)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Job {
    pub(crate) fn new(
        shared: &Arc<Shared>,
        uploads: &Arc<Uploads>,
        req: &Request,
        root: Root,
        ask: Ask,
        hidden: bool,
        tls: bool,
    ) -> Job {
        Job {
            inner: Arc::new(Inner {
                shared: shared.clone(),
                uploads: uploads.clone(),
                root,
                req: req.clone(),
                ask,
                hidden,
                tls,
                st: Mutex::default(),
                patch: Mutex::default(),
            }),
            run: Vec::new(),
        }
    }

    /// Hands the gathered run to the writer; pauses the body while one
    /// waits.
    fn hand_over(&mut self, flow: Option<&mut Flow<'_>>) {
        let run = std::mem::take(&mut self.run);
        let mut st = lock(&self.inner.st);
        if st.over || !st.writing {
            return;
        }
        if !run.is_empty() {
            st.queue.push_back(run);
        }
        if let (Some(flow), None) = (flow, &st.paused) {
            st.paused = Some(flow.pause());
        }
        self.inner.clone().run_writer(st);
    }
}

impl Erased for Job {
    fn begin(&mut self, flow: &mut Flow<'_>, reply: Reply) {
        let mut st = lock(&self.inner.st);
        st.reply = Some(reply);
        st.paused = Some(flow.pause());
        drop(st);
        let inner = self.inner.clone();
        self.inner.shared.writers.pool.submit(move || inner.start());
    }

    fn piece(&mut self, piece: &[u8], flow: &mut Flow<'_>) {
        let mut rest = piece;
        while !rest.is_empty() {
            if crate::linux::write::gather(&mut self.run, &mut rest) {
                self.hand_over(Some(&mut *flow));
            }
        }
    }

    fn end(mut self: Box<Self>, _req: &Request) -> Option<Response> {
        lock(&self.inner.st).ended = true;
        self.hand_over(None);
        None
    }

    fn abort(mut self: Box<Self>, _why: Aborted) {
        // What came counts (a `PATCH` not begun yet sees this when it is).
        lock(&self.inner.st).aborted = true;
        self.hand_over(None);
    }
}

impl Inner {
    fn runtime(&self) -> Arc<Runtime> {
        self.shared.runtime()
    }

    /// On a writer thread: finds the upload and runs its final name
    /// through the write rules.
    fn start(self: Arc<Self>) {
        let rt = self.runtime();
        let Some(r) = rt.resumable.clone() else {
            return self.finish(resume::tus(Response::status_page(404)));
        };
        self.uploads.expire.store(r.expire.as_secs(), Relaxed);
        let asked = |refused| Asked {
            op: Op::Resume,
            hidden: self.hidden,
            refused,
        };
        let verified = |c: &Check| self.shared.auth.known(c);
        let gated = match &self.ask {
            Ask::Create {
                length,
                name,
                refused,
                ..
            } => write::gate(
                &rt,
                &self.req,
                name,
                asked(*refused),
                self.tls,
                Some(*length),
                None,
                verified,
            ),
            ask => {
                let id = ask.id().unwrap_or(Id([0; 16]));
                let Some(known) = self.uploads.load(id) else {
                    return self.finish(resume::tus(Response::status_page(404)));
                };
                if Uploads::expired(&known, r.expire, now())
                    && self.uploads.remove_expired(id, &known)
                {
                    return self.finish(resume::tus(Response::status_page(404)));
                }
                let (name, owner) = (known.record.name.clone(), known.record.user.clone());
                lock(&self.st).known = Some(known);
                let owner = Some(owner);
                write::gate(
                    &rt,
                    &self.req,
                    &name,
                    asked(false),
                    self.tls,
                    None,
                    owner,
                    verified,
                )
            }
        };
        match gated {
            Err(refusal) => self.finish(refusal),
            Ok(mut permit) => match permit.check.take() {
                None => self.act(permit),
                Some(check) => {
                    lock(&self.st).permit = Some(Box::new(permit));
                    let me = self.clone();
                    let submitted = (self.shared.auth)
                        .submit(check, move |check, verdict| me.verified(*check, verdict));
                    if let Err(check) = submitted {
                        self.verified(*check, Verdict::Busy);
                    }
                }
            },
        }
    }

    /// Goes on once the credentials were checked.
    fn verified(self: Arc<Self>, check: Check, verdict: Verdict) {
        let Some(permit) = lock(&self.st).permit.take() else {
            return;
        };
        match permit.verified(check, verdict) {
            Ok(permit) => {
                let me = self.clone();
                self.shared.writers.pool.submit(move || me.act(permit));
            }
            Err(refusal) => self.finish(refusal),
        }
    }

    /// Does what was asked, the rules having let it.
    fn act(self: Arc<Self>, permit: Permit) {
        let Some(r) = self.runtime().resumable.clone() else {
            return self.finish(resume::tus(Response::status_page(404)));
        };
        let permit = Box::new(permit);
        let done = match self.ask.clone() {
            Ask::Create {
                length,
                name,
                metadata,
                ..
            } => self.create(&r, &permit, length, &name, metadata),
            Ask::Offset(id) => self.offset(&r, &permit, id),
            Ask::Terminate(id) => self.terminate(id),
            Ask::Append {
                id,
                offset,
                checksum,
            } => {
                return self.clone().append(permit, id, offset, checksum);
            }
        };
        lock(&self.st).permit = Some(permit);
        self.finish(done);
    }

    /// `POST`: a new upload, its record written before the answer.
    fn create(
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
        if !self.uploads.within_caps(r, user.as_deref(), length) {
            return Response::status_page(507);
        }
        // The name as it is now: a create the rule does not allow, a link
        // on the way, one of the server's own files are refused before a
        // byte is sent (and again when the file is given its name).
        let mut guard = permit.guard(self.own(&permit.grant));
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
        self.uploads.stats.created.fetch_add(1, Relaxed);
        resume::created(&r.endpoint, id, created + r.expire.as_secs())
    }

    /// `HEAD`: how much arrived. It takes the upload over from a `PATCH`
    /// still writing here (its client is gone: it came back with this).
    fn offset(&self, r: &Resumable, permit: &Permit, id: Id) -> Response {
        let Some(known) = lock(&self.st).known.clone() else {
            return Response::status_page(404);
        };
        let mut hold = lock(&known.hold);
        self.take_over(&mut hold, id);
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
        let offset = file.metadata().map_or(0, |m| m.len());
        if offset >= record.length {
            // Complete, never named (the process that wrote the last byte
            // was killed before it could): named now.
            return match self.commit(id, &known, file, permit) {
                Ok(()) => resume::offset(&seen(record.length, None)),
                Err(refusal) => refusal,
            };
        }
        let expires = known.last.load(Relaxed) + r.expire.as_secs();
        resume::offset(&seen(offset, Some(expires)))
    }

    /// `DELETE`: the upload's files go (the file a complete one became
    /// stays: only its record goes).
    fn terminate(&self, id: Id) -> Response {
        let Some(known) = lock(&self.st).known.clone() else {
            return Response::status_page(404);
        };
        let mut hold = lock(&known.hold);
        self.take_over(&mut hold, id);
        let hex = id.hex();
        if known.record.done.is_none() {
            // Another process writing it holds its lock: not now.
            if let Ok(None) = self.uploads.dir.open_locked(&hex) {
                return locked();
            }
        }
        self.uploads.dir.remove(&hex);
        drop(hold);
        self.uploads.forget(id);
        self.uploads.stats.terminated.fetch_add(1, Relaxed);
        resume::tus(Response::new(204))
    }

    /// Ends a `PATCH` of this process still writing the upload: its bytes
    /// counted so far stay (those of a chunk whose sum was owed go).
    fn take_over(&self, hold: &mut super::Hold, id: Id) {
        hold.generation += 1;
        if hold.writer.take().is_none() {
            return;
        }
        self.uploads.stats.taken_over.fetch_add(1, Relaxed);
        if let Some(file) = hold.file.take() {
            let _ = file.set_len(hold.offset);
            self.uploads.dir.clear_pending(&id.hex());
        }
    }

    /// Opens the upload's `.part` to write, locked: or it is complete (its
    /// file was named by a process killed before it said so), or the
    /// answer (423 while another process writes it, 404 when it is gone).
    fn open(&self, id: Id, known: &Known) -> Opened {
        let hex = id.hex();
        match self.uploads.dir.open_locked(&hex) {
            Ok(Some(file)) => Opened::File(file),
            Ok(None) => Opened::Answer(locked()),
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
    fn mark_done(&self, id: Id, mut record: Record, durable: bool) {
        record.done = Some(now());
        let _ = self
            .uploads
            .dir
            .write_info(&id.hex(), record.to_text().as_bytes(), durable);
        self.uploads.completed(id, record);
    }

    /// The runtime file's own files, by identity now.
    fn own(&self, _grant: &Grant) -> Vec<(u64, u64)> {
        let rt = self.runtime();
        crate::linux::write::Own::of(&rt, true).identities(&self.root)
    }

    /// Gives the complete `.part` its final name through the write rules'
    /// guard, as a `PUT` of it would be. Refused, the upload is removed.
    fn commit(&self, id: Id, known: &Known, file: File, permit: &Permit) -> Result<(), Response> {
        let hex = id.hex();
        let guard = permit.guard(self.own(&permit.grant));
        let mode = fs::Mode::Conditional(permit.conditions.clone());
        let name = &known.record.name;
        let done = self.uploads.dir.dup().and_then(|from| {
            let temp = PartialDir::part_name(&hex);
            let writing = self
                .root
                .adopt_guarded(name, mode, &guard, file, from, temp)?;
            writing.commit(permit.durability)
        });
        let writes = &self.shared.stats.writes;
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
                self.uploads.dir.remove(&hex);
                self.uploads.forget(id);
                let rt = self.runtime();
                let resp = write::answer(&rt, &self.req, permit, Err(e));
                writes.refused(resp.status());
                Err(resp)
            }
        }
    }

    /// `PATCH`: checks the offset, then lets the body come.
    fn append(
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
                let st = lock(&self.st);
                let held = (!st.over).then(|| st.paused.is_some());
                drop(st);
                if held == Some(true) {
                    let resume = lock(&self.st).paused.take();
                    drop(resume); // the body may come
                }
                let st = lock(&self.st);
                self.clone().run_writer(st);
            }
        }
    }

    /// What a `PATCH` finds before its body: `None` when the body may come.
    fn begin_append(
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
        let mut hold = lock(&known.hold);
        let ghost = hold.file.take();
        let ghost_offset = hold.offset;
        let taken = hold.writer.take().is_some();
        hold.generation += 1;
        let generation = hold.generation;
        if taken {
            self.uploads.stats.taken_over.fetch_add(1, Relaxed);
        }
        let (file, offset) = match ghost {
            _ if known.record.done.is_some() => return Some(self.already_done(asked, length)),
            Some(file) => {
                // Taken from a PATCH of this process: its counted bytes.
                if file.set_len(ghost_offset).is_err() {
                    return Some(Response::internal_error(format!(
                        "upload {}: truncate",
                        id.hex()
                    )));
                }
                self.uploads.dir.clear_pending(&id.hex());
                (file, ghost_offset)
            }
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
    fn already_done(&self, asked: u64, length: u64) -> Response {
        match asked == length {
            true => resume::appended(length, None),
            false => {
                self.uploads.stats.conflicts.fetch_add(1, Relaxed);
                resume::tus(Response::status_page(409)).header("Upload-Offset", length)
            }
        }
    }

    /// Queues a writer turn unless one is queued or running.
    fn run_writer(self: Arc<Self>, mut st: MutexGuard<'_, St>) {
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
    fn turn(self: Arc<Self>) {
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
                self.release(&known, None);
                return self.finish(resp);
            }
        }
    }

    /// Writes one run under the hold, if the upload is still this
    /// request's.
    fn write_run(&self, known: &Known, run: &[u8]) -> Result<(), Response> {
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
        if let Err(e) = write_at(file, run, at) {
            let status = write::status(Op::Put, &e);
            return Err(Response::status_page(status));
        }
        patch.written += run.len() as u64;
        match patch.sum.as_mut() {
            Some((_, ctx)) => ctx.update(run),
            None => hold.offset = at + run.len() as u64,
        }
        known.last.store(now(), Relaxed);
        self.uploads
            .stats
            .bytes
            .fetch_add(run.len() as u64, Relaxed);
        Ok(())
    }

    /// The body ended (or its client left): the sum checked, the bytes
    /// synced, the file named once whole, and the answer.
    fn end_patch(&self, known: &Known, aborted: bool) {
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
                let id = Id::parse(hex.as_bytes()).unwrap_or(Id([0; 16]));
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
                resume::appended(offset, Some(known.last.load(Relaxed) + expire))
            }
        };
        lock(&self.st).permit = Some(permit);
        self.finish(resp);
    }

    /// Lets the upload go after a failed write (its counted bytes stay).
    fn release(&self, known: &Known, _why: Option<&str>) {
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

    /// Sends the answer, dressed by the site's rules and counted; nothing
    /// more is done for this request.
    fn finish(&self, resp: Response) {
        let mut st = lock(&self.st);
        if st.over {
            return;
        }
        st.over = true;
        st.queue.clear();
        let reply = st.reply.take();
        let (name, grant) = match (&st.permit, &st.known) {
            (Some(p), _) => (p.name.clone(), p.grant.clone()),
            (None, Some(k)) => (k.record.name.clone(), Grant::default()),
            (None, None) => (String::new(), Grant::default()),
        };
        drop(st);
        let mut resp = resume::tus(resp);
        let status = resp.status();
        if status >= 400 && status != 409 && status != 460 {
            self.uploads.stats.refused.fetch_add(1, Relaxed);
        }
        let rt = self.runtime();
        resume::dress(&rt, &self.req, &name, &grant, self.tls, &mut resp);
        if let Some(reply) = reply {
            reply.send(resp);
        }
    }
}

/// What opening an upload's `.part` found.
enum Opened {
    File(File),
    /// It is the final file already.
    Done,
    Answer(Response),
}

/// 423: another process (the one an upgrade replaces) writes the upload
/// now; tus clients try again.
fn locked() -> Response {
    resume::tus(Response::status_page(423)).header("Retry-After", 1)
}

/// The upload's hexadecimal identifier.
fn known_hex(ask: &Ask) -> String {
    ask.id().map(|id| id.hex()).unwrap_or_default()
}

/// `pwrite`s all of `run` at `at`, in steps the page cache takes well.
fn write_at(file: &File, run: &[u8], at: u64) -> Result<(), fs::Error> {
    const STEP: usize = 16 << 10;
    let mut done = 0;
    while done < run.len() {
        let step = &run[done..run.len().min(done + STEP)];
        match file.write_at(step, at + done as u64) {
            Ok(0) => return Err(fs::Error::NoSpace),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if e.raw_os_error() == Some(libc::ENOSPC)
                    || e.raw_os_error() == Some(libc::EDQUOT) =>
            {
                return Err(fs::Error::NoSpace)
            }
            Err(e) => return Err(fs::Error::Io(e)),
        }
    }
    Ok(())
}

/// 128 bits from the kernel's generator; `None` where it has none (an
/// identifier is a capability: never made from the clock).
fn random_id() -> Option<Id> {
    let mut bits = [0u8; 16];
    let mut got = 0;
    while got < bits.len() {
        match rustix::rand::getrandom(&mut bits[got..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    Some(Id(bits))
}
