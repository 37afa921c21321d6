//! Request bodies on HTTP/3 (`spec/http.md`, "Request bodies";
//! `spec/http3.md`): a head whose body follows is decided before any of its
//! body is taken — answered now, refused, read whole, or fed to its
//! route's sink as DATA arrives. A paused sink's stream is not read, so
//! quinn returns no credit and the client waits while its siblings go on;
//! a body past its limit or its clock gets its status on the stream, and
//! the client is asked to stop sending the rest (STOP_SENDING loses
//! nothing of the answer, unlike a TCP reset, so nothing is drained).

use super::super::sink::{Address, Fed, Given};
use super::{short, H3};
use crate::http::answer::{self, Before};
use crate::http::body::{Aborted, Intake, DRAIN_MAX};
use crate::http::fields::request::Parsed;
use crate::http::h3::response::headers_frame;
use crate::http::request::{reject, Reject};
use crate::http::{Request, Response};
use bytes::Bytes;
use quinn_proto::{Connection, StreamId, VarInt};
use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// A request whose body is arriving.
pub(super) struct Inbound {
    stream: u64,
    req: Request,
    started: Instant,
    how: How,
}

enum How {
    /// Gathered whole by the core (`Event::Body` brings it).
    Whole,
    /// Fed to a sink; `held`: pieces read while it was paused; `ended`:
    /// the last piece is among them.
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
    fn deadline(&self, turn: &super::Turn<'_>) -> Option<Instant> {
        match &self.how {
            How::Whole => Some(self.started + turn.rt.body_timeout),
            How::Stream { fed, .. } => fed.deadline(turn.rt),
        }
    }
}

impl H3 {
    fn address(&self, turn: &super::Turn<'_>, stream: u64) -> Address {
        Address {
            slot: turn.slot,
            conn: self.id,
            stream: short(stream),
        }
    }

    /// A request whose body follows (`follows`; else one that ended with
    /// its head, whose route may still take an empty body): how its body
    /// is taken is decided from its head.
    pub(super) fn head(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
        parsed: Parsed,
        follows: bool,
    ) {
        let started = Instant::now();
        let length = parsed.content_length;
        let mut req = self.request_of(parsed);
        let declared = answer::declared(&req, follows, length);
        let before = answer::before_body(
            &Self::serving(turn),
            &turn.shared.router,
            None,
            &mut req,
            declared,
        );
        let fatal = match before {
            Before::AnswerNow => {
                if follows {
                    turn.shared.stats.bodies.drained.fetch_add(1, Relaxed);
                    let unread = Intake::Drain { max: DRAIN_MAX };
                    self.core.take_body(stream, unread).err()
                } else {
                    None
                }
            }
            Before::Refuse(resp) => {
                turn.shared.stats.bodies.refused.fetch_add(1, Relaxed);
                let fatal = match follows {
                    true => self.core.take_body(stream, Intake::Discard).err(),
                    false => None,
                };
                let decided = answer::refused(
                    &req,
                    resp,
                    false,
                    &mut super::super::h1::log_error_by(turn, &self.peer),
                );
                self.respond(conn, turn, stream, &req, decided, started);
                self.fail(conn, turn, fatal);
                return;
            }
            Before::Whole { limit } => {
                self.continue_if_asked(conn, &req, stream);
                self.inbound.push(Inbound {
                    stream,
                    req,
                    started,
                    how: How::Whole,
                });
                let fatal = self.core.take_body(stream, Intake::Whole { limit }).err();
                return self.fail(conn, turn, fatal);
            }
            Before::Stream { sink, limit } => {
                let to = self.address(turn, stream);
                let mut fed = Fed::new(sink, limit, turn, to);
                match fed.paused {
                    true => fed.continue_owed = follows && expects_continue(&req),
                    false if follows => self.continue_if_asked(conn, &req, stream),
                    false => {}
                }
                if fed.paused {
                    self.held.insert(stream);
                }
                self.inbound.push(Inbound {
                    stream,
                    req,
                    started,
                    how: How::Stream {
                        fed,
                        held: VecDeque::new(),
                        ended: !follows,
                    },
                });
                let fatal = match follows {
                    true => self.core.take_body(stream, Intake::Stream).err(),
                    false => None,
                };
                self.fail(conn, turn, fatal);
                if !follows {
                    self.pump(conn, turn, stream);
                }
                return;
            }
        };
        self.fail(conn, turn, fatal);
        self.answer_request(conn, turn, stream, req, started);
    }

    /// `100 Continue` for a client that asked for it: its body is wanted.
    fn continue_if_asked(&mut self, conn: &mut Connection, req: &Request, stream: u64) {
        if expects_continue(req) {
            informational(conn, stream, 100);
        }
    }

    /// A whole body arrived: the request is answered.
    pub(super) fn whole_body(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
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
        self.answer_request(conn, turn, stream, req, started);
        true
    }

    /// A body taken whole passed its limit: 413.
    pub(super) fn too_large(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
    ) -> bool {
        let Some(i) = self.inbound.iter().position(|b| b.stream == stream) else {
            return false;
        };
        let reject = reject(413, "request body larger than allowed");
        self.end_early(conn, turn, i, Aborted::TooLarge, reject);
        true
    }

    /// A piece of a streamed body arrived: it goes to the sink, unless the
    /// sink paused (then it waits). Whether the request was answered.
    pub(super) fn data(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
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
        self.pump(conn, turn, stream)
    }

    /// Hands a streamed body's waiting pieces to its sink while it takes
    /// them; at the end, its answer. Whether the request was answered.
    fn pump(&mut self, conn: &mut Connection, turn: &mut super::Turn<'_>, stream: u64) -> bool {
        let Some(i) = self.inbound.iter().position(|b| b.stream == stream) else {
            return false;
        };
        let to = self.address(turn, stream);
        let How::Stream { fed, held, ended } = &mut self.inbound[i].how else {
            return false;
        };
        while !fed.paused {
            let Some(piece) = held.pop_front() else {
                break;
            };
            match fed.give(&piece, turn, to) {
                Given::Took | Given::Paused => {}
                Given::TooLarge => {
                    let reject = reject(413, "request body larger than allowed");
                    self.end_early(conn, turn, i, Aborted::TooLarge, reject);
                    return true;
                }
                Given::Panicked => {
                    let req = &self.inbound[i].req;
                    let why = format!("handler panicked on {} {}", req.method(), req.target());
                    super::super::h1::log_error_by(turn, &self.peer)(req, &why);
                    let reject = reject(500, "the handler panicked");
                    self.end_early(conn, turn, i, Aborted::Gone, reject);
                    return true;
                }
            }
        }
        if fed.paused {
            // Not read again until the sink resumes: no credit returns.
            self.held.insert(stream);
            return false;
        }
        self.held.remove(&stream);
        if !held.is_empty() || !*ended {
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
            &Self::serving(turn),
            &mut req,
            resp,
            true,
            &mut super::super::h1::log_error_by(turn, &self.peer),
        );
        self.go_on(conn, turn, stream, req, progress, started);
        true
    }

    /// A body that will not be read to its end: its sink is told why, the
    /// client gets `reject`'s status on the stream and is asked to stop
    /// sending the rest.
    fn end_early(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        i: usize,
        why: Aborted,
        reject: Reject,
    ) {
        let resp = Response::status_page(reject.status);
        self.answer_early(conn, turn, i, why, resp);
    }

    /// Answers body `i` with `resp` before all of it came.
    fn answer_early(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        i: usize,
        why: Aborted,
        resp: Response,
    ) {
        let mut b = self.inbound.swap_remove(i);
        if let How::Stream { fed, .. } = &mut b.how {
            b.req.received = fed.received;
            fed.abort(why);
        }
        self.held.remove(&b.stream);
        self.core.abandon_body(b.stream, None);
        let decided = answer::refused(
            &b.req,
            resp,
            false,
            &mut super::super::h1::log_error_by(turn, &self.peer),
        );
        self.respond(conn, turn, b.stream, &b.req, decided, b.started);
    }

    /// A paused body's sink resumed it: what was held goes to it, and the
    /// stream is read again.
    pub(super) fn resume_body(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
        pause: u64,
    ) {
        let Some(b) = self.inbound.iter_mut().find(|b| b.stream == stream) else {
            return;
        };
        let How::Stream { fed, .. } = &mut b.how else {
            return;
        };
        if !fed.resume(turn.now, pause) {
            return;
        }
        if std::mem::take(&mut fed.continue_owed) {
            informational(conn, stream, 100);
        }
        self.pump(conn, turn, stream);
        if !self.held.contains(&stream) {
            if let Ok(v) = VarInt::from_u64(stream) {
                self.read(conn, turn, StreamId::from(v));
            }
        }
    }

    /// A sink that answers later answered: after its body, the answer goes
    /// out as any; before all of it came, the rest is not wanted.
    pub(super) fn answered(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
        resp: Response,
    ) {
        if let Some(i) = self.inbound.iter().position(|b| b.stream == stream) {
            self.answer_early(conn, turn, i, Aborted::Gone, resp);
            return;
        }
        self.sink_answered(conn, turn, stream, resp);
    }

    /// The stream is gone: its body will not come; a sink is told when
    /// its [`Fed`] is dropped.
    pub(super) fn drop_body(&mut self, stream: u64) {
        self.inbound.retain(|b| b.stream != stream);
        self.held.remove(&stream);
    }

    /// The server stops: every sink is told.
    pub(super) fn stop_bodies(&mut self) {
        for b in &mut self.inbound {
            if let How::Stream { fed, .. } = &mut b.how {
                fed.abort(Aborted::Stopping);
            }
        }
    }

    /// Bodies whose clock ran out get 408 on their stream; the connection
    /// and its other streams go on. How many.
    pub(super) fn bodies_expired(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
    ) -> usize {
        let mut expired = 0;
        while let Some(i) = self
            .inbound
            .iter()
            .position(|b| b.deadline(turn).is_some_and(|d| turn.now >= d))
        {
            let reject = reject(408, "the request body came too slowly");
            self.end_early(conn, turn, i, Aborted::TooSlow, reject);
            expired += 1;
        }
        expired
    }
}

/// An interim answer (`100 Continue`) on a request stream, before its
/// final HEADERS: written at once (a fresh stream has credit for it).
fn informational(conn: &mut Connection, stream: u64, status: u16) {
    if let Ok(v) = VarInt::from_u64(stream) {
        let _ = conn
            .send_stream(StreamId::from(v))
            .write(&headers_frame(status, &[]));
    }
}
