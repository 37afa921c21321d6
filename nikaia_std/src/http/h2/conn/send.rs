//! What the server writes on a connection: response HEADERS, the choice
//! of the stream whose DATA goes next (RFC 9218 urgency, round-robin among
//! equals, within flow control), the DATA frame headers, the resets the
//! backend asks for, and the graceful GOAWAY. The reading side is
//! `conn.rs`.

use super::super::frame::{self, flag, kind, ErrorCode, HEADER_LEN, MAX_WINDOW};
use super::super::hpack::Encoder;
use super::{Core, Phase, Send, Stream, CALM_BURST, SHUTDOWN_PING, SHUTDOWN_RTT};
use std::time::Instant;

impl Core {
    /// Writes the response HEADERS of `stream` (with CONTINUATION past the
    /// client's frame size), the fields written by `encode`. `end`: no body
    /// follows. `false` when the stream is gone (reset meanwhile).
    pub(crate) fn respond(
        &mut self,
        stream: u32,
        end: bool,
        encode: impl FnOnce(&mut Encoder, &mut Vec<u8>),
    ) -> bool {
        let Some(i) = self.position(stream) else {
            return false;
        };
        let mut block = Vec::with_capacity(128);
        self.encoder.begin(&mut block);
        encode(&mut self.encoder, &mut block);
        let max = self.peer_max_frame;
        let mut chunks = block.chunks(max).peekable();
        let mut first = true;
        while let Some(chunk) = chunks.next() {
            let last = chunks.peek().is_none();
            let (kind, mut flags) = match first {
                true => (kind::HEADERS, if end { flag::END_STREAM } else { 0 }),
                false => (kind::CONTINUATION, 0),
            };
            if last {
                flags |= flag::END_HEADERS;
            }
            frame::put_header(&mut self.out, chunk.len(), kind, flags, stream);
            self.out.extend_from_slice(chunk);
            first = false;
        }
        let s = &mut self.streams[i];
        s.send = if end { Send::Done } else { Send::Body };
        if end {
            self.retire(i);
        }
        true
    }

    /// Writes an interim response (`100 Continue`) on `stream`, before its
    /// answer.
    pub(crate) fn informational(&mut self, stream: u32, status: u16) {
        let Some(i) = self.position(stream) else {
            return;
        };
        if self.streams[i].send != Send::Idle {
            return;
        }
        let mut block = Vec::with_capacity(8);
        self.encoder.begin(&mut block);
        self.encoder.status(status, &mut block);
        frame::put_header(
            &mut self.out,
            block.len(),
            kind::HEADERS,
            flag::END_HEADERS,
            stream,
        );
        self.out.extend_from_slice(&block);
    }

    /// Whether the backend has body bytes for `stream` now.
    pub(crate) fn set_ready(&mut self, stream: u32, ready: bool) {
        if let Some(s) = self.stream_mut(stream) {
            s.ready = ready;
        }
    }

    /// The stream whose body goes next, and the most payload its next DATA
    /// frame may carry (at most `max`): the most urgent streams first
    /// (RFC 9218), round-robin among equals, only those with credit.
    pub(crate) fn next_send(&mut self, max: usize) -> Option<(u32, usize)> {
        if self.send_window <= 0 || self.phase == Phase::Failed {
            return None;
        }
        let sendable = |s: &&Stream| s.ready && s.send == Send::Body && s.send_window > 0;
        let urgency = self
            .streams
            .iter()
            .filter(sendable)
            .map(|s| s.urgency)
            .min()?;
        let after = self.served[usize::from(urgency)];
        let same = || {
            self.streams
                .iter()
                .filter(sendable)
                .filter(|s| s.urgency == urgency)
        };
        let s = same()
            .filter(|s| s.id > after)
            .min_by_key(|s| s.id)
            .or_else(|| same().min_by_key(|s| s.id))?;
        let (id, allowed) = (s.id, s.send_window.min(self.send_window) as usize);
        self.served[usize::from(urgency)] = id;
        Some((id, allowed.min(self.peer_max_frame).min(max)))
    }

    /// The header of a DATA frame of `len` octets on `stream` (within what
    /// [`Core::next_send`] allowed); `end`: the body's last frame.
    pub(crate) fn data(&mut self, stream: u32, len: usize, end: bool) -> [u8; HEADER_LEN] {
        self.send_window -= len as i64;
        self.calm = (self.calm + 1).min(CALM_BURST);
        if let Some(i) = self.position(stream) {
            let s = &mut self.streams[i];
            s.send_window -= len as i64;
            if end {
                s.send = Send::Done;
                self.retire(i);
            }
        }
        let flags = if end { flag::END_STREAM } else { 0 };
        frame::header(len, kind::DATA, flags, stream)
    }

    /// A malformed request's answer is out (without END_STREAM): its
    /// stream is reset with PROTOCOL_ERROR, spent from the budget.
    pub(crate) fn malformed(&mut self, stream: u32) {
        if self.position(stream).is_some() {
            self.reset_stream(stream, ErrorCode::Protocol);
            if self.spend_reset().is_err() {
                self.fail((ErrorCode::EnhanceYourCalm, "too many streams reset"));
            }
        }
    }

    /// The backend gives up on a stream (its client stopped taking it, its
    /// file failed): reset with `code`, not spent from the budget.
    pub(crate) fn reset(&mut self, stream: u32, code: ErrorCode) {
        if self.position(stream).is_some() {
            self.reset_stream(stream, code);
        }
    }

    /// Begins the graceful shutdown (§6.8): a GOAWAY naming the highest
    /// stream id and a PING; the final GOAWAY, naming the last stream
    /// really opened, follows its answer (or [`SHUTDOWN_RTT`]).
    pub(crate) fn shutdown(&mut self, now: Instant) {
        if self.drain.since.is_some() || self.drain.last.is_some() || self.phase == Phase::Failed {
            return;
        }
        frame::put_goaway(&mut self.out, MAX_WINDOW as u32, ErrorCode::NoError);
        frame::put_ping(&mut self.out, SHUTDOWN_PING, false);
        self.drain.since = Some(now);
    }

    /// The graceful shutdown's wait ran out: the final GOAWAY.
    pub(crate) fn tick(&mut self, now: Instant) {
        if self.drain.last.is_none()
            && self
                .drain
                .since
                .is_some_and(|t| now.saturating_duration_since(t) >= SHUTDOWN_RTT)
        {
            self.final_goaway();
        }
    }

    pub(super) fn final_goaway(&mut self) {
        if self.drain.last.is_none() {
            frame::put_goaway(&mut self.out, self.last_id, ErrorCode::NoError);
            self.tally.goaway = Some(ErrorCode::NoError);
            self.drain.last = Some(self.last_id);
        }
    }
}
