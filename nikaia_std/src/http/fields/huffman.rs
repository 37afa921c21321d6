//! The Huffman code of RFC 7541 Appendix B, for string literals (§5.2).
//!
//! The code is canonical: codes of one length are consecutive in symbol
//! order, and each length's first code follows the previous length's last.
//! So the lengths alone define it; the codes and the decoding automaton are
//! computed from them at compile time.

/// The code length in bits of each symbol: the octets 0 to 255, then EOS
/// (256), as RFC 7541 Appendix B lists them.
#[rustfmt::skip]
const LENGTHS: [u8; 257] = [
    // 0x00
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    // 0x20: ' ' to '/', '0' to '?'
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
    // 0x40: '@' to 'O', 'P' to '_'
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
    // 0x60: '`' to 'o', 'p' to DEL
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
    // 0x80
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
    // 0xa0
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    // 0xc0
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
    // 0xe0
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
    // EOS
    30,
];

/// The EOS symbol: never encoded, and an error inside a string (§5.2).
const EOS: usize = 256;

/// Each symbol's code, right-aligned, and its length in bits.
const CODES: [(u32, u8); 257] = canonical_codes();

/// Assigns the canonical codes: by length, then by symbol, each the last
/// plus one, shifted left at each longer length.
const fn canonical_codes() -> [(u32, u8); 257] {
    let mut codes = [(0u32, 0u8); 257];
    let mut code = 0u32;
    let mut len = 1u8;
    while len <= 30 {
        let mut sym = 0;
        while sym < 257 {
            if LENGTHS[sym] == len {
                codes[sym] = (code, len);
                code += 1;
            }
            sym += 1;
        }
        code <<= 1;
        len += 1;
    }
    // A complete code: the last code of length 30 was all ones.
    assert!(code == 1 << 31);
    codes
}

/// The step of [`DECODE`]: a symbol was completed (`sym` holds it).
const EMIT: u8 = 1;
/// The step of [`DECODE`]: the input may end here — the bits since the
/// last symbol are fewer than 8 and all ones (§5.2 padding).
const ACCEPT: u8 = 2;
/// The step of [`DECODE`]: EOS was decoded, an error (§5.2).
const FAIL: u8 = 4;

/// What 4 more input bits do from a state of [`DECODE`].
#[derive(Clone, Copy)]
struct Step {
    /// The state after them.
    next: u8,
    /// The symbol they completed, with [`EMIT`].
    sym: u8,
    /// [`EMIT`], [`ACCEPT`], [`FAIL`].
    flags: u8,
}

/// A leaf in [`decoding_tree`]'s child links: the symbol is the low bits.
const LEAF: u16 = 0x8000;

/// The code's binary tree: 256 internal nodes (257 leaves), node 0 the
/// root; a child is an internal node's number or `LEAF | symbol`.
const fn decoding_tree() -> [[u16; 2]; 256] {
    let mut tree = [[0u16; 2]; 256];
    let mut nodes = 1u16;
    let mut sym = 0;
    while sym < 257 {
        let (code, len) = CODES[sym];
        let mut node = 0usize;
        let mut bit = len;
        while bit > 1 {
            bit -= 1;
            let side = ((code >> bit) & 1) as usize;
            if tree[node][side] == 0 {
                tree[node][side] = nodes;
                nodes += 1;
            }
            node = tree[node][side] as usize;
        }
        tree[node][(code & 1) as usize] = LEAF | sym as u16;
        sym += 1;
    }
    assert!(nodes == 256);
    tree
}

/// The decoding automaton: from each state (an internal node of the tree,
/// that is the bits read since the last symbol), the step each 4-bit nibble
/// makes. A nibble completes at most one symbol, as no code is shorter
/// than 5 bits.
static DECODE: [[Step; 16]; 256] = decoding_automaton();

/// Builds [`DECODE`] by walking the tree from every state over every
/// nibble.
const fn decoding_automaton() -> [[Step; 16]; 256] {
    let tree = decoding_tree();
    // The states where input may end: up to 7 one bits after a symbol.
    let mut accept = [false; 256];
    let mut node = 0usize;
    let mut depth = 0;
    while depth <= 7 {
        accept[node] = true;
        node = tree[node][1] as usize;
        depth += 1;
    }
    let mut table = [[Step {
        next: 0,
        sym: 0,
        flags: 0,
    }; 16]; 256];
    let mut state = 0;
    while state < 256 {
        let mut nibble = 0;
        while nibble < 16 {
            let mut node = state;
            let mut step = Step {
                next: 0,
                sym: 0,
                flags: 0,
            };
            let mut bit = 4;
            while bit > 0 {
                bit -= 1;
                let child = tree[node][(nibble >> bit) & 1];
                if child & LEAF != 0 {
                    let sym = (child & !LEAF) as usize;
                    if sym == EOS {
                        step.flags |= FAIL;
                    } else {
                        step.flags |= EMIT;
                        step.sym = sym as u8;
                    }
                    node = 0;
                } else {
                    node = child as usize;
                }
            }
            if accept[node] {
                step.flags |= ACCEPT;
            }
            step.next = node as u8;
            table[state][nibble] = step;
            nibble += 1;
        }
        state += 1;
    }
    table
}

/// A Huffman-coded string that is malformed (§5.2): it holds EOS, or ends
/// in padding longer than 7 bits or not all ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Invalid;

/// Runs the automaton over `src`, calling `step` with each step taken;
/// fails unless the steps end where input may end and none decoded EOS.
#[inline(always)]
fn run(src: &[u8], mut step: impl FnMut(Step)) -> Result<(), Invalid> {
    let mut state = 0u8;
    let mut flags = 0u8;
    let mut last = ACCEPT;
    for &byte in src {
        let high = DECODE[usize::from(state)][usize::from(byte >> 4)];
        step(high);
        let low = DECODE[usize::from(high.next)][usize::from(byte & 0x0f)];
        step(low);
        // Only checked at the end: what is decoded after EOS is dropped.
        flags |= high.flags | low.flags;
        state = low.next;
        last = low.flags;
    }
    if flags & FAIL == 0 && last & ACCEPT != 0 {
        Ok(())
    } else {
        Err(Invalid)
    }
}

/// Decodes the Huffman-coded `src`, appending the octets to `out`. On an
/// error `out` may hold part of them.
pub(crate) fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), Invalid> {
    let start = out.len();
    // At most 8 / 5 octets per octet, as no code is shorter than 5 bits;
    // and one more, as each step writes a symbol whether it completed one
    // or not (then overwritten), which saves a branch a step.
    let room = src.len().saturating_mul(8) / 5 + 1;
    out.resize(start.saturating_add(room), 0);
    let mut at = start;
    let r = run(src, |step| {
        if let Some(slot) = out.get_mut(at) {
            *slot = step.sym;
        }
        at += usize::from(step.flags & EMIT);
    });
    out.truncate(at);
    r
}

/// Checks the Huffman-coded `src` as [`decode`] does, and returns the
/// decoded length, without writing anything.
pub(crate) fn check(src: &[u8]) -> Result<usize, Invalid> {
    let mut n = 0usize;
    run(src, |step| n += usize::from(step.flags & EMIT))?;
    Ok(n)
}

/// The fewest octets a Huffman-coded string of `len` octets can decode to:
/// no code is longer than 30 bits, and the padding is at most 7.
pub(crate) fn min_decoded_len(len: usize) -> usize {
    len.saturating_mul(8).saturating_sub(7) / 30
}

/// The length of `src` Huffman-coded.
pub(crate) fn encoded_len(src: &[u8]) -> usize {
    let bits: u64 = src
        .iter()
        .map(|&b| u64::from(CODES[usize::from(b)].1))
        .sum();
    usize::try_from(bits.div_ceil(8)).unwrap_or(usize::MAX)
}

/// Appends `src` Huffman-coded to `out`, padded with one bits (§5.2).
pub(crate) fn encode(src: &[u8], out: &mut Vec<u8>) {
    out.reserve(encoded_len(src));
    // Fewer than 8 pending bits, then at most 30 more.
    let mut acc = 0u64;
    let mut bits = 0u32;
    for &b in src {
        let (code, len) = CODES[usize::from(b)];
        acc = (acc << len) | u64::from(code);
        bits += u32::from(len);
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(((acc << (8 - bits)) | (0xff >> bits)) as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::h2::hpack::hex;

    #[test]
    fn codes_match_appendix_b() {
        let spot = [
            (0, 0x1ff8, 13),
            (1, 0x7fffd8, 23),
            (9, 0xffffea, 24),
            (10, 0x3ffffffc, 30),
            (b' ' as usize, 0x14, 6),
            (b'!' as usize, 0x3f8, 10),
            (b'0' as usize, 0x0, 5),
            (b'a' as usize, 0x3, 5),
            (b'z' as usize, 0x7b, 7),
            (b'~' as usize, 0x1ffd, 13),
            (127, 0xffffffc, 28),
            (128, 0xfffe6, 20),
            (200, 0x3ffffe2, 26),
            (255, 0x3ffffee, 26),
            (EOS, 0x3fffffff, 30),
        ];
        for (sym, code, len) in spot {
            assert_eq!(CODES[sym], (code, len), "symbol {sym}");
        }
    }

    // The Huffman strings of RFC 7541 C.4 and C.6.
    const EXAMPLES: [(&str, &str); 10] = [
        ("f1e3 c2e5 f23a 6ba0 ab90 f4ff", "www.example.com"),
        ("a8eb 1064 9cbf", "no-cache"),
        ("25a8 49e9 5ba9 7d7f", "custom-key"),
        ("25a8 49e9 5bb8 e8b4 bf", "custom-value"),
        ("6402", "302"),
        ("aec3 771a 4b", "private"),
        (
            "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
            "Mon, 21 Oct 2013 20:13:21 GMT",
        ),
        (
            "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3",
            "https://www.example.com",
        ),
        ("640e ff", "307"),
        (
            "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
            "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
        ),
    ];

    #[test]
    fn rfc_examples_decode_and_encode() {
        for (coded, text) in EXAMPLES {
            let coded = hex(coded);
            let mut out = Vec::new();
            decode(&coded, &mut out).unwrap();
            assert_eq!(out, text.as_bytes());
            assert_eq!(check(&coded), Ok(text.len()));
            let mut again = Vec::new();
            encode(text.as_bytes(), &mut again);
            assert_eq!(again, coded, "{text}");
            assert_eq!(encoded_len(text.as_bytes()), coded.len());
        }
    }

    #[test]
    fn every_octet_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        for input in [all.clone(), all.iter().rev().copied().collect(), vec![]] {
            let mut coded = Vec::new();
            encode(&input, &mut coded);
            assert_eq!(coded.len(), encoded_len(&input));
            let mut out = Vec::new();
            decode(&coded, &mut out).unwrap();
            assert_eq!(out, input);
            assert!(min_decoded_len(coded.len()) <= input.len());
        }
        for b in 0..=255u8 {
            for n in 1..10 {
                let input = vec![b; n];
                let mut coded = Vec::new();
                encode(&input, &mut coded);
                let mut out = Vec::new();
                decode(&coded, &mut out).unwrap();
                assert_eq!(out, input);
                assert!(min_decoded_len(coded.len()) <= input.len());
            }
        }
    }

    #[test]
    fn malformed_strings_are_rejected() {
        let mut out = Vec::new();
        // EOS (30 one bits) padded with 2 more: holds EOS.
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xff], &mut out), Err(Invalid));
        // 'a' (00011) then EOS then padding.
        assert_eq!(check(&[0x1f, 0xff, 0xff, 0xff, 0xff]), Err(Invalid));
        // 8 bits of padding after a whole symbol: "0" is 00000, 3 bits
        // of padding, then a whole octet of ones.
        assert_eq!(check(&[0x07, 0xff]), Err(Invalid));
        // A lone octet of ones: 8 bits of padding.
        assert_eq!(check(&[0xff]), Err(Invalid));
        // Padding of zeros: "0" (00000) then 000.
        assert_eq!(check(&[0x00]), Err(Invalid));
        // Padding that is not all ones: '0' then 101.
        assert_eq!(check(&[0x05]), Err(Invalid));
        // The same with valid padding.
        assert_eq!(check(&[0x07]), Ok(1));
        // '\0' (13 bits, 1111111111000) then 000: padding of zeros.
        assert_eq!(check(&[0xff, 0xc0]), Err(Invalid));
        // '\0' then 111: fine.
        assert_eq!(check(&[0xff, 0xc7]), Ok(1));
        assert_eq!(check(&[]), Ok(0));
        // 7 bits of padding are fine: "a" is 5 bits, so 3 of padding; "aa"
        // 10 bits then 6.
        assert_eq!(check(&[0x1f]), Ok(1));
        assert_eq!(check(&[0x18, 0xff]), Ok(2));
    }
}
