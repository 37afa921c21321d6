//! HTTP/1.1 on the wire (RFC 9112), sans-IO: request heads parsed and
//! checked for framing (`parse.rs`), chunked bodies decoded (`chunked.rs`),
//! response heads written (`head.rs`), and kept while the next answer's
//! inputs are the same (`kept.rs`). The connection that drives them is
//! the backend's.

pub(crate) mod chunked;
pub(crate) mod head;
pub(crate) mod kept;
pub(crate) mod parse;
