//! The answer pipeline: the one way a request becomes an answer, on every
//! target and for every protocol. Route → handler (a panic is a logged 500)
//! → error hiding → `http::File` resolved through the backend's [`Files`]
//! port → keep-alive → body plan. A backend parses the request, calls
//! [`answer`], runs the open the pipeline asks for where it may wait for the
//! disk ([`Progress::Open`]), and frames what comes out; it decides nothing.

use super::file::{self, File, Files, Plan, Prepared, Step, Target, Then};
use super::request::Request;
use super::response::{bodiless, Body, Response};
use super::router::{Found, Router};
use crate::fs::{self, OpenFile, Opened, Root};
use crate::rt::Vehicle;
use bytes::Bytes;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A decided answer: the head's material and what follows it.
pub(crate) struct Answer {
    /// Status and header fields; its body has moved to `payload`.
    pub resp: Response,
    /// The Content-Length (also for HEAD, which sends no body).
    pub length: u64,
    pub payload: Payload,
    /// The connection closes after this answer.
    pub close: bool,
}

/// What follows an answer's head.
pub(crate) enum Payload {
    /// Nothing: HEAD, a bodiless status, an empty body.
    None,
    /// Bytes the handler had (`String`, `Bytes`, `html::Raw`, a status page).
    Memory(Bytes),
    /// A program's `fs::Mapped`: bytes of a mapping, never read in user
    /// mode by the backend (under TLS it has the kernel copy them first).
    Mapped(Bytes),
    /// Bytes of the kept table (D8).
    Kept(Bytes),
    /// A range of a file opened for this request, by `vehicle`.
    File {
        file: Arc<OpenFile>,
        start: u64,
        end: u64,
        vehicle: Vehicle,
    },
}

impl Payload {
    /// How these bytes travel, for the counters and the access log.
    pub(crate) fn vehicle(&self) -> Vehicle {
        match self {
            Payload::Kept(_) => Vehicle::Kept,
            Payload::File { vehicle, .. } => *vehicle,
            Payload::None | Payload::Memory(_) | Payload::Mapped(_) => Vehicle::Memory,
        }
    }

    /// The body bytes that follow the head.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Payload::None => 0,
            Payload::Memory(b) | Payload::Mapped(b) | Payload::Kept(b) => b.len() as u64,
            Payload::File { start, end, .. } => end - start,
        }
    }
}

/// Where the pipeline got to.
pub(crate) enum Progress {
    Ready(Answer),
    /// The file's open would wait for the disk: the backend runs
    /// `waiting.root().open(&target)` off its event loop, then
    /// [`Waiting::opened`].
    Open(Target, Waiting),
}

/// A request whose file is being opened: what the pipeline carries across.
pub(crate) struct Waiting {
    user: Response,
    file: File,
    then: Then,
    close: bool,
}

/// Runs the pipeline for `req`. `may_keep`: the protocol and the server
/// would keep the connection open after this answer (the request did not
/// ask to close, the server is not stopping, keep-alive is on). `log`
/// receives each error the answer hides from the client.
pub(crate) fn answer(
    files: &impl Files,
    router: &Router,
    req: &mut Request,
    may_keep: bool,
    log: &mut impl FnMut(&Request, &str),
) -> Progress {
    let resp = route(router, req);
    note(log, req, &resp);
    let mut resp = hide_error(resp);
    let asked_close = resp
        .get_header("connection")
        .is_some_and(|v| v.eq_ignore_ascii_case("close"));
    let close = !may_keep || asked_close;
    match std::mem::replace(&mut resp.body, Body::Empty) {
        Body::File(f) => {
            let step = file::begin(files, req, &resp, &f);
            let waiting = Waiting {
                user: resp,
                file: *f,
                then: Then::default(),
                close,
            };
            waiting.step(req, step, log)
        }
        body => {
            resp.body = body;
            let length = resp.body.len();
            Progress::Ready(finish(req, resp, length, Plan::None, close))
        }
    }
}

impl Waiting {
    /// The root the backend opens the [`Progress::Open`] target under, off
    /// its loop (the open may wait for the disk).
    pub(crate) fn root(&self) -> &Root {
        &self.file.root
    }

    /// Goes on with the result of that open.
    pub(crate) fn opened(
        mut self,
        files: &impl Files,
        req: &Request,
        target: Target,
        result: Result<Opened, fs::Error>,
        log: &mut impl FnMut(&Request, &str),
    ) -> Progress {
        let then = std::mem::take(&mut self.then);
        let step = file::opened(files, req, &self.user, &self.file, target, then, result);
        self.step(req, step, log)
    }

    fn step(mut self, req: &Request, step: Step, log: &mut impl FnMut(&Request, &str)) -> Progress {
        match step {
            Step::Ready(Prepared { resp, length, plan }) => {
                note(log, req, &resp);
                Progress::Ready(finish(req, resp, length, plan, self.close))
            }
            Step::Open(target, then) => {
                self.then = then;
                Progress::Open(target, self)
            }
        }
    }
}

/// The answer with its body plan: nothing after the head of a HEAD or a
/// bodiless status; else the file's plan, or the response's own bytes.
fn finish(req: &Request, mut resp: Response, length: u64, plan: Plan, close: bool) -> Answer {
    let body = std::mem::replace(&mut resp.body, Body::Empty);
    let payload = if req.is_head() || bodiless(resp.status) {
        Payload::None
    } else {
        match (plan, body) {
            (Plan::Kept(b), _) => Payload::Kept(b),
            (
                Plan::File {
                    file,
                    start,
                    end,
                    vehicle,
                },
                _,
            ) => Payload::File {
                file,
                start,
                end,
                vehicle,
            },
            (Plan::None, Body::Bytes(b)) if !b.is_empty() => Payload::Memory(b),
            (Plan::None, Body::Mapped(b)) if !b.is_empty() => Payload::Mapped(b),
            (Plan::None, _) => Payload::None,
        }
    };
    Answer {
        resp,
        length,
        payload,
        close,
    }
}

/// The answer `resp` (a status page, say) gives in place of another.
pub(crate) fn page(req: &Request, resp: Response, close: bool) -> Answer {
    let length = resp.body.len();
    finish(req, resp, length, Plan::None, close)
}

fn note(log: &mut impl FnMut(&Request, &str), req: &Request, resp: &Response) {
    if let Some(e) = &resp.log_error {
        log(req, e);
    }
}

/// The response a request gets before its body is resolved: its route's
/// handler (a panic is a logged 500), 405 with `Allow` for a known path and
/// another method, 404 otherwise. `param` is filled in for the handler.
fn route(router: &Router, req: &mut Request) -> Response {
    match router.find(req.method(), &req.path) {
        Found::Handler(handler, param) => {
            req.param = param;
            catch_unwind(AssertUnwindSafe(|| handler(req))).unwrap_or_else(|_| {
                Response::internal_error(format!(
                    "handler panicked on {} {}",
                    req.method(),
                    req.target()
                ))
            })
        }
        Found::WrongMethod(allow) => Response::status_page(405).header("Allow", allow),
        Found::Nothing => Response::status_page(404),
    }
}

/// A response that carries an error for the log goes to the client as a
/// plain 500: the detail stays in the log.
fn hide_error(resp: Response) -> Response {
    if resp.log_error.is_some() && resp.status != 500 {
        Response::status_page(500)
    } else {
        resp
    }
}
