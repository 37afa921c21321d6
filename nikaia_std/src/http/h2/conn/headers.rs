//! Header blocks on a connection: HEADERS and CONTINUATION, decoded
//! always (the HPACK table must stay in step with the client's), then a
//! new stream's request — bodiless, refused, or with a body the backend
//! decides how to take — or a stream's trailers.

use super::super::frame::{self, flag, ErrorCode, Header, DEFAULT_WINDOW};
use super::super::hpack::Decoded;
use super::MAX_CONTINUATIONS;
use super::{dependency, Block, Core, Event, Fatal, Recv, Refused, Send, Stream, Taking};
use crate::http::fields::request::{Fields, Refusal, DEFAULT_URGENCY};
use crate::http::request::Version;
use std::time::Instant;

impl Core {
    pub(super) fn headers_frame(&mut self, h: Header, p: &[u8], now: Instant) -> Result<(), Fatal> {
        if h.stream == 0 {
            return Err((ErrorCode::Protocol, "HEADERS on stream 0"));
        }
        let range = frame::unpad(&h, p).ok_or((ErrorCode::Protocol, "HEADERS padding too long"))?;
        let mut fragment = &p[range];
        let mut self_dependent = false;
        if h.has(flag::PRIORITY) {
            if fragment.len() < 5 {
                return Err((ErrorCode::FrameSize, "HEADERS too short for its priority"));
            }
            self_dependent = dependency(fragment) == h.stream;
            fragment = &fragment[5..];
        }
        if fragment.is_empty() && !h.has(flag::END_HEADERS) {
            self.spend(now)?;
        }
        let block = Block {
            stream: h.stream,
            flags: h.flags,
            fragment: fragment.to_vec(),
            continuations: 0,
            self_dependent,
        };
        if h.has(flag::END_HEADERS) {
            self.header_block(block)
        } else {
            self.block = Some(block);
            Ok(())
        }
    }

    pub(super) fn continuation(&mut self, h: Header, p: &[u8], now: Instant) -> Result<(), Fatal> {
        let Some(mut b) = self.block.take() else {
            return Err((ErrorCode::Protocol, "CONTINUATION without a header block"));
        };
        b.continuations += 1;
        if b.continuations > MAX_CONTINUATIONS
            || b.fragment.len() + p.len() > 2 * self.limits.max_list
        {
            return Err((ErrorCode::EnhanceYourCalm, "a header block past its bounds"));
        }
        if p.is_empty() && !h.has(flag::END_HEADERS) {
            self.spend(now)?;
        }
        b.fragment.extend_from_slice(p);
        if h.has(flag::END_HEADERS) {
            self.header_block(b)
        } else {
            self.block = Some(b);
            Ok(())
        }
    }

    /// A complete header block: decoded always (the HPACK table must stay
    /// in step with the client's), then a request, trailers, or an error.
    fn header_block(&mut self, b: Block) -> Result<(), Fatal> {
        let id = b.stream;
        let end = b.flags & flag::END_STREAM != 0;
        let existing = self.position(id);
        let mut fields = match existing {
            Some(_) => Fields::trailers(Version::Http2),
            None => Fields::request(Version::Http2),
        };
        let decoded = self
            .decoder
            .decode(&b.fragment, self.limits.max_list, &mut |n, v| {
                fields.field(n, v)
            })
            .map_err(|_| (ErrorCode::Compression, "a header block HPACK cannot decode"))?;
        let too_large = matches!(decoded, Decoded::TooLarge);
        if let Some(i) = existing {
            // Trailers: they end the stream, and are not kept.
            let s = &self.streams[i];
            if s.recv == Recv::Closed {
                return self.stream_error(id, ErrorCode::StreamClosed);
            }
            if !end || fields.trailers_fault().is_some() || b.self_dependent {
                return self.stream_error(id, ErrorCode::Protocol);
            }
            return self.end_of_request(i);
        }
        if id.is_multiple_of(2) {
            return Err((
                ErrorCode::Protocol,
                "a client stream with an even identifier",
            ));
        }
        if id <= self.last_id {
            if self.reset_by_us.contains(&id) {
                return Ok(());
            }
            return match self.used.contains(id) {
                true => Err((ErrorCode::StreamClosed, "HEADERS on a closed stream")),
                false => Err((
                    ErrorCode::Protocol,
                    "a stream identifier below one already used",
                )),
            };
        }
        self.last_id = id;
        if self.drain.last.is_some_and(|last| id > last) || self.peer_gone {
            // After our final GOAWAY: not served, and not reset (§6.8);
            // what follows on it is ignored as on a stream we reset.
            self.remember_reset(id);
            return Ok(());
        }
        self.used.push(id);
        self.opened += 1;
        self.tally.streams += 1;
        if b.self_dependent {
            return self.stream_error(id, ErrorCode::Protocol);
        }
        let active = self.streams.iter().filter(|s| s.send != Send::Done).count();
        if active >= self.limits.max_streams as usize {
            return self.stream_error(id, ErrorCode::RefusedStream);
        }
        let request = match fields.finish(too_large) {
            Ok(parsed) => Ok(parsed),
            Err(Refusal::Answer(reject)) => Err(Refused {
                reject,
                reset: false,
            }),
            Err(Refusal::AnswerThenReset(reject)) => Err(Refused {
                reject,
                reset: true,
            }),
            Err(Refusal::Malformed(_)) => return self.stream_error(id, ErrorCode::Protocol),
        };
        let urgency = match &request {
            Ok(p) => p.urgency,
            Err(_) => DEFAULT_URGENCY,
        };
        let declared = request.as_ref().ok().and_then(|p| p.content_length);
        if end && declared.is_some_and(|n| n != 0) {
            // A content-length of more than nothing, and no body.
            return self.stream_error(id, ErrorCode::Protocol);
        }
        let taking = match (&request, end) {
            (_, true) | (Err(_), false) => Taking::None,
            (Ok(_), false) => Taking::Undecided,
        };
        let discard = request.is_err() && !end;
        self.streams.push(Stream {
            id,
            recv: if end { Recv::Closed } else { Recv::Open },
            send: Send::Idle,
            send_window: self.peer_initial_window,
            recv_window: DEFAULT_WINDOW,
            recv_owed: 0,
            urgency,
            ready: false,
            declared,
            received: 0,
            taking: if discard { Taking::Discard } else { taking },
            body: Vec::new(),
            handed: true,
        });
        // A request with no body, or refused from its head (whatever body
        // follows is dropped), is answered now; one whose body follows is
        // decided by the backend first.
        self.events.push_back(match (request, end) {
            (Ok(parsed), false) => Event::Head {
                stream: id,
                request: parsed,
            },
            (request, _) => Event::Request {
                stream: id,
                request,
            },
        });
        if self.opened >= self.limits.max_requests && self.drain.last.is_none() {
            // The request cap: this stream is the last one served.
            frame::put_goaway(&mut self.out, id, ErrorCode::NoError);
            self.tally.goaway = Some(ErrorCode::NoError);
            self.drain.last = Some(id);
        }
        Ok(())
    }
}
