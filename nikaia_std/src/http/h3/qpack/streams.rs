//! The peer's QPACK encoder and decoder streams (RFC 9204 §4.2–4.4) when
//! neither side has a dynamic table. The peer's encoder may only say Set
//! Dynamic Table Capacity 0; an insert or a duplicate references a table
//! we never allowed. The peer's decoder may say Stream Cancellation; a
//! Section Acknowledgment or an Insert Count Increment speaks of dynamic
//! state we never made. Either stream's instructions may be split across
//! reads, so each reader keeps an unfinished instruction's octets.

use crate::http::fields::prefix::{Malformed, Reader};

/// The peer's encoder stream was wrong: QPACK_ENCODER_STREAM_ERROR (0x201).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EncoderStreamError;

/// The peer's decoder stream was wrong: QPACK_DECODER_STREAM_ERROR (0x202).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DecoderStreamError;

/// The longest instruction either stream may carry here: one octet and a
/// prefix integer of at most five continuation octets.
const LONGEST: usize = 6;

/// Octets of an instruction split across reads.
#[derive(Debug, Default)]
pub(crate) struct Partial {
    held: Vec<u8>,
}

impl Partial {
    /// Feeds `data` through `each` one whole instruction at a time (its
    /// first octet and its integer), keeping an unfinished one for the
    /// next read. An integer that cannot end within [`LONGEST`] octets, or
    /// `each`'s refusal, is `Err`.
    fn feed<E: Copy>(
        &mut self,
        data: &[u8],
        prefix: impl Fn(u8) -> Result<u32, E>,
        mut each: impl FnMut(u8, usize) -> Result<(), E>,
        malformed: E,
    ) -> Result<(), E> {
        self.held.extend_from_slice(data);
        let mut pos = 0;
        while let Some(&first) = self.held.get(pos) {
            let bits = prefix(first)?;
            let mut r = Reader::new(&self.held[pos..]);
            match r.int(bits) {
                Ok(value) => {
                    each(first, value)?;
                    pos += r.pos;
                }
                Err(Malformed) if self.held.len() - pos < LONGEST => break,
                Err(Malformed) => return Err(malformed),
            }
        }
        self.held.drain(..pos);
        Ok(())
    }
}

/// The peer's encoder stream.
#[derive(Debug, Default)]
pub(crate) struct EncoderStream(Partial);

impl EncoderStream {
    /// The stream's next octets.
    pub(crate) fn read(&mut self, data: &[u8]) -> Result<(), EncoderStreamError> {
        self.0.feed(
            data,
            |first| {
                if first & 0xe0 == 0x20 {
                    Ok(5) // `001` Set Dynamic Table Capacity
                } else {
                    Err(EncoderStreamError) // an insert or a duplicate
                }
            },
            |_, capacity| {
                if capacity == 0 {
                    Ok(())
                } else {
                    Err(EncoderStreamError) // above our maximum, 0
                }
            },
            EncoderStreamError,
        )
    }
}

/// The peer's decoder stream.
#[derive(Debug, Default)]
pub(crate) struct DecoderStream(Partial);

impl DecoderStream {
    /// The stream's next octets.
    pub(crate) fn read(&mut self, data: &[u8]) -> Result<(), DecoderStreamError> {
        self.0.feed(
            data,
            |first| {
                if first & 0xc0 == 0x40 {
                    Ok(6) // `01` Stream Cancellation: nothing to release
                } else {
                    // `1` Section Acknowledgment of a section that had no
                    // dynamic references, `00` Insert Count Increment past
                    // the inserts we sent (none): §4.4.1, §4.4.3.
                    Err(DecoderStreamError)
                }
            },
            |_, _| Ok(()),
            DecoderStreamError,
        )
    }
}
