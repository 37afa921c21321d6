//! Request bodies on HTTP/2 (`spec/http.md`, "Request bodies";
//! `spec/http2.md`): a head whose body follows is decided before any of
//! its body is taken — answered now (its body dropped), refused, read
//! whole, or fed to its route's sink as DATA arrives. A streamed body's
//! credit returns only as its sink takes it, so a paused sink shuts its
//! stream's window and its siblings go on; a body past its limit or its
//! clock gets its status on the stream, which is then reset, and the
//! connection is kept.

use super::super::sink::{never, Address, Fed, Given};
use super::super::{serving, Link, Turn};
use super::H2;
use crate::http::answer::{self, Before};
use crate::http::body::{Aborted, DRAIN_MAX};
use crate::http::fields::request::Parsed;
use crate::http::h2::conn::Intake;
use crate::http::request::{reject, Reject};
use crate::http::{Request, Response};
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// A request whose body is arriving.
pub(in crate::linux::conn) struct Inbound {
    stream: u32,
    req: Request,
    started: Instant,
    how: How,
}

/// Whether a body no one will read is let arrive and dropped, up to
/// [`DRAIN_MAX`], before its stream is reset: unless the client waits for
/// `100 Continue` (it may never send it). A longer body is drained to the
/// bound too, and only then reset: a client that sends its body before
/// it reads the answer (curl 7.88 does) reads the status first.
fn drainable(waits: bool) -> bool {
    !waits
}

enum How {
    /// Gathered whole by the core (`Event::Body` brings it).
    Whole,
    /// Fed to a sink; `held`: pieces come while it was paused (at most
    /// its window); `ended`: the last piece is among them.
    Stream {
        fed: Fed,
        held: VecDeque<Bytes>,
        ended: bool,
    },
}

/// The client waits for `100 Continue` before it sends the body.
fn expects_continue(req: &Request) -> bool {
    req.header("expect")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("100-continue"))
}

impl Inbound {
    /// When its clock runs out (`None`: a paused sink holds it).
    fn deadline(&self, turn: &Turn<'_>) -> Option<Instant> {
        match &self.how {
            How::Whole => Some(self.started + turn.rt.body_timeout),
            How::Stream { fed, .. } => fed.deadline(turn.rt),
        }
    }
}

impl H2 {
    /// A request whose body follows (`follows`; else one that ended with
    /// its head, whose route may still take an empty body): how its body
    /// is taken is decided from its head. Whether it was answered at once.
    pub(super) fn head(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        stream: u32,
        parsed: Parsed,
        follows: bool,
    ) -> bool {
        let started = Instant::now();
        let length = parsed.content_length;
        let mut req = Request::new(parsed.fields, parsed.text, Bytes::new(), link.peer.clone());
        req.client = link.client.clone();
        let declared = answer::declared(&req, follows, length);
        let before = super::super::before_body(turn, link, &mut req, declared);
        // A body no one reads is let arrive (and dropped) when it is small
        // and the client is not waiting to be told to send it, as on
        // HTTP/1.1; otherwise its stream is reset once its answer is out.
        let unread = match drainable(expects_continue(&req)) {
            true => Intake::Drain { max: DRAIN_MAX },
            false => Intake::Discard,
        };
        let unread_counted = follows && unread != Intake::Discard;
        if matches!(before, Before::AnswerNow | Before::Refuse(_)) && unread_counted {
            turn.shared.stats.bodies.drained.fetch_add(1, Relaxed);
        }
        let how = match before {
            Before::AnswerNow if !follows => {
                self.answer_request(link, turn, stream, req, started);
                return true;
            }
            Before::AnswerNow => {
                self.core.take_body(stream, unread, turn.now);
                self.answer_request(link, turn, stream, req, started);
                return true;
            }
            Before::Refuse(resp) => {
                turn.shared.stats.bodies.refused.fetch_add(1, Relaxed);
                if follows {
                    self.core.take_body(stream, unread, turn.now);
                }
                let decided = answer::refused(
                    &req,
                    resp,
                    false,
                    &mut super::super::h1::log_error(turn, link),
                );
                self.respond(link, turn, stream, &req, decided, started);
                return true;
            }
            Before::Whole { limit } => {
                self.continue_if_asked(&req, stream);
                self.core
                    .take_body(stream, Intake::Whole { limit }, turn.now);
                How::Whole
            }
            Before::Stream { sink, limit } => {
                let to = Address {
                    slot: turn.slot,
                    conn: link.id,
                    stream,
                };
                let mut fed = Fed::new(sink, limit, turn, to);
                // A sink that holds the body before its first byte is
                // ready for it once it resumes: the client is told then.
                match fed.paused {
                    true => fed.continue_owed = follows && expects_continue(&req),
                    false if follows => self.continue_if_asked(&req, stream),
                    false => {}
                }
                if follows {
                    self.core.take_body(stream, Intake::Stream, turn.now);
                }
                How::Stream {
                    fed,
                    held: VecDeque::new(),
                    ended: !follows,
                }
            }
        };
        self.inbound.push(Inbound {
            stream,
            req,
            started,
            how,
        });
        // A body that ended with its head ends now (once its sink lets it).
        !follows && self.pump(link, turn, stream)
    }

    /// `100 Continue` for a client that asked for it: its body is wanted.
    fn continue_if_asked(&mut self, req: &Request, stream: u32) {
        if expects_continue(req) {
            self.core.informational(stream, 100);
        }
    }

    /// A whole body arrived: the request is answered.
    pub(super) fn whole_body(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        stream: u32,
        body: Bytes,
    ) -> bool {
        let Some(i) = self.inbound.iter().position(|b| b.stream == stream) else {
            return false;
        };
        let Inbound {
            mut req, started, ..
        } = self.inbound.swap_remove(i);
        let bodies = &turn.shared.stats.bodies;
        bodies.whole.fetch_add(1, Relaxed);
        bodies.bytes.fetch_add(body.len() as u64, Relaxed);
        req.body = body;
        self.answer_request(link, turn, stream, req, started);
        true
    }

    /// A piece of a streamed body arrived: it goes to the sink, unless the
    /// sink paused (then it waits). Whether the request was answered.
    pub(super) fn data(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        stream: u32,
        data: Bytes,
        end: bool,
    ) -> bool {
        let Some(b) = self.inbound.iter_mut().find(|b| b.stream == stream) else {
            return false;
        };
        if let How::Stream { held, ended, .. } = &mut b.how {
            if !data.is_empty() {
                held.push_back(data);
            }
            *ended |= end;
        }
        self.pump(link, turn, stream)
    }

    /// Hands a streamed body's waiting pieces to its sink while it takes
    /// them; at the end, its answer. Whether the request was answered.
    fn pump(&mut self, link: &mut Link, turn: &mut Turn<'_>, stream: u32) -> bool {
        let Some(i) = self.inbound.iter().position(|b| b.stream == stream) else {
            return false;
        };
        let to = Address {
            slot: turn.slot,
            conn: link.id,
            stream,
        };
        let How::Stream { fed, held, ended } = &mut self.inbound[i].how else {
            return false;
        };
        while !fed.paused {
            let Some(piece) = held.pop_front() else {
                break;
            };
            match fed.give(&piece, turn, to) {
                Given::Took | Given::Paused => self.core.consumed(stream, piece.len(), turn.now),
                Given::TooLarge => {
                    let reject = reject(413, "request body larger than allowed");
                    self.end_early(link, turn, i, Aborted::TooLarge, reject);
                    return true;
                }
                Given::Panicked => {
                    let req = &self.inbound[i].req;
                    let why = format!("handler panicked on {} {}", req.method(), req.target());
                    super::super::h1::log_error(turn, link)(req, &why);
                    self.end_early(
                        link,
                        turn,
                        i,
                        Aborted::Gone,
                        reject(500, "the handler panicked"),
                    );
                    return true;
                }
            }
        }
        if fed.paused || !held.is_empty() || !*ended {
            return false;
        }
        let Inbound {
            mut req,
            started,
            how,
            ..
        } = self.inbound.swap_remove(i);
        let How::Stream { fed, .. } = how else {
            unreachable!("matched above");
        };
        req.received = fed.received;
        let Some(resp) = fed.end(&req) else {
            // The sink answers once its work is done.
            self.wait_for_sink(turn, stream, req, started);
            return true;
        };
        let progress = answer::answer_with(
            &serving(turn, link),
            &mut req,
            resp,
            true,
            &mut super::super::h1::log_error(turn, link),
        );
        self.go_on(link, turn, stream, req, progress, started);
        true
    }

    /// A body that will not be read to its end: its sink is told why, the
    /// client gets `reject`'s status on the stream, and the rest of the
    /// body is dropped — let arrive to a bound when it is only too large
    /// (the client may be sending it before it reads), else the stream is
    /// reset once the answer is out.
    fn end_early(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        i: usize,
        why: Aborted,
        reject: Reject,
    ) {
        let resp = Response::status_page(reject.status);
        let waits = match &self.inbound[i].how {
            How::Stream { fed, .. } => fed.continue_owed,
            How::Whole => false,
        };
        let drain = why == Aborted::TooLarge && drainable(waits);
        self.answer_early(link, turn, i, why, resp, drain);
    }

    /// Answers body `i` with `resp` before all of it came: its sink is told
    /// why, and the rest of the body is dropped (`drain`: let arrive, to a
    /// bound, before the stream goes).
    fn answer_early(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        i: usize,
        why: Aborted,
        resp: Response,
        drain: bool,
    ) {
        let mut b = self.inbound.swap_remove(i);
        if let How::Stream { fed, .. } = &mut b.how {
            b.req.received = fed.received;
            fed.abort(why);
        }
        match drain {
            true => self.core.drain_body(b.stream, DRAIN_MAX),
            false => self.core.stop_body(b.stream),
        }
        let decided = answer::refused(
            &b.req,
            resp,
            false,
            &mut super::super::h1::log_error(turn, link),
        );
        self.respond(link, turn, b.stream, &b.req, decided, b.started);
        self.push_output(link);
    }

    /// A paused body's sink resumed it.
    pub(in crate::linux::conn) fn resume_body(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        stream: u32,
        pause: u64,
    ) {
        let Some(b) = self.inbound.iter_mut().find(|b| b.stream == stream) else {
            return;
        };
        let How::Stream { fed, .. } = &mut b.how else {
            return;
        };
        if fed.resume(turn.now, pause) {
            if std::mem::take(&mut fed.continue_owed) {
                self.core.informational(stream, 100);
            }
            self.pump(link, turn, stream);
            self.push_output(link);
        }
    }

    /// A sink that answers later answered: after its body, the answer goes
    /// out as any; before all of it came, the rest is dropped.
    pub(in crate::linux::conn) fn answered(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        stream: u32,
        resp: Response,
    ) {
        if let Some(i) = self.inbound.iter().position(|b| b.stream == stream) {
            // Its sink answered: nothing more is its to hear. A client
            // not waiting for `100 Continue` may send the rest: let a
            // small rest arrive, as for a body refused from its head.
            let waits = match &self.inbound[i].how {
                How::Stream { fed, .. } => fed.continue_owed,
                How::Whole => false,
            };
            let drain = drainable(waits);
            self.answer_early(link, turn, i, Aborted::Gone, resp, drain);
            return;
        }
        self.sink_answered(link, turn, stream, resp);
    }

    /// The stream is gone (reset): its body will not come; a sink is told
    /// when its [`Fed`] is dropped.
    pub(super) fn drop_body(&mut self, stream: u32) {
        self.inbound.retain(|b| b.stream != stream);
    }

    /// The server stops: every sink is told.
    pub(in crate::linux::conn) fn stop_bodies(&mut self) {
        for b in &mut self.inbound {
            if let How::Stream { fed, .. } = &mut b.how {
                fed.abort(Aborted::Stopping);
            }
        }
    }

    /// The soonest a body's clock runs out; far away when every body
    /// being read is held by its paused sink; `None`: no body is arriving.
    pub(super) fn body_deadline(&self, turn: &Turn<'_>) -> Option<Instant> {
        if self.inbound.is_empty() {
            return None;
        }
        let soonest = self.inbound.iter().filter_map(|b| b.deadline(turn)).min();
        Some(soonest.unwrap_or(never(turn.now)))
    }

    /// Bodies whose clock ran out get 408 on their stream (which is then
    /// reset); the connection and its other streams go on. How many.
    pub(in crate::linux::conn) fn bodies_expired(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
    ) -> usize {
        let mut expired = 0;
        while let Some(i) = self
            .inbound
            .iter()
            .position(|b| b.deadline(turn).is_some_and(|d| turn.now >= d))
        {
            let reject = reject(408, "the request body came too slowly");
            self.end_early(link, turn, i, Aborted::TooSlow, reject);
            expired += 1;
        }
        expired
    }
}
