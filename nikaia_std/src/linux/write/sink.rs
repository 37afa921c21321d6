//! The one life of a request that goes to disk: a body written to a file
//! (`PUT`, a program's `to_file`), a removal (`DELETE`), a request of the
//! tus endpoint. What differs between them is an [`Act`]; when each step
//! runs, on which thread, and what holds the body meanwhile is here, once.
//!
//! ```text
//!            begin (worker)
//!   Held ───────────────┬──────────────┐
//!    │ Check            │ Open         │ Answer
//!    ▼                  ▼              │
//!   Checking ─Open──▶ Opening ─────────┤ (a refusal, a removal done,
//!    ▲  (verifier)      │ (writer)     │  an offset reported, ...)
//!    └──────Check───────┤              │
//!                       │ Body         │
//!                       ▼              │
//!                    Writing ──────────┤ (a run refused: 507, 409, ...)
//!                       │ the body ended, or its client left
//!                       ▼              │
//!                    Naming ───────────┤ (sync, name; 201/204/412/...)
//!                       ▼              ▼
//!                    Answered ◀────────┘
//! ```
//!
//! The writes WebDAV brings later take the same stages: `MKCOL` is an act
//! whose `open` makes the collection and answers (Held → Checking →
//! Opening → Answered, no body, as a `DELETE`); `COPY` and `MOVE` have two
//! names, both through the parent walker, the second checked as the
//! first (Opening takes both parents, Naming copies or renames: a `MOVE`
//! of a file has no body, a `COPY` of one reads its source where a `PUT`
//! reads a socket); `PROPPATCH` writes a dead-property record the way a
//! tus request writes its `.info` (Opening, then an answer). None of them
//! needs a stage of its own.
//!
//! Threads: the worker only gathers runs and takes [`Life`]'s lock, never
//! across a wait; the act's own lock is taken by the writer threads (which
//! may hold it across a write or a sync) and by the verifier's callback,
//! never by the worker but at `begin`, before any writer turn exists.

use super::Wing;
use crate::http::body::{Aborted, Erased, Flow, Reply, Resume};
use crate::http::site::{Check, Verdict};
use crate::http::{Request, Response};
use crate::sync::lock;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// A run of body bytes handed to the writer at once: each costs the
/// worker a hand-over and the writer a wake-up, so runs are large
/// (docs/performance.md, "A body written to a file").
pub(super) const RUN: usize = 512 << 10;
/// Runs waiting for the writer before the body is paused: with the one
/// being written and the one being gathered, at most 3 × [`RUN`] (1.5 MiB)
/// of a body is in memory, in buffers reused from run to run.
const QUEUED_MAX: usize = 1;

/// Where a write is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// The body is held: not read, no `100 Continue`, until the act says
    /// what comes first.
    Held,
    /// Credentials are being checked on the verifier threads; the body
    /// stays held.
    Checking,
    /// A writer turn readies what may wait for the disk: the unnamed file
    /// opened, the upload found and its offset compared, the name removed.
    /// The body stays held.
    Opening,
    /// The body comes: runs gathered on the worker, written in order by
    /// writer turns, the body paused while a run waits.
    Writing,
    /// The body ended (or its client left): a writer turn checks, syncs
    /// and names.
    Naming,
    /// The answer went, or there is no one to give it to: nothing more is
    /// done, and what the act opened is let go.
    Answered,
}

/// What an act asks for next.
pub(super) enum Step {
    /// Check these credentials on the verifier threads, then
    /// [`Act::checked`].
    Check(Box<Check>),
    /// Go on in a writer turn: [`Act::open`].
    Open,
    /// Take the body: its runs go to [`Act::write`], its end to
    /// [`Act::name`].
    Body,
    /// This is the answer (dressed and counted already); the body, if
    /// any, is not read.
    Answer(Response),
}

/// How a body ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    Whole,
    /// Its client left, or the server is stopping.
    Left,
}

/// What one kind of write does at each stage. Every answer it returns is
/// dressed by the site's rules and counted already.
pub(super) trait Act: Send + 'static {
    /// Whether nothing more is done once the client left before the body
    /// was taken: a body to a file is not worth opening for no one; a
    /// removal or a tus request goes on (what it does stands whoever is
    /// there to hear it).
    const STOPS_WITHOUT_CLIENT: bool;

    /// What comes first, decided on the worker from what the head said
    /// (no wait for the disk here).
    fn begin(&mut self) -> Step;

    /// The verifier's verdict on the credentials of the last
    /// [`Step::Check`] (on its thread: no wait for the disk here).
    fn checked(&mut self, check: Check, verdict: Verdict) -> Step;

    /// On a writer thread: what may wait for the disk before the body.
    fn open(&mut self) -> Step;

    /// On a writer thread: one run of the body, in order. `Err`: the
    /// answer, and nothing more is written (what the act opened is let go
    /// before it returns, so a 507's space is back when the client reads
    /// it).
    fn write(&mut self, run: &[u8]) -> Result<(), Response>;

    /// On a writer thread: the body is over. The answer, or `None` where
    /// there is no one to give it to.
    fn name(&mut self, end: End) -> Option<Response>;
}

/// The sink of one write: it lives on the worker; what it shares with the
/// writer and verifier threads is [`Write`].
pub(crate) struct Sink<A: Act> {
    write: Arc<Write<A>>,
    /// The run being gathered on the worker.
    run: Vec<u8>,
}

struct Write<A: Act> {
    wing: Arc<Wing>,
    life: Mutex<Life>,
    act: Mutex<A>,
}

/// What the worker and the other threads share of a write's life.
struct Life {
    stage: Stage,
    reply: Option<Reply>,
    /// The body's handle while it is held or paused: dropped, it goes on.
    held: Option<Resume>,
    /// Runs waiting for the writer, in order.
    queue: VecDeque<Vec<u8>>,
    /// Buffers of runs written, for the next runs (no allocation, no page
    /// faults per run).
    spare: Vec<Vec<u8>>,
    /// A writer turn is queued or running: it takes what is queued.
    running: bool,
    /// How the body ended, once it did.
    end: Option<End>,
}

impl<A: Act> Sink<A> {
    pub(super) fn new(wing: &Arc<Wing>, act: A) -> Sink<A> {
        let life = Life {
            stage: Stage::Held,
            reply: None,
            held: None,
            queue: VecDeque::new(),
            spare: Vec::new(),
            running: false,
            end: None,
        };
        Sink {
            write: Arc::new(Write {
                wing: wing.clone(),
                life: Mutex::new(life),
                act: Mutex::new(act),
            }),
            run: Vec::new(),
        }
    }

    /// Hands the gathered run to the writer and takes a spare buffer for
    /// the next; pauses the body while a run waits. `end`: the body ended
    /// with this run, said in the same step as the run is queued, so that
    /// no writer turn finds the body over before its last run is there.
    fn hand_over(&mut self, flow: Option<&mut Flow<'_>>, end: Option<End>) {
        let mut life = lock(&self.write.life);
        let next = life.spare.pop().unwrap_or_default();
        let run = std::mem::replace(&mut self.run, next);
        if life.stage == Stage::Answered {
            return;
        }
        if !run.is_empty() {
            life.queue.push_back(run);
        }
        if life.end.is_none() {
            life.end = end;
        }
        if let (Some(flow), None) = (flow, &life.held) {
            if life.queue.len() >= QUEUED_MAX {
                life.held = Some(flow.pause());
            }
        }
        let stops = A::STOPS_WITHOUT_CLIENT && life.end == Some(End::Left);
        if stops && matches!(life.stage, Stage::Held | Stage::Checking) {
            // Nothing was opened yet, and no one waits for what would be.
            life.stage = Stage::Answered;
            life.queue.clear();
            return;
        }
        Write::run_writer(&self.write, life);
    }
}

impl<A: Act> Erased for Sink<A> {
    /// Holds the body (and its `100 Continue`) until the act takes it.
    fn begin(&mut self, flow: &mut Flow<'_>, reply: Reply) {
        let mut life = lock(&self.write.life);
        life.reply = Some(reply);
        life.held = Some(flow.pause());
        drop(life);
        let step = lock(&self.write.act).begin();
        Write::go(&self.write, step);
    }

    fn piece(&mut self, piece: &[u8], flow: &mut Flow<'_>) {
        let mut rest = piece;
        while !rest.is_empty() {
            if gather(&mut self.run, &mut rest) {
                self.hand_over(Some(&mut *flow), None);
            }
        }
    }

    fn end(mut self: Box<Self>, _req: &Request) -> Option<Response> {
        self.hand_over(None, Some(End::Whole));
        None
    }

    fn abort(mut self: Box<Self>, _why: Aborted) {
        self.hand_over(None, Some(End::Left));
    }
}

impl<A: Act> Write<A> {
    /// Goes on with what the act asked for.
    fn go(me: &Arc<Self>, step: Step) {
        Write::go_with(me, lock(&me.life), step);
    }

    /// [`Write::go`] with the life already locked: the stage moves on in
    /// the same hold that saw the act's step.
    fn go_with(me: &Arc<Self>, mut life: MutexGuard<'_, Life>, step: Step) {
        if life.stage == Stage::Answered {
            return;
        }
        match step {
            Step::Check(check) => {
                life.stage = Stage::Checking;
                drop(life);
                let then = me.clone();
                let submitted = me.wing.auth.submit(check, move |check, verdict| {
                    let step = lock(&then.act).checked(*check, verdict);
                    Write::go(&then, step);
                });
                if let Err(check) = submitted {
                    let step = lock(&me.act).checked(*check, Verdict::Busy);
                    Write::go(me, step);
                }
            }
            Step::Open => {
                life.stage = Stage::Opening;
                Write::run_writer(me, life);
            }
            Step::Body => {
                life.stage = Stage::Writing;
                // The body may come: resumed (its `100 Continue`, if owed).
                let held = match life.queue.len() < QUEUED_MAX {
                    true => life.held.take(),
                    false => None,
                };
                Write::run_writer(me, life);
                drop(held);
            }
            Step::Answer(resp) => {
                drop(life);
                Write::finish(me, Some(resp));
            }
        }
    }

    /// Queues a writer turn unless one is queued or running, or there is
    /// nothing for one to do.
    fn run_writer(me: &Arc<Self>, mut life: MutexGuard<'_, Life>) {
        let work = match life.stage {
            Stage::Opening => true,
            Stage::Writing => !life.queue.is_empty() || life.end.is_some(),
            _ => false,
        };
        if life.running || !work {
            return;
        }
        life.running = true;
        drop(life);
        let then = me.clone();
        me.wing.pool.submit(move || Write::turn(&then));
    }

    /// One writer turn: the act's opening, or the queued runs written and,
    /// once the body is over, its naming.
    fn turn(me: &Arc<Self>) {
        loop {
            let mut life = lock(&me.life);
            match life.stage {
                Stage::Opening => {
                    // Still running while it opens: no other turn opens
                    // twice; the stage moves on as this one stops.
                    drop(life);
                    let step = lock(&me.act).open();
                    let mut life = lock(&me.life);
                    life.running = false;
                    return Write::go_with(me, life, step);
                }
                Stage::Writing => {}
                _ => {
                    life.running = false;
                    return;
                }
            }
            let Some(run) = life.queue.pop_front() else {
                life.running = false;
                let Some(end) = life.end else {
                    return;
                };
                life.stage = Stage::Naming;
                drop(life);
                let answer = lock(&me.act).name(end);
                return Write::finish(me, answer);
            };
            // Room for more: a body paused for room goes on.
            let resume = match life.queue.len() < QUEUED_MAX {
                true => life.held.take(),
                false => None,
            };
            drop(life);
            drop(resume);
            let wrote = lock(&me.act).write(&run);
            let mut life = lock(&me.life);
            if life.spare.len() < QUEUED_MAX {
                let mut run = run;
                run.clear();
                life.spare.push(run);
            }
            if let Err(resp) = wrote {
                life.running = false;
                drop(life);
                return Write::finish(me, Some(resp));
            }
        }
    }

    /// Nothing more is done for this write; the answer, if any, goes now
    /// (before the rest of the body, if it is still coming).
    fn finish(me: &Arc<Self>, answer: Option<Response>) {
        let mut life = lock(&me.life);
        if life.stage == Stage::Answered {
            return;
        }
        life.stage = Stage::Answered;
        life.queue.clear();
        let reply = life.reply.take();
        drop(life);
        if let (Some(reply), Some(resp)) = (reply, answer) {
            reply.send(resp);
        }
    }
}

/// Moves the start of `rest` into `run` (given its [`RUN`] of room once)
/// until `run` is full or `rest` empty: whether `run` is full, a run to
/// hand to the writer.
pub(super) fn gather(run: &mut Vec<u8>, rest: &mut &[u8]) -> bool {
    if run.capacity() < RUN {
        run.reserve_exact(RUN - run.len());
    }
    let n = (RUN - run.len()).min(rest.len());
    run.extend_from_slice(&rest[..n]);
    *rest = &rest[n..];
    run.len() == RUN
}

#[cfg(test)]
mod tests;
