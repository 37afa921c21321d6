//! The HTTP/3 fuzz targets' entry points (`nikaia_std/fuzz`, targets
//! `qpack` and `h3_frames`; replayed by `tests/fuzz_replay.rs`).
//!
//! `qpack`: any field section decodes without panic; what is delivered
//! stays within the limit; a section decoded whole re-encodes to one that
//! decodes to the same lines.
//!
//! `h3_frames`: arbitrary operations on a connection's streams — request
//! stream octets, the peer's unidirectional streams, resets, answers —
//! never panic, and hand the unit the same requests and bodies (those
//! cancelled counting as never handed) and faults, whichever pieces each
//! stream's octets arrive in.

use super::conn::{Core, Event, Limits};
use super::qpack::{encode, Decoder};
use crate::http::body::Intake;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::ops::ControlFlow;

type Lines = Vec<(Vec<u8>, Vec<u8>)>;

fn decode(section: &[u8], max: usize) -> (Result<super::qpack::Decoded, ()>, Lines) {
    let mut lines = Lines::new();
    let r = Decoder::default().decode(section, max, &mut |n, v| {
        lines.push((n.to_vec(), v.to_vec()));
        ControlFlow::Continue(())
    });
    (r.map_err(|_| ()), lines)
}

pub fn qpack(data: &[u8]) {
    for max in [256, 1 << 20] {
        let (r, lines) = decode(data, max);
        let size: usize = lines.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
        assert!(size <= max, "delivered {size} past {max}");
        if r == Ok(super::qpack::Decoded::Complete) && max > 256 {
            let mut again = Vec::new();
            encode::begin(&mut again);
            for (n, v) in &lines {
                encode::field(&mut again, n, v);
            }
            let (r2, lines2) = decode(&again, max);
            assert_eq!(r2, Ok(super::qpack::Decoded::Complete));
            assert_eq!(lines, lines2);
        }
    }
}

/// One operation on the connection, read from the input.
enum Op<'a> {
    Request { id: u64, data: &'a [u8], fin: bool },
    Uni { id: u64, data: &'a [u8], fin: bool },
    Reset(u64),
    Answered(u64),
}

fn ops(mut input: &[u8]) -> Vec<Op<'_>> {
    let mut out = Vec::new();
    while let [b, rest @ ..] = input {
        let id = u64::from((b >> 2) & 7);
        let fin = b & 0x80 != 0;
        input = rest;
        match b & 3 {
            0 | 1 => {
                let len =
                    usize::from(*input.first().unwrap_or(&0)).min(input.len().saturating_sub(1));
                let data = input.get(1..1 + len).unwrap_or(&[]);
                input = input.get(1 + len..).unwrap_or(&[]);
                out.push(if b & 3 == 0 {
                    Op::Request {
                        id: id * 4,
                        data,
                        fin,
                    }
                } else {
                    Op::Uni {
                        id: 2 + 4 * (id & 3),
                        data,
                        fin,
                    }
                });
            }
            2 => out.push(Op::Reset(id * 4)),
            _ => out.push(Op::Answered(id * 4)),
        }
    }
    out
}

/// What the unit saw, piece-independent.
#[derive(Debug, Default, PartialEq, Eq)]
struct Seen {
    requests: Vec<String>,
    bodies: BTreeMap<u64, Vec<u8>>,
    fatal: Option<String>,
}

fn intake(stream: u64) -> Intake {
    match stream / 4 % 4 {
        0 => Intake::Whole { limit: Some(512) },
        1 => Intake::Stream,
        2 => Intake::Drain { max: 256 },
        _ => Intake::Discard,
    }
}

fn run(input: &[u8], step: usize) -> Seen {
    let mut core = Core::new(Limits {
        max_requests: 6,
        max_list: 512,
    });
    let mut seen = Seen::default();
    let step = step.max(1);
    for op in ops(input) {
        let result = match op {
            Op::Request { id, data, fin } => in_pieces(data, step, fin, |piece, end| {
                let r = core.request_data(id, Bytes::copy_from_slice(piece), end);
                drain(&mut core, &mut seen);
                r
            }),
            Op::Uni { id, data, fin } => {
                in_pieces(data, step, fin, |piece, end| core.uni_data(id, piece, end))
            }
            Op::Reset(id) => core.request_reset(id),
            Op::Answered(id) => {
                core.answered(id);
                Ok(())
            }
        };
        drain(&mut core, &mut seen);
        if let Err(f) = result {
            seen.fatal = Some(format!("{:?}", f.code));
            break;
        }
    }
    while core.poll_action().is_some() {}
    seen
}

/// Feeds `data` to `feed` `step` octets at a time (one empty piece if it
/// is empty), the end with the last; stops at the first error.
fn in_pieces(
    data: &[u8],
    step: usize,
    fin: bool,
    mut feed: impl FnMut(&[u8], bool) -> Result<(), super::conn::Fatal>,
) -> Result<(), super::conn::Fatal> {
    if data.is_empty() {
        return feed(data, fin);
    }
    let n = data.len().div_ceil(step);
    for (i, piece) in data.chunks(step).enumerate() {
        feed(piece, fin && i + 1 == n)?;
    }
    Ok(())
}

fn drain(core: &mut Core, seen: &mut Seen) {
    while let Some(e) = core.poll_event() {
        match e {
            Event::Request {
                stream,
                request: Ok(_),
            }
            | Event::Head { stream, .. } => {
                seen.requests.push(format!("request {stream}"));
                if let Err(f) = core.take_body(stream, intake(stream)) {
                    seen.fatal.get_or_insert(format!("{:?}", f.code));
                }
            }
            Event::Request {
                stream,
                request: Err(r),
            } => {
                seen.requests
                    .push(format!("refused {stream} {}", r.reject.status));
            }
            Event::Body { stream, body }
            | Event::Data {
                stream, data: body, ..
            } => {
                if !body.is_empty() {
                    seen.bodies
                        .entry(stream)
                        .or_default()
                        .extend_from_slice(&body);
                }
            }
            Event::TooLarge { stream } => seen.requests.push(format!("413 {stream}")),
            // Whether a fault is found before a request or its body is
            // handed on depends on the pieces (the end in the same read
            // as the head, or later): what is cancelled counts as never
            // handed.
            Event::Cancel { stream } => {
                let handed = format!("request {stream}");
                seen.requests.retain(|r| *r != handed);
                seen.bodies.remove(&stream);
            }
        }
    }
}

pub fn h3_frames(data: &[u8]) {
    let whole = run(data, usize::MAX);
    for step in [1, 7] {
        assert_eq!(run(data, step), whole, "fed {step} octets at a time");
    }
}
