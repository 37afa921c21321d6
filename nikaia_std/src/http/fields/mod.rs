//! What HTTP/2 and HTTP/3 share about fields: the Huffman code and the
//! prefix integers and strings their header compressions (HPACK, QPACK)
//! are built from, and the rules a request's decoded fields meet (RFC
//! 9113 §8.2–8.3, which RFC 9114 §4.2–4.3 repeat). Neither protocol's
//! module imports the other's; both import this one.

pub(crate) mod huffman;
pub(crate) mod prefix;
pub(crate) mod request;

/// The callback a decoder gives each field to, as `(name, value)`;
/// `ControlFlow::Break(())` asks it to stop. HPACK's and QPACK's.
pub(crate) type OnField<'a> = dyn FnMut(&[u8], &[u8]) -> std::ops::ControlFlow<()> + 'a;
