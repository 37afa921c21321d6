//! `std::http`: an HTTP/1.1 server and the body table (D1).
//!
//! Normative text: `spec/http.md`.

#[doc(hidden)]
pub mod bench;
mod chunked;
mod conditional;
mod conn;
pub(crate) mod date;
mod file;
pub(crate) mod out;
mod parse;
mod request;
mod response;
mod router;
mod server;

pub use file::File;
pub use request::{Request, Version};
pub use response::{IntoResponse, Response};
pub use server::{Running, Server, SHUTDOWN_GRACE};
