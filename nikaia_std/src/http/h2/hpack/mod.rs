//! HPACK (RFC 7541), the header compression of HTTP/2: a [`Decoder`] for
//! the request header blocks a peer sends, an [`Encoder`] for the response
//! header blocks we send.
//!
//! Both sides are sans-IO and allocation-light: the decoder hands each
//! field to a callback as slices into the block, the dynamic table or one
//! reusable buffer (for Huffman-coded strings); the encoder appends to a
//! caller's `Vec<u8>`. Neither panics on any input: every length and index
//! a block holds is checked before use, and anything malformed is a
//! [`DecodeError::Compression`], which RFC 9113 §4.3 makes a connection
//! error of type COMPRESSION_ERROR.
//!
//! The decoder checks HPACK only: field names are given as decoded, and
//! HTTP's rules for them (lowercase, pseudo-header order) are the caller's.

mod decode;
mod encode;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use decode::{Decoded, Decoder, DEFAULT_TABLE_SIZE};
pub(crate) use encode::{Encoder, ENCODER_TABLE_CAP};

/// Octets from hex digits (spaces ignored), for the RFC's examples.
#[cfg(test)]
pub(crate) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}
