//! The HTTP/2 wire format, sans-IO, server side: bytes in, requests and
//! frame bytes out. The connection's protocol unit on each backend drives
//! it; the answer pipeline decides what it says.
//!
//! Normative text: `spec/http2.md`.

pub(crate) mod conn;
pub(crate) mod frame;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub(crate) mod hpack;
pub(crate) mod kept;

#[cfg(test)]
mod tests;
