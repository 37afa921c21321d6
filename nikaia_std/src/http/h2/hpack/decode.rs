//! The HPACK decoder: header blocks in, fields out (RFC 7541 §3, §6).

use super::table::{entry_size, Dynamic, Name, STATIC, STATIC_LEN};
use crate::http::fields::huffman;
use crate::http::fields::prefix::{Malformed, Reader, Str};

/// Why a header block could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// Anything malformed: a connection error of type COMPRESSION_ERROR
    /// (RFC 9113 §4.3). The decoder is then out of step with the peer's
    /// encoder and must not be used again.
    Compression,
}

impl From<Malformed> for DecodeError {
    fn from(_: Malformed) -> DecodeError {
        DecodeError::Compression
    }
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

pub(crate) use crate::http::fields::OnField;

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
        let mut r = Reader::new(block);
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
                NameAt::Literal(r.string(7)?)
            } else {
                entry(&self.table, index)?;
                NameAt::Index(index)
            };
            let value = r.string(7)?;
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
mod tests;
