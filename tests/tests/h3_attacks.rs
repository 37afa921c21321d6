//! HTTP/3 under attack (issue #47, "Tests"): one test per attack class the
//! QUIC servers' advisories name (`../shared/notes/http3.md` §5), each
//! driven by the scripted attacker `tests/h3/h3client.py attack NAME` (PyPI
//! aioquic) against a server with `http3 = true`. In each, the server
//! closes only the offending connection, with the right code, while a
//! well-behaved client is served: a bystander connection opened before the
//! attack is served again on the same connection after it, and a fresh
//! connection is served during or right after it. Each attack ends within
//! 10 s; the tests run one at a time (`harness::one_at_a_time`), so no flood
//! overlaps another test's. `spec/http3.md` says what the server does.
//!
//! - `handshakes`: truncated transport parameters, amplification, Retry
//!   under a handshake flood, `max-connections`, and the busy-port rule
//!   over UDP;
//! - `memory`: floods of Initials with the server's RSS measured;
//! - `transport`: NEW_CONNECTION_ID and PATH_CHALLENGE floods, ACK
//!   withholding;
//! - `streams`: an unknown frame type, a second or closed control or QPACK
//!   stream, a decoded-header bomb, a reset flood, a stream-open flood.

#[path = "h3_attacks/clocks.rs"]
mod clocks;
#[path = "h3_attacks/handshakes.rs"]
mod handshakes;
#[path = "h3_attacks/harness.rs"]
mod harness;
#[path = "h3_attacks/memory.rs"]
mod memory;
#[path = "h3_attacks/streams.rs"]
mod streams;
#[path = "h3_attacks/transport.rs"]
mod transport;
