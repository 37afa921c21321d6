use super::*;
use crate::html::Raw;
use crate::http::kept_key::GIVE_WAY_AFTER;
use crate::http::request::Version;
use crate::http::response::IntoResponse;
use crate::http::response::Response;

const DATE: &[u8] = b"Sun, 06 Dec 2026 05:00:00 GMT";
const BODY: &[u8] = b"<p>held</p>";
const NEXT: &[u8] = b"Sun, 06 Dec 2026 05:00:01 GMT";

/// What [`write_head`] writes for these inputs, fresh.
fn fresh(resp: &Response, length: u64, date: &[u8], close: bool, version: Version) -> Vec<u8> {
    let mut buf = BytesMut::new();
    write_head(&mut buf, resp, length, date, close, version);
    buf.to_vec()
}

struct Shape {
    resp: Response,
    length: u64,
    date: &'static [u8],
    close: bool,
    version: Version,
}

impl Shape {
    fn inputs(&self) -> Inputs<'_> {
        Inputs {
            resp: &self.resp,
            length: self.length,
            date: self.date,
            close: self.close,
            version: self.version,
        }
    }
}

fn page() -> Shape {
    Shape {
        resp: Raw::new("<p>held</p>").into_response(),
        length: 11,
        date: DATE,
        close: false,
        version: Version::Http11,
    }
}

/// Gives `inputs`' head through `kept`, and checks it is the fresh one.
fn give(kept: &mut Heads, inputs: &Shape) -> Bytes {
    let i = inputs;
    let head = kept.head(BODY, i.inputs());
    assert_eq!(
        head,
        fresh(&i.resp, i.length, i.date, i.close, i.version),
        "a kept head differs from the one its inputs write"
    );
    head
}

#[test]
fn the_same_answer_is_given_its_kept_head() {
    let mut kept = Heads::default();
    for _ in 0..5 {
        give(&mut kept, &page());
    }
    assert_eq!(kept.hits(), 4);
}

/// Each input of a head, changed alone after the head was kept: the next
/// head is written, never the kept one.
#[test]
fn every_input_of_a_head_is_part_of_its_key() {
    type Change = fn(&mut Shape);
    let changes: [(&str, Change); 10] = [
        ("status", |i| i.resp.status = 404),
        ("length (another body)", |i| i.length = 12),
        ("a header added", |i| {
            i.resp
                .push_header("cache-control", Bytes::from_static(b"no-store"))
        }),
        ("the body row's type", |i| {
            i.resp.default_type = Some("text/plain; charset=utf-8")
        }),
        ("a Content-Type field", |i| {
            i.resp
                .push_header("content-type", Bytes::from_static(b"text/css"))
        }),
        ("the date (a new second)", |i| i.date = NEXT),
        ("close", |i| i.close = true),
        ("HTTP/1.0", |i| i.version = Version::Http10),
        ("HTTP/1.0, closing", |i| {
            i.version = Version::Http10;
            i.close = true
        }),
        ("no length (produced)", |i| {
            i.length = crate::http::response::UNKNOWN_LENGTH
        }),
    ];
    for (what, change) in changes {
        let mut kept = Heads::default();
        let before = give(&mut kept, &page());
        give(&mut kept, &page());
        let hits = kept.hits();
        let mut changed = page();
        change(&mut changed);
        let after = give(&mut kept, &changed);
        assert_eq!(kept.hits(), hits, "{what}: the kept head was given");
        assert_ne!(before, after, "{what}: the head did not change");
    }
}

/// A header's value changed, its name's case changed, two fields swapped:
/// each a different head.
#[test]
fn header_values_case_and_order_are_compared() {
    let with = |fields: &[(&'static str, &'static str)]| {
        let mut i = page();
        for (n, v) in fields {
            i.resp.push_header(n, Bytes::from_static(v.as_bytes()));
        }
        i
    };
    let shapes = [
        with(&[("etag", "\"1\""), ("vary", "accept-encoding")]),
        with(&[("etag", "\"2\""), ("vary", "accept-encoding")]),
        with(&[("ETag", "\"2\""), ("vary", "accept-encoding")]),
        with(&[("vary", "accept-encoding"), ("ETag", "\"2\"")]),
    ];
    let mut kept = Heads::default();
    for shape in &shapes {
        // Kept as soon as it is asked twice after the first's place is
        // given up.
        for _ in 0..GIVE_WAY_AFTER + 1 {
            give(&mut kept, shape);
        }
    }
}

/// A long run of answers, most of them one page's, the rest drawn from a
/// few shapes and dates, in a random order: every head is the one its inputs write.
#[test]
fn a_random_run_of_answers_gets_only_fresh_heads() {
    let mut next = crate::http::kept_key::numbers(0x9e37_79b9_7f4a_7c15_u64);
    let mut kept = Heads::default();
    for _ in 0..5000 {
        let r = next();
        let mut i = page();
        // Most answers are the common one, as a constant page's are.
        if r >> 60 < 12 {
            give(&mut kept, &i);
            continue;
        }
        i.resp.status = [200, 200, 200, 304, 404][(r % 5) as usize];
        i.length = [11, 11, 12, 0][(r >> 8) as usize % 4];
        i.date = if r >> 16 & 15 == 0 { NEXT } else { DATE };
        i.close = r >> 20 & 31 == 0;
        if r >> 25 & 3 == 0 {
            i.resp
                .push_header("etag", Bytes::from(format!("\"{}\"", r >> 27 & 1)));
        }
        give(&mut kept, &i);
    }
    assert!(kept.hits() > 1000, "only {} kept heads given", kept.hits());
}

/// Answers whose heads are alike but whose bodies are not the same bytes
/// (one kept file after another) are told apart by the body first.
#[test]
fn another_body_of_the_same_length_is_a_miss() {
    let mut kept = Heads::default();
    let other = b"<p>else</p>".to_vec();
    let i = page();
    for body in [BODY, BODY, &other[..], BODY] {
        kept.head(body, i.inputs());
    }
    assert_eq!(kept.hits(), 2, "the kept head came for another body");
}
