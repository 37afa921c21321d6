//! What decides a response head, whatever the protocol writes it as: the
//! key of HTTP/1.1's kept heads (`h1/kept.rs`) and HTTP/2's kept header
//! blocks (`h2/kept.rs`). It holds every input of a head but the `Date`
//! (which each protocol compares or writes on its own): the status, the
//! body row's Content-Type, each header field (names and values, in
//! order), the length, whether the connection closes and the request's
//! version; and the body's place and length, which are no input but tell
//! answers apart sooner (`spec/http.md`, "Kept heads").

use crate::http::request::Version;
use crate::http::response::Response;
use bytes::Bytes;
use std::borrow::Cow;

/// What a head is written from: everything that decides it but the
/// body's bytes.
#[derive(Clone, Copy)]
pub(crate) struct Inputs<'a> {
    pub resp: &'a Response,
    /// The body's length (also for HEAD, which sends none).
    pub length: u64,
    pub date: &'a [u8],
    pub close: bool,
    pub version: Version,
}

/// What a head was built from, but its `Date`; and the body it was sent
/// with.
#[derive(PartialEq)]
pub(crate) struct Key {
    /// Where the body's bytes are, and how many: not an input of the head,
    /// but compared first, so that a connection asking for one file after
    /// another (each its own bytes in the kept table) is told apart at
    /// once. It only ever adds misses.
    body: (usize, usize),
    status: u16,
    default_type: Option<&'static str>,
    headers: Vec<(Cow<'static, str>, Bytes)>,
    length: u64,
    close: bool,
    version: Version,
}

impl Key {
    pub(crate) fn matches(&self, body: (usize, usize), i: &Inputs<'_>) -> bool {
        self.body == body
            && self.status == i.resp.status
            && self.length == i.length
            && self.close == i.close
            && self.version == i.version
            && self.default_type == i.resp.default_type
            && self.headers == i.resp.headers
    }

    pub(crate) fn of(body: (usize, usize), i: &Inputs<'_>) -> Key {
        Key {
            body,
            status: i.resp.status,
            default_type: i.resp.default_type,
            headers: i.resp.headers.clone(),
            length: i.length,
            close: i.close,
            version: i.version,
        }
    }
}

/// A reproducible run of numbers for the kept heads' and blocks' random
/// tests (xorshift64).
#[cfg(test)]
pub(crate) fn numbers(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
