//! A produced body in an HTTP/1.1 send queue (`spec/http.md`, "Produced
//! bodies"): pulled only when everything before it was written — so what
//! a client that does not read holds is one piece, at most
//! [`PRODUCE_ROOM`] — framed as chunks (or sent as they are with a
//! length, or up to the connection's end on HTTP/1.0), and ended with the
//! last chunk.

use super::{Chunk, Flushed, Out, SendError};
use crate::http::body::Resume;
use crate::http::produce::{Next, Sending};
use bytes::Bytes;

/// The most a pull is offered: what a client that stops reading holds of
/// a produced body, beside the socket's own buffer.
pub(crate) const PRODUCE_ROOM: usize = 64 << 10;

/// A produced body waiting at its place in the queue.
#[derive(Debug)]
pub(crate) struct ProducedSend {
    pub sending: Box<Sending>,
    /// Framed as chunks (HTTP/1.1 without a length).
    pub chunked: bool,
}

impl std::fmt::Debug for Sending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sending")
            .field("length", &self.length)
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

impl Out {
    /// Queues a produced body after what is queued.
    pub(crate) fn push_produced(&mut self, sending: Box<Sending>, chunked: bool) {
        self.chunks
            .push_back(Chunk::Produced(Box::new(ProducedSend { sending, chunked })));
    }

    /// The produced body at the front of the queue (everything before it
    /// is written): its next bytes framed ahead of it, or how the flush
    /// stops — waiting for the producer, or failed.
    pub(super) fn produce(
        &mut self,
        make: &mut dyn FnMut() -> Resume,
    ) -> Result<Option<Flushed>, SendError> {
        let Some(Chunk::Produced(p)) = self.chunks.front_mut() else {
            return Ok(None);
        };
        let chunked = p.chunked;
        match p.sending.next(PRODUCE_ROOM, make) {
            Next::Bytes(b) => {
                let mut framed: Vec<Bytes> = Vec::with_capacity(3);
                if chunked {
                    framed.push(Bytes::from(format!("{:x}\r\n", b.len())));
                    framed.push(b);
                    framed.push(Bytes::from_static(b"\r\n"));
                } else {
                    framed.push(b);
                }
                for b in framed.into_iter().rev() {
                    self.queued += b.len();
                    self.chunks.push_front(Chunk::Mem(b));
                }
                Ok(None)
            }
            Next::Wait => Ok(Some(Flushed::Producing)),
            Next::End => {
                let sent = p.sending.sent;
                self.chunks.pop_front();
                // The answer's record says what was sent (its head could not).
                if let Some(Chunk::End(record)) = self.chunks.front_mut() {
                    record.bytes = sent;
                }
                if chunked {
                    let last = Bytes::from_static(b"0\r\n\r\n");
                    self.queued += last.len();
                    self.chunks.push_front(Chunk::Mem(last));
                }
                Ok(None)
            }
            Next::Fail(why) => Err(SendError::Produced(why)),
        }
    }

    /// Sets why a produced body still queued is cancelled when dropped.
    pub(crate) fn cancel_produced(&mut self, why: crate::http::Cancelled) {
        for c in &mut self.chunks {
            if let Chunk::Produced(p) = c {
                p.sending.why = why;
            }
        }
    }

    /// The server stops: a produced body without a length is ended where
    /// its protocol can end it — the last chunk goes out now, so the
    /// client sees a whole answer (an event stream's client reconnects);
    /// its producer is told it was cancelled. One with a length cannot be
    /// ended short: it is cancelled and the connection closes after what
    /// is queued. Whether one was ended so.
    pub(crate) fn end_produced(&mut self) -> bool {
        let Some(i) = self
            .chunks
            .iter()
            .position(|c| matches!(c, Chunk::Produced(_)))
        else {
            return false;
        };
        let Some(Chunk::Produced(mut p)) = self.chunks.remove(i) else {
            return false;
        };
        p.sending.why = crate::http::Cancelled::Stopping;
        if p.chunked {
            let last = Bytes::from_static(b"0\r\n\r\n");
            self.queued += last.len();
            self.chunks.insert(i, Chunk::Mem(last));
        }
        true
    }
}
