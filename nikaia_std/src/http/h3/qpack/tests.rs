//! QPACK with an empty table: the RFC's example, round trips, the limits
//! and every dynamic reference refused.

use super::decode::{Decoded, Decoder, DecompressionFailed};
use super::encode;
use super::streams::{DecoderStream, DecoderStreamError, EncoderStream, EncoderStreamError};
use crate::http::h2::hpack::hex;
use std::ops::ControlFlow;

type Lines = Vec<(Vec<u8>, Vec<u8>)>;

fn decode(section: &[u8], max: usize) -> Result<(Decoded, Lines), DecompressionFailed> {
    let mut lines = Vec::new();
    let outcome = Decoder::default().decode(section, max, &mut |n, v| {
        lines.push((n.to_vec(), v.to_vec()));
        ControlFlow::Continue(())
    })?;
    Ok((outcome, lines))
}

fn line(n: &str, v: &str) -> (Vec<u8>, Vec<u8>) {
    (n.as_bytes().to_vec(), v.as_bytes().to_vec())
}

#[test]
fn rfc_9204_b_1_literal_with_a_static_name_reference() {
    let section = hex("0000 510b 2f69 6e64 6578 2e68 746d 6c");
    let (outcome, lines) = decode(&section, 16 << 10).unwrap();
    assert_eq!(outcome, Decoded::Complete);
    assert_eq!(lines, [line(":path", "/index.html")]);
}

#[test]
fn a_response_round_trips_by_each_of_the_three_forms() {
    let mut out = Vec::new();
    encode::begin(&mut out);
    encode::status(&mut out, 200); // indexed (25)
    encode::field(&mut out, b"content-type", b"text/html; charset=utf-8"); // indexed
    encode::field(&mut out, b"content-length", b"4096"); // static name
    encode::field(&mut out, b"x-nikaia-custom", b"\xff\x00 odd"); // literal name, raw value
    encode::status(&mut out, 299);
    assert_eq!(&out[..4], &[0x00, 0x00, 0xc0 | 25, 0xc0 | 52]);
    let (outcome, lines) = decode(&out, 16 << 10).unwrap();
    assert_eq!(outcome, Decoded::Complete);
    assert_eq!(
        lines,
        [
            line(":status", "200"),
            line("content-type", "text/html; charset=utf-8"),
            line("content-length", "4096"),
            (b"x-nikaia-custom".to_vec(), b"\xff\x00 odd".to_vec()),
            line(":status", "299"),
        ]
    );
}

#[test]
fn dynamic_references_and_a_nonzero_insert_count_are_refused() {
    for bad in [
        "0381 10",      // Required Insert Count 2 (the RFC's B.2), post-base index
        "0000 80",      // indexed, T=0 (dynamic)
        "0000 10",      // indexed with post-base index
        "0000 4001 61", // literal with a dynamic name reference
        "0000 0001 61", // literal with a post-base name reference
        "0080",         // sign 1 with Required Insert Count 0: a negative Base
        "0000 ff24",    // static index 99, past the table
        "00",           // no Delta Base
        "0000 2361 62", // a literal name longer than what is left
    ] {
        assert_eq!(
            decode(&hex(bad), 16 << 10).map(|_| ()),
            Err(DecompressionFailed),
            "{bad}"
        );
    }
}

#[test]
fn the_section_limit_stops_delivery_but_checks_to_the_end() {
    // Ten lines of `x-a: <100 octets>`, each 3 + 100 + 32 = 135 octets.
    let mut out = Vec::new();
    encode::begin(&mut out);
    for _ in 0..10 {
        encode::field(&mut out, b"x-a", &[b'~'; 100]);
    }
    let (outcome, lines) = decode(&out, 135 * 4).unwrap();
    assert_eq!(outcome, Decoded::TooLarge);
    assert_eq!(lines.len(), 4);
    // A broken Huffman string after the limit is still an error.
    // content-type (static 44), then a Huffman value of eight 1-bits:
    // padding longer than 7 bits.
    out.extend_from_slice(&[0x5f, 0x1d, 0x81, 0xff]);
    assert_eq!(decode(&out, 135 * 4).map(|_| ()), Err(DecompressionFailed));
}

#[test]
fn a_huffman_bomb_delivers_nothing_past_the_limit() {
    // A section whose Huffman values decode to far more than the limit:
    // nothing past it is delivered.
    let mut out = Vec::new();
    encode::begin(&mut out);
    let big = vec![b'0'; 60_000]; // '0' is 5 bits: 37.5 KiB coded
    for _ in 0..4 {
        encode::field(&mut out, b"x-b", &big);
    }
    let (outcome, lines) = decode(&out, 16 << 10).unwrap();
    assert_eq!((outcome, lines.len()), (Decoded::TooLarge, 0));
}

#[test]
fn a_callback_may_stop_the_delivery() {
    let mut out = Vec::new();
    encode::begin(&mut out);
    encode::field(&mut out, b":method", b"GET");
    encode::field(&mut out, b":path", b"/");
    let mut seen = 0;
    let outcome = Decoder::default()
        .decode(&out, 1 << 14, &mut |_, _| {
            seen += 1;
            ControlFlow::Break(())
        })
        .unwrap();
    assert_eq!((outcome, seen), (Decoded::Stopped, 1));
}

#[test]
fn the_encoder_stream_may_only_set_capacity_zero() {
    let mut s = EncoderStream::default();
    assert_eq!(s.read(&[0x20, 0x20]), Ok(()));
    // Split across reads: 0x3f then its continuation.
    let mut s = EncoderStream::default();
    assert_eq!(s.read(&[0x3f]), Ok(()));
    assert_eq!(
        s.read(&[0xbd, 0x01]),
        Err(EncoderStreamError),
        "capacity 220"
    );
    for bad in [&[0xc0, 0x00][..], &[0x4a, 0x63], &[0x02]] {
        assert_eq!(
            EncoderStream::default().read(bad),
            Err(EncoderStreamError),
            "{bad:x?}"
        );
    }
}

#[test]
fn the_decoder_stream_may_only_cancel() {
    let mut s = DecoderStream::default();
    assert_eq!(
        s.read(&[0x44, 0x7f]),
        Ok(()),
        "cancel 4, then a split integer"
    );
    assert_eq!(s.read(&[0x80, 0x01]), Ok(()));
    assert_eq!(
        DecoderStream::default().read(&[0x84]),
        Err(DecoderStreamError),
        "section ack"
    );
    assert_eq!(
        DecoderStream::default().read(&[0x01]),
        Err(DecoderStreamError),
        "increment"
    );
    // An integer that never ends.
    assert_eq!(
        DecoderStream::default().read(&[0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
        Err(DecoderStreamError)
    );
}
