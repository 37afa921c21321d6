//! The HTTP/3 wire format (RFC 9114), sans-IO, server side: QUIC stream
//! bytes in, requests and frame bytes out. QUIC itself (packets, loss,
//! congestion, TLS) is quinn-proto's, driven by the connection's protocol
//! unit on the Linux backend; this module never sees a datagram.
//!
//! Normative text: `spec/http3.md`.
//!
//! The Linux unit that drives it over QUIC (`linux/conn/h3`) is not built
//! yet (#47, in progress): until it is, only the tests and the fuzz
//! targets run this module.
#![allow(dead_code)]

pub(crate) mod conn;
pub(crate) mod frame;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub(crate) mod qpack;
pub(crate) mod response;
