//! A connection's heads: the buffer they are written in, and the kept
//! head, the serialized head of an answer it sent with everything
//! [`write_head`] built it from, given again without writing it while the
//! next answer's inputs are the same (`spec/http.md`,
//! "Kept heads"). A held body answered many times (D1's constant answer,
//! a kept file asked again) then costs a comparison and a refcount, not a
//! head.
//!
//! The key is the body's place and length (which only tells answers
//! apart sooner) and every input of [`write_head`]: the status, the body row's
//! Content-Type, each header field the answer carries (names and values,
//! in order), the Content-Length, the `Date` text, whether the connection
//! closes, and the request's version. Nothing else goes into a head, so a
//! kept head is byte for byte the head [`write_head`] would write: another
//! body length, a header a handler or a site rule changed, a reload that
//! changed what the rules add, a new second: each is a different key.

use super::head::write_head;
pub(crate) use crate::http::kept_key::Inputs;
use crate::http::kept_key::Key;
use bytes::{Bytes, BytesMut};

/// What the buffer holds at least before a head is written: most heads
/// fit, so a connection's heads share one allocation.
const HEAD_ROOM: usize = 1024;

/// Misses in a row after which the kept head gives way to the one just
/// written: a connection that alternates between answers keeps none of
/// them for long, and one that moved on to another constant answer keeps
/// that one.
const GIVE_WAY_AFTER: u8 = 32;

/// One connection's heads.
#[derive(Default)]
pub(crate) struct Heads {
    /// Where heads are written: each head is split off and sent, and the
    /// space is reused once the heads sent from it are dropped, so an
    /// answer's head costs no allocation.
    buf: BytesMut,
    key: Option<Key>,
    /// The `Date` text the kept head carries.
    date: Vec<u8>,
    /// The head, in an allocation of its own (the connection's head buffer
    /// is reused once the heads written in it are sent).
    head: Bytes,
    misses: u8,
    /// Heads given without being written.
    #[cfg(test)]
    hits: u64,
}

impl Heads {
    /// A head written afresh, not kept (a refusal's, before the connection
    /// closes).
    pub(crate) fn write(&mut self, i: Inputs<'_>) -> Bytes {
        self.buf.reserve(HEAD_ROOM);
        write_head(&mut self.buf, i.resp, i.length, i.date, i.close, i.version);
        self.buf.split().freeze()
    }

    /// The head of an answer whose body is `body`: the kept one when every
    /// input is the same, else written afresh and, unless the kept one
    /// still holds its place, kept.
    pub(crate) fn head(&mut self, body: &[u8], i: Inputs<'_>) -> Bytes {
        let body = (body.as_ptr() as usize, body.len());
        let same = self.key.as_ref().is_some_and(|k| k.matches(body, &i));
        if same && self.date == i.date {
            self.misses = 0;
            #[cfg(test)]
            {
                self.hits += 1;
            }
            return self.head.clone();
        }
        let head = self.write(i);
        if i.close {
            // The connection's last answer: nothing to keep it for.
            return head;
        }
        if same || self.key.is_none() || self.misses + 1 >= GIVE_WAY_AFTER {
            // The same answer in a new second, the first answer, or one
            // that took the place of an answer no longer asked for.
            if !same {
                self.key = Some(Key::of(body, &i));
            }
            self.date.clear();
            self.date.extend_from_slice(i.date);
            self.head = Bytes::copy_from_slice(&head);
            self.misses = 0;
        } else {
            self.misses += 1;
        }
        head
    }

    /// How many heads were given without being written.
    #[cfg(test)]
    pub(crate) fn hits(&self) -> u64 {
        self.hits
    }
}

#[cfg(test)]
mod tests;
