//! The HTTP/2 core's fuzz entry point (`nikaia_std/fuzz`, target
//! `h2_frames`; replayed by `tests/fuzz_replay.rs`): arbitrary bytes after
//! the preface, fed in pieces, must never panic, must be read the same
//! whichever pieces they come in, and must only ever make the server write
//! whole, well-formed frames within its limits.

use super::conn::{Core, Event, Limits};
use super::frame::{kind, Header, DEFAULT_MAX_FRAME, HEADER_LEN, PREFACE};
use bytes::BytesMut;
use std::time::Instant;

fn limits() -> Limits {
    Limits {
        max_streams: 8,
        max_requests: 64,
        max_list: 4096,
        max_body: 4096,
    }
}

/// What a core wrote and handed over for `input` fed `step` octets at a
/// time (all at once for 0).
fn run(input: &[u8], step: usize, now: Instant) -> (Core, Vec<u8>, Vec<String>) {
    let mut core = Core::new(limits(), now);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let step = if step == 0 { input.len().max(1) } else { step };
    for piece in input.chunks(step) {
        buf.extend_from_slice(piece);
        core.receive(&mut buf, now);
        if let Some(o) = core.take_output() {
            out.extend_from_slice(&o);
        }
    }
    let mut events = Vec::new();
    while let Some(e) = core.next_event() {
        events.push(match e {
            Event::Request {
                stream,
                request,
                body,
            } => {
                format!("request {stream} {} {}", request.is_ok(), body.len())
            }
            Event::Cancel { stream } => format!("cancel {stream}"),
        });
    }
    (core, out, events)
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

/// The target: the first octet picks the piece size, the rest follows the
/// preface as the client's frames.
pub fn h2_frames(data: &[u8]) {
    let Some((&step, rest)) = data.split_first() else {
        return;
    };
    let mut input = PREFACE.to_vec();
    input.extend_from_slice(rest);
    let now = Instant::now();
    let (_, whole_out, whole_events) = run(&input, 0, now);
    let (mut core, out, events) = run(&input, usize::from(step), now);
    assert_eq!(out, whole_out, "the same frames whatever the pieces");
    assert_eq!(
        events, whole_events,
        "the same requests whatever the pieces"
    );
    well_formed(&out);
    // Answer every request with a small body, as far as credit allows.
    let mut answered = 0;
    for e in &events {
        let Some(id) = e.strip_prefix("request ").and_then(|r| r.split(' ').next()) else {
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
