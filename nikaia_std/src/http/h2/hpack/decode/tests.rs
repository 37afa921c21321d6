use super::*;
use crate::http::h2::hpack::hex;
use std::ops::ControlFlow;

/// Decodes a block with no list limit; the fields as text.
fn decode(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, DecodeError> {
    let mut out = Vec::new();
    let r = d.decode(block, usize::MAX, &mut |n, v| {
        out.push((
            String::from_utf8(n.to_vec()).unwrap(),
            String::from_utf8(v.to_vec()).unwrap(),
        ));
        ControlFlow::Continue(())
    })?;
    assert_eq!(r, Decoded::Complete);
    Ok(out)
}

fn table(d: &Decoder) -> Vec<(String, String)> {
    d.table()
        .iter()
        .map(|(n, v)| {
            (
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// One block of an Appendix C example: the hex, the fields, the table
/// after it (newest first), its size.
type Step<'a> = (
    &'a str,
    &'a [(&'a str, &'a str)],
    &'a [(&'a str, &'a str)],
    usize,
);

fn run(table_max: usize, steps: &[Step<'_>]) {
    let mut d = Decoder::new(table_max);
    for (i, (block, fields, entries, size)) in steps.iter().enumerate() {
        let got = decode(&mut d, &hex(block)).unwrap_or_else(|e| panic!("block {i}: {e:?}"));
        assert_eq!(got, pairs(fields), "block {i}");
        assert_eq!(table(&d), pairs(entries), "table after block {i}");
        assert_eq!(d.table().size(), *size, "size after block {i}");
    }
}

#[test]
fn c1_integers() {
    let mut r = Reader {
        block: &[0x0a],
        pos: 0,
    };
    assert_eq!(r.int(5), Ok(10));
    let mut r = Reader {
        block: &[0x1f, 0x9a, 0x0a],
        pos: 0,
    };
    assert_eq!(r.int(5), Ok(1337));
    assert_eq!(r.pos, 3);
    let mut r = Reader {
        block: &[0x2a],
        pos: 0,
    };
    assert_eq!(r.int(8), Ok(42));
    // The largest accepted, and one more.
    let mut r = Reader {
        block: &[0x1f, 0xe0, 0xff, 0xff, 0xff, 0x0f],
        pos: 0,
    };
    assert_eq!(r.int(5), Ok(u32::MAX as usize));
    let mut r = Reader {
        block: &[0x1f, 0xe1, 0xff, 0xff, 0xff, 0x0f],
        pos: 0,
    };
    assert_eq!(r.int(5), Err(Malformed));
}

#[test]
fn c2_single_representations() {
    let mut d = Decoder::new(4096);
    assert_eq!(
        decode(
            &mut d,
            &hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572")
        )
        .unwrap(),
        pairs(&[("custom-key", "custom-header")])
    );
    assert_eq!(table(&d), pairs(&[("custom-key", "custom-header")]));
    assert_eq!(d.table().size(), 55);

    let mut d = Decoder::new(4096);
    assert_eq!(
        decode(&mut d, &hex("040c 2f73 616d 706c 652f 7061 7468")).unwrap(),
        pairs(&[(":path", "/sample/path")])
    );
    assert_eq!(d.table().len(), 0);

    let mut d = Decoder::new(4096);
    assert_eq!(
        decode(&mut d, &hex("1008 7061 7373 776f 7264 0673 6563 7265 74")).unwrap(),
        pairs(&[("password", "secret")])
    );
    assert_eq!(d.table().len(), 0);

    let mut d = Decoder::new(4096);
    assert_eq!(
        decode(&mut d, &hex("82")).unwrap(),
        pairs(&[(":method", "GET")])
    );
    assert_eq!(d.table().len(), 0);
}

const REQ1: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];
const REQ2: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];
const REQ3: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];
const REQ_T1: &[(&str, &str)] = &[(":authority", "www.example.com")];
const REQ_T2: &[(&str, &str)] = &[
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];
const REQ_T3: &[(&str, &str)] = &[
    ("custom-key", "custom-value"),
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];

#[test]
fn c3_requests_without_huffman() {
    run(
        4096,
        &[
            (
                "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                REQ1,
                REQ_T1,
                57,
            ),
            ("8286 84be 5808 6e6f 2d63 6163 6865", REQ2, REQ_T2, 110),
            (
                "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
                REQ3,
                REQ_T3,
                164,
            ),
        ],
    );
}

#[test]
fn c4_requests_with_huffman() {
    run(
        4096,
        &[
            (
                "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                REQ1,
                REQ_T1,
                57,
            ),
            ("8286 84be 5886 a8eb 1064 9cbf", REQ2, REQ_T2, 110),
            (
                "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
                REQ3,
                REQ_T3,
                164,
            ),
        ],
    );
}

const DATE1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE2: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
const LOC: &str = "https://www.example.com";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const RESP1: &[(&str, &str)] = &[
    (":status", "302"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", LOC),
];
const RESP2: &[(&str, &str)] = &[
    (":status", "307"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", LOC),
];
const RESP3: &[(&str, &str)] = &[
    (":status", "200"),
    ("cache-control", "private"),
    ("date", DATE2),
    ("location", LOC),
    ("content-encoding", "gzip"),
    ("set-cookie", COOKIE),
];
const RESP_T1: &[(&str, &str)] = &[
    ("location", LOC),
    ("date", DATE1),
    ("cache-control", "private"),
    (":status", "302"),
];
const RESP_T2: &[(&str, &str)] = &[
    (":status", "307"),
    ("location", LOC),
    ("date", DATE1),
    ("cache-control", "private"),
];
const RESP_T3: &[(&str, &str)] = &[
    ("set-cookie", COOKIE),
    ("content-encoding", "gzip"),
    ("date", DATE2),
];

#[test]
fn c5_responses_without_huffman() {
    run(
            256,
            &[
                (
                    "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 \
                     2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 \
                     6c65 2e63 6f6d",
                    RESP1,
                    RESP_T1,
                    222,
                ),
                ("4803 3330 37c1 c0bf", RESP2, RESP_T2, 222),
                (
                    "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d \
                     54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 \
                     5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e \
                     3d31",
                    RESP3,
                    RESP_T3,
                    215,
                ),
            ],
        );
}

#[test]
fn c6_responses_with_huffman() {
    run(
            256,
            &[
                (
                    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 \
                     2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
                    RESP1,
                    RESP_T1,
                    222,
                ),
                ("4883 640e ffc1 c0bf", RESP2, RESP_T2, 222),
                (
                    "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab \
                     77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f \
                     9587 3160 65c0 03ed 4ee5 b106 3d50 07",
                    RESP3,
                    RESP_T3,
                    215,
                ),
            ],
        );
}

fn rejects(table_max: usize, block: &[u8]) {
    let mut d = Decoder::new(table_max);
    let r = d.decode(block, usize::MAX, &mut |_, _| ControlFlow::Continue(()));
    assert_eq!(r, Err(DecodeError::Compression), "{block:02x?}");
    // The same with the callback refusing everything.
    let mut d = Decoder::new(table_max);
    let r = d.decode(block, 0, &mut |_, _| ControlFlow::Break(()));
    assert_eq!(r, Err(DecodeError::Compression), "{block:02x?} unlisted");
}

#[test]
fn malformed_blocks_are_rejected() {
    // A size update whose integer is cut short.
    rejects(4096, &[0x3f]);
    // An indexed field whose integer is cut short, and a literal's.
    rejects(4096, &[0xff]);
    rejects(4096, &[0x7f, 0x80]);
    // An integer past 2^32 - 1, and one with 6 continuation octets.
    rejects(4096, &[0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    rejects(4096, &[0xff, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
    rejects(4096, &[0x7f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
    // A string length past the block: name, then value.
    rejects(4096, &[0x40, 0x05, b'a', b'b']);
    rejects(4096, &[0x04, 0x03, b'/', b'a']);
    rejects(4096, &[0x04, 0x7f, 0xff, 0xff, 0xff, 0x0f]);
    // A string length at 2^32 - 1.
    rejects(4096, &[0x04, 0x7f, 0x80, 0xff, 0xff, 0xff, 0x0f]);
    // Huffman: EOS inside the string, 8 bits of padding, zero padding.
    rejects(4096, &[0x04, 0x84, 0xff, 0xff, 0xff, 0xff]);
    rejects(4096, &[0x04, 0x82, 0x07, 0xff]);
    rejects(4096, &[0x04, 0x81, 0x00]);
    rejects(4096, &[0x40, 0x81, 0x00, 0x01, b'v']);
    // The same in a field the table wants but the list does not.
    rejects(4096, &[0x44, 0x82, 0x07, 0xff]);
    // Index 0, and past the tables: static, then with one dynamic entry.
    rejects(4096, &[0x80]);
    rejects(4096, &[0xbe]);
    rejects(4096, &[0x7e, 0x01, b'v']);
    rejects(4096, &[0x0f, 0x2f, 0x01, b'v']);
    rejects(4096, &[0x41, 0x01, b'a', 0xbf]);
    // A size update after a field, even one that changes nothing.
    rejects(4096, &[0x82, 0x3f, 0xe1, 0x1f]);
    rejects(4096, &[0x82, 0x20]);
    // A size update above the advertised maximum, and a third one.
    rejects(4096, &[0x3f, 0xe2, 0x1f]);
    rejects(100, &[0x3f, 0x46]);
    rejects(4096, &[0x20, 0x20, 0x20]);
}

#[test]
fn valid_edge_cases() {
    let mut d = Decoder::new(4096);
    // Two updates at the start: down to 0 and back up.
    assert_eq!(
        decode(&mut d, &[0x20, 0x3f, 0xe1, 0x1f, 0x82]).unwrap(),
        pairs(&[(":method", "GET")])
    );
    assert_eq!(d.table().max(), 4096);
    // Empty names and values, raw and Huffman.
    assert_eq!(
        decode(&mut d, &[0x40, 0x00, 0x80, 0x00, 0x80, 0x00]).unwrap(),
        pairs(&[("", ""), ("", "")])
    );
    assert_eq!(d.table().size(), 32);
    // An update alone is a valid block, and so is nothing.
    assert_eq!(decode(&mut d, &[0x3f, 0x00]).unwrap(), pairs(&[]));
    assert_eq!(d.table().max(), 31);
    assert_eq!(d.table().len(), 0);
    assert_eq!(decode(&mut d, &[]).unwrap(), pairs(&[]));
    // An integer with a redundant zero continuation octet.
    assert_eq!(
        decode(&mut d, &[0x3f, 0x80, 0x00, 0x8e]).unwrap(),
        pairs(&[(":status", "500")])
    );
    assert_eq!(d.table().max(), 31);
    // An indexed reference to an entry a size update evicted.
    let mut d = Decoder::new(4096);
    decode(&mut d, &[0x41, 0x01, b'a']).unwrap();
    assert_eq!(decode(&mut d, &[0x20, 0xbe]), Err(DecodeError::Compression));
}

#[test]
fn a_lowered_setting_requires_an_update() {
    let mut d = Decoder::new(4096);
    decode(&mut d, &hex("418c f1e3 c2e5 f23a 6ba0 ab90 f4ff")).unwrap();
    assert_eq!(d.table().len(), 1);
    d.set_table_max(1024);
    assert_eq!(d.table().max(), 1024);
    // Without the update: an error.
    let mut without = Decoder::new(4096);
    without.set_table_max(1024);
    assert_eq!(decode(&mut without, &[0x82]), Err(DecodeError::Compression));
    let mut empty = Decoder::new(4096);
    empty.set_table_max(0);
    assert_eq!(decode(&mut empty, &[]), Err(DecodeError::Compression));
    // With it (to any size up to the new maximum): fine, once.
    assert_eq!(
        decode(&mut d, &[0x3f, 0xe1, 0x07, 0xbe]).unwrap(),
        pairs(&[(":authority", "www.example.com")])
    );
    assert_eq!(decode(&mut d, &[0xbe]).unwrap().len(), 1);
    assert_eq!(
        decode(&mut d, &[0x3f, 0xe2, 0x07]),
        Err(DecodeError::Compression)
    );
    // Raising the setting requires nothing.
    let mut d = Decoder::new(4096);
    d.set_table_max(65536);
    assert_eq!(decode(&mut d, &[0x82]).unwrap().len(), 1);
    assert_eq!(d.table().max(), 4096);
    assert!(decode(&mut d, &[0x3f, 0xe1, 0xff, 0x03]).is_ok());
    assert_eq!(d.table().max(), 65536);
}

#[test]
fn strings_nobody_needs_are_checked_not_decoded() {
    let mut coded = Vec::new();
    huffman::encode(&[b'a'; 32000], &mut coded);
    assert_eq!(coded.len(), 20000);
    let mut block = vec![0x82];
    // Without indexing, :path, then with indexing, larger than the table.
    for first in [0x04, 0x44] {
        block.push(first);
        block.extend_from_slice(&[0xff, 0xa1, 0x9b, 0x01]);
        block.extend_from_slice(&coded);
    }
    let mut d = Decoder::new(4096);
    decode(&mut d, &[0x41, 0x01, b'a']).unwrap();
    let mut calls = 0;
    let r = d.decode(&block, 10, &mut |_, _| {
        calls += 1;
        ControlFlow::Continue(())
    });
    assert_eq!((r, calls), (Ok(Decoded::TooLarge), 0));
    assert_eq!(d.scratch.capacity(), 0);
    assert_eq!(d.table().len(), 0);
    // Malformed, they are still errors.
    let last = block.len() - 1;
    block[last] = 0xfe;
    let mut d = Decoder::new(4096);
    let r = d.decode(&block, 10, &mut |_, _| ControlFlow::Continue(()));
    assert_eq!(r, Err(DecodeError::Compression));
    // Decoded when delivered, and the buffer is given back after.
    block[last] = *coded.last().unwrap();
    let mut d = Decoder::new(4096);
    let mut sizes = Vec::new();
    let r = d.decode(&block, usize::MAX, &mut |_, v| {
        sizes.push(v.len());
        ControlFlow::Continue(())
    });
    assert_eq!((r, sizes), (Ok(Decoded::Complete), vec![3, 32000, 32000]));
    assert!(d.scratch.capacity() <= SCRATCH_KEEP);
}

#[test]
fn a_new_entry_may_name_the_entry_it_evicts() {
    // Table of 64: "aaaa: b" (37), then a literal with indexing naming
    // it (index 62) with a value that needs all the room.
    let mut d = Decoder::new(64);
    decode(&mut d, &[0x40, 0x04, b'a', b'a', b'a', b'a', 0x01, b'b']).unwrap();
    let mut block = vec![0x7e, 0x1c];
    block.extend_from_slice(&[b'x'; 28]);
    assert_eq!(
        decode(&mut d, &block).unwrap(),
        pairs(&[("aaaa", &"x".repeat(28))])
    );
    assert_eq!(table(&d), pairs(&[("aaaa", &"x".repeat(28))]));
    assert_eq!(d.table().size(), 64);
}
