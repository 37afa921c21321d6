//! A request stream's body once its head went to the unit: held until the
//! unit decides ([`Core::take_body`]), then gathered whole, handed on piece
//! by piece, drained or discarded, and checked against its
//! `content-length` at every piece and at the end.

use super::{Code, Core, Event, Fatal};
use crate::http::body::Intake;
use bytes::{Bytes, BytesMut};

/// How a stream's body is being taken.
#[derive(Debug)]
pub(super) enum Taking {
    /// The request went out as [`Event::Head`]: what arrives waits here,
    /// gathered into one buffer (one handle per DATA frame would cost more
    /// than the bytes), and whether the stream ended.
    Undecided(BytesMut, bool),
    Whole {
        limit: Option<u64>,
        body: Vec<u8>,
    },
    Stream,
    /// Dropped as it comes, up to this many more octets.
    Drain(u64),
    /// Not read: the peer was asked to stop sending.
    Discard,
    /// Nothing more is read (no body, or the body is over).
    Done,
}

impl Core {
    /// A DATA payload's piece.
    pub(super) fn data(&mut self, id: u64, data: Bytes) -> Result<(), Fatal> {
        let stream = self.streams.get_mut(&id).expect("a stream being read");
        stream.received += data.len() as u64;
        if stream.declared.is_some_and(|d| stream.received > d) {
            return self.stream_error(id, Code::MessageError);
        }
        match &mut stream.taking {
            Taking::Undecided(held, _) => held.extend_from_slice(&data),
            Taking::Whole { limit, body } => {
                if limit.is_some_and(|l| (body.len() + data.len()) as u64 > l) {
                    stream.taking = Taking::Discard;
                    self.events.push_back(Event::TooLarge { stream: id });
                    self.stop(id, Code::NoError);
                } else {
                    body.extend_from_slice(&data);
                }
            }
            Taking::Stream => self.events.push_back(Event::Data {
                stream: id,
                data,
                end: false,
            }),
            Taking::Drain(left) => match left.checked_sub(data.len() as u64) {
                Some(rest) => *left = rest,
                None => {
                    stream.taking = Taking::Discard;
                    self.stop(id, Code::NoError);
                }
            },
            Taking::Discard | Taking::Done => {}
        }
        Ok(())
    }

    /// The request stream's sending side ended after whole frames.
    pub(super) fn end(&mut self, id: u64) -> Result<(), Fatal> {
        let stream = self.streams.get_mut(&id).expect("a stream being read");
        if stream.declared.is_some_and(|d| d != stream.received) {
            return self.stream_error(id, Code::MessageError);
        }
        match std::mem::replace(&mut stream.taking, Taking::Done) {
            Taking::Undecided(held, _) => stream.taking = Taking::Undecided(held, true),
            Taking::Whole { body, .. } => self.events.push_back(Event::Body {
                stream: id,
                body: Bytes::from(body),
            }),
            Taking::Stream => self.events.push_back(Event::Data {
                stream: id,
                data: Bytes::new(),
                end: true,
            }),
            Taking::Drain(_) | Taking::Discard | Taking::Done => {}
        }
        Ok(())
    }

    /// The unit will not read the rest of a body it took whole or
    /// streamed (its answer went before it): let it arrive and drop it, up
    /// to `drain` more octets, or with `None` ask the client to stop
    /// sending it.
    pub(crate) fn abandon_body(&mut self, id: u64, drain: Option<u64>) {
        let Some(stream) = self.streams.get_mut(&id).filter(|s| !s.over) else {
            return;
        };
        if !matches!(stream.taking, Taking::Whole { .. } | Taking::Stream) {
            return;
        }
        match drain {
            Some(max) => stream.taking = Taking::Drain(max),
            None => {
                stream.taking = Taking::Discard;
                self.stop(id, Code::NoError);
            }
        }
    }

    /// The unit decided how the body of a request handed as
    /// [`Event::Head`] is taken; what already arrived is taken so now.
    pub(crate) fn take_body(&mut self, id: u64, intake: Intake) -> Result<(), Fatal> {
        let Some(stream) = self.streams.get_mut(&id).filter(|s| !s.over) else {
            return Ok(());
        };
        let Taking::Undecided(held, ended) = &mut stream.taking else {
            return Ok(());
        };
        let (held, ended) = (std::mem::take(held), *ended);
        stream.received -= held.len() as u64;
        stream.taking = match intake {
            Intake::Whole { limit } => Taking::Whole {
                limit,
                body: Vec::new(),
            },
            Intake::Stream => Taking::Stream,
            Intake::Drain { max } => Taking::Drain(max),
            Intake::Discard => Taking::Discard,
        };
        if intake == Intake::Discard {
            self.stop(id, Code::NoError);
        }
        if !held.is_empty() {
            self.data(id, held.freeze())?;
            if self.is_over(id) {
                return Ok(());
            }
        }
        if ended {
            self.end(id)?;
        }
        Ok(())
    }
}
