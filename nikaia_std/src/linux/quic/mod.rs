//! QUIC for HTTP/3 (`spec/http3.md`), on quinn-proto's sans-IO state
//! machine. Built so far: the configuration a server endpoint answers with
//! (`config.rs`: the TLS set's pairs by SNI, ALPN `h3` only, 0-RTT off,
//! the transport's bounds), tested by a handshake between two endpoints in
//! memory. The socket, the loop and the unit that drives `http/h3` over it
//! are #47's next part; until then nothing else calls this module.
#![allow(dead_code)]

pub(crate) mod config;
#[cfg(test)]
mod tests;
