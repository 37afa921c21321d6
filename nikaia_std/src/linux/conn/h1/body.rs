//! The body side of HTTP/1.1 (`spec/http.md`, "Request bodies"): a head
//! with a body goes to [`answer::before_body`] before a byte of it is
//! read; then the body is refused (thrown away to a bound, or the
//! connection closed), read whole (under `body-timeout`), or fed to the
//! route's sink as it arrives (`stream.rs`); and the clocks of each.

use super::super::sink::{never, Address, Fed};
use super::super::{Link, Next, Turn};
use super::stream::Streaming;
use super::{log_error, State, H1};
use crate::http::answer::{self, Before};
use crate::http::body::{Aborted, DRAIN_MAX};
use crate::http::h1::chunked::Chunked;
use crate::http::h1::parse::{Framing, Head};
use crate::http::request::{reject, Reject};
use crate::http::Request;
use bytes::{Buf, Bytes};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// How far a body still has to come.
pub(super) enum Incoming {
    /// This many bytes of a `Content-Length` body.
    Length(u64),
    /// A chunked body, decoded as it comes.
    Chunked(Box<Chunked>),
}

impl Incoming {
    fn new(framing: &Framing, limit: Option<u64>, trailers: usize) -> Incoming {
        match framing {
            Framing::None => Incoming::Length(0),
            Framing::Length(n) => Incoming::Length(*n),
            Framing::Chunked => {
                Incoming::Chunked(Box::new(Chunked::new(limit.unwrap_or(u64::MAX), trailers)))
            }
        }
    }

    /// Takes what `rbuf` holds of the body, handing each run of it to
    /// `piece` while it says to go on. `Ok(true)`: the body is complete.
    pub(super) fn take(
        &mut self,
        rbuf: &mut bytes::BytesMut,
        piece: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<bool, Reject> {
        match self {
            Incoming::Length(left) => {
                let n = (*left).min(rbuf.len() as u64) as usize;
                if n > 0 {
                    piece(&rbuf[..n]);
                    rbuf.advance(n);
                    *left -= n as u64;
                }
                Ok(*left == 0)
            }
            Incoming::Chunked(dec) => {
                let before = dec.consumed;
                let done = dec.feed_pieces(rbuf, piece);
                let used = dec.consumed - before;
                rbuf.advance(used);
                done
            }
        }
    }
}

/// A head with a body, before it is decided.
pub(in crate::linux::conn) struct Pending {
    req: Request,
    framing: Framing,
    keep_alive: bool,
    expect: bool,
    started: Instant,
}

/// A body read whole into memory.
pub(in crate::linux::conn) struct Whole {
    req: Request,
    incoming: Incoming,
    body: Vec<u8>,
    keep_alive: bool,
    started: Instant,
}

/// The most of a body one connection reads in one turn of its worker
/// before the others are served.
const BODY_SLICE: u64 = 256 << 10;
/// The most one read brings of a streamed body: what a paused sink's body
/// may hold in memory.
const STREAM_READ_MAX: usize = 64 << 10;

/// A body no one reads, thrown away to a bound; then `then`, if any, is
/// answered.
pub(in crate::linux::conn) struct Drain {
    incoming: Incoming,
    budget: u64,
    then: Option<Pending>,
    /// When it stops, however it trickles: `body-timeout` after it began
    /// (a pause of `body-idle-timeout` stops it sooner).
    until: Instant,
}

impl Drain {
    /// What is still to come of a body answered before it all came, when
    /// it may be thrown away to keep the connection: not while the client
    /// waits for `100 Continue`, nor past [`DRAIN_MAX`].
    pub(super) fn rest(incoming: Incoming, continue_owed: bool, turn: &Turn<'_>) -> Option<Drain> {
        let small = match &incoming {
            Incoming::Length(n) => *n <= DRAIN_MAX,
            Incoming::Chunked(_) => true,
        };
        (small && !continue_owed).then(|| Drain::new(incoming, None, turn))
    }

    fn new(incoming: Incoming, then: Option<Pending>, turn: &Turn<'_>) -> Drain {
        Drain {
            incoming,
            budget: DRAIN_MAX,
            then,
            until: turn.now + turn.rt.body_timeout,
        }
    }
}

/// Queues `100 Continue`.
pub(super) fn push_continue(link: &mut Link) {
    link.out
        .push(Bytes::from_static(b"HTTP/1.1 100 Continue\r\n\r\n"));
}

/// Whether the body a head announces may be thrown away to keep the
/// connection: not if the client waits for `100 Continue` (it may never
/// send the body, and what comes next would be read as one), nor past
/// [`DRAIN_MAX`].
fn drainable(p: &Pending) -> bool {
    !p.expect
        && match p.framing {
            Framing::Length(n) => n <= DRAIN_MAX,
            Framing::Chunked | Framing::None => true,
        }
}

impl H1 {
    /// A head with a body: decides how its body is taken before any of it
    /// is read. `Ok(true)`: an answer was queued.
    pub(super) fn with_body(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        head: Head,
    ) -> Result<bool, Next> {
        let head_bytes = self.rbuf.split_to(head.len).freeze();
        let mut req = Request::new(head_bytes, head.text, Bytes::new(), link.peer.clone());
        req.client = link.client.clone();
        let pending = Pending {
            req,
            framing: head.framing,
            keep_alive: head.keep_alive,
            expect: head.expect_continue,
            started: Instant::now(),
        };
        self.decide(link, turn, pending)
    }

    /// Decides how the body of `p` is taken, and begins.
    fn decide(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        mut p: Pending,
    ) -> Result<bool, Next> {
        let length = match p.framing {
            Framing::Length(n) => Some(n),
            _ => None,
        };
        let present = p.framing != Framing::None;
        let declared = answer::declared(&p.req, present, length);
        let before = super::super::before_body(turn, link, &mut p.req, declared);
        match before {
            Before::AnswerNow if p.framing == Framing::None => {
                // No body came: nothing to throw away.
                self.answer(link, turn, p, None);
                self.next_begun();
                Ok(true)
            }
            Before::AnswerNow if drainable(&p) => {
                let incoming = Incoming::new(&p.framing, None, turn.rt.max_header_bytes);
                self.state = State::Draining(Box::new(Drain::new(incoming, Some(p), turn)));
                self.drain(link, turn)
            }
            Before::AnswerNow => {
                self.answer(link, turn, p, None);
                Ok(true)
            }
            Before::Refuse(resp) => {
                turn.shared.stats.bodies.refused.fetch_add(1, Relaxed);
                let trailers = turn.rt.max_header_bytes;
                let drain = drainable(&p).then(|| Incoming::new(&p.framing, None, trailers));
                self.answer(link, turn, p, Some(resp));
                if let Some(incoming) = drain {
                    self.state = State::Draining(Box::new(Drain::new(incoming, None, turn)));
                }
                Ok(true)
            }
            Before::Whole { limit } => {
                self.continue_if_waited(link, &p);
                let incoming = Incoming::new(&p.framing, limit, turn.rt.max_header_bytes);
                self.state = State::Body(Box::new(Whole {
                    req: p.req,
                    incoming,
                    body: Vec::new(),
                    keep_alive: p.keep_alive,
                    started: p.started,
                }));
                self.read_whole(link, turn)
            }
            Before::Stream { sink, limit } => {
                let to = Address {
                    slot: turn.slot,
                    conn: link.id,
                    stream: 0,
                };
                let mut fed = Fed::new(sink, limit, turn, to);
                // A sink that holds the body before its first byte is
                // ready for it once it resumes: the client is told then.
                match fed.paused {
                    true => fed.continue_owed = self.continue_wanted(&p),
                    false => self.continue_if_waited(link, &p),
                }
                let incoming = Incoming::new(&p.framing, limit, turn.rt.max_header_bytes);
                self.state = State::Streaming(Box::new(Streaming {
                    req: p.req,
                    incoming,
                    fed,
                    keep_alive: p.keep_alive,
                }));
                self.feed(link, turn)
            }
        }
    }

    /// `100 Continue`, where the client waits for it and the body is not
    /// all here.
    fn continue_if_waited(&mut self, link: &mut Link, p: &Pending) {
        if self.continue_wanted(p) {
            push_continue(link);
        }
    }

    /// Whether the client waits for `100 Continue` and its body is not
    /// all here.
    fn continue_wanted(&self, p: &Pending) -> bool {
        let here = match p.framing {
            Framing::Length(n) => self.rbuf.len() as u64 >= n,
            Framing::None => true,
            Framing::Chunked => false,
        };
        p.expect && !here
    }

    /// Answers `p` with the pipeline, or with `refusal`; the connection
    /// stays open only where its body can be thrown away.
    fn answer(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        mut p: Pending,
        refusal: Option<crate::http::Response>,
    ) {
        let keep = p.keep_alive && drainable(&p) && super::may_keep(turn);
        self.state = State::Idle;
        match refusal {
            None => {
                let progress = super::super::pipeline(turn, link, &mut p.req, keep);
                self.go_on(link, turn, p.req, progress, p.started);
            }
            Some(resp) => {
                let decided = answer::refused(&p.req, resp, !keep, &mut log_error(turn, link));
                self.queue(link, turn, &p.req, decided, p.started);
                self.spare.keep(p.req);
            }
        }
    }

    /// Throws away what has come of a body no one reads; past the bound,
    /// the connection closes once its answer is out.
    pub(super) fn drain(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> Result<bool, Next> {
        let State::Draining(d) = &mut self.state else {
            return Ok(false);
        };
        let before = self.rbuf.len();
        let done = d.incoming.take(&mut self.rbuf, &mut |_| true);
        let used = (before - self.rbuf.len()) as u64;
        d.budget = d.budget.saturating_sub(used);
        let over = d.budget == 0 && !matches!(done, Ok(true));
        if done.is_err() || over || done == Ok(true) {
            turn.shared.stats.bodies.drained.fetch_add(1, Relaxed);
        }
        if done.is_err() || over {
            // Malformed or too much: answer (if not yet) and close. A
            // request whose framing is broken is answered as malformed
            // (400), whatever its head would have been answered: the
            // client and any proxy before us may read its end elsewhere.
            let State::Draining(d) = std::mem::replace(&mut self.state, State::Idle) else {
                unreachable!("checked above");
            };
            match (d.then, done) {
                (Some(p), Err(reject)) => {
                    self.spare.keep(p.req);
                    self.refuse(link, turn, reject);
                }
                (Some(mut p), _) => {
                    p.keep_alive = false; // the answer says it closes
                    self.answer(link, turn, p, None);
                }
                (None, _) => {}
            }
            link.close_after = true;
            self.rbuf.clear();
            return Ok(true);
        }
        if let Ok(false) = done {
            self.read_body(link, turn)?;
            return Ok(false);
        }
        let State::Draining(d) = std::mem::replace(&mut self.state, State::Idle) else {
            unreachable!("checked above");
        };
        match d.then {
            Some(p) => {
                self.answer(link, turn, p, None);
                self.next_begun();
                Ok(true)
            }
            None => {
                self.next_begun();
                Ok(false)
            }
        }
    }

    /// Reads a whole body; once it is here, the request is answered.
    pub(super) fn read_whole(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
    ) -> Result<bool, Next> {
        let State::Body(w) = &mut self.state else {
            return Ok(false);
        };
        let body = &mut w.body;
        let done = match &w.incoming {
            // A length body is taken off the buffer whole, without a copy.
            Incoming::Length(n) => Ok(self.rbuf.len() as u64 >= *n),
            Incoming::Chunked(_) => w.incoming.take(&mut self.rbuf, &mut |piece| {
                body.extend_from_slice(piece);
                true
            }),
        };
        match done {
            Err(reject) => {
                self.refuse(link, turn, reject);
                Ok(true)
            }
            Ok(false) => {
                self.read_body(link, turn)?;
                Ok(false)
            }
            Ok(true) => {
                let State::Body(w) = std::mem::replace(&mut self.state, State::Idle) else {
                    unreachable!("checked above");
                };
                let Whole {
                    mut req,
                    incoming,
                    body,
                    keep_alive,
                    started,
                } = *w;
                req.body = match incoming {
                    Incoming::Length(n) => self.rbuf.split_to(n as usize).freeze(),
                    Incoming::Chunked(_) => Bytes::from(body),
                };
                let bodies = &turn.shared.stats.bodies;
                bodies.whole.fetch_add(1, Relaxed);
                bodies.bytes.fetch_add(req.body.len() as u64, Relaxed);
                let keep = keep_alive && super::may_keep(turn);
                let progress = super::super::pipeline(turn, link, &mut req, keep);
                self.go_on(link, turn, req, progress, started);
                self.next_begun();
                Ok(true)
            }
        }
    }

    /// More of a body is wanted: reads it (unless a `100 Continue` waits
    /// to be written first, or this connection had its share of the
    /// worker's turn), and waits with the body's clock.
    pub(super) fn read_body(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> Result<(), Next> {
        link.deadline = self.body_wait(turn);
        if !link.out.is_empty() {
            return Ok(());
        }
        if self.slice.0 != turn.now {
            self.slice = (turn.now, 0);
        }
        if self.slice.1 >= BODY_SLICE {
            return Err(Next::Yield);
        }
        if matches!(self.state, State::Streaming(_)) && self.rbuf.capacity() > STREAM_READ_MAX {
            // A buffer grown by an earlier request: a read into it could
            // bring more than a paused body may hold.
            let rest = std::mem::take(&mut self.rbuf);
            self.rbuf = bytes::BytesMut::with_capacity(rest.len().max(16 << 10));
            self.rbuf.extend_from_slice(&rest);
        }
        let before = self.rbuf.len();
        self.read_more(link, turn)?;
        self.slice.1 += self.rbuf.len().saturating_sub(before) as u64;
        Ok(())
    }

    /// When the body being read must have made progress by (the deadline
    /// its connection waits with); `None`: no body is being read, or its
    /// sink paused it.
    fn body_deadline(&self, turn: &Turn<'_>) -> Option<Instant> {
        match &self.state {
            State::Body(w) => Some(w.started + turn.rt.body_timeout),
            State::Streaming(s) => s.fed.deadline(turn.rt),
            State::Draining(d) => Some(d.until),
            _ => None,
        }
    }

    /// The deadline a connection reading a body waits with: its body's
    /// clock; none while a sink paused it (the program holds it); for a
    /// body thrown away, a pause of `body-idle-timeout`.
    pub(in crate::linux::conn) fn body_wait(&self, turn: &Turn<'_>) -> Instant {
        match &self.state {
            State::Draining(d) => (turn.now + turn.rt.body_idle_timeout).min(d.until),
            // Far enough never to come: the sink resumes, or the
            // connection closes.
            _ => self.body_deadline(turn).unwrap_or(never(turn.now)),
        }
    }

    /// The body's clock ran out: 408, and the connection closes. Whether a
    /// body was being read.
    pub(in crate::linux::conn) fn body_expired(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
    ) -> bool {
        let Some(deadline) = self.body_deadline(turn) else {
            return false;
        };
        if turn.now < deadline {
            return false;
        }
        if let State::Draining(_) = self.state {
            // A body no one reads, too slow to throw away: the answer its
            // head was given (if it has not gone yet), and the close.
            let State::Draining(d) = std::mem::replace(&mut self.state, State::Idle) else {
                unreachable!("checked above");
            };
            if let Some(mut p) = d.then {
                p.keep_alive = false;
                self.answer(link, turn, p, None);
            }
            link.close_after = true;
            self.rbuf.clear();
            return true;
        }
        self.abort_sink(Aborted::TooSlow);
        let reject = reject(408, "the request body came too slowly");
        self.refuse(link, turn, reject);
        true
    }
}
