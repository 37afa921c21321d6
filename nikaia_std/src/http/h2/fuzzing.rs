//! The HTTP/2 core's fuzz entry point (`nikaia_std/fuzz`, target
//! `h2_frames`; replayed by `tests/fuzz_replay.rs`): arbitrary bytes after
//! the preface, fed in pieces, with a backend taking each body whole,
//! streamed (its sink taking every piece, or pausing for good) or not at
//! all, must never panic, must hand the backend the same requests and
//! bodies whichever pieces they come in, must never hold more of a paused
//! body than its window, and must only ever make the server write whole,
//! well-formed frames within its limits.

use super::conn::{Core, Event, Intake, Limits, STREAM_WINDOW};
use super::frame::{kind, Header, DEFAULT_MAX_FRAME, HEADER_LEN, PREFACE};
use bytes::BytesMut;
use std::collections::BTreeMap;
use std::time::Instant;

fn limits() -> Limits {
    Limits {
        max_streams: 8,
        max_requests: 64,
        max_list: 4096,
    }
}

/// What a connection handed over, piece-independent: each request's
/// stream and whether it came with a head to decide; each body's bytes
/// as the backend received them (whole or streamed), per stream, unless
/// the stream was then cancelled.
#[derive(Debug, Default, PartialEq, Eq)]
struct Seen {
    requests: Vec<String>,
    bodies: BTreeMap<u32, Vec<u8>>,
}

/// A backend's way with bodies, chosen by the input: each head's body is
/// taken whole (to 4 096 octets), streamed, let arrive and dropped (to
/// 8 192), or dropped, by the stream's id and `policy`; a streamed body's sink takes every piece unless its
/// stream is one `policy` pauses for good.
fn intake(stream: u32, policy: u8) -> Intake {
    match (stream / 2 + u32::from(policy)) % 4 {
        0 => Intake::Whole { limit: Some(4096) },
        1 => Intake::Stream,
        2 => Intake::Drain { max: 8192 },
        _ => Intake::Discard,
    }
}

fn paused(stream: u32, policy: u8) -> bool {
    policy & 0x80 != 0 && (stream / 2).is_multiple_of(2)
}

/// What a core wrote and handed over for `input` fed `step` octets at a
/// time (all at once for 0), with the backend deciding bodies as
/// [`intake`] says after each piece.
fn run(input: &[u8], step: usize, policy: u8, now: Instant) -> (Core, Vec<u8>, Seen) {
    let mut core = Core::new(limits(), now);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut seen = Seen::default();
    let step = if step == 0 { input.len().max(1) } else { step };
    for piece in input.chunks(step) {
        buf.extend_from_slice(piece);
        core.receive(&mut buf, now);
        while let Some(e) = core.next_event() {
            match e {
                Event::Request { stream, request } => {
                    seen.requests
                        .push(format!("request {stream} {}", request.is_ok()));
                }
                Event::Head { stream, .. } => {
                    seen.requests.push(format!("head {stream}"));
                    core.take_body(stream, intake(stream, policy), now);
                }
                Event::Body { stream, body } => {
                    seen.bodies
                        .entry(stream)
                        .or_default()
                        .extend_from_slice(&body);
                }
                Event::Data { stream, data, .. } => {
                    let held = seen.bodies.entry(stream).or_default();
                    held.extend_from_slice(&data);
                    if paused(stream, policy) {
                        // Held for a sink that never takes it: never more
                        // than its window.
                        assert!(
                            held.len() <= STREAM_WINDOW as usize,
                            "more held than the window"
                        );
                    } else {
                        core.consumed(stream, data.len(), now);
                    }
                }
                Event::Cancel { stream } => {
                    // What came of a body its stream then lost was never
                    // the backend's to keep (a sink is told `Gone`); how
                    // much of it came first depends on the pieces.
                    seen.bodies.remove(&stream);
                    seen.requests.push(format!("cancel {stream}"));
                }
            }
        }
        if let Some(o) = core.take_output() {
            out.extend_from_slice(&o);
        }
    }
    (core, out, seen)
}

/// Checks that `out` is whole frames the server may send.
fn well_formed(out: &[u8]) {
    let mut at = 0;
    while at < out.len() {
        let h = Header::parse(&out[at..]).expect("a whole frame header");
        assert!(h.len <= DEFAULT_MAX_FRAME, "a frame the client cannot take");
        assert!(
            !matches!(h.kind, kind::PUSH_PROMISE | kind::PRIORITY),
            "the server never pushes nor sends PRIORITY"
        );
        if matches!(h.kind, kind::DATA | kind::HEADERS | kind::RST_STREAM) {
            assert!(h.stream % 2 == 1, "only client streams");
        }
        at += HEADER_LEN + h.len;
    }
    assert_eq!(at, out.len(), "whole frames only");
}

/// The target: the first octet picks the piece size, the second how the
/// backend takes bodies; the rest follows the preface as the client's
/// frames.
pub fn h2_frames(data: &[u8]) {
    let [step, policy, rest @ ..] = data else {
        return;
    };
    let mut input = PREFACE.to_vec();
    input.extend_from_slice(rest);
    let now = Instant::now();
    let (_, whole_out, whole_seen) = run(&input, 0, *policy, now);
    let (mut core, out, seen) = run(&input, usize::from(*step), *policy, now);
    // Bodies are decided between reads, so the credit returned may differ
    // with the pieces; what the backend is handed may not — unless the
    // client overran a window it was never granted (more than 65 535
    // octets sent at once), which is then judged by when it came.
    if rest.len() <= 65_535 {
        assert_eq!(
            seen, whole_seen,
            "the same requests and bodies whatever the pieces"
        );
        assert_eq!(
            goaway(&out),
            goaway(&whole_out),
            "the same connection error whatever the pieces"
        );
    }
    well_formed(&out);
    // Answer every request with a small body, as far as credit allows.
    let mut answered = 0;
    for e in &seen.requests {
        let Some(id) = e
            .strip_prefix("request ")
            .or_else(|| e.strip_prefix("head "))
            .and_then(|r| r.split(' ').next())
        else {
            continue;
        };
        let id: u32 = id.parse().expect("an id");
        if core.respond(id, false, |enc, out| enc.status(200, out)) {
            core.set_ready(id, true);
            answered += 1;
        }
    }
    let mut frames = 0;
    while let Some((id, allowed)) = core.next_send(100) {
        assert!(allowed > 0 && allowed <= 100);
        core.data(id, allowed.min(10), true);
        frames += 1;
        assert!(frames <= answered, "one frame ends each answer");
    }
    if let Some(o) = core.take_output() {
        well_formed(&o);
    }
}

/// The code of the GOAWAY in `out` that ends the connection with an
/// error, if any.
fn goaway(out: &[u8]) -> Option<u32> {
    let mut at = 0;
    let mut code = None;
    while at + HEADER_LEN <= out.len() {
        let Some(h) = Header::parse(&out[at..]) else {
            break;
        };
        let p = &out[at + HEADER_LEN..(at + HEADER_LEN + h.len).min(out.len())];
        if h.kind == kind::GOAWAY && p.len() >= 8 {
            let c = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
            if c != 0 {
                code = Some(c);
            }
        }
        at += HEADER_LEN + h.len;
    }
    code
}
