//! One request stream's frames, as they arrive in pieces (RFC 9114 §4.1):
//! HEADERS first, then DATA, then at most one trailing HEADERS, then the
//! stream's end. Reserved and unknown frame types are skipped wherever
//! they come; frames of the control stream, PUSH_PROMISE and HTTP/2's
//! types are H3_FRAME_UNEXPECTED. DATA's payload is handed on as slices of
//! what arrived; only a HEADERS payload is gathered, up to a bound.

use crate::http::h3::frame::{kind, Code, HeadBuf};
use bytes::{Buf, Bytes, BytesMut};

/// What a request stream's octets held, in order.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// The request's encoded field section (the first HEADERS payload).
    Headers(Bytes),
    /// The trailing HEADERS payload.
    Trailers(Bytes),
    /// Part of a DATA frame's payload (never empty).
    Data(Bytes),
    /// The stream ended cleanly after a whole frame.
    End,
    /// A HEADERS payload longer than the bound: it is skipped, not read.
    TooLarge,
}

/// Why a request stream cannot go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The whole connection closes with this code (§8.1).
    Connection(Code, &'static str),
    /// Only this stream is reset (and its reading stopped) with this code.
    Stream(Code, &'static str),
}

/// Where in the stream the reader is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// No HEADERS yet.
    Head,
    /// After the HEADERS: DATA or trailers may come.
    Body,
    /// After the trailers: only unknown frames and the end.
    Trailed,
    /// The end was read, or a fault stopped the reading.
    Over,
}

/// What the current frame's payload is being read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Payload {
    /// Between frames: a head is being read.
    None,
    /// DATA: this many octets still to hand on.
    Data(u64),
    /// HEADERS (first or trailing): gathered whole, this long.
    Fields { len: usize, trailers: bool },
    /// An unknown, reserved or too-large frame: this many to skip.
    Skip(u64),
}

/// A request stream's reader.
#[derive(Debug)]
pub(crate) struct Reader {
    part: Part,
    payload: Payload,
    /// A frame head split across pieces.
    head: HeadBuf,
    /// A HEADERS payload gathering.
    held: BytesMut,
    /// The largest HEADERS payload gathered; a longer one is [`Piece::TooLarge`].
    max_fields: usize,
}

impl Reader {
    pub(crate) fn new(max_fields: usize) -> Reader {
        Reader {
            part: Part::Head,
            payload: Payload::None,
            head: HeadBuf::default(),
            held: BytesMut::new(),
            max_fields,
        }
    }

    /// Whether the stream's request HEADERS has been read.
    pub(crate) fn has_head(&self) -> bool {
        self.part != Part::Head
    }

    /// Reads the stream's next octets (`fin`: the stream ends after them),
    /// appending what they hold to `out`. After a fault nothing more is
    /// read.
    pub(crate) fn read(
        &mut self,
        mut data: Bytes,
        fin: bool,
        out: &mut Vec<Piece>,
    ) -> Result<(), Fault> {
        if self.part == Part::Over {
            return Ok(());
        }
        let result = self
            .frames(&mut data, out)
            .and_then(|()| if fin { self.end(out) } else { Ok(()) });
        if result.is_err() {
            self.part = Part::Over;
            self.held = BytesMut::new();
        }
        result
    }

    fn frames(&mut self, data: &mut Bytes, out: &mut Vec<Piece>) -> Result<(), Fault> {
        loop {
            match self.payload {
                Payload::None => {
                    if data.is_empty() {
                        return Ok(());
                    }
                    let (head, took) = self.head.feed(data);
                    data.advance(took);
                    if let Some(head) = head {
                        self.start(head.kind, head.len, out)?;
                    }
                }
                Payload::Data(left) | Payload::Skip(left) => {
                    if left == 0 {
                        self.payload = Payload::None;
                        continue;
                    }
                    if data.is_empty() {
                        return Ok(());
                    }
                    let n = data.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let piece = data.split_to(n);
                    let left = left - n as u64;
                    self.payload = match self.payload {
                        Payload::Data(_) => {
                            out.push(Piece::Data(piece));
                            Payload::Data(left)
                        }
                        _ => Payload::Skip(left),
                    };
                }
                Payload::Fields { len, trailers } => {
                    let n = data.len().min(len - self.held.len());
                    self.held.extend_from_slice(&data[..n]);
                    data.advance(n);
                    if self.held.len() < len {
                        return Ok(());
                    }
                    let section = self.held.split().freeze();
                    out.push(if trailers {
                        Piece::Trailers(section)
                    } else {
                        Piece::Headers(section)
                    });
                    self.payload = Payload::None;
                }
            }
        }
    }

    /// A frame of `kind` with a `len`-octet payload begins.
    fn start(&mut self, kind: u64, len: u64, out: &mut Vec<Piece>) -> Result<(), Fault> {
        let unexpected = |why| Err(Fault::Connection(Code::FrameUnexpected, why));
        self.payload = match kind {
            kind::HEADERS => {
                let trailers = match self.part {
                    Part::Head => false,
                    Part::Body => true,
                    _ => return unexpected("a HEADERS after the trailers"),
                };
                self.part = if trailers { Part::Trailed } else { Part::Body };
                match usize::try_from(len) {
                    Ok(len) if len <= self.max_fields => Payload::Fields { len, trailers },
                    _ => {
                        out.push(Piece::TooLarge);
                        Payload::Skip(len)
                    }
                }
            }
            kind::DATA => match self.part {
                Part::Head => return unexpected("DATA before HEADERS"),
                Part::Trailed => return unexpected("DATA after the trailers"),
                _ => Payload::Data(len),
            },
            kind::CANCEL_PUSH | kind::SETTINGS | kind::GOAWAY | kind::MAX_PUSH_ID => {
                return unexpected("a control frame on a request stream")
            }
            kind::PUSH_PROMISE => return unexpected("PUSH_PROMISE from a client"),
            k if kind::http2_only(k) => return unexpected("an HTTP/2 frame type"),
            // Reserved (0x1f·N + 0x21) and unknown types: skipped (§9).
            _ => Payload::Skip(len),
        };
        Ok(())
    }

    /// The stream ended after what was read.
    fn end(&mut self, out: &mut Vec<Piece>) -> Result<(), Fault> {
        let mid_frame = self.head.partial()
            || !self.held.is_empty()
            || matches!(self.payload, Payload::Data(n) | Payload::Skip(n) if n > 0)
            || matches!(self.payload, Payload::Fields { .. });
        if mid_frame {
            return Err(Fault::Connection(
                Code::FrameError,
                "a frame cut short by the stream's end",
            ));
        }
        if self.part == Part::Head {
            return Err(Fault::Stream(
                Code::RequestIncomplete,
                "the stream ended before its HEADERS",
            ));
        }
        self.part = Part::Over;
        out.push(Piece::End);
        Ok(())
    }
}
