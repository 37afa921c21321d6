//! The HPACK decoder: header blocks in, fields out (RFC 7541 §3, §6).

use super::huffman;
use super::table::{entry_size, Dynamic, Name, STATIC, STATIC_LEN};
use std::ops::ControlFlow;

/// Why a header block could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// Anything malformed: a connection error of type COMPRESSION_ERROR
    /// (RFC 9113 §4.3). The decoder is then out of step with the peer's
    /// encoder and must not be used again.
    Compression,
}

/// How a header block that was decoded to its end went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// Every field was given to the callback.
    Complete,
    /// The header list grew past the limit: the fields up to that point
    /// were given to the callback, the rest were not.
    TooLarge,
    /// The callback asked to stop: it was not called again.
    Stopped,
}

/// The callback [`Decoder::decode`] gives each field to, as `(name,
/// value)`; `ControlFlow::Break(())` asks it to stop.
pub(crate) type OnField<'a> = dyn FnMut(&[u8], &[u8]) -> ControlFlow<()> + 'a;

/// The dynamic table size the peer's encoder starts with (RFC 7541 §4.2:
/// the initial SETTINGS_HEADER_TABLE_SIZE, RFC 9113 §6.5.2).
pub(crate) const DEFAULT_TABLE_SIZE: usize = 4096;

/// The scratch buffer's capacity kept from one block to the next: a block
/// with a longer Huffman-coded string gives the rest back.
const SCRATCH_KEEP: usize = 16 << 10;

/// The decoding side of one connection's header compression: the dynamic
/// table the peer's encoder fills, and a buffer for Huffman-coded strings.
#[derive(Debug)]
pub(crate) struct Decoder {
    /// The dynamic table, in step with the peer's encoder.
    table: Dynamic,
    /// The largest dynamic table size an update may choose: the
    /// SETTINGS_HEADER_TABLE_SIZE we advertise.
    table_max: usize,
    /// The table was shrunk by [`Decoder::set_table_max`]: the next block
    /// must start with a dynamic table size update (§4.2).
    update_due: bool,
    /// The decoded Huffman-coded name and value of the current field.
    scratch: Vec<u8>,
}

/// Where a field's name comes from.
#[derive(Clone, Copy)]
enum NameAt {
    /// A table entry, by wire index (already checked to exist).
    Index(usize),
    /// A string literal in the block.
    Literal(Str),
}

/// A string literal (§5.2): its octets are `block[start..end]`.
#[derive(Clone, Copy)]
struct Str {
    huffman: bool,
    start: usize,
    end: usize,
}

impl Str {
    /// The octets as they are in the block (still Huffman-coded if so).
    fn raw<'b>(&self, block: &'b [u8]) -> Result<&'b [u8], DecodeError> {
        block
            .get(self.start..self.end)
            .ok_or(DecodeError::Compression)
    }

    /// The fewest octets the string decodes to.
    fn min_len(&self) -> usize {
        let len = self.end.saturating_sub(self.start);
        if self.huffman {
            huffman::min_decoded_len(len)
        } else {
            len
        }
    }

    /// Checks a Huffman-coded string without keeping what it decodes to.
    fn check(&self, block: &[u8]) -> Result<(), DecodeError> {
        if self.huffman {
            huffman::check(self.raw(block)?).map_err(|_| DecodeError::Compression)?;
        }
        Ok(())
    }
}

/// A cursor over a header block.
struct Reader<'b> {
    block: &'b [u8],
    pos: usize,
}

impl Reader<'_> {
    /// An integer with an N-bit prefix (§5.1), the first octet's other
    /// bits ignored. At most 2^32 - 1 and 5 continuation octets.
    fn int(&mut self, prefix: u32) -> Result<usize, DecodeError> {
        let first = *self.block.get(self.pos).ok_or(DecodeError::Compression)?;
        self.pos += 1;
        let mask = (1u32 << prefix) - 1;
        let mut value = u64::from(u32::from(first) & mask);
        if value < u64::from(mask) {
            return usize::try_from(value).map_err(|_| DecodeError::Compression);
        }
        let mut shift = 0u32;
        loop {
            let b = *self.block.get(self.pos).ok_or(DecodeError::Compression)?;
            self.pos += 1;
            value += u64::from(b & 0x7f) << shift;
            if value > u64::from(u32::MAX) {
                return Err(DecodeError::Compression);
            }
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 28 {
                return Err(DecodeError::Compression);
            }
        }
        usize::try_from(value).map_err(|_| DecodeError::Compression)
    }

    /// A string literal (§5.2), its length checked against the block.
    fn string(&mut self) -> Result<Str, DecodeError> {
        let huffman = self
            .block
            .get(self.pos)
            .is_some_and(|&first| first & 0x80 != 0);
        let len = self.int(7)?;
        let start = self.pos;
        let end = start.checked_add(len).ok_or(DecodeError::Compression)?;
        if end > self.block.len() {
            return Err(DecodeError::Compression);
        }
        self.pos = end;
        Ok(Str {
            huffman,
            start,
            end,
        })
    }
}

/// The name and value of the entry at a wire index (§2.3.3): 1 to 61 the
/// static table, then the dynamic table newest first; 0 and past the end
/// are errors.
fn entry(table: &Dynamic, index: usize) -> Result<(&[u8], &[u8]), DecodeError> {
    match index.checked_sub(1) {
        None => Err(DecodeError::Compression),
        Some(i) if i < STATIC_LEN => STATIC.get(i).copied().ok_or(DecodeError::Compression),
        Some(i) => table.get(i - STATIC_LEN).ok_or(DecodeError::Compression),
    }
}

/// Counts a field against the list limit and gives it to the callback, or
/// records why not.
fn deliver(
    name: &[u8],
    value: &[u8],
    list_max: usize,
    list: &mut usize,
    outcome: &mut Decoded,
    field: &mut OnField<'_>,
) {
    match list.checked_add(entry_size(name.len(), value.len())) {
        Some(total) if total <= list_max => {
            *list = total;
            if field(name, value).is_break() {
                *outcome = Decoded::Stopped;
            }
        }
        _ => *outcome = Decoded::TooLarge,
    }
}

impl Decoder {
    /// A decoder for a connection on which we advertise `table_max` as
    /// SETTINGS_HEADER_TABLE_SIZE (4096 in the usual case): a dynamic table
    /// size update above it is an error. The table starts at the protocol's
    /// initial size, 4096 octets, or at `table_max` if that is smaller (as
    /// if the peer had already received our SETTINGS).
    pub(crate) fn new(table_max: usize) -> Decoder {
        Decoder {
            table: Dynamic::new(table_max.min(DEFAULT_TABLE_SIZE)),
            table_max,
            update_due: false,
            scratch: Vec::new(),
        }
    }

    /// The SETTINGS_HEADER_TABLE_SIZE we advertise changed to `table_max`
    /// and the peer acknowledged it. Updates above it are errors from now
    /// on; if the table is larger, it shrinks now, and the next block must
    /// start with a dynamic table size update (RFC 7541 §4.2), else it is
    /// an error.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn set_table_max(&mut self, table_max: usize) {
        self.table_max = table_max;
        if self.table.max() > table_max {
            self.table.set_max(table_max);
            self.update_due = true;
        }
    }

    /// The dynamic table, for tests and the fuzz target.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn table(&self) -> &Dynamic {
        &self.table
    }

    /// Decodes one complete header block (all HEADERS+CONTINUATION
    /// fragments already joined), calling `field(name, value)` for each
    /// field in order. Names and values are given as decoded, unchecked.
    ///
    /// `list_max` bounds the decoded header list as RFC 9113 §6.5.2 counts
    /// it (name + value + 32 per field). The first field that would take
    /// the running size past it is not given to `field`, nor is any after
    /// it: decoding goes on to the end of the block (so the dynamic table
    /// stays in step with the peer's encoder), copying only what the table
    /// needs, and the result is `Ok(Decoded::TooLarge)`. If `field` returns
    /// `ControlFlow::Break(())`, the same, and the result is
    /// `Ok(Decoded::Stopped)`. Otherwise `Ok(Decoded::Complete)`.
    ///
    /// Any malformed representation is a [`DecodeError::Compression`]
    /// (§5, §6): an integer above 2^32 - 1 or with more than 5 continuation
    /// octets, a string longer than the rest of the block, a Huffman string
    /// holding EOS or badly padded, index 0 or an index past the tables, a
    /// dynamic table size update after a field, a third one, or one above
    /// the advertised maximum, and a block that does not start with an
    /// update when one is due.
    pub(crate) fn decode(
        &mut self,
        block: &[u8],
        list_max: usize,
        field: &mut OnField<'_>,
    ) -> Result<Decoded, DecodeError> {
        let mut r = Reader { block, pos: 0 };
        let mut outcome = Decoded::Complete;
        let mut list = 0usize;
        let mut updates = 0u8;
        let mut fields = false;
        while let Some(&first) = block.get(r.pos) {
            if first & 0xe0 == 0x20 {
                // Dynamic table size update (§6.3): only before the first
                // field, at most two (§4.2).
                if fields || updates == 2 {
                    return Err(DecodeError::Compression);
                }
                let size = r.int(5)?;
                if size > self.table_max {
                    return Err(DecodeError::Compression);
                }
                self.table.set_max(size);
                self.update_due = false;
                updates += 1;
                continue;
            }
            if self.update_due {
                return Err(DecodeError::Compression);
            }
            fields = true;
            if first & 0x80 != 0 {
                // Indexed header field (§6.1).
                let index = r.int(7)?;
                let (name, value) = entry(&self.table, index)?;
                if outcome == Decoded::Complete {
                    deliver(name, value, list_max, &mut list, &mut outcome, field);
                }
                continue;
            }
            // A literal (§6.2): with incremental indexing (01), without
            // indexing (0000) or never indexed (0001).
            let (indexing, prefix) = if first & 0x40 != 0 {
                (true, 6)
            } else {
                (false, 4)
            };
            let index = r.int(prefix)?;
            let name = if index == 0 {
                NameAt::Literal(r.string()?)
            } else {
                entry(&self.table, index)?;
                NameAt::Index(index)
            };
            let value = r.string()?;
            self.literal(
                block,
                name,
                value,
                indexing,
                list_max,
                &mut list,
                &mut outcome,
                field,
            )?;
        }
        if self.update_due {
            return Err(DecodeError::Compression);
        }
        if self.scratch.capacity() > SCRATCH_KEEP {
            self.scratch.clear();
            self.scratch.shrink_to(SCRATCH_KEEP);
        }
        Ok(outcome)
    }

    /// One literal field: decodes what the callback or the table needs,
    /// gives it to the callback, adds it to the table if `indexing`.
    #[allow(clippy::too_many_arguments)]
    fn literal(
        &mut self,
        block: &[u8],
        name: NameAt,
        value: Str,
        indexing: bool,
        list_max: usize,
        list: &mut usize,
        outcome: &mut Decoded,
        field: &mut OnField<'_>,
    ) -> Result<(), DecodeError> {
        let name_min = match name {
            NameAt::Index(i) => entry(&self.table, i)?.0.len(),
            NameAt::Literal(s) => s.min_len(),
        };
        // The field's smallest possible size, before any Huffman decoding.
        let size_min = entry_size(name_min, value.min_len());
        let mut calling = *outcome == Decoded::Complete;
        if calling && list.saturating_add(size_min) > list_max {
            *outcome = Decoded::TooLarge;
            calling = false;
        }
        let storing = indexing && size_min <= self.table.max();
        if !calling && !storing {
            // Nothing needs the octets: only check them.
            if let NameAt::Literal(s) = name {
                s.check(block)?;
            }
            value.check(block)?;
            if indexing {
                // Larger than the table: adding it empties the table (§4.4).
                self.table.clear();
            }
            return Ok(());
        }
        self.scratch.clear();
        let huffman_name = match name {
            NameAt::Literal(s) if s.huffman => {
                huffman::decode(s.raw(block)?, &mut self.scratch)
                    .map_err(|_| DecodeError::Compression)?;
                true
            }
            _ => false,
        };
        let name_end = self.scratch.len();
        if value.huffman {
            huffman::decode(value.raw(block)?, &mut self.scratch)
                .map_err(|_| DecodeError::Compression)?;
        }
        let (scratch_name, scratch_value) = self
            .scratch
            .split_at_checked(name_end)
            .ok_or(DecodeError::Compression)?;
        let value_bytes = if value.huffman {
            scratch_value
        } else {
            value.raw(block)?
        };
        let name_bytes = match name {
            NameAt::Index(i) => entry(&self.table, i)?.0,
            NameAt::Literal(_) if huffman_name => scratch_name,
            NameAt::Literal(s) => s.raw(block)?,
        };
        if calling {
            deliver(name_bytes, value_bytes, list_max, list, outcome, field);
        }
        if indexing {
            // The name again, not borrowed from the table this time.
            let name = match name {
                NameAt::Index(i) if i > STATIC_LEN => Name::Entry(i - STATIC_LEN - 1),
                NameAt::Index(i) => Name::Bytes(
                    STATIC
                        .get(i.wrapping_sub(1))
                        .ok_or(DecodeError::Compression)?
                        .0,
                ),
                NameAt::Literal(_) if huffman_name => Name::Bytes(scratch_name),
                NameAt::Literal(s) => Name::Bytes(s.raw(block)?),
            };
            self.table.insert(name, value_bytes);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::h2::hpack::hex;

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
        assert_eq!(r.int(5), Err(DecodeError::Compression));
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
}
