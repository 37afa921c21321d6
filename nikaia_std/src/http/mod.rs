//! `std::http`: an HTTP/1.1 server and the body table (D1).
//!
//! Normative text: `spec/http.md`.

mod app;
#[cfg(target_os = "linux")]
#[doc(hidden)]
pub mod bench;
#[cfg(target_os = "linux")]
mod chunked;
mod coding;
mod conditional;
#[cfg(target_os = "linux")]
mod conn;
mod file;
#[cfg(target_os = "linux")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(target_os = "linux")]
pub(crate) mod out;
mod parse;
mod request;
mod response;
mod router;
mod serve;
#[cfg(target_os = "linux")]
mod server;
#[cfg(target_arch = "wasm32")]
mod wasm;

pub use app::Server;
pub use file::File;
pub use request::{Request, Version};
pub use response::{IntoResponse, Response};
pub use serve::{dir_handler, visible};
#[cfg(target_os = "linux")]
pub(crate) use server::bind as bind_probe;
#[cfg(target_os = "linux")]
pub use server::{Running, SHUTDOWN_GRACE};
#[cfg(target_arch = "wasm32")]
pub use wasm::{handle, Answer};
