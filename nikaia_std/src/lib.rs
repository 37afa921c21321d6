//! `nikaia_std`: the part of Nikaia's standard library that answers HTTP
//! requests with files and bytes.
//!
//! - [`fs`]: [`fs::Root`] (a directory a request-chosen name may not leave, or
//!   the audited [`fs::Root::anywhere`]), [`fs::map`] and whole-file reads and
//!   writes.
//! - [`http`]: the HTTP/1.1 server, the body rows ([`http::IntoResponse`]) and
//!   [`http::File`].
//! - [`rt`]: the operator's runtime file, worker threads, stats and logs.
//!
//! How a file travels to the socket (sendfile, a kept mapping, or read+write)
//! is decided inside this crate at run time; programs never choose it.

#[cfg(target_os = "linux")]
pub(crate) mod cache;
pub mod fs;
pub mod html;
pub mod http;
pub mod rt;
pub(crate) mod send;
pub(crate) mod text;
#[cfg(target_os = "linux")]
pub(crate) mod tls;

pub use bytes::Bytes;
