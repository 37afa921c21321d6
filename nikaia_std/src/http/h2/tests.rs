//! The connection core driven by hand-made frames: what it answers, what
//! it refuses, and with which code (`spec/http2.md`).

mod bodies;

use super::conn::{Core, Event, Intake, Limits};
use super::frame::{self, flag, kind, setting, ErrorCode, Header, PREFACE};
use super::hpack::{Decoder, Encoder};
use bytes::BytesMut;
use std::time::{Duration, Instant};

fn limits() -> Limits {
    Limits {
        max_streams: 4,
        max_requests: 10,
        max_list: 4096,
    }
}

/// A client: writes frames, reads what the server wrote back.
struct Peer {
    core: Core,
    now: Instant,
    enc: Encoder,
    input: BytesMut,
}

#[derive(Debug, PartialEq, Eq)]
struct Seen {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

impl Peer {
    /// A connection past the preface and both SETTINGS.
    fn new() -> Peer {
        Peer::with(limits())
    }

    fn with(limits: Limits) -> Peer {
        let now = Instant::now();
        let mut p = Peer {
            core: Core::new(limits, now),
            now,
            enc: Encoder::new(),
            input: BytesMut::new(),
        };
        p.input.extend_from_slice(PREFACE);
        p.settings(&[]);
        let first = p.frames();
        assert_eq!(first[0].kind, kind::SETTINGS, "the server speaks first");
        assert!(first
            .iter()
            .any(|f| f.kind == kind::SETTINGS && f.flags == flag::ACK));
        p
    }

    fn raw(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Option<&'static str> {
        self.input
            .extend_from_slice(&frame::header(payload.len(), kind, flags, stream));
        self.input.extend_from_slice(payload);
        self.core.receive(&mut self.input, self.now)
    }

    fn settings(&mut self, values: &[(u16, u32)]) {
        let mut out = Vec::new();
        frame::put_settings(&mut out, values);
        self.input.extend_from_slice(&out);
        self.core.receive(&mut self.input, self.now);
    }

    fn block(&mut self, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = Vec::new();
        self.enc.begin(&mut block);
        for (n, v) in fields {
            self.enc
                .field(n.as_bytes(), v.as_bytes(), false, &mut block);
        }
        block
    }

    fn get(&mut self, stream: u32, path: &str) {
        let block = self.block(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":authority", "t"),
            (":path", path),
        ]);
        self.raw(
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            stream,
            &block,
        );
    }

    /// Every frame the server wrote since the last call.
    fn frames(&mut self) -> Vec<Seen> {
        let out = self.core.take_output().unwrap_or_default();
        let mut seen = Vec::new();
        let mut at = 0;
        while let Some(h) = Header::parse(&out[at..]) {
            let payload = out[at + 9..at + 9 + h.len].to_vec();
            seen.push(Seen {
                kind: h.kind,
                flags: h.flags,
                stream: h.stream,
                payload,
            });
            at += 9 + h.len;
        }
        assert_eq!(at, out.len(), "whole frames only");
        seen
    }

    fn goaway(&mut self) -> Option<ErrorCode> {
        self.frames()
            .iter()
            .find(|f| f.kind == kind::GOAWAY)
            .map(|f| code(&f.payload[4..8]))
    }

    fn resets(&mut self) -> Vec<(u32, ErrorCode)> {
        self.frames()
            .iter()
            .filter(|f| f.kind == kind::RST_STREAM)
            .map(|f| (f.stream, code(&f.payload)))
            .collect()
    }

    /// The requests handed over: those without a body, and those whose
    /// body follows (taken whole, up to 1 000 octets).
    fn requests(&mut self) -> Vec<u32> {
        let mut ids = Vec::new();
        while let Some(e) = self.core.next_event() {
            match e {
                Event::Request {
                    stream,
                    request: Ok(_),
                } => ids.push(stream),
                Event::Head { stream, .. } => {
                    let whole = Intake::Whole { limit: Some(1000) };
                    self.core.take_body(stream, whole, self.now);
                    ids.push(stream);
                }
                _ => {}
            }
        }
        ids
    }

    /// Answers `stream` with a body of `len` octets, framed as the core
    /// allows; returns the DATA octets framed.
    fn answer(&mut self, stream: u32, len: usize) -> usize {
        assert!(self
            .core
            .respond(stream, len == 0, |enc, out| enc.status(200, out)));
        self.core.set_ready(stream, true);
        let mut sent = 0;
        while let Some((id, allowed)) = self.core.next_send(16_375) {
            assert_eq!(id, stream);
            let n = allowed.min(len - sent);
            sent += n;
            self.core.data(id, n, sent == len);
            if sent == len {
                break;
            }
        }
        sent
    }
}

fn code(b: &[u8]) -> ErrorCode {
    let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    ErrorCode::ALL[n as usize]
}

#[test]
fn a_get_is_a_request_and_its_answer_is_headers_then_data() {
    let mut p = Peer::new();
    p.get(1, "/a?x=1");
    let mut events = Vec::new();
    while let Some(e) = p.core.next_event() {
        events.push(e);
    }
    let [Event::Request {
        stream: 1,
        request: Ok(parsed),
        ..
    }] = &events[..]
    else {
        panic!("{events:?}");
    };
    assert_eq!(parsed.text.path.as_str(), "/a");
    assert_eq!(p.answer(1, 5), 5);
    let out = p.frames();
    assert_eq!(out[0].kind, kind::HEADERS);
    assert_eq!(out[0].flags, flag::END_HEADERS);
    let mut fields = Vec::new();
    Decoder::new(4096)
        .decode(&out[0].payload, 1 << 16, &mut |n, v| {
            fields.push((n.to_vec(), v.to_vec()));
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(fields, [(b":status".to_vec(), b"200".to_vec())]);
    assert_eq!(
        p.core.open_streams(),
        0,
        "both sides ended: the stream is gone"
    );
}

#[test]
fn flow_control_holds_the_body_and_a_settings_change_shifts_open_windows() {
    let mut p = Peer::new();
    p.settings(&[(setting::INITIAL_WINDOW_SIZE, 100)]);
    p.get(1, "/");
    p.requests();
    p.core.respond(1, false, |enc, out| enc.status(200, out));
    p.core.set_ready(1, true);
    assert_eq!(p.core.next_send(16_375), Some((1, 100)));
    p.core.data(1, 100, false);
    assert_eq!(
        p.core.next_send(16_375),
        None,
        "the stream's window is spent"
    );
    // Down by 100: the window is -100; 150 of credit leaves 50.
    p.settings(&[(setting::INITIAL_WINDOW_SIZE, 0)]);
    p.raw(kind::WINDOW_UPDATE, 0, 1, &50u32.to_be_bytes());
    assert_eq!(p.core.next_send(16_375), None, "still below zero");
    p.raw(kind::WINDOW_UPDATE, 0, 1, &100u32.to_be_bytes());
    assert_eq!(p.core.next_send(16_375), Some((1, 50)));
}

#[test]
fn the_connection_window_is_shared_and_overflow_is_an_error() {
    let mut p = Peer::new();
    p.get(1, "/");
    p.get(3, "/");
    p.requests();
    assert_eq!(p.answer(1, 65_535), 65_535);
    p.core.respond(3, false, |enc, out| enc.status(200, out));
    p.core.set_ready(3, true);
    assert_eq!(
        p.core.next_send(16_375),
        None,
        "the connection's window is spent"
    );
    p.frames();
    p.raw(kind::WINDOW_UPDATE, 0, 0, &(0x7fff_ffffu32).to_be_bytes());
    assert_eq!(p.goaway(), None, "exactly 2^31-1 is allowed");
    p.raw(kind::WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes());
    assert_eq!(p.goaway(), Some(ErrorCode::FlowControl));
}

#[test]
fn padding_counts_against_the_window_and_credit_comes_back() {
    let mut p = Peer::new();
    let block = p.block(&[(":method", "POST"), (":scheme", "http"), (":path", "/up")]);
    p.raw(kind::HEADERS, flag::END_HEADERS, 1, &block);
    // 200 octets of padding around 10 of body, twice: 422 counted.
    let mut padded = vec![200u8];
    padded.extend_from_slice(&[b'x'; 10]);
    padded.extend_from_slice(&[0; 200]);
    for _ in 0..80 {
        p.raw(kind::DATA, flag::PADDED, 1, &padded);
    }
    let updates: u32 = p
        .frames()
        .iter()
        .filter(|f| f.kind == kind::WINDOW_UPDATE && f.stream == 0)
        .map(|f| u32::from_be_bytes(f.payload[..4].try_into().unwrap()))
        .sum();
    assert!(
        updates >= 16 << 10,
        "the connection got its credit back: {updates}"
    );
    p.raw(kind::DATA, flag::END_STREAM, 1, b"");
    assert!(matches!(
        p.core.next_event(),
        Some(Event::Head { stream: 1, .. })
    ));
    let whole = Intake::Whole { limit: Some(1000) };
    p.core.take_body(1, whole, p.now);
    let mut body_len = None;
    while let Some(e) = p.core.next_event() {
        if let Event::Body { body, .. } = e {
            body_len = Some(body.len());
        }
    }
    // 800 octets of body: under the limit of 1000.
    assert_eq!(body_len, Some(800));
}

#[test]
fn a_body_over_the_limit_is_413_and_a_wrong_content_length_is_malformed() {
    let mut p = Peer::new();
    let block = p.block(&[(":method", "POST"), (":scheme", "http"), (":path", "/up")]);
    p.raw(kind::HEADERS, flag::END_HEADERS, 1, &block);
    p.raw(kind::DATA, 0, 1, &[0; 1001]);
    assert!(matches!(
        p.core.next_event(),
        Some(Event::Head { stream: 1, .. })
    ));
    let whole = Intake::Whole { limit: Some(1000) };
    p.core.take_body(1, whole, p.now);
    let e = p.core.next_event();
    assert!(
        matches!(&e, Some(Event::Request { request: Err(r), .. }) if r.reject.status == 413),
        "{e:?}"
    );
    let block = p.block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/up"),
        ("content-length", "5"),
    ]);
    p.raw(kind::HEADERS, flag::END_HEADERS, 3, &block);
    p.raw(kind::DATA, flag::END_STREAM, 3, b"abc");
    assert_eq!(p.resets(), [(3, ErrorCode::Protocol)]);
}

#[test]
fn stream_ids_and_states_are_checked() {
    let mut p = Peer::new();
    p.get(2, "/");
    assert_eq!(p.goaway(), Some(ErrorCode::Protocol), "even id");
    let mut p = Peer::new();
    p.get(5, "/");
    p.get(3, "/");
    assert_eq!(p.goaway(), Some(ErrorCode::Protocol), "an id going down");
    let mut p = Peer::new();
    p.raw(kind::DATA, 0, 7, b"x");
    assert_eq!(
        p.goaway(),
        Some(ErrorCode::Protocol),
        "DATA on an idle stream"
    );
    let mut p = Peer::new();
    p.get(1, "/");
    p.requests();
    p.raw(kind::DATA, 0, 1, b"x");
    assert_eq!(
        p.resets(),
        [(1, ErrorCode::StreamClosed)],
        "after END_STREAM"
    );
    // Frames on a stream the server reset are ignored.
    p.raw(kind::DATA, 0, 1, b"x");
    p.raw(kind::WINDOW_UPDATE, 0, 1, &1u32.to_be_bytes());
    assert_eq!(p.frames(), [], "nothing more for stream 1");
    let mut p = Peer::new();
    p.raw(kind::PUSH_PROMISE, flag::END_HEADERS, 1, &[0, 0, 0, 2]);
    assert_eq!(
        p.goaway(),
        Some(ErrorCode::Protocol),
        "no push from a client"
    );
}

#[test]
fn the_first_frame_must_be_settings_and_frames_have_their_sizes() {
    let mut core = Core::new(limits(), Instant::now());
    let mut input = BytesMut::from(&PREFACE[..]);
    input.extend_from_slice(&frame::header(8, kind::PING, 0, 0));
    input.extend_from_slice(&[0; 8]);
    assert!(core.receive(&mut input, Instant::now()).is_some());
    let mut p = Peer::new();
    p.raw(kind::PING, 0, 0, &[0; 7]);
    assert_eq!(p.goaway(), Some(ErrorCode::FrameSize));
    let mut p = Peer::new();
    p.raw(kind::SETTINGS, 0, 0, &[0; 5]);
    assert_eq!(p.goaway(), Some(ErrorCode::FrameSize));
    let mut p = Peer::new();
    p.raw(0xfa, 0, 0, b"unknown types are ignored");
    p.raw(kind::DATA, 0, 0, b"x");
    assert_eq!(p.goaway(), Some(ErrorCode::Protocol), "DATA on stream 0");
    let mut p = Peer::new();
    p.input
        .extend_from_slice(&frame::header(16_385, kind::DATA, 0, 1));
    p.core.receive(&mut p.input, p.now);
    assert_eq!(p.goaway(), Some(ErrorCode::FrameSize));
}

#[test]
fn a_header_block_is_never_interleaved_and_continuations_are_bounded() {
    let mut p = Peer::new();
    let block = p.block(&[(":method", "GET"), (":scheme", "http"), (":path", "/")]);
    p.raw(kind::HEADERS, 0, 1, &block[..2]);
    p.raw(kind::PING, 0, 0, &[0; 8]);
    assert_eq!(p.goaway(), Some(ErrorCode::Protocol));
    let mut p = Peer::new();
    p.raw(kind::HEADERS, 0, 1, &block[..1]);
    for _ in 0..17 {
        p.raw(kind::CONTINUATION, 0, 1, b"");
    }
    assert_eq!(p.goaway(), Some(ErrorCode::EnhanceYourCalm));
    let mut p = Peer::new();
    p.raw(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &[0x3f],
    );
    assert_eq!(p.goaway(), Some(ErrorCode::Compression));
}

#[test]
fn streams_past_the_limit_are_refused() {
    let mut p = Peer::new();
    for id in [1, 3, 5, 7, 9] {
        p.get(id, "/");
    }
    assert_eq!(p.requests(), [1, 3, 5, 7]);
    assert_eq!(p.resets(), [(9, ErrorCode::RefusedStream)]);
}

#[test]
fn rapid_reset_spends_the_budget_and_closes_the_connection() {
    let mut p = Peer::with(Limits {
        max_requests: 1000,
        ..limits()
    });
    let mut closed_at = None;
    for i in 0..150u32 {
        let id = 2 * i + 1;
        let block = p.block(&[(":method", "POST"), (":scheme", "http"), (":path", "/")]);
        p.raw(kind::HEADERS, flag::END_HEADERS, id, &block);
        if p.raw(kind::RST_STREAM, 0, id, &8u32.to_be_bytes())
            .is_some()
        {
            closed_at = Some(i);
            break;
        }
    }
    assert_eq!(closed_at, Some(99), "the 100th reset empties the budget");
    assert_eq!(p.goaway(), Some(ErrorCode::EnhanceYourCalm));
}

#[test]
fn streams_answered_in_full_earn_the_budget_back() {
    let mut p = Peer::with(Limits {
        max_requests: 1000,
        ..limits()
    });
    for i in 0..300u32 {
        let id = 2 * i + 1;
        p.get(id, "/");
        if i % 2 == 0 {
            p.requests();
            p.answer(id, 1);
        } else {
            // Half are cancelled before their answer: one reset per answer.
            p.raw(kind::RST_STREAM, 0, id, &8u32.to_be_bytes());
        }
    }
    assert_eq!(p.goaway(), None);
}

#[test]
fn the_request_cap_sends_goaway_with_the_last_stream() {
    let mut p = Peer::new();
    for i in 0..12u32 {
        p.get(2 * i + 1, "/");
        for id in p.requests() {
            p.answer(id, 1);
        }
    }
    let goaway = p
        .frames()
        .into_iter()
        .find(|f| f.kind == kind::GOAWAY)
        .unwrap();
    assert_eq!(
        &goaway.payload[..4],
        &19u32.to_be_bytes(),
        "the 10th stream is the last"
    );
    assert_eq!(code(&goaway.payload[4..]), ErrorCode::NoError);
    assert!(p.core.is_finished());
}

#[test]
fn control_frame_floods_close_the_connection_and_a_trickle_does_not() {
    let mut p = Peer::new();
    for _ in 0..900 {
        p.raw(kind::PING, 0, 0, &[1; 8]);
    }
    assert_eq!(p.goaway(), None, "900 PINGs at once are within the burst");
    p.now += Duration::from_secs(10);
    for _ in 0..999 {
        p.raw(kind::PING, 0, 0, &[1; 8]);
    }
    assert_eq!(p.goaway(), None, "the bucket refilled");
    for _ in 0..10 {
        p.raw(kind::PING, 0, 0, &[1; 8]);
    }
    assert_eq!(p.goaway(), Some(ErrorCode::EnhanceYourCalm));
}

#[test]
fn made_you_reset_spends_the_same_budget() {
    let mut p = Peer::with(Limits {
        max_requests: 1000,
        ..limits()
    });
    let mut closed_at = None;
    for i in 0..200u32 {
        // WINDOW_UPDATE 0 on an open stream: the server must reset it.
        let id = 2 * i + 1;
        let block = p.block(&[(":method", "POST"), (":scheme", "http"), (":path", "/")]);
        p.raw(kind::HEADERS, flag::END_HEADERS, id, &block);
        if p.raw(kind::WINDOW_UPDATE, 0, id, &0u32.to_be_bytes())
            .is_some()
        {
            closed_at = Some(i);
            break;
        }
    }
    assert_eq!(closed_at, Some(99));
    assert_eq!(p.goaway(), Some(ErrorCode::EnhanceYourCalm));
}

#[test]
fn graceful_shutdown_is_two_goaways_around_a_ping() {
    let mut p = Peer::new();
    p.get(1, "/");
    p.requests();
    p.core.shutdown(p.now);
    let out = p.frames();
    assert_eq!(out[0].kind, kind::GOAWAY);
    assert_eq!(&out[0].payload[..4], &0x7fff_ffffu32.to_be_bytes());
    assert_eq!(out[1].kind, kind::PING);
    // A stream the client opened meanwhile is still served.
    p.get(3, "/");
    assert_eq!(p.requests(), [3]);
    let ping = out[1].payload.clone();
    p.raw(kind::PING, flag::ACK, 0, &ping);
    let out = p.frames();
    assert_eq!(out[0].kind, kind::GOAWAY);
    assert_eq!(&out[0].payload[..4], &3u32.to_be_bytes());
    p.get(5, "/");
    assert_eq!(p.requests(), Vec::<u32>::new(), "after the final GOAWAY");
    p.answer(1, 1);
    p.answer(3, 1);
    assert!(p.core.is_finished());
}

#[test]
fn urgency_orders_streams_and_equals_take_turns() {
    let mut p = Peer::new();
    p.settings(&[(setting::INITIAL_WINDOW_SIZE, 1 << 20)]);
    p.raw(kind::WINDOW_UPDATE, 0, 0, &(1u32 << 24).to_be_bytes());
    for (id, u) in [(1, "u=3"), (3, "u=3"), (5, "u=1")] {
        let block = p.block(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            ("priority", u),
        ]);
        p.raw(
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            id,
            &block,
        );
    }
    p.requests();
    for id in [1, 3, 5] {
        p.core.respond(id, false, |enc, out| enc.status(200, out));
        p.core.set_ready(id, true);
    }
    let mut order = Vec::new();
    for _ in 0..2 {
        let (id, _) = p.core.next_send(100).unwrap();
        order.push(id);
    }
    assert_eq!(order, [5, 5], "the most urgent first");
    p.core.set_ready(5, false);
    let order: Vec<u32> = (0..4).map(|_| p.core.next_send(100).unwrap().0).collect();
    assert_eq!(order, [1, 3, 1, 3], "equals take turns");
    // PRIORITY_UPDATE moves stream 3 ahead.
    let mut update = 3u32.to_be_bytes().to_vec();
    update.extend_from_slice(b"u=0");
    p.raw(kind::PRIORITY_UPDATE, 0, 0, &update);
    assert_eq!(p.core.next_send(100).unwrap().0, 3);
}
