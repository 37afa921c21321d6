//! The HPACK fuzz target's entry point (`nikaia_std/fuzz`, replayed by
//! `tests/fuzz_replay.rs`).

use super::table::entry_size;
use super::{Decoded, Decoder, Encoder};
use std::ops::ControlFlow;

/// Decoded fields, as (name, value).
type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// The list limit of the decoder that sees everything: large, but bounded
/// so an input that repeats a large entry stays fast.
const FULL_LIST_MAX: usize = 1 << 20;

/// One decoder fed blocks, what its callback saw, and when it gives up.
struct Side {
    decoder: Decoder,
    list_max: usize,
    /// Break after this many fields (0: never).
    stop_after: usize,
}

impl Side {
    /// Decodes a block: the outcome, and the fields the callback saw.
    fn decode(&mut self, block: &[u8]) -> (Result<Decoded, ()>, Fields) {
        let mut fields = Fields::new();
        let stop_after = self.stop_after;
        let r = self.decoder.decode(block, self.list_max, &mut |n, v| {
            fields.push((n.to_vec(), v.to_vec()));
            if fields.len() == stop_after {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        (r.map_err(|_| ()), fields)
    }
}

/// The size of a header list as RFC 9113 §6.5.2 counts it.
fn list_size(fields: &[(Vec<u8>, Vec<u8>)]) -> usize {
    fields
        .iter()
        .map(|(n, v)| entry_size(n.len(), v.len()))
        .sum()
}

/// The pieces of a fuzz input after its first octet: header blocks split
/// at `ff 00`, or at `ff 01 N`, which also sets the advertised table size
/// to `N * 64` before the next block.
fn blocks(mut data: &[u8]) -> Vec<(&[u8], Option<usize>)> {
    let mut out = Vec::new();
    let mut setting = None;
    loop {
        let cut = data
            .windows(2)
            .position(|w| w[0] == 0xff && (w[1] == 0x00 || w[1] == 0x01));
        let Some(at) = cut else {
            out.push((data, setting));
            return out;
        };
        out.push((&data[..at], setting));
        setting = None;
        let marker = data.get(at + 1).copied();
        data = &data[at + 2..];
        if marker == Some(0x01) {
            if let Some((&n, rest)) = data.split_first() {
                setting = Some(usize::from(n) * 64);
                data = rest;
            }
        }
    }
}

/// HPACK decoding and encoding. The first octet picks the decoders' table
/// maximum and the list limit and stopping point of one of them; the rest
/// is header blocks ([`blocks`]). Two decoders fed the same blocks, one
/// that sees every field and one that stops early or has a small list
/// limit, agree on every error and on their dynamic tables, and the second
/// saw a prefix of the first's fields within its limit. The fields of each
/// block decoded, re-encoded by an [`Encoder`], decode to the same fields.
pub fn hpack(data: &[u8]) {
    let Some((&config, rest)) = data.split_first() else {
        return;
    };
    let table_max = [4096, 256, 64, 0][usize::from(config & 3)];
    let list_max = [16384, 1024, 100, 0][usize::from((config >> 2) & 3)];
    let stop_after = usize::from(config >> 4);
    let mut full = Side {
        decoder: Decoder::new(table_max),
        list_max: FULL_LIST_MAX,
        stop_after: 0,
    };
    let mut cut = Side {
        decoder: Decoder::new(table_max),
        list_max,
        stop_after,
    };
    let mut encoder = Encoder::new();
    let mut again = Decoder::new(4096);
    for (n, (block, setting)) in blocks(rest).into_iter().enumerate() {
        if let Some(size) = setting {
            full.decoder.set_table_max(size);
            cut.decoder.set_table_max(size);
            encoder.set_table_max(size);
            again.set_table_max(size);
        }
        let (r_full, f_full) = full.decode(block);
        let (r_cut, f_cut) = cut.decode(block);
        assert_eq!(r_full.is_err(), r_cut.is_err(), "block {n}: errors differ");
        let (Ok(r_full), Ok(r_cut)) = (r_full, r_cut) else {
            // The connection is closed on an error: no more blocks.
            return;
        };
        assert!(list_size(&f_full) <= FULL_LIST_MAX);
        assert!(list_size(&f_cut) <= list_max, "block {n}: past the limit");
        assert!(f_full.starts_with(&f_cut), "block {n}: not a prefix");
        match r_cut {
            Decoded::Complete => {
                assert_eq!(f_cut, f_full, "block {n}");
                assert_eq!(r_full, Decoded::Complete, "block {n}");
            }
            Decoded::TooLarge => match f_full.get(f_cut.len()) {
                Some((name, value)) => assert!(
                    list_size(&f_cut) + entry_size(name.len(), value.len()) > list_max,
                    "block {n}: stopped early"
                ),
                None => assert_eq!(r_full, Decoded::TooLarge, "block {n}"),
            },
            Decoded::Stopped => assert_eq!(f_cut.len(), stop_after, "block {n}"),
        }
        for side in [&full, &cut] {
            let t = side.decoder.table();
            assert!(t.size() <= t.max() && t.held() <= 2 * t.max());
        }
        let (a, b) = (full.decoder.table(), cut.decoder.table());
        assert!(a.iter().eq(b.iter()), "block {n}: tables differ");
        assert_eq!((a.size(), a.max()), (b.size(), b.max()));
        if r_full != Decoded::Complete {
            continue;
        }
        // The round trip.
        let mut out = Vec::new();
        encoder.begin(&mut out);
        for (i, (name, value)) in f_full.iter().enumerate() {
            match (i + name.len() + value.len()) % 5 {
                0 => encoder.field_never_indexed(name, value, &mut out),
                1 | 2 => encoder.field(name, value, false, &mut out),
                _ => encoder.field(name, value, true, &mut out),
            }
        }
        let mut back = Fields::new();
        let r = again.decode(&out, usize::MAX, &mut |n, v| {
            back.push((n.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        assert_eq!(r, Ok(Decoded::Complete), "block {n}: our encoding fails");
        assert_eq!(back, f_full, "block {n}: round trip");
        assert!(encoder.table().iter().eq(again.table().iter()));
    }
}
