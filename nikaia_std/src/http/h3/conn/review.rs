//! An outside review of the HTTP/3 core against RFC 9114 and RFC 9204:
//! each finding as a test, all of them fixed but one still marked
//! `#[ignore = "finding: ..."]` (a stream id the unit forgot, served
//! again: only a transport that reuses ids can send one, and QUIC never
//! does), and the probes that found nothing wrong.

use super::*;

/// The request stream was reset with H3_MESSAGE_ERROR and nothing was
/// handed to the unit as a request to serve.
fn assert_malformed(c: &mut Core, id: u64, what: &str) {
    let evs = events(c);
    assert!(
        !evs.iter().any(|e| matches!(
            e,
            Event::Request { request: Ok(_), .. } | Event::Head { .. }
        )),
        "{what}: handed as a request to serve: {evs:?}"
    );
    assert!(
        actions(c).contains(&Action::Reset {
            stream: id,
            code: Code::MessageError
        }),
        "{what}: not reset with H3_MESSAGE_ERROR"
    );
}

fn control(frames: &[u8]) -> Vec<u8> {
    uni(
        uni_type::CONTROL,
        &[settings_frame(), frames.to_vec()].concat(),
    )
}

fn varint_frame(k: u64, v: u64) -> Vec<u8> {
    let mut p = Vec::new();
    write_varint(&mut p, v);
    let mut out = Vec::new();
    write_frame(&mut out, k, &p);
    out
}

// RFC 9114 §4.1.2: a request whose content-length differs from the sum of
// its DATA lengths is malformed and must not be acted on. A PUT that says
// 10 octets and ends right after its HEADERS is handed to the unit as a
// complete request with no body (Event::Request Ok), and only then
// cancelled: a unit that serves events in order writes an empty file.
#[test]
fn review_a_put_that_ends_short_of_its_content_length_is_never_a_request() {
    let mut c = core();
    let mut f = post(Some("10"));
    f[0].1 = "PUT".into();
    let refs: Vec<(&str, &str)> = f.iter().map(|(n, v)| (*n, v.as_str())).collect();
    c.request_data(0, Bytes::from(headers(&refs)), true)
        .unwrap();
    assert_malformed(&mut c, 0, "PUT, content-length 10, no DATA");
}

// RFC 9114 §4.3.1: with :scheme http or https "the request MUST contain
// either an :authority pseudo-header field or a Host header field";
// §4.1.2: absent mandatory fields make it malformed.
#[test]
fn review_a_request_without_authority_or_host_is_malformed() {
    let mut c = core();
    let f = [(":method", "GET"), (":scheme", "https"), (":path", "/")];
    c.request_data(0, Bytes::from(headers(&f)), true).unwrap();
    assert_malformed(&mut c, 0, "no :authority, no Host");
}

// RFC 9114 §4.3.1: ":authority ... If these fields are present, they MUST
// NOT be empty." `valid_host` takes the empty string.
#[test]
fn review_an_empty_authority_or_host_is_malformed() {
    for (what, f) in [
        (
            "host empty",
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                ("host", ""),
            ][..],
        ),
        (
            ":authority empty",
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", ""),
                (":path", "/"),
            ],
        ),
    ] {
        let mut c = core();
        c.request_data(0, Bytes::from(headers(f)), true).unwrap();
        assert_malformed(&mut c, 0, what);
    }
}

// RFC 9110 §9.1: method = token = 1*tchar; an empty :method is an invalid
// pseudo-header value, malformed (RFC 9114 §4.1.2). The token check in
// fields/request.rs is `.all(..)`, true on nothing.
#[test]
fn review_an_empty_method_is_malformed() {
    let mut c = core();
    let f = [
        (":method", ""),
        (":scheme", "https"),
        (":authority", "example.test"),
        (":path", "/"),
    ];
    c.request_data(0, Bytes::from(headers(&f)), true).unwrap();
    assert_malformed(&mut c, 0, "empty :method");
}

// RFC 9114 §4.3.1: :path holds "the path and query parts of the target
// URI (the path-absolute production ...)"; an absolute URI there is an
// invalid pseudo-header value. Here it is served, its host silently
// dropped while :authority names another.
#[test]
fn review_an_absolute_form_path_is_malformed() {
    let mut c = core();
    let f = [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "example.test"),
        (":path", "https://other.test/secret"),
    ];
    c.request_data(0, Bytes::from(headers(&f)), true).unwrap();
    assert_malformed(&mut c, 0, "absolute :path");
}

// RFC 9114 §7.2.3: "If a server receives a CANCEL_PUSH frame for a push ID
// that has not yet been mentioned by a PUSH_PROMISE frame, this MUST be
// treated as a connection error of type H3_ID_ERROR." We never push.
#[test]
fn review_cancel_push_from_a_client_is_an_id_error() {
    let mut c = core();
    let err = c
        .uni_data(2, &control(&varint_frame(kind::CANCEL_PUSH, 0)), false)
        .unwrap_err();
    assert_eq!(err.code, Code::IdError);
}

// RFC 9114 §7.2.7: "receipt of a MAX_PUSH_ID frame that contains a smaller
// value than previously received MUST be treated as a connection error of
// type H3_ID_ERROR."
#[test]
fn review_max_push_id_may_not_shrink() {
    let mut c = core();
    let wire = control(
        &[
            varint_frame(kind::MAX_PUSH_ID, 10),
            varint_frame(kind::MAX_PUSH_ID, 5),
        ]
        .concat(),
    );
    assert_eq!(c.uni_data(2, &wire, false).unwrap_err().code, Code::IdError);
}

// RFC 9114 §5.2: "Receiving a GOAWAY containing a larger identifier than
// previously received MUST be treated as a connection error of type
// H3_ID_ERROR."
#[test]
fn review_a_client_goaway_may_not_grow() {
    let mut c = core();
    let wire = control(&[varint_frame(kind::GOAWAY, 4), varint_frame(kind::GOAWAY, 8)].concat());
    assert_eq!(c.uni_data(2, &wire, false).unwrap_err().code, Code::IdError);
}

// A stream refused past GOAWAY is never recorded, so each later piece of
// it is "admitted" afresh and queues another Reset (and counts another
// reset sent). One stream, one reset.
#[test]
fn review_a_stream_rejected_past_goaway_is_reset_once() {
    let mut c = core();
    c.goaway(0);
    let wire = headers(GET);
    let (a, b) = wire.split_at(3);
    c.request_data(0, Bytes::copy_from_slice(a), false).unwrap();
    c.request_data(0, Bytes::copy_from_slice(b), false).unwrap();
    c.request_data(0, Bytes::new(), true).unwrap();
    assert_eq!(
        actions(&mut c),
        [Action::Reset {
            stream: 0,
            code: Code::RequestRejected
        }]
    );
    assert_eq!(c.take_tally().resets_sent, 1);
}

// QUIC never reuses a stream id: octets on an id already forgotten are a
// transport bug, not a new request. The core re-admits it as a fresh
// request (and counts it toward the GOAWAY cap).
#[test]
#[ignore = "finding: a forgotten stream id is served again as a new request"]
fn review_a_forgotten_stream_is_not_a_new_request() {
    let mut c = core();
    c.request_data(0, Bytes::from(headers(GET)), true).unwrap();
    events(&mut c);
    c.answered(0);
    c.forget(0);
    c.request_data(0, Bytes::from(headers(GET)), true).unwrap();
    let evs = events(&mut c);
    assert!(evs.is_empty(), "served again: {evs:?}");
}

// --- Probes that hold today (kept as regression tests) ---

// A HEADERS frame announcing 2^62 - 1 octets: answered 431 from its length,
// nothing gathered, no panic; its end mid-frame closes with H3_FRAME_ERROR.
#[test]
fn review_a_headers_frame_near_2_62_is_431_and_gathers_nothing() {
    let mut wire = Vec::new();
    write_varint(&mut wire, kind::HEADERS);
    write_varint(&mut wire, crate::http::h3::frame::VARINT_MAX);
    wire.extend_from_slice(&[0u8; 1000]);
    let mut c = core();
    c.request_data(0, Bytes::from(wire), false).unwrap();
    assert!(matches!(
        &events(&mut c)[..],
        [Event::Request { request: Err(r), .. }] if r.reject.status == 431
    ));
    assert_eq!(
        c.request_data(0, Bytes::new(), true).unwrap_err().code,
        Code::FrameError
    );
}

// 200 000 zero-length unknown and DATA frames around a request: skipped,
// nothing held, no event per frame.
#[test]
fn review_a_flood_of_empty_frames_holds_nothing() {
    let mut wire = Vec::new();
    for _ in 0..100_000 {
        write_frame(&mut wire, 0x2f4, b"");
    }
    wire.extend(post_headers(None));
    for _ in 0..100_000 {
        write_frame(&mut wire, kind::DATA, b"");
    }
    let mut c = core();
    c.request_data(0, Bytes::from(wire), false).unwrap();
    assert_eq!(events(&mut c).len(), 1);
    match &c.streams[&0].taking {
        body::Taking::Undecided(held, _) => assert!(held.is_empty()),
        other => panic!("{other:?}"),
    }
}

// A SETTINGS of 1 000 distinct unknown identifiers (4 000 octets, under
// the 4 KiB bound) reads; one past the bound is H3_EXCESSIVE_LOAD.
#[test]
fn review_a_settings_with_many_entries_reads_and_a_huge_one_is_refused() {
    let mut p = Vec::new();
    for i in 0..1000u64 {
        write_varint(&mut p, 0x40 + i * 2); // 2 octets each, none reserved-HTTP/2
        write_varint(&mut p, 0x40);
    }
    let mut f = Vec::new();
    write_frame(&mut f, kind::SETTINGS, &p);
    let mut c = core();
    c.uni_data(2, &uni(uni_type::CONTROL, &f), false).unwrap();
    assert!(c.peer_settings().is_some());
    let mut big = Vec::new();
    write_varint(&mut big, kind::SETTINGS);
    write_varint(&mut big, 1 << 40);
    let err = core()
        .uni_data(2, &uni(uni_type::CONTROL, &big), false)
        .unwrap_err();
    assert_eq!(err.code, Code::ExcessiveLoad);
}

// Trailers with a pseudo-header, and a zero-length HEADERS (no QPACK
// prefix).
#[test]
fn review_bad_trailers_and_an_empty_field_section_are_refused() {
    let mut wire = post_headers(None);
    wire.extend(headers(&[(":path", "/x")]));
    let mut c = core();
    c.request_data(0, Bytes::from(wire), true).unwrap();
    assert!(actions(&mut c).contains(&Action::Reset {
        stream: 0,
        code: Code::MessageError
    }));
    let mut empty = Vec::new();
    write_frame(&mut empty, kind::HEADERS, b"");
    let err = core()
        .request_data(0, Bytes::from(empty), true)
        .unwrap_err();
    assert_eq!(err.code, Code::QpackDecompressionFailed);
}

// Data after the client reset the stream is not read.
#[test]
fn review_data_after_a_reset_is_ignored() {
    let mut c = core();
    c.request_data(0, Bytes::from(post_headers(Some("3"))), false)
        .unwrap();
    c.request_reset(0).unwrap();
    events(&mut c);
    c.request_data(0, Bytes::from(data(b"abc")), true).unwrap();
    c.take_body(0, Intake::Whole { limit: None }).unwrap();
    assert!(events(&mut c).is_empty());
}

// Before the unit decides how a body is taken, what arrives is gathered
// into one buffer: 100 000 one-octet DATA frames (300 000 wire octets, one
// QUIC read) once held 100 000 `Bytes` handles, about 3.2 MB for 100 KB
// of body — an ~11x amplification of the stream receive window that
// bounds it (spec/http3.md, "Requests").
#[test]
fn review_undecided_body_pieces_are_coalesced() {
    let mut wire = post_headers(None);
    for _ in 0..100_000 {
        wire.extend(data(b"x"));
    }
    let mut c = core();
    c.request_data(0, Bytes::from(wire), false).unwrap();
    match &c.streams[&0].taking {
        body::Taking::Undecided(held, _) => {
            assert_eq!(held.len(), 100_000);
            assert!(
                held.capacity() <= 2 * 100_000,
                "{} octets held",
                held.capacity()
            );
        }
        other => panic!("{other:?}"),
    }
}

// 20 000 uni streams of a reserved type, each ending with its type: each
// is stopped, and none is kept once ended.
#[test]
fn review_many_tiny_uni_streams_leave_nothing_behind() {
    let mut c = core();
    for i in 0..20_000u64 {
        c.uni_data(2 + 4 * i, &uni(0x21 + 0x1f * (i % 50), b""), true)
            .unwrap();
    }
    assert!(c.unis.is_empty());
    assert_eq!(actions(&mut c).len(), 20_000);
}
