//! QPACK (RFC 9204), the field compression of HTTP/3, with a dynamic table
//! of capacity 0 on both sides: we advertise SETTINGS_QPACK_MAX_TABLE_CAPACITY
//! 0 and SETTINGS_QPACK_BLOCKED_STREAMS 0 (their defaults), and our encoder
//! never inserts. So no field section waits for another stream, no peer
//! makes us hold table memory, and the attack class of blocked streams and
//! table churn does not exist here (`spec/http3.md`). What is left is the
//! static table, the three literal forms and Huffman — the primitives
//! HPACK shares, in `http/fields/`.
//!
//! Sans-IO and panic-free on any input: every length and index is checked
//! before use.

pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod streams;
pub(crate) mod table;
#[cfg(test)]
mod tests;

pub(crate) use decode::{Decoded, Decoder, DecompressionFailed};
