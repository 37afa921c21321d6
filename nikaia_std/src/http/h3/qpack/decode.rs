//! The QPACK decoder for a dynamic table of capacity 0: a request's
//! encoded field section in, its fields out (RFC 9204 §4.5). We advertise
//! SETTINGS_QPACK_MAX_TABLE_CAPACITY 0 and SETTINGS_QPACK_BLOCKED_STREAMS
//! 0, so a conformant encoder references only the static table and never
//! blocks: every reference to the dynamic table, and a Required Insert
//! Count other than 0, is QPACK_DECOMPRESSION_FAILED.

use super::table::STATIC;
use crate::http::fields::prefix::{Malformed, Reader, Str};
use crate::http::fields::OnField;

/// Why a field section could not be decoded: QPACK_DECOMPRESSION_FAILED
/// (0x200), a connection error (RFC 9204 §2.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DecompressionFailed;

impl From<Malformed> for DecompressionFailed {
    fn from(_: Malformed) -> DecompressionFailed {
        DecompressionFailed
    }
}

/// How a field section that was decoded to its end went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// Every field line was given to the callback.
    Complete,
    /// The section grew past the limit: the fields before were given to
    /// the callback, the rest were only checked.
    TooLarge,
    /// The callback asked to stop: it was not called again.
    Stopped,
}

/// The per-field overhead of a field section's size (RFC 9114 §4.2.2,
/// as HTTP/2's §6.5.2): name + value + 32.
const FIELD_OVERHEAD: usize = 32;

/// The scratch buffer's capacity kept from one section to the next.
const SCRATCH_KEEP: usize = 16 << 10;

/// A decoder: only a buffer for Huffman-coded strings, as the table is
/// empty for the connection's whole life.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    scratch: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    /// Decodes one encoded field section (a HEADERS frame's payload),
    /// calling `field(name, value)` for each field line in order, names and
    /// values as decoded, unchecked.
    ///
    /// `list_max` bounds the decoded section (name + value + 32 per line,
    /// what we advertise as SETTINGS_MAX_FIELD_SECTION_SIZE): the first line
    /// that would pass it is not given to `field`, nor any after it, and
    /// the rest is only checked (`Ok(Decoded::TooLarge)`). A Huffman string
    /// is decoded only when its line would be delivered and its shortest
    /// decoding fits; it decodes to at most 8/5 of its coded length (the
    /// shortest code is 5 bits), so the HEADERS frame's own bound bounds
    /// the work.
    pub(crate) fn decode(
        &mut self,
        section: &[u8],
        list_max: usize,
        field: &mut OnField<'_>,
    ) -> Result<Decoded, DecompressionFailed> {
        let mut r = Reader::new(section);
        // The prefix (§4.5.1): Required Insert Count, then the sign and
        // Delta Base. With no dynamic table the count is 0, and a Base
        // below it (sign 1) would be negative.
        if r.int(8)? != 0 {
            return Err(DecompressionFailed);
        }
        // Any Base is allowed with no references; a negative one is not.
        if r.peek().ok_or(DecompressionFailed)? & 0x80 != 0 {
            return Err(DecompressionFailed);
        }
        r.int(7)?;
        let mut outcome = Decoded::Complete;
        let mut size = 0usize;
        while let Some(first) = r.peek() {
            let (name, value) = if first & 0x80 != 0 {
                // Indexed field line (§4.5.2): T must say static.
                if first & 0x40 == 0 {
                    return Err(DecompressionFailed);
                }
                let (n, v) = *STATIC.get(r.int(6)?).ok_or(DecompressionFailed)?;
                (Part::Static(n), Part::Static(v))
            } else if first & 0x40 != 0 {
                // Literal with name reference (§4.5.4): T must say static.
                if first & 0x10 == 0 {
                    return Err(DecompressionFailed);
                }
                let (n, _) = *STATIC.get(r.int(4)?).ok_or(DecompressionFailed)?;
                (Part::Static(n), Part::Literal(r.string(7)?))
            } else if first & 0x20 != 0 {
                // Literal with literal name (§4.5.6).
                let name = r.string(3)?;
                (Part::Literal(name), Part::Literal(r.string(7)?))
            } else {
                // 0001: indexed with post-base index (§4.5.3); 0000:
                // literal with post-base name reference (§4.5.5). Both
                // reference the dynamic table.
                return Err(DecompressionFailed);
            };
            let min = name.min_len() + value.min_len() + FIELD_OVERHEAD;
            if outcome != Decoded::Complete || size.saturating_add(min) > list_max {
                if outcome == Decoded::Complete {
                    outcome = Decoded::TooLarge;
                }
                name.check(section)?;
                value.check(section)?;
                continue;
            }
            let name = match name {
                Part::Static(n) => n,
                Part::Literal(s) => s.decode(section, &mut self.scratch)?,
            };
            let value = match value {
                Part::Static(v) => v,
                Part::Literal(s) => s.decode(section, &mut self.value)?,
            };
            size += name.len() + value.len() + FIELD_OVERHEAD;
            if size > list_max {
                outcome = Decoded::TooLarge;
                continue;
            }
            if field(name, value).is_break() {
                outcome = Decoded::Stopped;
            }
        }
        for buf in [&mut self.scratch, &mut self.value] {
            if buf.capacity() > SCRATCH_KEEP {
                *buf = Vec::new();
            }
        }
        Ok(outcome)
    }
}

/// Where a line's name or value is: the static table's, or a string
/// literal in the section.
#[derive(Clone, Copy)]
enum Part {
    Static(&'static [u8]),
    Literal(Str),
}

impl Part {
    fn min_len(&self) -> usize {
        match self {
            Part::Static(b) => b.len(),
            Part::Literal(s) => s.min_len(),
        }
    }

    fn check(&self, section: &[u8]) -> Result<(), Malformed> {
        match self {
            Part::Static(_) => Ok(()),
            Part::Literal(s) => s.check(section),
        }
    }
}
