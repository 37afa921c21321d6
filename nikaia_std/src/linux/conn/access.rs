//! A connection's lines in the access log: one per answer written, and one
//! per request refused before it was parsed (what came of its first line,
//! as nginx logs it).

use super::Turn;
use crate::http::request::Reject;
use crate::http::Peer;
use crate::http::Request;
use crate::linux::log::{AccessEntry, RequestLine};
use crate::linux::out::Sent;
use crate::rt::{AccessLogFormat, Vehicle};
use std::ops::Range;
use std::time::{Duration, Instant};

/// The most of a refused request line the access log shows.
const MAX_LOGGED_LINE: usize = 1024;

/// A request's `Referer` and `User-Agent`, as ranges of its fields, for
/// its line: not looked for while the access log is off (an answer queued
/// before a reload turned the log on shows them as `-`).
pub(super) type Quoted = (Option<Range<usize>>, Option<Range<usize>>);

pub(super) fn quoted(turn: &Turn<'_>, req: &Request) -> Quoted {
    if !turn.shared.logs.access.is_on() {
        return (None, None);
    }
    (req.header_range("referer"), req.header_range("user-agent"))
}

/// What the access log will say of an answer on a multiplexed protocol
/// (`version`: `HTTP/2.0`, `HTTP/3.0`), once its last byte is out. A file
/// goes a frame or a piece at a time there, read by `pread`, whatever
/// vehicle HTTP/1.1 would have chosen.
pub(super) fn record(
    turn: &Turn<'_>,
    req: &Request,
    status: u16,
    payload: &crate::http::answer::Payload,
    user: Option<String>,
    started: Instant,
    version: &'static str,
) -> Sent {
    let (referer, user_agent) = quoted(turn, req);
    Sent {
        head: req.fields.clone(),
        method: req.method.clone(),
        target: req.target.clone(),
        version,
        referer,
        user_agent,
        status,
        bytes: payload.len(),
        vehicle: match payload.vehicle() {
            Vehicle::Sendfile => Vehicle::Read,
            v => v,
        },
        started,
        client: req.client.clone(),
        user,
        received: req.received(),
    }
}

/// The line of an answer whose last byte was written.
pub(super) fn sent(
    out: &mut Vec<u8>,
    format: AccessLogFormat,
    sent: &Sent,
    tls: bool,
    now: Instant,
) {
    let bytes = |r: &std::ops::Range<usize>| sent.head.get(r.clone()).unwrap_or_default();
    AccessEntry {
        peer: &sent.client,
        user: sent.user.as_deref(),
        request: RequestLine::Parsed {
            method: bytes(&sent.method),
            target: bytes(&sent.target),
            version: sent.version,
        },
        status: sent.status,
        bytes: sent.bytes,
        received: sent.received,
        referer: sent.referer.as_ref().map(bytes),
        user_agent: sent.user_agent.as_ref().map(bytes),
        duration: now.saturating_duration_since(sent.started),
        vehicle: Some(match sent.vehicle {
            Vehicle::Kept if tls => "kept copy",
            v => v.name(),
        }),
    }
    .append_to(out, format);
}

/// The line of a request refused with `reject`, from what `rbuf` holds of
/// it.
pub(super) fn refused(turn: &mut Turn<'_>, peer: &Peer, rbuf: &[u8], reject: Reject) {
    let line = rbuf.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    AccessEntry {
        peer,
        user: None,
        request: RequestLine::Refused {
            line: &line[..line.len().min(MAX_LOGGED_LINE)],
            why: reject.why,
        },
        status: reject.status,
        bytes: 0,
        received: 0,
        referer: None,
        user_agent: None,
        duration: Duration::ZERO,
        vehicle: None,
    }
    .append_to(turn.access, turn.rt.access_log_format);
}
