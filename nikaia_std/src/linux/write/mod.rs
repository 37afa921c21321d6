//! Bodies written to files (`spec/files.md`, "A body written under a
//! root"), D9 for writes: the worker only copies each piece of a body into
//! a bounded run of buffers; the writer threads open the unnamed file,
//! write the runs in order, sync, and give the name — all of which may
//! wait for the disk — and answer through the request's connection. A body
//! whose runs are not written yet is paused (HTTP/1.1 stops reading the
//! socket, HTTP/2 stops granting window), so a slow disk holds the client
//! back, never a worker.

mod site;

pub(crate) use site::{Own, Removal};

use super::pool::IoPool;
use super::shared::Shared;
use crate::fs::{self, Durability, Written};
use crate::http::body::{Aborted, Erased, Flow, Reply, Resume};
use crate::http::site::write::Permit;
use crate::http::site::{Check, Verdict};
use crate::http::to_file::{AnswerWith, ToFile};
use crate::http::{Request, Response};
use crate::rt::Runtime;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};

/// A run of body bytes handed to the writer at once: each costs the
/// worker a hand-over and the writer a wake-up, so runs are large
/// (docs/performance.md, "A body written to a file").
const RUN: usize = 512 << 10;
/// Runs waiting for the writer before the body is paused: with the one
/// being written and the one being gathered, at most 3 × [`RUN`] (1.5 MiB)
/// of a body is in memory, in buffers reused from run to run.
const QUEUED_MAX: usize = 1;
/// How much may be written between two looks at the free space: the
/// floor is kept by an estimate in between.
const SPACE_LOOK: u64 = 16 << 20;
/// The writer threads: each may wait on a sync for as long as the disk
/// takes; the others go on with other bodies.
const THREADS: usize = 4;

/// The writer threads and what they count.
pub(crate) struct Writers {
    pub(crate) pool: IoPool,
    /// Bodies being written now (`max-writes` bounds it).
    active: AtomicUsize,
}

impl Writers {
    pub(crate) fn new() -> std::io::Result<Writers> {
        Ok(Writers {
            pool: IoPool::named("nikaia-write", THREADS)?,
            active: AtomicUsize::new(0),
        })
    }

    /// Finishes what is queued (a name being given is given), then stops
    /// the threads.
    pub(crate) fn close(&self) {
        self.pool.close();
    }
}

/// The sink of a body written to a file: it lives on the worker; its
/// [`Job`] is shared with the writer threads.
pub(crate) struct Upload {
    job: Arc<Job>,
    /// The run being gathered on the worker.
    run: Vec<u8>,
}

/// What the worker and the writer threads share of one body.
struct Job {
    shared: Arc<Shared>,
    state: Mutex<State>,
    /// It still counts among the bodies being written (`max-writes`).
    counted: AtomicBool,
}

struct State {
    /// The file being written, between the writer's turns.
    writing: Option<fs::Writing>,
    /// What it becomes and how: taken by the first writer turn.
    to: Option<Target>,
    /// Runs waiting for the writer, in order.
    queue: VecDeque<Vec<u8>>,
    /// Buffers of runs written, for the next runs (no allocation, no page
    /// faults per run).
    spare: Vec<Vec<u8>>,
    /// What the writes know of the free space, between turns.
    space: Space,
    /// A writer turn is queued or running: it takes what is queued.
    running: bool,
    /// The body waits for room (or, before its first byte, for the file).
    paused: Option<Resume>,
    /// The body arrived whole: once the queue is written, the name.
    ended: bool,
    /// The answer went (or the body was aborted): nothing more is done.
    over: bool,
    reply: Option<Reply>,
    req: Request,
    answer: Option<AnswerWith>,
    durability: Durability,
    length: Option<u64>,
    /// A write of the directory writer: what the site's rules let it do.
    site: Option<Box<Permit>>,
    /// The runtime file's own files and names, never written.
    own: site::Own,
}

impl State {
    /// Nothing more is done for this body: what waits is dropped, and the
    /// file with its descriptor. False when that was so already.
    fn close(&mut self) -> bool {
        if self.over {
            return false;
        }
        self.over = true;
        self.queue.clear();
        self.writing = None;
        true
    }
}

/// What a body becomes, until its file is opened.
struct Target {
    root: fs::Root,
    name: std::path::PathBuf,
    mode: fs::Mode,
}

impl Upload {
    /// The sink that writes `req`'s body as `to` says, or the answer from
    /// its head: 503 while `max-writes` bodies are being written.
    pub(crate) fn new(
        shared: &Arc<Shared>,
        rt: &Runtime,
        req: &Request,
        to: ToFile,
        length: Option<u64>,
    ) -> Result<Upload, Response> {
        let site = to.permit;
        // Credentials still to check take no place among the writes: a
        // flood of wrong passwords holds no writer's slot.
        let pending = site.as_ref().is_some_and(|p| p.check.is_some());
        if !pending {
            take_slot(shared, rt.max_writes).map_err(|busy| {
                let rt = shared.runtime();
                if site.is_some() {
                    shared.stats.writes.refused(503);
                }
                site::answer_refusal(&rt, req, site.as_deref(), busy)
            })?;
        }
        let (mode, durability) = match &site {
            Some(p) => (fs::Mode::Conditional(p.conditions.clone()), p.durability),
            None => (to.mode, to.durability),
        };
        let (root, name, answer) = (to.root, to.name, to.answer);
        let state = State {
            writing: None,
            to: Some(Target { root, name, mode }),
            queue: VecDeque::new(),
            spare: Vec::new(),
            space: Space {
                floor: rt.write_free_floor,
                room: 0,
                since_look: SPACE_LOOK,
            },
            running: false,
            paused: None,
            ended: false,
            over: false,
            reply: None,
            req: req.clone(),
            answer,
            durability,
            length,
            own: site::Own::of(rt, site.is_some()),
            site,
        };
        Ok(Upload {
            job: Arc::new(Job {
                shared: shared.clone(),
                counted: AtomicBool::new(!pending),
                state: Mutex::new(state),
            }),
            run: Vec::new(),
        })
    }

    /// Hands the gathered run to the writer, and takes a spare buffer for
    /// the next.
    /// `last`: the body ended with this run; said in the same step as the
    /// run is queued, so that no writer turn finds the body ended before
    /// its last run is there (and names a file short of it).
    fn hand_over(&mut self, flow: Option<&mut Flow<'_>>, last: bool) {
        let mut st = self.job.lock();
        let next = st.spare.pop().unwrap_or_default();
        let run = std::mem::replace(&mut self.run, next);
        if st.over {
            return;
        }
        if !run.is_empty() {
            st.queue.push_back(run);
        }
        st.ended |= last;
        if st.queue.len() >= QUEUED_MAX && st.paused.is_none() {
            if let Some(flow) = flow {
                st.paused = Some(flow.pause());
            }
        }
        self.job.run_writer(st);
    }
}

impl Erased for Upload {
    /// Holds the body (and its `100 Continue`) until the writer opened the
    /// file and found the name and the space as the head asks.
    fn begin(&mut self, flow: &mut Flow<'_>, reply: Reply) {
        let mut st = self.job.lock();
        st.reply = Some(reply);
        st.paused = Some(flow.pause());
        let check = st.site.as_mut().and_then(|p| p.check.take());
        let Some(check) = check else {
            return self.job.run_writer(st);
        };
        drop(st);
        // The body stays held (no `100 Continue`) until the check is done.
        let job = self.job.clone();
        let auth = &self.job.shared.auth;
        if let Err(check) = auth.submit(check, move |check, verdict| job.verified(*check, verdict))
        {
            self.job.verified(*check, Verdict::Busy);
        }
    }

    fn piece(&mut self, piece: &[u8], flow: &mut Flow<'_>) {
        let mut rest = piece;
        while !rest.is_empty() {
            if gather(&mut self.run, &mut rest) {
                self.hand_over(Some(&mut *flow), false);
            }
        }
    }

    fn end(mut self: Box<Self>, _req: &Request) -> Option<Response> {
        self.hand_over(None, true);
        None
    }

    fn abort(self: Box<Self>, _why: Aborted) {
        // The unnamed file goes with its descriptor (a named temporary is
        // removed); a writer turn holding it drops it when it sees `over`.
        if self.job.lock().close() {
            self.job.done();
        }
    }
}

type Guard<'a> = std::sync::MutexGuard<'a, State>;

impl Job {
    fn lock(&self) -> Guard<'_> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Goes on once the credentials of a site write were checked: the
    /// writer's turn (with a slot among the writes), or the answer.
    fn verified(self: &Arc<Self>, check: Check, verdict: Verdict) {
        let mut st = self.lock();
        let Some(permit) = st.site.take() else {
            return;
        };
        let (name, tls) = (permit.name.clone(), permit.tls);
        let refusal = match permit.verified(check, verdict) {
            Ok(permit) => {
                let max = self.shared.runtime().max_writes;
                let took = take_slot(&self.shared, max);
                let refusal = took.err().map(|busy| (busy, Some(permit.grant.clone())));
                st.site = Some(Box::new(permit));
                if refusal.is_none() {
                    self.counted.store(true, Relaxed);
                }
                refusal
            }
            Err(resp) => Some((resp, None)),
        };
        let Some((mut resp, grant)) = refusal else {
            return self.run_writer(st);
        };
        st.close();
        let (reply, req) = (st.reply.take(), st.req.clone());
        drop(st);
        let rt = self.shared.runtime();
        let grant = grant.unwrap_or_default();
        crate::http::site::write::dress_refusal(&rt, &req, &name, &grant, tls, &mut resp);
        self.shared.stats.writes.refused(resp.status());
        if let Some(reply) = reply {
            reply.send(resp);
        }
    }

    /// Queues a writer turn unless one is queued or running.
    fn run_writer(self: &Arc<Self>, mut st: Guard<'_>) {
        if st.running || st.over {
            return;
        }
        st.running = true;
        drop(st);
        let job = self.clone();
        self.shared.writers.pool.submit(move || job.turn());
    }

    /// One writer turn: opens the file (first), writes what is queued, and
    /// gives the name once the body ended.
    fn turn(self: &Arc<Self>) {
        let mut st = self.lock();
        if let Some(to) = st.to.take() {
            let (length, floor) = (st.length, st.space.floor);
            let guard = st
                .site
                .as_ref()
                .map(|p| p.guard(st.own.identities(&to.root)));
            let owed = st.site.as_ref().and_then(|p| p.after_preconditions);
            drop(st);
            let opened = open(&to, guard.as_ref(), length, floor);
            st = self.lock();
            if let (true, Some(status)) = (opened.is_ok(), owed) {
                // The preconditions held: now the head's own fault (the
                // file closed before the answer).
                drop(opened);
                return self.refuse(st, status);
            }
            match opened {
                Ok(writing) if !st.over => {
                    st.writing = Some(writing);
                    let held = st.paused.take();
                    drop(held); // the body may come: resumed
                }
                Ok(_) => {}
                Err(e) => return self.fail(st, e, &self.shared.stats.bodies.files_refused),
            }
        }
        loop {
            if st.over {
                st.running = false;
                return;
            }
            let Some(run) = st.queue.pop_front() else {
                break;
            };
            // Room for more: a body paused for room goes on.
            let resume = match st.queue.len() < QUEUED_MAX {
                true => st.paused.take(),
                false => None,
            };
            let mut writing = st.writing.take();
            let mut space = st.space;
            drop(st);
            drop(resume);
            let wrote = match writing.as_mut() {
                Some(w) => write_run(w, &run, &mut space),
                None => Ok(()),
            };
            if let Err(e) = wrote {
                // The file closes before the answer goes: its space is
                // back when the client reads the 507.
                drop(writing);
                let st = self.lock();
                return self.fail(st, e, &self.shared.stats.bodies.files_failed);
            }
            st = self.lock();
            st.space = space;
            if st.spare.len() < QUEUED_MAX {
                let mut run = run;
                run.clear();
                st.spare.push(run);
            }
            if !st.over {
                st.writing = writing;
            }
        }
        st.running = false;
        if !st.ended || st.over {
            return;
        }
        st.over = true;
        let writing = st.writing.take();
        let durability = st.durability;
        drop(st);
        let done = match writing {
            Some(w) => w.commit(durability),
            None => Err(fs::Error::Io(std::io::Error::other("no file was opened"))),
        };
        let counter = match &done {
            Ok(_) => &self.shared.stats.bodies.files_written,
            Err(fs::Error::NoSpace | fs::Error::Io(_)) => &self.shared.stats.bodies.files_failed,
            Err(_) => &self.shared.stats.bodies.files_refused,
        };
        counter.fetch_add(1, Relaxed);
        self.answer(done);
    }

    /// A site write whose preconditions held but whose head cannot be
    /// taken (400, 415, 413): answered now, nothing written.
    fn refuse(&self, mut st: Guard<'_>, status: u16) {
        st.running = false;
        if !st.close() {
            return;
        }
        let (reply, req, permit) = (st.reply.take(), st.req.clone(), st.site.take());
        drop(st);
        self.done();
        self.shared.stats.bodies.files_refused.fetch_add(1, Relaxed);
        let rt = self.shared.runtime();
        let resp =
            site::answer_refusal(&rt, &req, permit.as_deref(), Response::status_page(status));
        if let Some(reply) = reply {
            reply.send(resp);
        }
    }

    /// The write will not happen: the file goes with its descriptor first
    /// (the caller holds none of it: its space is back before the answer),
    /// then the answer goes now (before the rest of the body, if it is
    /// still coming).
    fn fail(&self, mut st: Guard<'_>, e: fs::Error, counter: &std::sync::atomic::AtomicU64) {
        st.running = false;
        if !st.close() {
            return;
        }
        drop(st);
        counter.fetch_add(1, Relaxed);
        self.answer(Err(e));
    }

    /// Sends the answer for `done` and lets the slot go.
    fn answer(&self, done: Result<Written, fs::Error>) {
        let mut st = self.lock();
        let (reply, answer, req) = (st.reply.take(), st.answer.take(), st.req.clone());
        let permit = st.site.take();
        drop(st);
        self.done();
        if let Some(permit) = permit {
            let resp = site::answered(&self.shared, &req, &permit, done);
            if let Some(reply) = reply {
                reply.send(resp);
            }
            return;
        }
        let resp = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ToFile::answer_for(answer, &req, done)
        }))
        .unwrap_or_else(|_| {
            Response::internal_error(format!(
                "handler panicked answering {} {}",
                req.method(),
                req.target()
            ))
        });
        if let Some(reply) = reply {
            reply.send(resp);
        }
    }

    /// One body less being written (once).
    fn done(&self) {
        if self.counted.swap(false, Relaxed) {
            self.shared.writers.active.fetch_sub(1, Relaxed);
        }
    }
}

impl Drop for Job {
    /// A body whose sink went without an end or an abort (its `begin`
    /// panicked) still lets its slot go.
    fn drop(&mut self) {
        self.done();
    }
}

/// Moves the start of `rest` into `run` (given its [`RUN`] of room once)
/// until `run` is full or `rest` empty: whether `run` is full, a run to
/// hand to the writer.
pub(crate) fn gather(run: &mut Vec<u8>, rest: &mut &[u8]) -> bool {
    if run.capacity() < RUN {
        run.reserve_exact(RUN - run.len());
    }
    let n = (RUN - run.len()).min(rest.len());
    run.extend_from_slice(&rest[..n]);
    *rest = &rest[n..];
    run.len() == RUN
}

/// Takes a place among the bodies being written, or the 503 that says
/// there is none (`max-writes`).
fn take_slot(shared: &Shared, max: usize) -> Result<(), Response> {
    let writers = &shared.writers;
    if writers.active.fetch_add(1, Relaxed) >= max {
        writers.active.fetch_sub(1, Relaxed);
        shared.stats.bodies.files_refused.fetch_add(1, Relaxed);
        return Err(Response::status_page(503).header("Retry-After", "1"));
    }
    Ok(())
}

/// Opens the unnamed file for `to` (under the site's guard, for a write
/// of the directory writer), and refuses a `Content-Length` that would
/// take the file system below its floor (507).
fn open(
    to: &Target,
    guard: Option<&fs::Guard>,
    length: Option<u64>,
    floor: u64,
) -> Result<fs::Writing, fs::Error> {
    let writing = match guard {
        Some(guard) => to
            .root
            .begin_write_guarded(&to.name, to.mode.clone(), guard)?,
        None => to.root.begin_write(&to.name, to.mode.clone())?,
    };
    if let Some(length) = length {
        if writing.free_space() < length.saturating_add(floor) {
            return Err(fs::Error::NoSpace);
        }
    }
    Ok(writing)
}

/// What a body's writes know of the free space.
#[derive(Clone, Copy)]
struct Space {
    /// The space the file system keeps (`write-free-floor`).
    floor: u64,
    /// Bytes free above the floor as last looked at, less what was
    /// written since.
    room: u64,
    /// Bytes written since the free space was last looked at.
    since_look: u64,
}

/// Writes one run, keeping the file system above its floor: the free
/// space is looked at again once [`SPACE_LOOK`] bytes were written since
/// the last look, or when the run would take more than the room left.
fn write_run(w: &mut fs::Writing, run: &[u8], space: &mut Space) -> Result<(), fs::Error> {
    let len = run.len() as u64;
    if space.floor > 0 && (space.since_look >= SPACE_LOOK || len > space.room) {
        space.room = w.free_space().saturating_sub(space.floor);
        space.since_look = 0;
        if len > space.room {
            return Err(fs::Error::NoSpace);
        }
    }
    w.write(run)?;
    space.room = space.room.saturating_sub(len);
    space.since_look += len;
    Ok(())
}
