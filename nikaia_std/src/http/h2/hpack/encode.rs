//! The HPACK encoder: response fields in, header block bytes out
//! (RFC 7541 §6).

use super::decode::DEFAULT_TABLE_SIZE;
use super::table::{entry_size, static_field, static_name, Dynamic, Name, STATIC_LEN};
use crate::http::fields::prefix::{self, write_int};

/// The largest dynamic table the encoder keeps, whatever the peer allows:
/// a larger SETTINGS_HEADER_TABLE_SIZE is met by using only this much
/// (RFC 7541 §4.2 lets the encoder use less), so a peer cannot make us hold
/// more per connection.
pub(crate) const ENCODER_TABLE_CAP: usize = DEFAULT_TABLE_SIZE;

/// The encoding side of one connection's header compression: the dynamic
/// table the peer's decoder keeps in step with, and the table size updates
/// owed to it.
#[derive(Debug)]
pub(crate) struct Encoder {
    /// The dynamic table, as the peer's decoder will have it.
    table: Dynamic,
    /// The size updates the next block must start with: the smallest size
    /// since the last block, and the final one.
    pending: Option<(usize, usize)>,
    /// Counts the dynamic table's changes (an entry added, a new size):
    /// two blocks written from the same fields at the same count are the
    /// same bytes (`http/h2/kept.rs`).
    changes: u64,
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder::new()
    }
}

/// Appends a string literal (§5.2) with HPACK's 7-bit length prefix,
/// Huffman-coded when that is shorter.
pub(crate) fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    prefix::write_string(out, 0, 7, s);
}

/// How a literal field is represented (§6.2).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// With incremental indexing when it fits the table, else without.
    Index,
    /// Without indexing.
    Plain,
    /// Never indexed: and no intermediary may index it either.
    Never,
}

impl Encoder {
    /// An encoder whose dynamic table has the size the peer's decoder
    /// starts with, 4096 octets (RFC 7541 §4.2, RFC 9113 §6.5.2).
    pub(crate) fn new() -> Encoder {
        Encoder {
            table: Dynamic::new(DEFAULT_TABLE_SIZE),
            pending: None,
            changes: 0,
        }
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE changed to `max`: the table
    /// shrinks now to at most it (and to at most [`ENCODER_TABLE_CAP`]),
    /// and the next block starts with a Dynamic Table Size Update (RFC 7541
    /// §4.2, §6.3). If the size went down and up again between two blocks,
    /// the smallest size is signalled, then the final one. A change that
    /// leaves the size as it was since the last block signals nothing.
    pub(crate) fn set_table_max(&mut self, max: usize) {
        let size = max.min(ENCODER_TABLE_CAP);
        self.changes += 1;
        self.pending = match self.pending {
            None if size == self.table.max() => None,
            None => Some((size, size)),
            Some((smallest, _)) => Some((smallest.min(size), size)),
        };
        self.table.set_max(size);
    }

    /// How many times the dynamic table changed: while it stays, the same
    /// fields are written as the same bytes.
    pub(crate) fn changes(&self) -> u64 {
        self.changes
    }

    /// The dynamic table, for tests and the fuzz target.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn table(&self) -> &Dynamic {
        &self.table
    }

    /// Starts a block: writes into `out` the size updates owed since the
    /// last one, if any.
    pub(crate) fn begin(&mut self, out: &mut Vec<u8>) {
        if let Some((smallest, last)) = self.pending.take() {
            if smallest < last {
                write_int(out, 0x20, 5, smallest);
            }
            write_int(out, 0x20, 5, last);
        }
    }

    /// Writes `:status` into `out`: the static table's entry for 200, 204,
    /// 206, 304, 400, 404 and 500; other codes as a literal with the
    /// static name, added to the dynamic table (so a repeated 301 or 403
    /// costs one octet from its second time).
    pub(crate) fn status(&mut self, status: u16, out: &mut Vec<u8>) {
        let mut digits = [0u8; 5];
        let mut at = digits.len();
        let mut n = status;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 || at == 0 {
                break;
            }
        }
        self.write(
            b":status",
            digits.get(at..).unwrap_or_default(),
            Mode::Index,
            out,
        );
    }

    /// Writes one field into `out`; `name` is already lowercase ASCII.
    /// `index`: whether the field is worth adding to the dynamic table (yes
    /// for fields that repeat across responses, such as content-type,
    /// accept-ranges, server, cache-control, vary; no for date, etag,
    /// content-length, last-modified, content-range).
    ///
    /// A field the static or dynamic table holds exactly is written as its
    /// index (§6.1). Otherwise it is a literal (§6.2) naming a table entry
    /// when one has its name (the static table first), and with its value
    /// Huffman-coded when that is shorter; with incremental indexing if
    /// `index` and it fits the table, else without indexing.
    pub(crate) fn field(&mut self, name: &[u8], value: &[u8], index: bool, out: &mut Vec<u8>) {
        let mode = if index { Mode::Index } else { Mode::Plain };
        self.write(name, value, mode, out);
    }

    /// Writes one field into `out` as a literal never indexed (§6.2.3),
    /// for values no table on the way may keep (credentials, say); the name
    /// still refers to a table entry when one has it.
    pub(crate) fn field_never_indexed(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        self.write(name, value, Mode::Never, out);
    }

    /// Writes one field in the best representation `mode` allows (see
    /// [`Encoder::field`]), adding it to the table if it says so.
    fn write(&mut self, name: &[u8], value: &[u8], mode: Mode, out: &mut Vec<u8>) {
        let mut dynamic_name = None;
        if mode != Mode::Never {
            if let Some(i) = static_field(name, value) {
                write_int(out, 0x80, 7, i);
                return;
            }
        }
        for (position, (n, v)) in self.table.iter().enumerate() {
            if n == name {
                if v == value && mode != Mode::Never {
                    write_int(out, 0x80, 7, STATIC_LEN + 1 + position);
                    return;
                }
                dynamic_name.get_or_insert(STATIC_LEN + 1 + position);
            }
        }
        let name_index = static_name(name).or(dynamic_name);
        let (flags, prefix, indexing) = match mode {
            Mode::Index if entry_size(name.len(), value.len()) <= self.table.max() => {
                (0x40, 6, true)
            }
            Mode::Never => (0x10, 4, false),
            _ => (0x00, 4, false),
        };
        match name_index {
            Some(i) => write_int(out, flags, prefix, i),
            None => {
                write_int(out, flags, prefix, 0);
                write_string(out, name);
            }
        }
        write_string(out, value);
        if indexing {
            self.table.insert(Name::Bytes(name), value);
            self.changes += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::decode::{Decoded, Decoder};
    use super::*;
    use std::ops::ControlFlow;

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn decode(d: &mut Decoder, block: &[u8]) -> Fields {
        let mut out = Vec::new();
        let r = d.decode(block, usize::MAX, &mut |n, v| {
            out.push((n.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        assert_eq!(r, Ok(Decoded::Complete), "{block:02x?}");
        out
    }

    fn same_tables(e: &Encoder, d: &Decoder) {
        assert!(e.table().iter().eq(d.table().iter()));
        assert_eq!(e.table().size(), d.table().size());
        assert_eq!(e.table().max(), d.table().max());
    }

    #[test]
    fn integers_round_trip_and_match_c1() {
        let mut out = Vec::new();
        write_int(&mut out, 0, 5, 10);
        write_int(&mut out, 0, 5, 1337);
        assert_eq!(out, [0x0a, 0x1f, 0x9a, 0x0a]);
        let mut out = Vec::new();
        write_int(&mut out, 0, 8, 42);
        assert_eq!(out, [0x2a]);
        // Edge values through the decoder, as a size update's integer.
        for v in [
            0,
            30,
            31,
            32,
            157,
            158,
            159,
            4096,
            16383,
            1 << 20,
            u32::MAX as usize,
        ] {
            let mut block = Vec::new();
            write_int(&mut block, 0x20, 5, v);
            let mut d = Decoder::new(usize::MAX);
            assert_eq!(decode(&mut d, &block), Fields::new());
            assert_eq!(d.table().max(), v);
        }
    }

    #[test]
    fn status_codes() {
        let mut e = Encoder::new();
        let mut out = Vec::new();
        for (code, byte) in [
            (200, 0x88),
            (204, 0x89),
            (206, 0x8a),
            (304, 0x8b),
            (400, 0x8c),
            (404, 0x8d),
            (500, 0x8e),
        ] {
            out.clear();
            e.status(code, &mut out);
            assert_eq!(out, [byte], "{code}");
        }
        // Others: a literal with indexing and the static name, then the
        // dynamic entry.
        out.clear();
        e.status(301, &mut out);
        assert_eq!(out[0], 0x48);
        let mut d = Decoder::new(4096);
        assert_eq!(
            decode(&mut d, &out),
            [(b":status".to_vec(), b"301".to_vec())]
        );
        out.clear();
        e.status(301, &mut out);
        assert_eq!(out, [0xbe]);
        assert_eq!(
            decode(&mut d, &out),
            [(b":status".to_vec(), b"301".to_vec())]
        );
        for code in [0, 7, 42, 999, 1000, 65535] {
            out.clear();
            e.status(code, &mut out);
            assert_eq!(
                decode(&mut d, &out),
                [(b":status".to_vec(), code.to_string().into_bytes())]
            );
        }
        same_tables(&e, &d);
    }

    #[test]
    fn representations_chosen() {
        let mut e = Encoder::new();
        let mut out = Vec::new();
        // A full static match.
        e.field(b"accept-encoding", b"gzip, deflate", false, &mut out);
        assert_eq!(out, [0x90]);
        // Static name, not indexed: 0000 + index 31, Huffman value.
        out.clear();
        e.field(b"content-type", b"text/html", false, &mut out);
        assert_eq!(out[0], 0x0f);
        assert_eq!(out[1], 31 - 15);
        assert!(out[2] & 0x80 != 0, "Huffman is shorter for text/html");
        assert_eq!(e.table().len(), 0);
        // Indexed: 01 + index 31, then a full dynamic match.
        out.clear();
        e.field(b"content-type", b"text/html", true, &mut out);
        assert_eq!(out[0], 0x40 | 31);
        out.clear();
        e.field(b"content-type", b"text/html", true, &mut out);
        assert_eq!(out, [0xbe]);
        out.clear();
        e.field(b"content-type", b"text/html", false, &mut out);
        assert_eq!(out, [0xbe]);
        // A new name, indexed; then its name from the dynamic table.
        out.clear();
        e.field(b"x-thing", b"one", true, &mut out);
        assert_eq!(out[0], 0x40);
        out.clear();
        e.field(b"x-thing", b"two", false, &mut out);
        assert_eq!(&out[..2], [0x0f, 62 - 15]);
        // Never indexed: 0001, even for a full match.
        out.clear();
        e.field_never_indexed(b"content-type", b"text/html", &mut out);
        assert_eq!(out[0], 0x1f);
        out.clear();
        e.field_never_indexed(b"authorization", b"secret", &mut out);
        assert_eq!(out[0], 0x1f);
        assert_eq!(out[1], 23 - 15);
        // A value that Huffman does not shorten stays raw.
        out.clear();
        e.field(b"x-raw", &[0xff, 0xfe], false, &mut out);
        assert_eq!(out[0], 0x00);
        assert!(out.ends_with(&[0x02, 0xff, 0xfe]), "{out:02x?}");
        // Indexed but larger than the table: without indexing.
        let before = e.table().len();
        out.clear();
        e.field(b"x-big", &[b'a'; 5000], true, &mut out);
        assert_eq!(out[0], 0x00);
        assert_eq!(e.table().len(), before);
    }

    #[test]
    fn size_updates() {
        let mut e = Encoder::new();
        let mut d = Decoder::new(4096);
        let mut out = Vec::new();
        // Nothing owed at first, nor for a setting that changes nothing or
        // only goes past the cap.
        e.set_table_max(4096);
        e.set_table_max(65536);
        e.begin(&mut out);
        assert!(out.is_empty());
        e.field(b"server", b"nikaia", true, &mut out);
        e.field(b"x-a", b"1", true, &mut out);
        decode(&mut d, &out);
        same_tables(&e, &d);
        // Down: one update, the table shrinks at once.
        e.set_table_max(40);
        assert_eq!(e.table().len(), 1);
        out.clear();
        e.begin(&mut out);
        assert_eq!(out, [0x3f, 0x09]);
        d.set_table_max(40);
        e.field(b"x-a", b"1", true, &mut out);
        decode(&mut d, &out);
        same_tables(&e, &d);
        // Only once.
        out.clear();
        e.begin(&mut out);
        assert!(out.is_empty());
        // Down to 0 and back up between two blocks: both.
        d.set_table_max(4096);
        e.set_table_max(0);
        e.set_table_max(100);
        e.set_table_max(4096);
        assert_eq!(e.table().len(), 0);
        out.clear();
        e.begin(&mut out);
        assert_eq!(out, [0x20, 0x3f, 0xe1, 0x1f]);
        e.field(b"x-b", b"2", true, &mut out);
        decode(&mut d, &out);
        same_tables(&e, &d);
        // Up then down: the smallest is also the final one, so just one.
        e.set_table_max(4000);
        e.set_table_max(1000);
        out.clear();
        e.begin(&mut out);
        let mut want = Vec::new();
        write_int(&mut want, 0x20, 5, 1000);
        assert_eq!(out, want);
        // Down and back to where it was: still both, the shrink evicted.
        e.set_table_max(0);
        e.set_table_max(1000);
        out.clear();
        e.begin(&mut out);
        let mut want = vec![0x20];
        write_int(&mut want, 0x20, 5, 1000);
        assert_eq!(out, want);
    }

    /// A small deterministic generator (xorshift).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn random_fields_round_trip() {
        const NAMES: [&[u8]; 10] = [
            b"content-type",
            b"server",
            b"vary",
            b"cache-control",
            b"date",
            b"etag",
            b":status",
            b"x-custom",
            b"set-cookie",
            b"",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut e = Encoder::new();
        let mut d = Decoder::new(4096);
        for block in 0..2000 {
            if rng.below(10) == 0 {
                let max = [0, 1, 64, 256, 1000, 4096, 8192][rng.below(7)];
                e.set_table_max(max);
                d.set_table_max(max);
                if rng.below(2) == 0 {
                    e.set_table_max(4096);
                    d.set_table_max(4096);
                }
            }
            let mut out = Vec::new();
            e.begin(&mut out);
            let mut want = Fields::new();
            for _ in 0..rng.below(12) {
                let name = if rng.below(4) == 0 {
                    (0..rng.below(20)).map(|_| rng.next() as u8).collect()
                } else {
                    NAMES[rng.below(NAMES.len())].to_vec()
                };
                let value: Vec<u8> = match rng.below(4) {
                    0 => (0..rng.below(300)).map(|_| rng.next() as u8).collect(),
                    1 => (0..rng.below(40))
                        .map(|_| b'a' + rng.below(26) as u8)
                        .collect(),
                    _ => format!("v{}", rng.below(8)).into_bytes(),
                };
                match rng.below(8) {
                    0 => e.field_never_indexed(&name, &value, &mut out),
                    1..=3 => e.field(&name, &value, false, &mut out),
                    _ => e.field(&name, &value, true, &mut out),
                }
                want.push((name, value));
            }
            assert_eq!(decode(&mut d, &out), want, "block {block}");
            same_tables(&e, &d);
        }
    }
}
