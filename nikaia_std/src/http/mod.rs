//! `std::http`: deciding the answer, the same on every target — the server
//! builder and router, the request, the body table (D1), conditionals,
//! content-coding negotiation, `http::File`, and the one answer pipeline
//! every backend calls (`answer.rs`), with what it asks of a backend, one
//! trait per job (`port.rs`). The wire formats are sans-IO units beside
//! it (`h1/`, `h2/`); the site's rules of `nikaia serve` are `site/`, a
//! produced body's state machine `produce/`. Nothing here names a socket
//! or a descriptor: how the bytes move is the backend's (`linux/`,
//! `wasm/`).
//!
//! Normative text: `spec/http.md`.

pub(crate) mod answer;
pub(crate) mod app;
pub(crate) mod body;
pub(crate) mod client;
mod coding;
pub(crate) mod conditional;
pub(crate) mod dav;
mod events;
pub(crate) mod fields;
pub(crate) mod file;
pub(crate) mod h1;
pub(crate) mod h2;
pub(crate) mod h3;
pub(crate) mod kept_key;
pub(crate) mod port;
pub(crate) mod produce;
pub(crate) mod proxy;
pub(crate) mod redirect;
pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod router;
mod serve;
pub(crate) mod site;
mod target;
pub(crate) mod to_file;

pub use crate::backend::*;
pub use app::Server;
pub use body::{Aborted, Flow, IntoSink, Limit, Resume, Sink, WithBody};
pub use events::{event_stream, Event, EventError, Events};
pub use file::File;
pub use produce::{Cancelled, Produced, Producer, Pull, Pulled};
pub use request::{Peer, Request, Version};
pub use response::{IntoResponse, Response};
pub use serve::{dir_handler, dir_writer, resumable, visible};
pub use to_file::{answer_written, status_of, IntoToFile, ToFile};
