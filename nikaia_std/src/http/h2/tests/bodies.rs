//! Request bodies in the core: a streamed body handed on a frame at a
//! time and credited only as taken, the windows it opens, grows and gives
//! back (`spec/http2.md`, "Request bodies").

use super::*;
use crate::http::h2::conn::STREAM_WINDOW;

/// Opens `stream` with a POST whose body follows, and takes its body as
/// `intake`.
fn post(p: &mut Peer, stream: u32, intake: Intake) {
    let block = p.block(&[(":method", "POST"), (":scheme", "http"), (":path", "/up")]);
    p.raw(kind::HEADERS, flag::END_HEADERS, stream, &block);
    match p.core.next_event() {
        Some(Event::Head { stream: s, .. }) if s == stream => {}
        e => panic!("{e:?}"),
    }
    p.core.take_body(stream, intake, p.now);
}

/// The WINDOW_UPDATE increments the server wrote since the last look, as
/// (stream, increment).
fn updates(p: &mut Peer) -> Vec<(u32, u32)> {
    p.frames()
        .iter()
        .filter(|f| f.kind == kind::WINDOW_UPDATE)
        .map(|f| {
            (
                f.stream,
                u32::from_be_bytes(f.payload[..4].try_into().unwrap()),
            )
        })
        .collect()
}

/// The data events since the last look, as (stream, octets, end).
fn data(p: &mut Peer) -> Vec<(u32, usize, bool)> {
    let mut seen = Vec::new();
    while let Some(e) = p.core.next_event() {
        if let Event::Data { stream, data, end } = e {
            seen.push((stream, data.len(), end));
        }
    }
    seen
}

#[test]
fn a_streamed_body_is_handed_on_and_credited_only_as_it_is_taken() {
    let mut p = Peer::new();
    p.frames();
    post(&mut p, 1, Intake::Stream);
    // Its window opens to 256 KiB; the connection's grows as much.
    assert_eq!(
        updates(&mut p),
        [(1, STREAM_WINDOW - 65_535), (0, STREAM_WINDOW)]
    );
    let piece = [7u8; 16_384];
    p.raw(kind::DATA, 0, 1, &piece);
    assert_eq!(data(&mut p), [(1, 16_384, false)]);
    // The connection is credited on arrival, a quarter of its window at
    // a time (65 535 and the stream's 256 KiB: 81 919); the stream is not.
    assert_eq!(updates(&mut p), []);
    for _ in 0..4 {
        p.raw(kind::DATA, 0, 1, &piece);
    }
    assert_eq!(data(&mut p).len(), 4);
    assert_eq!(updates(&mut p), [(0, 5 * 16_384)]);
    // Taken: a quarter of the stream's window at a time comes back,
    // whatever arrives meanwhile.
    p.core.consumed(1, 3 * 16_384, p.now);
    p.raw(kind::DATA, 0, 1, &piece);
    assert_eq!(data(&mut p).len(), 1);
    assert_eq!(updates(&mut p), []);
    p.core.consumed(1, 16_384, p.now);
    assert_eq!(updates(&mut p), [(1, 65_536)]);
    // Trailers end it: a last, empty piece.
    let trailers = p.block(&[("x-sum", "1")]);
    p.raw(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &trailers,
    );
    assert_eq!(data(&mut p), [(1, 0, true)]);
}

#[test]
fn a_paused_body_shuts_its_window_and_its_siblings_go_on() {
    let mut p = Peer::new();
    post(&mut p, 1, Intake::Stream);
    post(&mut p, 3, Intake::Stream);
    p.frames();
    let piece = [7u8; 16_384];
    // Stream 1's sink takes nothing: its whole window arrives, no more.
    for _ in 0..STREAM_WINDOW / 16_384 {
        p.raw(kind::DATA, 0, 1, &piece);
    }
    assert_eq!(data(&mut p).len(), (STREAM_WINDOW / 16_384) as usize);
    assert!(updates(&mut p).iter().all(|&(s, _)| s == 0));
    p.raw(kind::DATA, 0, 1, b"x");
    assert_eq!(p.resets(), [(1, ErrorCode::FlowControl)]);
    // Stream 3 is read and credited meanwhile.
    for _ in 0..8 {
        p.raw(kind::DATA, 0, 3, &piece);
        p.core.consumed(3, piece.len(), p.now);
    }
    p.raw(kind::DATA, flag::END_STREAM, 3, b"");
    let seen = data(&mut p);
    assert_eq!(seen.len(), 9);
    assert_eq!(seen[8], (3, 0, true));
    assert_eq!(p.goaway(), None);
}

#[test]
fn a_window_grows_while_it_limits_the_rate_and_gives_the_connection_back() {
    let mut p = Peer::new();
    // The client's ACK of our SETTINGS: a round trip of 40 ms.
    p.now += Duration::from_millis(40);
    p.raw(kind::SETTINGS, flag::ACK, 0, b"");
    post(&mut p, 1, Intake::Stream);
    p.frames();
    let piece = [7u8; 16_384];
    // A whole window in one round trip, taken as it comes: the window is
    // what holds the client back, so it doubles.
    for _ in 0..STREAM_WINDOW / 16_384 {
        p.raw(kind::DATA, 0, 1, &piece);
        p.core.consumed(1, piece.len(), p.now);
    }
    p.now += Duration::from_millis(40);
    p.raw(kind::DATA, 0, 1, &piece);
    p.core.consumed(1, piece.len(), p.now);
    let grown = updates(&mut p);
    assert!(grown.contains(&(0, STREAM_WINDOW)), "{grown:?}");
    let credit: u32 = grown.iter().filter(|u| u.0 == 1).map(|u| u.1).sum();
    assert!(
        credit > STREAM_WINDOW,
        "{credit}: taken credit plus the growth"
    );
    // A slow round trip's worth (a quarter of the window): no growth.
    p.now += Duration::from_millis(40);
    for _ in 0..8 {
        p.raw(kind::DATA, 0, 1, &piece);
    }
    p.now += Duration::from_millis(40);
    p.core.consumed(1, 8 * 16_384, p.now);
    assert!(!updates(&mut p).contains(&(0, STREAM_WINDOW * 2)));
    // Ended: what the connection's window grew by is not credited again.
    p.raw(kind::DATA, flag::END_STREAM, 1, b"");
    data(&mut p);
    post(&mut p, 3, Intake::Whole { limit: None });
    p.frames();
    for _ in 0..3 {
        p.raw(kind::DATA, 0, 3, &piece);
    }
    assert!(
        updates(&mut p).iter().all(|&(s, _)| s != 0),
        "the connection's credit is withheld"
    );
}

#[test]
fn what_arrives_before_the_decision_waits_in_the_first_window() {
    let mut p = Peer::new();
    let block = p.block(&[(":method", "POST"), (":scheme", "http"), (":path", "/up")]);
    p.raw(kind::HEADERS, flag::END_HEADERS, 1, &block);
    for _ in 0..3 {
        p.raw(kind::DATA, 0, 1, &[1u8; 15_000]);
    }
    p.raw(kind::DATA, flag::END_STREAM, 1, &[2u8; 15_000]);
    assert!(matches!(
        p.core.next_event(),
        Some(Event::Head { stream: 1, .. })
    ));
    let e = p.core.next_event();
    assert!(e.is_none(), "nothing is handed on undecided: {e:?}");
    // Streamed: what waited comes as one piece, and the end with it.
    p.core.take_body(1, Intake::Stream, p.now);
    assert_eq!(data(&mut p), [(1, 60_000, true)]);
    // Dropped: nothing comes, and a content-length still holds.
    let block = p.block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/up"),
        ("content-length", "3"),
    ]);
    p.raw(kind::HEADERS, flag::END_HEADERS, 3, &block);
    assert!(matches!(
        p.core.next_event(),
        Some(Event::Head { stream: 3, .. })
    ));
    p.core.take_body(3, Intake::Discard, p.now);
    p.raw(kind::DATA, 0, 3, b"abcd");
    assert_eq!(p.resets(), [(3, ErrorCode::Protocol)]);
    assert!(matches!(
        p.core.next_event(),
        Some(Event::Cancel { stream: 3 })
    ));
}

#[test]
fn a_connection_opens_at_most_16_mib_of_streamed_windows() {
    let mut p = Peer::with(Limits {
        max_streams: 100,
        max_requests: 1000,
        max_list: 4096,
    });
    p.frames();
    for i in 0..64 {
        post(&mut p, 1 + 2 * i, Intake::Stream);
    }
    let grown: u64 = updates(&mut p)
        .iter()
        .filter(|u| u.0 == 0)
        .map(|u| u64::from(u.1))
        .sum();
    assert_eq!(grown, 16 << 20);
    // The 65th keeps its first window, and the connection's does not grow.
    post(&mut p, 129, Intake::Stream);
    assert_eq!(updates(&mut p), []);
}

#[test]
fn an_unread_small_body_is_let_arrive_and_a_large_one_is_reset() {
    let mut p = Peer::new();
    post(&mut p, 1, Intake::Drain { max: 40_000 });
    // Answered at once; the client's body still comes, credited.
    p.answer(1, 0);
    p.frames();
    for _ in 0..2 {
        p.raw(kind::DATA, 0, 1, &[0u8; 16_384]);
    }
    assert_eq!(
        updates(&mut p),
        [(0, 16_384), (1, 16_384), (0, 16_384), (1, 16_384)]
    );
    p.raw(kind::DATA, flag::END_STREAM, 1, b"end");
    assert_eq!(p.resets(), [], "the client ended it: no reset");
    assert_eq!(p.core.open_streams(), 0);
    assert!(p.core.next_event().is_none(), "nothing of it handed on");
    // Past the bound: no more credit, and the answered stream is reset.
    post(&mut p, 3, Intake::Drain { max: 20_000 });
    p.answer(3, 0);
    p.frames();
    p.raw(kind::DATA, 0, 3, &[0u8; 16_384]);
    p.raw(kind::DATA, 0, 3, &[0u8; 16_384]);
    assert_eq!(p.resets(), [(3, ErrorCode::NoError)]);
}

/// A streamed body whose END_STREAM comes before its `content-length`
/// is reset, and its end never reaches the sink: a sink told of the end
/// would name its file with the short body (found from outside: a PUT of
/// 5 of 10 octets sometimes replaced the file).
#[test]
fn a_body_ended_short_of_its_content_length_is_never_ended_for_the_sink() {
    let mut p = Peer::new();
    p.frames();
    let block = p.block(&[
        (":method", "PUT"),
        (":scheme", "http"),
        (":path", "/up"),
        ("content-length", "10"),
    ]);
    p.raw(kind::HEADERS, flag::END_HEADERS, 1, &block);
    assert!(matches!(
        p.core.next_event(),
        Some(Event::Head { stream: 1, .. })
    ));
    p.core.take_body(1, Intake::Stream, p.now);
    p.raw(kind::DATA, 0, 1, b"abc");
    p.raw(kind::DATA, flag::END_STREAM, 1, b"de");
    let mut seen = Vec::new();
    while let Some(e) = p.core.next_event() {
        seen.push(match e {
            Event::Data { data, end, .. } => format!("data {} {end}", data.len()),
            Event::Cancel { stream } => format!("cancel {stream}"),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(seen, ["data 3 false", "cancel 1"]);
    assert_eq!(p.resets(), [(1, ErrorCode::Protocol)]);
}
