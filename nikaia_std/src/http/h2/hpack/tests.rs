//! Tests across the decoder and the encoder: the hpack-test-case stories
//! (`testdata/`), the header list limit, and a timing of decoding.

use super::hex;
use super::{Decoded, Decoder, Encoder};
use std::ops::ControlFlow;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn decode_all(d: &mut Decoder, block: &[u8]) -> Fields {
    let mut out = Vec::new();
    let r = d.decode(block, usize::MAX, &mut |n, v| {
        out.push((n.to_vec(), v.to_vec()));
        ControlFlow::Continue(())
    });
    assert_eq!(r, Ok(Decoded::Complete));
    out
}

/// Just enough JSON for the hpack-test-case files.
#[derive(Debug)]
enum Json {
    Null,
    Bool,
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn parse(text: &str) -> Json {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let v = p.value();
        p.ws();
        assert_eq!(p.i, p.s.len(), "trailing JSON");
        v
    }

    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) {
        self.ws();
        assert_eq!(self.s[self.i], c, "at {}", self.i);
        self.i += 1;
    }

    fn value(&mut self) -> Json {
        self.ws();
        match self.s[self.i] {
            b'{' => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.s[self.i] == b'}' {
                    self.i += 1;
                    return Json::Obj(members);
                }
                loop {
                    self.ws();
                    let Json::Str(key) = self.value() else {
                        panic!("a key at {}", self.i)
                    };
                    self.eat(b':');
                    members.push((key, self.value()));
                    self.ws();
                    self.i += 1;
                    if self.s[self.i - 1] == b'}' {
                        return Json::Obj(members);
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s[self.i] == b']' {
                    self.i += 1;
                    return Json::Arr(items);
                }
                loop {
                    items.push(self.value());
                    self.ws();
                    self.i += 1;
                    if self.s[self.i - 1] == b']' {
                        return Json::Arr(items);
                    }
                }
            }
            b'"' => {
                self.i += 1;
                let mut units: Vec<u16> = Vec::new();
                loop {
                    let c = self.s[self.i];
                    self.i += 1;
                    match c {
                        b'"' => break,
                        b'\\' => {
                            let e = self.s[self.i];
                            self.i += 1;
                            let unit = match e {
                                b'b' => 8,
                                b'f' => 12,
                                b'n' => 10,
                                b'r' => 13,
                                b't' => 9,
                                b'u' => {
                                    let h =
                                        std::str::from_utf8(&self.s[self.i..self.i + 4]).unwrap();
                                    self.i += 4;
                                    u16::from_str_radix(h, 16).unwrap()
                                }
                                other => u16::from(other),
                            };
                            units.push(unit);
                        }
                        _ => {
                            // Copy a whole UTF-8 character.
                            let start = self.i - 1;
                            while self.s.get(self.i).is_some_and(|b| b & 0xc0 == 0x80) {
                                self.i += 1;
                            }
                            let ch = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                            units.extend(ch.encode_utf16());
                        }
                    }
                }
                Json::Str(String::from_utf16(&units).unwrap())
            }
            b'n' => {
                self.i += 4;
                Json::Null
            }
            b't' => {
                self.i += 4;
                Json::Bool
            }
            b'f' => {
                self.i += 5;
                Json::Bool
            }
            _ => {
                let start = self.i;
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|b| b"+-.eE0123456789".contains(b))
                {
                    self.i += 1;
                }
                Json::Num(
                    std::str::from_utf8(&self.s[start..self.i])
                        .unwrap()
                        .parse()
                        .unwrap(),
                )
            }
        }
    }
}

/// A story's cases: the table size set before it, the wire, the fields.
fn cases(json: &str) -> Vec<(Option<usize>, Vec<u8>, Fields)> {
    let doc = Json::parse(json);
    let Some(Json::Arr(cases)) = doc.get("cases") else {
        panic!("no cases")
    };
    cases
        .iter()
        .map(|case| {
            let size = match case.get("header_table_size") {
                Some(Json::Num(n)) => Some(*n as usize),
                _ => None,
            };
            let Some(Json::Str(wire)) = case.get("wire") else {
                panic!("no wire")
            };
            let Some(Json::Arr(headers)) = case.get("headers") else {
                panic!("no headers")
            };
            let fields = headers
                .iter()
                .map(|h| match h {
                    Json::Obj(m) if m.len() == 1 => match &m[0] {
                        (n, Json::Str(v)) => (n.as_bytes().to_vec(), v.as_bytes().to_vec()),
                        other => panic!("{other:?}"),
                    },
                    other => panic!("{other:?}"),
                })
                .collect();
            (size, hex(wire), fields)
        })
        .collect()
}

const STORIES: [(&str, &str); 6] = [
    (
        "nghttp2-change-table-size/story_03",
        include_str!("testdata/nghttp2-change-table-size_story_03.json"),
    ),
    (
        "nghttp2-16384-4096/story_00",
        include_str!("testdata/nghttp2-16384-4096_story_00.json"),
    ),
    (
        "nghttp2/story_24",
        include_str!("testdata/nghttp2_story_24.json"),
    ),
    (
        "python-hpack/story_01",
        include_str!("testdata/python-hpack_story_01.json"),
    ),
    (
        "swift-nio-hpack-huffman/story_03",
        include_str!("testdata/swift-nio-hpack-huffman_story_03.json"),
    ),
    (
        "go-hpack/story_01",
        include_str!("testdata/go-hpack_story_01.json"),
    ),
];

#[test]
fn stories_decode_to_their_headers() {
    for (name, json) in STORIES {
        let cases = cases(json);
        assert!(!cases.is_empty());
        let mut d: Option<Decoder> = None;
        for (seq, (size, wire, fields)) in cases.iter().enumerate() {
            let d = match (&mut d, size) {
                (Some(d), Some(size)) => {
                    d.set_table_max(*size);
                    d
                }
                (Some(d), None) => d,
                (none, size) => none.insert(Decoder::new(size.unwrap_or(4096))),
            };
            assert_eq!(&decode_all(d, wire), fields, "{name} case {seq}");
        }
    }
}

/// Whether a response field is worth indexing, as the server will say.
fn worth_indexing(name: &[u8]) -> bool {
    !matches!(
        name,
        b"date" | b"etag" | b"content-length" | b"last-modified" | b"content-range" | b"expires"
    )
}

#[test]
fn stories_round_trip_through_the_encoder() {
    for (name, json) in STORIES {
        let mut e = Encoder::new();
        let mut d = Decoder::new(4096);
        let (mut ours, mut theirs) = (0, 0);
        for (seq, (size, wire, fields)) in cases(json).iter().enumerate() {
            if let Some(size) = size {
                e.set_table_max(*size);
                d.set_table_max(*size);
            }
            let mut out = Vec::new();
            e.begin(&mut out);
            for (n, v) in fields {
                e.field(n, v, worth_indexing(n), &mut out);
            }
            assert_eq!(&decode_all(&mut d, &out), fields, "{name} case {seq}");
            ours += out.len();
            theirs += wire.len();
        }
        // Within reach of the encoders that made the stories.
        assert!(
            ours < theirs * 3 / 2,
            "{name}: {ours} octets, theirs {theirs}"
        );
    }
}

/// A block that adds a 4000-octet entry, then refers to it `refs` times,
/// then adds `y: z`.
fn amplifying_block(refs: usize) -> Vec<u8> {
    let mut block = vec![0x40, 0x01, b'x', 0x7f];
    // A value of 3967 octets: 127 + 3840 = 127 + 0x1e << 7.
    block.extend_from_slice(&[0x80, 0x1e]);
    block.extend(std::iter::repeat_n(b'a', 3967));
    block.extend(std::iter::repeat_n(0xbe, refs));
    block.extend_from_slice(&[0x40, 0x01, b'y', 0x01, b'z']);
    block
}

#[test]
fn the_list_limit_stops_delivery_but_not_decoding() {
    let block = amplifying_block(100_000);
    let mut d = Decoder::new(4096);
    let mut calls = 0;
    let mut total = 0;
    let started = std::time::Instant::now();
    let r = d.decode(&block, 16384, &mut |n, v| {
        calls += 1;
        total += n.len() + v.len() + 32;
        ControlFlow::Continue(())
    });
    let took = started.elapsed();
    assert_eq!(r, Ok(Decoded::TooLarge));
    // The literal (4000) and three references fit 16384; the fourth does not.
    assert_eq!((calls, total), (4, 16000));
    assert!(took < std::time::Duration::from_millis(500), "{took:?}");
    // The table took the last literal: the next block sees both entries.
    assert_eq!(d.table().len(), 2);
    let next = decode_all(&mut d, &[0xbe, 0xbf]);
    assert_eq!(next[0], (b"y".to_vec(), b"z".to_vec()));
    assert_eq!(next[1].0, b"x");
    assert_eq!(next[1].1.len(), 3967);
}

#[test]
fn a_stopping_callback_keeps_the_table_in_step() {
    let block = amplifying_block(10);
    let mut d = Decoder::new(4096);
    let mut calls = 0;
    let r = d.decode(&block, usize::MAX, &mut |_, _| {
        calls += 1;
        if calls == 2 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    assert_eq!((r, calls), (Ok(Decoded::Stopped), 2));
    let next = decode_all(&mut d, &[0xbe]);
    assert_eq!(next, [(b"y".to_vec(), b"z".to_vec())]);
    // A limit of 0 delivers nothing, and still fills the table.
    let mut d = Decoder::new(4096);
    let r = d.decode(&block, 0, &mut |_, _| panic!("called"));
    assert_eq!(r, Ok(Decoded::TooLarge));
    assert_eq!(d.table().len(), 2);
}

/// Decoding speed, in release: `cargo test --release -p nikaia_std --lib
/// hpack::tests::timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing() {
    let request: &[(&[u8], &[u8])] = &[
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"www.example.com"),
        (b":path", b"/assets/app.js?v=20240101"),
        (
            b"user-agent",
            b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
        ),
        (b"accept", b"*/*"),
        (b"accept-language", b"en-US,en;q=0.5"),
        (b"accept-encoding", b"gzip, deflate, br, zstd"),
        (b"referer", b"https://www.example.com/"),
        (b"cookie", b"session=0123456789abcdef0123456789abcdef"),
        (b"sec-fetch-dest", b"script"),
        (b"sec-fetch-mode", b"no-cors"),
    ];
    let n = request.len() as u32;
    let runs = 200_000u32;
    for (what, index) in [("Huffman literals", false), ("indexed", true)] {
        let mut e = Encoder::new();
        let mut d = Decoder::new(4096);
        let mut block = Vec::new();
        for _ in 0..2 {
            block.clear();
            for (name, value) in request {
                e.field(name, value, index, &mut block);
            }
            decode_all(&mut d, &block);
        }
        let started = std::time::Instant::now();
        let mut octets = 0usize;
        for _ in 0..runs {
            let r = d.decode(std::hint::black_box(&block), 65536, &mut |n, v| {
                octets += n.len() + v.len();
                ControlFlow::Continue(())
            });
            assert_eq!(r, Ok(Decoded::Complete));
        }
        let per_field = started.elapsed() / (runs * n);
        println!(
            "{what}: {} octets a block, {per_field:?} a field ({octets})",
            block.len()
        );
    }
}
