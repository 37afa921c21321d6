//! The Linux backend: everything that moves bytes. What an answer is, is
//! decided in `http/`; this side calls its pipeline (`http::answer`) and
//! frames the result. Its rooms:
//!
//! - **The server and its life**: the running server and its signals
//!   (`server.rs`), what the workers share (`shared.rs`) and the runtime
//!   current now (`current.rs`), reload (`reload.rs`), upgrade
//!   (`upgrade.rs`), the checks before it starts (`preflight.rs`).
//! - **Listening and the loop**: the listeners (`listen.rs`: bound, or
//!   passed by socket activation, `activation.rs`; a Unix path's
//!   ownership, `unix_path.rs`), the worker loop (`worker.rs`) and its
//!   clock (`clock.rs`).
//! - **A connection**: the transport that reads and writes a socket
//!   plainly or through rustls (`transport.rs`, `tls/`), a connection with
//!   its protocol unit (`conn/`: `h1.rs` and `h2.rs`, over `link.rs`), the
//!   send queue (`out.rs`, `out/`); QUIC for HTTP/3 (`quic/`: so far the
//!   server configuration, #47).
//! - **How a file travels**: the vehicles (`send.rs`), the kept table
//!   (`cache.rs`, `cache/`), the kept compressed variants
//!   (`variants.rs`), the io pool for cold pages and opens (`pool.rs`).
//! - **What goes to disk**: the write wing (`write/`: `PUT`, `DELETE`,
//!   resumable uploads, each through one sink lifecycle), which sees the
//!   server only through its own context.
//! - **Credentials**: the verifier threads and their table (`auth_pool.rs`,
//!   `verify.rs`).
//! - **Certificates**: ACME's validations in flight (`challenges.rs`) and,
//!   with the `acme` feature, its client and the thread that obtains and
//!   renews certificates (`acme/`).
//! - **What operators read**: the counters (`stats.rs`), the stats socket
//!   (`stats_socket.rs`), the log sinks (`log.rs`, `log/`).

#[cfg(feature = "acme")]
mod acme;
mod activation;
mod auth_pool;
#[cfg(feature = "bench")]
pub mod bench;
pub(crate) mod cache;
pub(crate) mod challenges;
mod clock;
mod conn;
mod current;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod listen;
pub(crate) mod log;
mod out;
mod pool;
mod preflight;
mod quic;
mod reload;
pub(crate) mod send;
mod server;
mod shared;
pub(crate) mod stats;
pub(crate) mod stats_socket;
pub(crate) mod tls;
mod transport;
mod unix_path;
mod upgrade;
mod variants;
mod verify;
mod worker;
mod write;

pub use reload::Reloaded;
pub use server::Running;
pub use worker::SHUTDOWN_GRACE;

/// `fs::Mapped`, a row of the body table where mappings exist: the same row
/// as `Bytes`, its bytes never read in user mode.
impl crate::http::IntoResponse for crate::fs::Mapped {
    fn into_response(self) -> crate::http::Response {
        use crate::http::response::OCTETS;
        crate::http::Response::mapped(bytes::Bytes::from(self), OCTETS)
    }
}
