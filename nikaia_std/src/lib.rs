//! `nikaia_std`: the part of Nikaia's standard library that answers HTTP
//! requests with files and bytes.
//!
//! - [`fs`]: [`fs::Root`] (a directory a request-chosen name may not leave, or
//!   the audited [`fs::Root::anywhere`]), [`fs::map`] and whole-file reads and
//!   writes.
//! - [`http`]: the HTTP/1.1 server, the body rows ([`http::IntoResponse`]) and
//!   [`http::File`].
//! - [`rt`]: the operator's runtime file and the counters.
//!
//! How a file travels to the socket (sendfile, a kept mapping, or read+write)
//! is decided inside this crate at run time; programs never choose it.
//!
//! The crate is cut in two: `http/` (with `fs/` and `rt/`) decides every
//! answer and is the same on every target; one backend per target moves the
//! bytes — `linux/` (sockets, epoll, TLS, the kept table, the io pool) and
//! `wasm/` (a JS host's entry).

// On wasm32 the code only the Linux backend calls (HTTP/1 head writing, the
// access log's view of a request, mapped bodies) is compiled but idle.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

/// The compressors, for `nikaia compress`; not part of the language's
/// surface (programs never choose how a file is coded).
#[cfg(target_os = "linux")]
#[doc(hidden)]
pub mod encode;
pub mod fs;
pub mod html;
pub mod http;
#[cfg(target_os = "linux")]
mod linux;
pub mod rt;
pub(crate) mod sync;
pub(crate) mod text;
#[cfg(target_arch = "wasm32")]
mod wasm;

/// What the target's backend adds to [`http`] (which re-exports it all):
/// the running server on Linux, the host's entry on wasm32.
mod backend {
    #[cfg(target_os = "linux")]
    pub use crate::linux::{Reloaded, Running, SHUTDOWN_GRACE};
    #[cfg(target_arch = "wasm32")]
    pub use crate::wasm::{handle, Answer};
}

/// Entry points for `cargo fuzz` (`nikaia_std/fuzz`) and the corpus replay.
#[cfg(all(target_os = "linux", feature = "fuzzing"))]
#[doc(hidden)]
pub use linux::fuzzing;

/// The send path without the HTTP layer, for `benches/sendfile`.
#[cfg(all(target_os = "linux", feature = "bench"))]
#[doc(hidden)]
pub use linux::bench;

pub use bytes::Bytes;
