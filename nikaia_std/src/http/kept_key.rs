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
struct Key {
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
    fn matches(&self, body: (usize, usize), i: &Inputs<'_>) -> bool {
        self.body == body
            && self.status == i.resp.status
            && self.length == i.length
            && self.close == i.close
            && self.version == i.version
            && self.default_type == i.resp.default_type
            && self.headers == i.resp.headers
    }

    fn of(body: (usize, usize), i: &Inputs<'_>) -> Key {
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

/// Misses in a row after which the kept answer gives way to the one just
/// written: a connection that alternates between answers keeps none of
/// them for long, and one that moved on to another constant answer keeps
/// that one.
pub(crate) const GIVE_WAY_AFTER: u8 = 32;

/// Where a body's bytes are, and how many.
fn place(body: &[u8]) -> (usize, usize) {
    (body.as_ptr() as usize, body.len())
}

/// Which answer a connection keeps (its head or block is the protocol's
/// to keep beside it), and when another takes its place.
#[derive(Default)]
pub(crate) struct Slot {
    key: Option<Key>,
    misses: u8,
    /// Answers given from what was kept.
    #[cfg(test)]
    hits: u64,
}

impl Slot {
    /// Whether `body` and `i` are the kept answer's.
    pub(crate) fn holds(&self, body: &[u8], i: &Inputs<'_>) -> bool {
        self.key.as_ref().is_some_and(|k| k.matches(place(body), i))
    }

    /// The kept answer was given again.
    pub(crate) fn given(&mut self) {
        self.misses = 0;
        #[cfg(test)]
        {
            self.hits += 1;
        }
    }

    /// An answer was written afresh and may not be kept.
    pub(crate) fn missed(&mut self) {
        self.misses = self.misses.saturating_add(1);
    }

    /// An answer was written afresh: whether to keep it now. `same`: it
    /// has the kept answer's inputs (in a new second, at another table),
    /// and always is; the first answer is; another takes the place once
    /// the kept one missed [`GIVE_WAY_AFTER`] times in a row. Else the
    /// miss is counted.
    pub(crate) fn take(&mut self, same: bool, body: &[u8], i: &Inputs<'_>) -> bool {
        if !(same || self.key.is_none() || self.misses.saturating_add(1) >= GIVE_WAY_AFTER) {
            self.missed();
            return false;
        }
        if !same {
            self.key = Some(Key::of(place(body), i));
        }
        self.misses = 0;
        true
    }

    /// How many answers were given from what was kept.
    #[cfg(test)]
    pub(crate) fn hits(&self) -> u64 {
        self.hits
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
