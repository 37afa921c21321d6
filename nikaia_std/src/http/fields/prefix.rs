//! Prefix integers and string literals: the two primitives HPACK (RFC 7541
//! §5) and QPACK (RFC 9204 §4.1) share. An integer fills the low N bits of
//! its first octet and continues in 7-bit groups; a string is a length
//! with an N-bit prefix whose next higher bit says Huffman, then its
//! octets. HPACK's strings always have a 7-bit prefix; QPACK's literal
//! names have a 3- or 4-bit one.

use super::huffman;

/// A prefix integer or a string literal that does not fit the block, is
/// longer than 2^32 - 1 or runs past its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

/// Appends an integer with an N-bit prefix; `flags` holds the first
/// octet's bits above the prefix.
pub(crate) fn write_int(out: &mut Vec<u8>, flags: u8, prefix: u32, value: usize) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Appends a string literal whose length has an N-bit prefix (its Huffman
/// flag the bit above it, `flags` the bits above that), Huffman-coded when
/// that is shorter.
pub(crate) fn write_string(out: &mut Vec<u8>, flags: u8, prefix: u32, s: &[u8]) {
    let coded = huffman::encoded_len(s);
    if coded < s.len() {
        write_int(out, flags | 1 << prefix, prefix, coded);
        huffman::encode(s, out);
    } else {
        write_int(out, flags, prefix, s.len());
        out.extend_from_slice(s);
    }
}

/// A string literal: its octets are `block[start..end]`, still
/// Huffman-coded if `huffman`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Str {
    pub huffman: bool,
    pub start: usize,
    pub end: usize,
}

impl Str {
    /// The octets as they are in the block (still Huffman-coded if so).
    pub(crate) fn raw<'b>(&self, block: &'b [u8]) -> Result<&'b [u8], Malformed> {
        block.get(self.start..self.end).ok_or(Malformed)
    }

    /// The fewest octets the string decodes to.
    pub(crate) fn min_len(&self) -> usize {
        let len = self.end.saturating_sub(self.start);
        if self.huffman {
            huffman::min_decoded_len(len)
        } else {
            len
        }
    }

    /// Checks a Huffman-coded string without keeping what it decodes to.
    pub(crate) fn check(&self, block: &[u8]) -> Result<(), Malformed> {
        if self.huffman {
            huffman::check(self.raw(block)?).map_err(|_| Malformed)?;
        }
        Ok(())
    }

    /// The string's octets: borrowed from the block, or decoded into
    /// `scratch` (cleared first) when Huffman-coded.
    #[allow(dead_code)] // QPACK's, until h3 runs
    pub(crate) fn decode<'a>(
        &self,
        block: &'a [u8],
        scratch: &'a mut Vec<u8>,
    ) -> Result<&'a [u8], Malformed> {
        let raw = self.raw(block)?;
        if !self.huffman {
            return Ok(raw);
        }
        scratch.clear();
        huffman::decode(raw, scratch).map_err(|_| Malformed)?;
        Ok(scratch)
    }
}

/// A cursor over a field block.
pub(crate) struct Reader<'b> {
    pub block: &'b [u8],
    pub pos: usize,
}

impl<'b> Reader<'b> {
    pub(crate) fn new(block: &'b [u8]) -> Reader<'b> {
        Reader { block, pos: 0 }
    }

    /// The next octet, not consumed.
    pub(crate) fn peek(&self) -> Option<u8> {
        self.block.get(self.pos).copied()
    }

    /// An integer with an N-bit prefix, the first octet's other bits
    /// ignored. At most 2^32 - 1 and 5 continuation octets.
    pub(crate) fn int(&mut self, prefix: u32) -> Result<usize, Malformed> {
        let first = *self.block.get(self.pos).ok_or(Malformed)?;
        self.pos += 1;
        let mask = (1u32 << prefix) - 1;
        let mut value = u64::from(u32::from(first) & mask);
        if value < u64::from(mask) {
            return usize::try_from(value).map_err(|_| Malformed);
        }
        let mut shift = 0u32;
        loop {
            let b = *self.block.get(self.pos).ok_or(Malformed)?;
            self.pos += 1;
            value += u64::from(b & 0x7f) << shift;
            if value > u64::from(u32::MAX) {
                return Err(Malformed);
            }
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 28 {
                return Err(Malformed);
            }
        }
        usize::try_from(value).map_err(|_| Malformed)
    }

    /// A string literal whose length has an N-bit prefix and whose Huffman
    /// flag is the bit above it; its length is checked against the block.
    pub(crate) fn string(&mut self, prefix: u32) -> Result<Str, Malformed> {
        let huffman = self.peek().is_some_and(|first| first & (1 << prefix) != 0);
        let len = self.int(prefix)?;
        let start = self.pos;
        let end = start.checked_add(len).ok_or(Malformed)?;
        if end > self.block.len() {
            return Err(Malformed);
        }
        self.pos = end;
        Ok(Str {
            huffman,
            start,
            end,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip_at_every_prefix() {
        for prefix in 1..=8 {
            for value in [0, 1, 30, 31, 127, 128, 255, 1337, 65_535, u32::MAX as usize] {
                let mut out = Vec::new();
                let flags = if prefix < 8 { 0xff << prefix } else { 0 };
                write_int(&mut out, flags as u8, prefix, value);
                let mut r = Reader::new(&out);
                assert_eq!(r.int(prefix), Ok(value), "prefix {prefix} value {value}");
                assert_eq!(r.pos, out.len());
            }
        }
    }

    #[test]
    fn past_u32_and_runs_past_the_block_are_malformed() {
        // 2^32 with a 5-bit prefix (RFC 7541 C.1's form).
        let past = [0x1f, 0xe1, 0xff, 0xff, 0xff, 0x0f];
        assert_eq!(Reader::new(&past).int(5), Err(Malformed));
        assert_eq!(Reader::new(&[0x1f, 0x80]).int(5), Err(Malformed));
        // Six continuation octets, even of zeros, are refused.
        assert_eq!(
            Reader::new(&[0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]).int(5),
            Err(Malformed)
        );
        // A string longer than what is left.
        assert_eq!(
            Reader::new(&[0x05, b'a']).string(7).map(|_| ()),
            Err(Malformed)
        );
    }

    #[test]
    fn strings_take_huffman_only_when_shorter_at_a_3_bit_prefix() {
        // QPACK's literal name: `001 N H NameLen(3)`.
        let mut out = Vec::new();
        write_string(&mut out, 0x20, 3, b"custom-key");
        assert_eq!(out[0] & 0xe0, 0x20);
        assert_ne!(out[0] & 0x08, 0, "Huffman is shorter for custom-key");
        let mut r = Reader::new(&out);
        let s = r.string(3).unwrap();
        let mut scratch = Vec::new();
        assert_eq!(s.decode(&out, &mut scratch).unwrap(), b"custom-key");
        let mut raw = Vec::new();
        write_string(&mut raw, 0, 7, &[0xff, 0xfe]);
        assert_eq!(
            raw,
            [0x02, 0xff, 0xfe],
            "octets Huffman cannot shorten go as they are"
        );
    }
}
