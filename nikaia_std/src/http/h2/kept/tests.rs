use super::*;
use crate::html::Raw;
use crate::http::h2::hpack::{Decoded, Decoder, DEFAULT_TABLE_SIZE};
use crate::http::response::{bodiless, IntoResponse};
use bytes::Bytes;
use std::ops::ControlFlow;

const DATE: &[u8] = b"Sun, 06 Dec 2026 05:00:00 GMT";
const NEXT: &[u8] = b"Sun, 06 Dec 2026 05:00:01 GMT";
const BODY: &[u8] = b"<p>held</p>";

/// An answer's head, as the tests vary it.
struct Shape {
    resp: Response,
    length: u64,
    date: &'static [u8],
    body: &'static [u8],
}

fn page() -> Shape {
    Shape {
        resp: Raw::new("<p>held</p>").into_response(),
        length: 11,
        date: DATE,
        body: BODY,
    }
}

/// Two connections' encoders in lockstep, one through a kept block and
/// one writing every block afresh, and the peer's decoder of the first.
struct Lockstep {
    kept: KeptBlock,
    through: Encoder,
    fresh: Encoder,
    peer: Decoder,
}

impl Lockstep {
    fn new() -> Lockstep {
        Lockstep {
            kept: KeptBlock::default(),
            through: Encoder::new(),
            fresh: Encoder::new(),
            peer: Decoder::new(DEFAULT_TABLE_SIZE),
        }
    }

    /// One answer: both blocks must be the same bytes, and decode to its
    /// status, date and fields.
    fn answer(&mut self, s: &Shape) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        self.through.begin(&mut a);
        self.kept
            .block(&mut self.through, &mut a, s.body, &s.resp, s.length, s.date);
        self.fresh.begin(&mut b);
        write_block(&mut self.fresh, &mut b, &s.resp, s.length, s.date);
        assert_eq!(a, b, "a kept block differs from the one its inputs encode");
        let mut fields = Vec::new();
        let r = self.peer.decode(&a, usize::MAX, &mut |n, v| {
            fields.push((n.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        assert_eq!(r, Ok(Decoded::Complete));
        assert_eq!(
            fields[0],
            (b":status".to_vec(), s.resp.status.to_string().into_bytes())
        );
        assert_eq!(fields[1], (b"date".to_vec(), s.date.to_vec()));
        let length = fields.iter().find(|(n, _)| n == b"content-length");
        let expected = (!bodiless(s.resp.status)).then(|| s.length.to_string().into_bytes());
        assert_eq!(length.map(|(_, v)| v.clone()), expected);
    }
}

#[test]
fn the_same_answer_is_given_its_kept_block() {
    let mut l = Lockstep::new();
    for _ in 0..5 {
        l.answer(&page());
    }
    // The first block adds the type and server to the table; the second
    // is written from the table as it then is, and kept.
    assert_eq!(l.kept.hits(), 3);
}

/// Each input changed alone after the block was kept: the next block is
/// encoded, never given from the kept one.
#[test]
fn every_input_is_part_of_its_key() {
    type Change = fn(&mut Shape);
    let changes: [(&str, Change); 6] = [
        ("status", |s| s.resp.status = 404),
        ("length", |s| s.length = 12),
        ("another body", |s| s.body = b"<p>else</p>"),
        ("a header added", |s| {
            s.resp
                .push_header("cache-control", Bytes::from_static(b"no-store"))
        }),
        ("the body row's type", |s| {
            s.resp.default_type = Some("text/css")
        }),
        ("a header's value", |s| {
            s.resp
                .push_header("content-type", Bytes::from_static(b"text/plain"))
        }),
    ];
    for (what, change) in changes {
        let mut l = Lockstep::new();
        for _ in 0..3 {
            l.answer(&page());
        }
        let hits = l.kept.hits();
        let mut s = page();
        change(&mut s);
        l.answer(&s);
        assert_eq!(l.kept.hits(), hits, "{what}: the kept block was given");
    }
}

/// The same answer after the table changed under it (another answer
/// added an entry, which moves every entry's index; the peer asked for a
/// smaller table): encoded again, with the indexes the table has now.
#[test]
fn a_table_that_changed_is_part_of_its_key() {
    let mut other = page();
    other
        .resp
        .push_header("cache-control", Bytes::from_static(b"max-age=60"));
    let mut l = Lockstep::new();
    for _ in 0..3 {
        l.answer(&page());
    }
    let hits = l.kept.hits();
    l.answer(&other);
    l.answer(&page());
    assert_eq!(l.kept.hits(), hits, "given across an added entry");
    for _ in 0..3 {
        l.answer(&page());
    }
    let hits = l.kept.hits();
    assert!(hits > 0);
    l.through.set_table_max(256);
    l.fresh.set_table_max(256);
    l.answer(&page());
    assert_eq!(l.kept.hits(), hits, "given across a new table size");
    // A new date is written into the kept block, not a reason to encode.
    l.answer(&page());
    l.answer(&page());
    let hits = l.kept.hits();
    let mut later = page();
    later.date = NEXT;
    l.answer(&later);
    assert_eq!(
        l.kept.hits(),
        hits + 1,
        "a new date encoded the block again"
    );
}

/// A long run of answers, most of them one page's, the rest drawn from a
/// few shapes, in a random order: every block is the one a fresh encoder
/// writes, and the peer decodes each.
#[test]
fn a_random_run_of_answers_gets_only_fresh_blocks() {
    let mut next = crate::http::kept_key::numbers(0x2545_f491_4f6c_dd1d_u64);
    let mut l = Lockstep::new();
    for _ in 0..5000 {
        let r = next();
        let mut s = page();
        if r >> 60 >= 12 {
            s.resp.status = [200, 403, 404, 304][(r % 4) as usize];
            s.length = [11, 12][(r >> 8) as usize % 2];
            s.date = if r >> 16 & 7 == 0 { NEXT } else { DATE };
            if r >> 25 & 1 == 0 {
                let v = format!("\"{}\"", r >> 27 & 3);
                s.resp.push_header("etag", Bytes::from(v));
            }
            if r >> 30 & 3 == 0 {
                let v = format!("max-age={}", r >> 32 & 63);
                s.resp.push_header("cache-control", Bytes::from(v));
            }
        }
        l.answer(&s);
    }
    assert!(
        l.kept.hits() > 1000,
        "only {} kept blocks given",
        l.kept.hits()
    );
}
