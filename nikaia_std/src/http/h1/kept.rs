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
use crate::http::kept_key::Slot;
use bytes::{Bytes, BytesMut};

/// What the buffer holds at least before a head is written: most heads
/// fit, so a connection's heads share one allocation.
const HEAD_ROOM: usize = 1024;

/// One connection's heads.
#[derive(Default)]
pub(crate) struct Heads {
    /// Where heads are written: each head is split off and sent, and the
    /// space is reused once the heads sent from it are dropped, so an
    /// answer's head costs no allocation.
    buf: BytesMut,
    /// Which answer's head is kept.
    slot: Slot,
    /// The `Date` text the kept head carries.
    date: Vec<u8>,
    /// The head, in an allocation of its own (the connection's head buffer
    /// is reused once the heads written in it are sent).
    head: Bytes,
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
        let same = self.slot.holds(body, &i);
        if same && self.date == i.date {
            self.slot.given();
            return self.head.clone();
        }
        let head = self.write(i);
        // The connection's last answer: nothing to keep it for.
        if !i.close && self.slot.take(same, body, &i) {
            self.date.clear();
            self.date.extend_from_slice(i.date);
            self.head = Bytes::copy_from_slice(&head);
        }
        head
    }

    /// How many heads were given without being written.
    #[cfg(test)]
    pub(crate) fn hits(&self) -> u64 {
        self.slot.hits()
    }
}

#[cfg(test)]
mod tests;
