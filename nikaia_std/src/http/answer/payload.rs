//! What the pipeline hands a backend: a decided answer, the response whose
//! head is to be written and how its body travels after it.

use crate::fs::OpenFile;
use crate::http::file::Plan;
use crate::http::produce::Sending;
use crate::http::request::Request;
use crate::http::response::{bodiless, Body, Response, UNKNOWN_LENGTH};
use crate::rt::Vehicle;
use bytes::Bytes;
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
    /// The user whose credentials the answer was let through with.
    pub user: Option<String>,
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
    /// A body the program produces, pulled as the connection takes it.
    Produced(Box<crate::http::produce::Sending>),
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
            // A produced body's pieces are the program's bytes in memory.
            Payload::None | Payload::Memory(_) | Payload::Mapped(_) | Payload::Produced(_) => {
                Vehicle::Memory
            }
        }
    }

    /// The body bytes that follow the head.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Payload::None => 0,
            Payload::Produced(p) => p.length.unwrap_or(0),
            Payload::Memory(b) | Payload::Mapped(b) | Payload::Kept(b) => b.len() as u64,
            Payload::File { start, end, .. } => end - start,
        }
    }
}

/// The answer with its body plan: nothing after the head of a HEAD or a
/// bodiless status; else the file's plan, or the response's own bytes.
pub(super) fn finish(
    req: &Request,
    mut resp: Response,
    length: u64,
    plan: Plan,
    close: bool,
) -> Answer {
    let body = std::mem::replace(&mut resp.body, Body::Empty);
    let length = match &body {
        Body::Produced(held) => held.length().unwrap_or(UNKNOWN_LENGTH),
        _ => length,
    };
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
            (Plan::None, Body::Produced(held)) => match held.take() {
                Some(p) => Payload::Produced(Box::new(Sending::new(p))),
                None => Payload::None,
            },
            (Plan::None, _) => Payload::None,
        }
    };
    let user = resp.user.take().map(String::from);
    Answer {
        resp,
        length,
        payload,
        close,
        user,
    }
}

/// The answer of a response whose body is in memory (a row, or a status
/// page given in place of another answer).
pub(crate) fn page(req: &Request, resp: Response, close: bool) -> Answer {
    let length = resp.body.len();
    finish(req, resp, length, Plan::None, close)
}
