//! A streamed body on HTTP/1.1: what has arrived of it is handed to the
//! route's sink piece by piece (a length body as it lies in the read
//! buffer, a chunked one decoded in place), and the socket is read only
//! while the sink takes more — a paused body leaves the rest in the
//! kernel's buffers, which fill, and TCP holds the client back.

use super::super::sink::{never, Address, Fed, Given};
use super::super::{serving, Link, Next, Turn};
use super::body::{Drain, Incoming};
use super::{log_error, State, H1};
use crate::http::answer;
use crate::http::body::Aborted;
use crate::http::request::{reject, Reject};
use crate::http::{Request, Response};

/// A body whose sink answers once its work is done.
pub(in crate::linux::conn) struct Answering {
    req: Request,
    keep: bool,
    started: std::time::Instant,
}

/// A body fed to its route's sink as it arrives.
pub(in crate::linux::conn) struct Streaming {
    pub(super) req: Request,
    pub(super) incoming: Incoming,
    pub(super) fed: Fed,
    pub(super) keep_alive: bool,
}

impl H1 {
    /// Feeds what has come of a streamed body to its sink, while it takes
    /// more; at its end the sink answers.
    pub(super) fn feed(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> Result<bool, Next> {
        let State::Streaming(s) = &mut self.state else {
            return Ok(false);
        };
        if s.fed.paused {
            return Err(Next::Wait);
        }
        let to = Address {
            slot: turn.slot,
            conn: link.id,
            stream: 0,
        };
        let fed = &mut s.fed;
        let mut given = Given::Took;
        let done = s.incoming.take(&mut self.rbuf, &mut |piece| {
            if piece.is_empty() {
                return true;
            }
            given = fed.give(piece, turn, to);
            given == Given::Took
        });
        match given {
            Given::Panicked => {
                let why = format!("handler panicked on {} {}", s.req.method(), s.req.target());
                log_error(turn, link)(&s.req, &why);
                self.refuse(link, turn, reject(500, "the handler panicked"));
                return Ok(true);
            }
            Given::TooLarge => {
                let reject = reject(413, "request body larger than allowed");
                self.abort(link, turn, Aborted::TooLarge, reject);
                return Ok(true);
            }
            Given::Took | Given::Paused => {}
        }
        match done {
            Err(reject) => {
                let why = match reject.status {
                    413 => Aborted::TooLarge,
                    _ => Aborted::Malformed,
                };
                self.abort(link, turn, why, reject);
                Ok(true)
            }
            Ok(true) => {
                self.stream_ended(link, turn);
                Ok(true)
            }
            Ok(false) if given == Given::Paused => {
                // No clock runs while the program holds the body.
                link.deadline = never(turn.now);
                Err(Next::Wait)
            }
            Ok(false) => {
                self.read_body(link, turn)?;
                Ok(false)
            }
        }
    }

    /// A streamed body arrived whole: its sink answers.
    fn stream_ended(&mut self, link: &mut Link, turn: &mut Turn<'_>) {
        let State::Streaming(s) = std::mem::replace(&mut self.state, State::Idle) else {
            unreachable!("called while streaming");
        };
        let Streaming {
            mut req,
            fed,
            keep_alive,
            ..
        } = *s;
        let started = fed.started();
        let keep = keep_alive && super::may_keep(turn);
        req.received = fed.received;
        let Some(resp) = fed.end(&req) else {
            // The sink answers once its work is done (a file synced and
            // named): requests pipelined behind wait.
            link.deadline = never(turn.now);
            self.state = State::Answering(Box::new(Answering { req, keep, started }));
            return;
        };
        let progress = {
            let log = &mut log_error(turn, link);
            answer::answer_with(&serving(turn, link), &mut req, resp, keep, log)
        };
        self.go_on(link, turn, req, progress, started);
        self.next_begun();
    }

    /// A paused body's sink resumed it (`pause`: which of its pauses).
    pub(in crate::linux::conn) fn resume_body(
        &mut self,
        link: &mut Link,
        turn: &Turn<'_>,
        pause: u64,
    ) {
        if let State::Streaming(s) = &mut self.state {
            if s.fed.resume(turn.now, pause) {
                if std::mem::take(&mut s.fed.continue_owed) {
                    super::body::push_continue(link);
                }
                link.deadline = self.body_wait(turn);
            }
        }
    }

    /// A sink that answers later answered: after its body (the answer goes
    /// out as any), or before all of it came (the rest is not read: the
    /// answer closes the connection).
    pub(in crate::linux::conn) fn answered(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        resp: Response,
    ) {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Answering(a) => {
                let Answering {
                    mut req,
                    keep,
                    started,
                } = *a;
                let progress = {
                    let log = &mut log_error(turn, link);
                    answer::answer_with(&serving(turn, link), &mut req, resp, keep, log)
                };
                self.go_on(link, turn, req, progress, started);
                self.next_begun();
            }
            State::Streaming(s) => {
                let Streaming {
                    mut req,
                    fed,
                    incoming,
                    keep_alive,
                } = *s;
                let started = fed.started();
                req.received = fed.received;
                // The rest of a small body is thrown away to keep the
                // connection; else the answer closes it.
                let drain = Drain::rest(incoming, fed.continue_owed, turn)
                    .filter(|_| keep_alive && super::may_keep(turn));
                drop(fed);
                let close = drain.is_none();
                let decided = answer::refused(&req, resp, close, &mut log_error(turn, link));
                self.queue(link, turn, &req, decided, started);
                if let Some(drain) = drain {
                    self.state = State::Draining(Box::new(drain));
                }
            }
            other => self.state = other,
        }
    }

    /// Ends a streamed body that will not arrive whole: the sink is told,
    /// the client answered `reject`, and the connection closes.
    pub(super) fn abort(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        why: Aborted,
        reject: Reject,
    ) {
        self.abort_sink(why);
        self.refuse(link, turn, reject);
    }

    /// Tells a streaming sink its body will not arrive whole.
    pub(in crate::linux::conn) fn abort_sink(&mut self, why: Aborted) {
        if let State::Streaming(s) = &mut self.state {
            s.fed.abort(why);
        }
    }
}
