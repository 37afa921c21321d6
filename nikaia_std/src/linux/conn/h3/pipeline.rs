//! An HTTP/3 request through the answer pipeline: handed to it (its body
//! in it, or its sink's answer), and its progress followed — an open or a
//! credential check off the loop, the result back through the worker's
//! mailbox — until the answer is decided and goes onto its stream.

use super::super::IoDone;
use super::send::Body;
use super::{long, short, H3};
use crate::http::answer::{self, Done, Progress};
use crate::http::site::Verdict;
use crate::http::Request;
use crate::linux::shared::Serving;
use quinn_proto::Connection;
use std::time::Instant;

impl H3 {
    /// The answer pipeline's ports for a request of this connection.
    pub(super) fn serving<'a>(turn: &super::Turn<'a>) -> Serving<'a> {
        Serving {
            shared: turn.shared,
            rt: turn.rt,
            tls: true,
            window: turn.window,
        }
    }

    /// Hands a request (its body, if any, in it) to the answer pipeline.
    pub(super) fn answer_request(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
        mut req: Request,
        started: Instant,
    ) {
        let progress = answer::answer(
            &Self::serving(turn),
            &turn.shared.router,
            None,
            &mut req,
            true,
            &mut super::super::h1::log_error_by(turn, &self.peer),
        );
        self.go_on(conn, turn, stream, req, progress, started);
    }

    pub(super) fn go_on(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
        req: Request,
        progress: Progress,
        started: Instant,
    ) {
        match progress {
            Progress::Ready(decided) => self.respond(conn, turn, stream, &req, decided, started),
            Progress::Open(job, waiting) => {
                super::super::link::open_on_pool(turn, self.id, job, short(stream));
                self.bodies
                    .push(Body::opening(stream, req, waiting, started, turn.now));
            }
            Progress::Verify(check, waiting) => {
                match super::super::link::verify_off_loop(turn, self.id, check, short(stream)) {
                    Ok(()) => {
                        (self.bodies).push(Body::opening(stream, req, waiting, started, turn.now))
                    }
                    Err(check) => {
                        let progress = waiting.verified(
                            &Self::serving(turn),
                            &req,
                            *check,
                            Verdict::Busy,
                            &mut super::super::h1::log_error_by(turn, &self.peer),
                        );
                        self.go_on(conn, turn, stream, req, progress, started);
                    }
                }
            }
        }
    }

    /// A result from the io pool (or the verifier threads) for a stream of
    /// this connection.
    pub(crate) fn io_done(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        done: IoDone,
    ) {
        let resumed = match done {
            IoDone::Opened {
                stream, fetched, ..
            } => (stream, Done::Opened(fetched)),
            IoDone::Verified {
                stream,
                check,
                verdict,
                ..
            } => (stream, Done::Verified(check, verdict)),
            IoDone::Resume { stream, pause, .. } => {
                return self.resume_body(conn, turn, long(stream), pause);
            }
            IoDone::Pull { stream, .. } => return self.pull_again(turn, long(stream)),
            IoDone::Answered { stream, resp, .. } => {
                return self.answered(conn, turn, long(stream), *resp);
            }
            IoDone::Read { stream, result, .. } => {
                return self.read_done(conn, turn, long(stream), result);
            }
        };
        let (stream, done) = (long(resumed.0), resumed.1);
        let Some(i) = self.bodies.iter().position(|b| b.stream == stream) else {
            return;
        };
        let Some((req, waiting, started)) = self.bodies[i].take_opening() else {
            return;
        };
        self.bodies.swap_remove(i);
        let progress = waiting.resume(
            &Self::serving(turn),
            &req,
            done,
            &mut super::super::h1::log_error_by(turn, &self.peer),
        );
        self.go_on(conn, turn, stream, req, progress, started);
    }

    /// A stream's answer waits for the sink its body went to.
    pub(super) fn wait_for_sink(
        &mut self,
        turn: &super::Turn<'_>,
        stream: u64,
        req: Request,
        started: Instant,
    ) {
        self.bodies
            .push(Body::answering(stream, req, started, turn.now));
    }

    /// The sink a stream's body went to answered.
    pub(super) fn sink_answered(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
        resp: crate::http::Response,
    ) {
        let Some(i) = self.bodies.iter().position(|b| b.stream == stream) else {
            return;
        };
        let Some((mut req, started)) = self.bodies[i].take_answering() else {
            return;
        };
        self.bodies.swap_remove(i);
        let progress = answer::answer_with(
            &Self::serving(turn),
            &mut req,
            resp,
            true,
            &mut super::super::h1::log_error_by(turn, &self.peer),
        );
        self.go_on(conn, turn, stream, req, progress, started);
    }
}
