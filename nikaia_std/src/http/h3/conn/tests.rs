//! The HTTP/3 core driven by hand-made stream octets: requests whole and
//! in single octets, bodies by each intake, the critical streams' rules,
//! and each fault's code — stream or connection.

use super::*;
use crate::http::body::Intake;
use crate::http::h3::frame::{kind, stream as uni_type, write_frame, write_varint};
use crate::http::h3::qpack::encode;
use crate::http::h3::response::{data_head, headers_frame};

fn core() -> Core {
    Core::new(Limits {
        max_requests: 1000,
        max_list: 16 << 10,
    })
}

fn section(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut s = Vec::new();
    encode::begin(&mut s);
    for (n, v) in fields {
        encode::field(&mut s, n.as_bytes(), v.as_bytes());
    }
    s
}

const GET: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "example.test"),
    (":path", "/a?b"),
];

fn headers(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame(&mut out, kind::HEADERS, &section(fields));
    out
}

fn data(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_frame(&mut out, kind::DATA, payload);
    out
}

fn events(c: &mut Core) -> Vec<Event> {
    std::iter::from_fn(|| c.poll_event()).collect()
}

fn actions(c: &mut Core) -> Vec<Action> {
    std::iter::from_fn(|| c.poll_action()).collect()
}

fn post(length: Option<&str>) -> Vec<(&'static str, String)> {
    let mut f: Vec<(&str, String)> = vec![
        (":method", "POST".into()),
        (":scheme", "https".into()),
        (":authority", "example.test".into()),
        (":path", "/up".into()),
    ];
    if let Some(l) = length {
        f.push(("content-length", l.into()));
    }
    f
}

fn post_headers(length: Option<&str>) -> Vec<u8> {
    let f = post(length);
    let refs: Vec<(&str, &str)> = f.iter().map(|(n, v)| (*n, v.as_str())).collect();
    headers(&refs)
}

#[test]
fn a_get_with_its_end_is_a_request_whole_or_octet_by_octet() {
    let mut c = core();
    c.request_data(0, Bytes::from(headers(GET)), true).unwrap();
    match &events(&mut c)[..] {
        [Event::Request {
            stream: 0,
            request: Ok(p),
        }] => {
            assert_eq!(p.text.version, Version::Http3);
            assert_eq!(&p.fields[p.text.target.clone()], b"/a?b");
        }
        other => panic!("{other:?}"),
    }
    // One octet at a time, the end apart: the head, then its end.
    let mut c = core();
    let bytes = headers(GET);
    for b in &bytes {
        c.request_data(4, Bytes::copy_from_slice(&[*b]), false)
            .unwrap();
    }
    c.request_data(4, Bytes::new(), true).unwrap();
    assert!(matches!(
        &events(&mut c)[..],
        [Event::Head { stream: 4, .. }]
    ));
    c.take_body(4, Intake::Drain { max: 1024 }).unwrap();
    assert!(events(&mut c).is_empty());
}

#[test]
fn a_body_arrives_whole_streamed_or_drained_by_the_unit_s_choice() {
    let mut wire = post_headers(Some("10"));
    wire.extend(data(b"hello"));
    wire.extend(data(b"world"));
    let mut c = core();
    c.request_data(0, Bytes::from(wire.clone()), true).unwrap();
    assert!(matches!(
        &events(&mut c)[..],
        [Event::Head { stream: 0, .. }]
    ));
    c.take_body(0, Intake::Whole { limit: Some(100) }).unwrap();
    match &events(&mut c)[..] {
        [Event::Body { stream: 0, body }] => assert_eq!(&body[..], b"helloworld"),
        other => panic!("{other:?}"),
    }
    // Streamed, with the DATA arriving after the choice.
    let mut c = core();
    c.request_data(0, Bytes::from(post_headers(None)), false)
        .unwrap();
    events(&mut c);
    c.take_body(0, Intake::Stream).unwrap();
    c.request_data(0, Bytes::from(data(b"abc")), false).unwrap();
    c.request_data(0, Bytes::new(), true).unwrap();
    let got: Vec<(Vec<u8>, bool)> = events(&mut c)
        .into_iter()
        .map(|e| match e {
            Event::Data { data, end, .. } => (data.to_vec(), end),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(got, [(b"abc".to_vec(), false), (vec![], true)]);
    // Over a whole body's limit: 413, and the reading stopped.
    let mut c = core();
    c.request_data(0, Bytes::from(wire), false).unwrap();
    events(&mut c);
    c.take_body(0, Intake::Whole { limit: Some(4) }).unwrap();
    assert!(matches!(
        &events(&mut c)[..],
        [Event::TooLarge { stream: 0 }]
    ));
    assert_eq!(
        actions(&mut c),
        [Action::StopSending {
            stream: 0,
            code: Code::NoError
        }]
    );
}

#[test]
fn a_body_that_disagrees_with_its_content_length_is_a_message_error() {
    for (length, body) in [("3", &b"four"[..]), ("5", b"four")] {
        let mut wire = post_headers(Some(length));
        wire.extend(data(body));
        let mut c = core();
        c.request_data(0, Bytes::from(wire), false).unwrap();
        c.take_body(0, Intake::Stream).unwrap();
        c.request_data(0, Bytes::new(), true).unwrap();
        let evs = events(&mut c);
        assert!(
            matches!(evs.last(), Some(Event::Cancel { stream: 0 })),
            "{length}: {evs:?}"
        );
        assert_eq!(
            actions(&mut c),
            [Action::Reset {
                stream: 0,
                code: Code::MessageError
            }]
        );
    }
}

#[test]
fn frames_out_of_place_on_a_request_stream_close_the_connection() {
    let settings = {
        let mut o = Vec::new();
        write_frame(&mut o, kind::SETTINGS, &[]);
        o
    };
    let mut truncated = headers(GET);
    truncated.pop();
    for (what, wire, code) in [
        ("DATA first", data(b"x"), Code::FrameUnexpected),
        (
            "SETTINGS",
            [headers(GET), settings].concat(),
            Code::FrameUnexpected,
        ),
        ("HTTP/2 PING type", vec![0x06, 0x00], Code::FrameUnexpected),
        (
            "PUSH_PROMISE",
            vec![0x05, 0x01, 0x00],
            Code::FrameUnexpected,
        ),
        ("a frame cut by the end", truncated, Code::FrameError),
        (
            "DATA after trailers",
            [post_headers(None), headers(&[("x-t", "1")]), data(b"x")].concat(),
            Code::FrameUnexpected,
        ),
    ] {
        let mut c = core();
        let err = c.request_data(0, Bytes::from(wire), true).unwrap_err();
        assert_eq!(err.code, code, "{what}");
    }
}

#[test]
fn reserved_and_unknown_frames_are_skipped_anywhere_on_a_request_stream() {
    let mut wire = Vec::new();
    write_frame(&mut wire, 0x21, b"grease"); // reserved, before HEADERS
    wire.extend(headers(GET));
    write_frame(&mut wire, 0x2f4, &[0u8; 300]); // unknown, after
    let mut c = core();
    c.request_data(0, Bytes::from(wire), true).unwrap();
    assert!(matches!(
        &events(&mut c)[..],
        [Event::Request { request: Ok(_), .. }]
    ));
}

#[test]
fn malformed_fields_reset_the_stream_and_bad_ones_are_answered() {
    for (fields, want) in [
        (&[(":method", "GET"), (":path", "/")][..], None), // no :scheme
        (
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                (":protocol", "websocket"),
            ],
            None,
        ),
        (
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                ("Upper", "x"),
            ],
            None,
        ),
        (
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                ("connection", "close"),
            ],
            None,
        ),
        (
            &[(":method", "CONNECT"), (":authority", "a.test:443")],
            Some(405),
        ),
        (
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "a b"),
                (":path", "/"),
            ],
            Some(400),
        ),
    ] {
        let mut c = core();
        c.request_data(0, Bytes::from(headers(fields)), true)
            .unwrap();
        let evs = events(&mut c);
        match want {
            None => {
                assert!(evs.is_empty(), "{fields:?}: {evs:?}");
                assert_eq!(
                    actions(&mut c),
                    [Action::Reset {
                        stream: 0,
                        code: Code::MessageError
                    }]
                );
            }
            Some(status) => match &evs[..] {
                [Event::Request {
                    request: Err(r), ..
                }] => assert_eq!(r.reject.status, status),
                other => panic!("{fields:?}: {other:?}"),
            },
        }
    }
}

#[test]
fn a_field_section_past_the_bound_is_431_without_decoding_it() {
    let big = "v".repeat(20_000);
    let mut c = core();
    c.request_data(
        0,
        Bytes::from(headers(&[(":method", "GET"), ("x-big", &big)])),
        true,
    )
    .unwrap();
    match &events(&mut c)[..] {
        [Event::Request {
            request: Err(r), ..
        }] => assert_eq!(r.reject.status, 431),
        other => panic!("{other:?}"),
    }
    // And a HEADERS frame announcing more than four times the limit is not
    // gathered at all.
    let mut wire = Vec::new();
    write_varint(&mut wire, kind::HEADERS);
    write_varint(&mut wire, 1 << 30);
    let mut c = core();
    c.request_data(0, Bytes::from(wire), false).unwrap();
    assert!(matches!(
        &events(&mut c)[..],
        [Event::Request {
            request: Err(_),
            ..
        }]
    ));
}

#[test]
fn a_dynamic_table_reference_is_a_decompression_failure() {
    let mut wire = Vec::new();
    write_frame(&mut wire, kind::HEADERS, &[0x00, 0x00, 0x80]);
    let err = core().request_data(0, Bytes::from(wire), true).unwrap_err();
    assert_eq!(err.code, Code::QpackDecompressionFailed);
}

fn uni(t: u64, rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_varint(&mut out, t);
    out.extend_from_slice(rest);
    out
}

fn settings_frame() -> Vec<u8> {
    let mut o = Vec::new();
    write_frame(&mut o, kind::SETTINGS, &[0x06, 0x44, 0x00]);
    o
}

#[test]
fn the_peer_s_critical_streams_are_one_each_and_never_close() {
    let mut c = core();
    c.uni_data(2, &uni(uni_type::CONTROL, &settings_frame()), false)
        .unwrap();
    assert_eq!(
        c.peer_settings().and_then(|p| p.max_field_section_size),
        Some(1024)
    );
    c.uni_data(6, &uni(uni_type::QPACK_ENCODER, &[0x20]), false)
        .unwrap();
    c.uni_data(10, &uni(uni_type::QPACK_DECODER, &[]), false)
        .unwrap();
    for (id, t, code) in [
        (14, uni_type::CONTROL, Code::StreamCreationError),
        (18, uni_type::QPACK_ENCODER, Code::StreamCreationError),
        (22, uni_type::QPACK_DECODER, Code::StreamCreationError),
        (26, uni_type::PUSH, Code::StreamCreationError),
    ] {
        assert_eq!(
            c.uni_data(id, &uni(t, &[]), false).unwrap_err().code,
            code,
            "type {t}"
        );
    }
    // Closing any of the three is a connection error.
    for id in [2, 6, 10] {
        let mut c = core();
        let t = [
            uni_type::CONTROL,
            uni_type::QPACK_ENCODER,
            uni_type::QPACK_DECODER,
        ][id as usize / 4];
        let first = if t == uni_type::CONTROL {
            settings_frame()
        } else {
            vec![]
        };
        c.uni_data(id, &uni(t, &first), false).unwrap();
        assert_eq!(
            c.uni_closed(id).unwrap_err().code,
            Code::ClosedCriticalStream
        );
    }
}

#[test]
fn the_control_stream_starts_with_settings_and_takes_no_request_frames() {
    let err = core()
        .uni_data(2, &uni(uni_type::CONTROL, &data(b"")), false)
        .unwrap_err();
    assert_eq!(err.code, Code::MissingSettings);
    let mut grease = Vec::new();
    write_frame(&mut grease, 0x21, b"");
    let err = core()
        .uni_data(2, &uni(uni_type::CONTROL, &grease), false)
        .unwrap_err();
    assert_eq!(
        err.code,
        Code::MissingSettings,
        "even a reserved frame may not come first"
    );
    for (what, next, code) in [
        ("second SETTINGS", settings_frame(), Code::FrameUnexpected),
        ("HEADERS", headers(GET), Code::FrameUnexpected),
        (
            "HTTP/2 WINDOW_UPDATE",
            vec![0x08, 0x00],
            Code::FrameUnexpected,
        ),
        (
            "GOAWAY of two ids",
            vec![0x07, 0x02, 0x01, 0x01],
            Code::FrameError,
        ),
    ] {
        let mut c = core();
        let wire = uni(uni_type::CONTROL, &[settings_frame(), next].concat());
        assert_eq!(
            c.uni_data(2, &wire, false).unwrap_err().code,
            code,
            "{what}"
        );
    }
    // Reserved frames after SETTINGS are skipped; GOAWAY is heard.
    let mut c = core();
    let wire = uni(
        uni_type::CONTROL,
        &[settings_frame(), grease, vec![0x07, 0x01, 0x00]].concat(),
    );
    for b in &wire {
        c.uni_data(2, &[*b], false).unwrap();
    }
    assert!(c.going_away());
}

#[test]
fn unknown_stream_types_are_stopped_and_qpack_inserts_refused() {
    let mut c = core();
    c.uni_data(2, &uni(0x21 + 0x1f * 3, b"whatever"), false)
        .unwrap();
    assert_eq!(
        actions(&mut c),
        [Action::StopSending {
            stream: 2,
            code: Code::StreamCreationError
        }]
    );
    c.uni_closed(2).unwrap();
    let err = c
        .uni_data(6, &uni(uni_type::QPACK_ENCODER, &[0x3f, 0xbd, 0x01]), false)
        .unwrap_err();
    assert_eq!(err.code, Code::QpackEncoderStreamError);
    let err = core()
        .uni_data(10, &uni(uni_type::QPACK_DECODER, &[0x84]), false)
        .unwrap_err();
    assert_eq!(err.code, Code::QpackDecoderStreamError);
}

#[test]
fn resets_are_budgeted_and_answers_earn_them_back() {
    let mut c = core();
    let mut id = 0;
    for _ in 0..RESET_BUDGET {
        c.request_data(id, Bytes::from(post_headers(None)), false)
            .unwrap();
        c.request_reset(id).unwrap();
        id += 4;
    }
    c.request_data(id, Bytes::from(post_headers(None)), false)
        .unwrap();
    assert_eq!(c.request_reset(id).unwrap_err().code, Code::ExcessiveLoad);
    // With an answer between each pair, never.
    let mut c = core();
    for i in 0..3 * RESET_BUDGET as u64 {
        c.request_data(8 * i, Bytes::from(post_headers(None)), false)
            .unwrap();
        c.request_reset(8 * i).unwrap();
        c.request_data(8 * i + 4, Bytes::from(headers(GET)), true)
            .unwrap();
        c.answered(8 * i + 4);
    }
}

#[test]
fn past_goaway_new_streams_are_rejected() {
    let mut c = Core::new(Limits {
        max_requests: 2,
        max_list: 16 << 10,
    });
    c.request_data(0, Bytes::from(headers(GET)), true).unwrap();
    assert!(!c.going_away());
    c.request_data(4, Bytes::from(headers(GET)), true).unwrap();
    assert!(c.going_away());
    let frame = c.goaway(100);
    assert_eq!(
        frame,
        crate::http::h3::frame::goaway(8),
        "the cap chose the id"
    );
    c.request_data(8, Bytes::from(headers(GET)), true).unwrap();
    assert_eq!(events(&mut c).len(), 2);
    assert_eq!(
        actions(&mut c),
        [Action::Reset {
            stream: 8,
            code: Code::RequestRejected
        }]
    );
}

#[test]
fn response_frames_decode_back() {
    let f = headers_frame(404, &[(b"content-type", b"text/plain"), (b"x-y", b"z")]);
    let head = frame::read_head(&f).unwrap();
    assert_eq!(head.kind, kind::HEADERS);
    let mut got = Vec::new();
    Decoder::default()
        .decode(&f[head.size..], 1 << 14, &mut |n, v| {
            got.push((n.to_vec(), v.to_vec()));
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(got[0], (b":status".to_vec(), b"404".to_vec()));
    assert_eq!(got.len(), 3);
    let (h, n) = data_head(70_000);
    assert_eq!(
        frame::read_head(&h[..n]).map(|h| (h.kind, h.len)),
        Some((kind::DATA, 70_000))
    );
}

/// An outside review's findings (#47): each test states what RFC 9114 /
/// RFC 9204 asks; those that fail today are `#[ignore]`d with the finding.
#[path = "review.rs"]
mod review;
