//! A streamed body's sink on a connection, whatever the protocol
//! (`spec/http.md`, "Request bodies"): each piece handed to the program
//! on the worker, a pause and its resume (posted to the worker's mailbox
//! from any thread), the route's limit, the body's clocks, and the sink
//! told when its body will not arrive whole — also when its connection is
//! simply dropped.

use super::{IoDone, Turn};
use crate::http::body::{Aborted, Erased, Flow, Reply, Resume};
use crate::http::{Request, Response};
use crate::linux::shared::Shared;
use crate::rt::Runtime;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What became of a piece handed to a sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Given {
    /// Taken; more may come.
    Took,
    /// Taken, and the sink paused the body.
    Paused,
    /// Not given: it would take the body past the route's limit.
    TooLarge,
    /// The sink panicked: it is dropped, never called again.
    Panicked,
}

/// Where a sink's resume goes: its worker's mailbox, its connection and
/// stream (0 on HTTP/1.1).
#[derive(Clone, Copy)]
pub(super) struct Address {
    pub slot: usize,
    pub conn: u64,
    pub stream: u32,
}

/// A body fed to its route's sink as it arrives.
pub(super) struct Fed {
    sink: Option<Box<dyn Erased>>,
    shared: Arc<Shared>,
    /// The most that may arrive; `None`: no limit.
    limit: Option<u64>,
    /// Bytes handed to the sink so far.
    pub received: u64,
    /// The sink paused it: nothing is read until it resumes.
    pub paused: bool,
    /// How many times it paused: a resume is for the pause it names.
    pauses: u64,
    /// A `100 Continue` waits for the sink to resume the body it held
    /// before its first byte.
    pub continue_owed: bool,
    clock: Clock,
}

/// The handle that posts a resume of pause number `pause` of the body at
/// `to` to its worker.
fn resumer(turn: &Turn<'_>, to: Address, pause: u64) -> impl FnMut() -> Resume {
    let mailbox = turn.mailbox.clone();
    move || {
        let mailbox = mailbox.clone();
        Resume::new(move || {
            mailbox.post(IoDone::Resume {
                slot: to.slot,
                conn: to.conn,
                stream: to.stream,
                pause,
            })
        })
    }
}

impl Fed {
    /// The body at `to` fed to `sink`, which may hold it before its first
    /// byte (then [`Fed::paused`] is set) and may answer through its reply
    /// at any time.
    pub(super) fn new(
        mut sink: Box<dyn Erased>,
        limit: Option<u64>,
        turn: &Turn<'_>,
        to: Address,
    ) -> Fed {
        let mailbox = turn.mailbox.clone();
        let reply = Reply::new(move |resp| {
            mailbox.post(IoDone::Answered {
                slot: to.slot,
                conn: to.conn,
                stream: to.stream,
                resp: Box::new(resp),
            })
        });
        let mut make = resumer(turn, to, 1);
        let mut flow = Flow::new(&mut make);
        let began = catch_unwind(AssertUnwindSafe(|| sink.begin(&mut flow, reply)));
        let held = flow.paused();
        let mut fed = Fed {
            sink: began.is_ok().then_some(sink),
            shared: turn.shared.clone(),
            limit,
            received: 0,
            paused: false,
            pauses: 0,
            continue_owed: false,
            clock: Clock::new(turn.now),
        };
        if held {
            fed.paused = true;
            fed.pauses = 1;
            fed.clock.paused_at = Some(turn.now);
        }
        fed
    }

    /// When the body began (its head was decided).
    pub(super) fn started(&self) -> Instant {
        self.clock.started
    }

    /// Hands `piece` to the sink (never empty).
    pub(super) fn give(&mut self, piece: &[u8], turn: &Turn<'_>, to: Address) -> Given {
        let Some(sink) = self.sink.as_mut() else {
            return Given::Panicked;
        };
        if self
            .limit
            .is_some_and(|limit| self.received + piece.len() as u64 > limit)
        {
            return Given::TooLarge;
        }
        let mut make = resumer(turn, to, self.pauses + 1);
        let mut flow = Flow::new(&mut make);
        if catch_unwind(AssertUnwindSafe(|| sink.piece(piece, &mut flow))).is_err() {
            self.sink = None;
            return Given::Panicked;
        }
        let paused = flow.paused();
        self.received += piece.len() as u64;
        self.shared
            .stats
            .bodies
            .bytes
            .fetch_add(piece.len() as u64, Relaxed);
        self.clock.last = turn.now;
        if paused {
            self.paused = true;
            self.pauses += 1;
            self.clock.paused_at = Some(turn.now);
            return Given::Paused;
        }
        Given::Took
    }

    /// The sink resumed pause number `pause`; whether that resumed the
    /// body (a stale handle, for a pause already over, does nothing).
    pub(super) fn resume(&mut self, now: Instant, pause: u64) -> bool {
        if !self.paused || self.pauses != pause {
            return false;
        }
        if let Some(at) = self.clock.paused_at.take() {
            self.clock.paused_for += now.saturating_duration_since(at);
        }
        self.clock.last = now;
        self.paused = false;
        true
    }

    /// When the body's clocks next run out (`None`: paused, no clock
    /// runs).
    pub(super) fn deadline(&self, rt: &Runtime) -> Option<Instant> {
        self.clock.deadline(rt, self.received)
    }

    /// The body arrived whole: the sink's answer, or `None` when it
    /// answers later (through its reply).
    pub(super) fn end(mut self, req: &Request) -> Option<Response> {
        let Some(sink) = self.sink.take() else {
            return Some(Response::internal_error(
                "the sink panicked earlier".to_owned(),
            ));
        };
        self.shared.stats.bodies.streamed.fetch_add(1, Relaxed);
        catch_unwind(AssertUnwindSafe(|| sink.end(req))).unwrap_or_else(|_| {
            Some(Response::internal_error(format!(
                "handler panicked on {} {}",
                req.method(),
                req.target()
            )))
        })
    }

    /// Tells the sink, if it is still there, that its body will not arrive
    /// whole (a panic in it is its own).
    pub(super) fn abort(&mut self, why: Aborted) {
        if let Some(sink) = self.sink.take() {
            self.shared.stats.bodies.aborted.fetch_add(1, Relaxed);
            let _ = catch_unwind(AssertUnwindSafe(|| sink.abort(why)));
        }
    }
}

impl Drop for Fed {
    /// A body still streaming when its connection or stream goes (closed
    /// by the client, a clock, an error): its sink is told.
    fn drop(&mut self) {
        self.abort(Aborted::Gone);
    }
}

/// A streamed body's clocks: from the end of its head, less the time it
/// was paused.
struct Clock {
    started: Instant,
    /// The last time a byte of it arrived (or it resumed).
    last: Instant,
    paused_at: Option<Instant>,
    paused_for: Duration,
}

impl Clock {
    fn new(now: Instant) -> Clock {
        Clock {
            started: now,
            last: now,
            paused_at: None,
            paused_for: Duration::ZERO,
        }
    }

    /// When the body's clocks next run out, with `received` bytes so far:
    /// the pause allowed between reads (`body-idle-timeout`), or the moment
    /// its rate, counted over its active time, would fall below
    /// `body-min-rate` with nothing more — never before `body-rate-grace`.
    fn deadline(&self, rt: &Runtime, received: u64) -> Option<Instant> {
        if self.paused_at.is_some() {
            return None;
        }
        let idle = self.last + rt.body_idle_timeout;
        if rt.body_min_rate == 0 {
            return Some(idle);
        }
        let start = self.started + self.paused_for;
        let floor = Duration::from_secs_f64(received as f64 / rt.body_min_rate as f64);
        Some(idle.min(start + rt.body_rate_grace.max(floor)))
    }
}

/// A deadline far enough never to come (a body its sink holds paused:
/// the sink resumes it, or the connection closes).
pub(super) fn never(now: Instant) -> Instant {
    now + Duration::from_secs(365 * 86_400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clocks_leave_out_paused_time_and_grow_with_the_bytes() {
        let rt = Runtime {
            body_idle_timeout: Duration::from_secs(30),
            body_min_rate: 1000,
            body_rate_grace: Duration::from_secs(5),
            ..Runtime::default()
        };
        let t0 = Instant::now();
        let mut c = Clock::new(t0);
        // Within the grace nothing is asked of the rate.
        assert_eq!(c.deadline(&rt, 0), Some(t0 + Duration::from_secs(5)));
        // 20 000 bytes buy 20 s of active time.
        assert_eq!(c.deadline(&rt, 20_000), Some(t0 + Duration::from_secs(20)));
        // A 10 s pause moves the rate's deadline by 10 s; while paused,
        // no clock runs.
        c.paused_at = Some(t0 + Duration::from_secs(1));
        assert_eq!(c.deadline(&rt, 20_000), None);
        c.paused_at = None;
        c.paused_for = Duration::from_secs(10);
        c.last = t0 + Duration::from_secs(11);
        assert_eq!(c.deadline(&rt, 20_000), Some(t0 + Duration::from_secs(30)));
        // The idle clock wins when it comes first.
        let rt = Runtime {
            body_idle_timeout: Duration::from_secs(2),
            ..rt
        };
        assert_eq!(c.deadline(&rt, 20_000), Some(t0 + Duration::from_secs(13)));
        // No floor: only the idle clock.
        let rt = Runtime {
            body_min_rate: 0,
            ..rt
        };
        assert_eq!(c.deadline(&rt, 0), Some(t0 + Duration::from_secs(13)));
    }
}
