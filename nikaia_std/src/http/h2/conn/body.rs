//! Request bodies on a connection (`spec/http2.md`, "Request bodies"):
//! DATA frames, how each stream's body is taken once the backend has
//! decided from its head ([`Core::take_body`]), and the receive windows.
//!
//! Until it decides, a body waits in the stream's initial window (65 535
//! octets, as every whole or unwanted body keeps). A whole body is
//! gathered here up to its limit, credit returned as it arrives. A
//! streamed body is handed over a frame at a time ([`Event::Data`]) and
//! credited only as the backend says its sink took it ([`Core::consumed`]):
//! its window is what may be held for it, 256 KiB at first, doubled while
//! it limits the rate (one round trip's reads filling half of it), up to
//! 8 MiB — all of a connection's within 16 MiB (past it a stream keeps
//! 65 535). The connection's window grows by each streamed body's window
//! and shrinks back when it ends.

use super::super::frame::{self, flag, ErrorCode, Header, DEFAULT_WINDOW};
use super::{Core, Event, Fatal, Intake, Recv, Refused, CREDIT_STEP};
use crate::http::request::reject;
use bytes::Bytes;
use std::time::{Duration, Instant};

/// A streamed body's window at first: what may arrive for it before its
/// sink took any.
pub(crate) const STREAM_WINDOW: u32 = 256 << 10;
/// The most a streamed body's window grows to.
const STREAM_WINDOW_MAX: u32 = 8 << 20;
/// The most all of a connection's streamed bodies' windows add up to: a
/// window opens to [`STREAM_WINDOW`] or grows only within it.
const WINDOWS_MAX: u64 = 16 << 20;
/// Every stream's window before its body is decided, and a streamed
/// body's past [`WINDOWS_MAX`].
const FIRST_WINDOW: u32 = DEFAULT_WINDOW as u32;
/// The shortest round trip a window grows by (loopback's is shorter than
/// a clock's step).
const RTT_FLOOR: Duration = Duration::from_micros(200);

/// Where a stream's body stands.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Taking {
    /// No body follows the head, or the head went out as a request.
    None,
    /// The backend has the head and has not said how (what comes waits in
    /// the stream's initial window).
    Undecided,
    Whole {
        limit: Option<u64>,
    },
    Stream(Window),
    /// Dropped and credited; `left`: what may still come so.
    Drain {
        left: u64,
    },
    Discard,
}

/// A streamed body's receive window.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Window {
    /// What the client may have in flight or held for the sink.
    size: u32,
    /// What the connection's window grew by for it.
    granted: u32,
    /// The current round trip's reads: since when, and how much.
    epoch: Instant,
    taken: u64,
}

impl Core {
    pub(super) fn data_frame(&mut self, h: Header, p: Bytes, now: Instant) -> Result<(), Fatal> {
        if h.stream == 0 {
            return Err((ErrorCode::Protocol, "DATA on stream 0"));
        }
        let range = frame::unpad(&h, &p).ok_or((ErrorCode::Protocol, "DATA padding too long"))?;
        // Flow control counts the whole payload, padding included (§6.9.1).
        let len = p.len() as u32;
        self.credit_connection(len);
        let end = h.has(flag::END_STREAM);
        if range.is_empty() && !end {
            self.spend(now)?;
        }
        let Some(i) = self.position(h.stream) else {
            if self.reset_by_us.contains(&h.stream) {
                return Ok(());
            }
            if self.is_idle(h.stream) {
                return Err((ErrorCode::Protocol, "DATA on an idle stream"));
            }
            return self.stream_error(h.stream, ErrorCode::StreamClosed);
        };
        let s = &mut self.streams[i];
        if s.recv == Recv::Closed {
            return self.stream_error(h.stream, ErrorCode::StreamClosed);
        }
        s.recv_window -= i64::from(len);
        if s.recv_window < 0 {
            return self.stream_error(h.stream, ErrorCode::FlowControl);
        }
        let data = p.slice(range);
        s.received += data.len() as u64;
        // More than `content-length` said, or its end before that much: a
        // malformed request (§8.1.1), found before the body's end reaches
        // anyone (a sink told of the end names its file).
        if s.declared
            .is_some_and(|n| s.received > n || (end && s.received != n))
        {
            return self.stream_error(h.stream, ErrorCode::Protocol);
        }
        // Padding is credited back at once: no one holds it.
        let padding = len - data.len() as u32;
        match &mut s.taking {
            Taking::Undecided => {
                s.body.extend_from_slice(&data);
                self.credit_stream(i, padding, end);
            }
            Taking::Whole { limit } => {
                s.body.extend_from_slice(&data);
                if limit.is_some_and(|l| s.body.len() as u64 > l) {
                    self.too_large(i);
                } else {
                    // The body is still wanted: the client may send more.
                    self.credit_stream(i, len, end);
                }
            }
            Taking::Stream(_) => {
                self.credit_stream(i, padding, end);
                if !data.is_empty() || end {
                    self.events.push_back(Event::Data {
                        stream: h.stream,
                        data,
                        end,
                    });
                }
            }
            Taking::Drain { left } => {
                match left.checked_sub(data.len() as u64) {
                    Some(rest) => {
                        *left = rest;
                        self.credit_stream(i, len, end);
                    }
                    // Past the bound: no more credit, and the stream goes
                    // once its answer is out (now, if it is).
                    None => {
                        s.taking = Taking::Discard;
                        if s.send == super::Send::Done && !end {
                            self.reset_stream(h.stream, ErrorCode::NoError);
                            return Ok(());
                        }
                    }
                }
            }
            Taking::None | Taking::Discard => {}
        }
        if end {
            self.end_of_request(i)?;
        }
        Ok(())
    }

    /// A whole body grew past its limit: 413, and the rest is dropped.
    fn too_large(&mut self, i: usize) {
        let s = &mut self.streams[i];
        s.taking = Taking::Discard;
        s.body = Vec::new();
        self.events.push_back(Event::Request {
            stream: s.id,
            request: Err(Refused {
                reject: reject(413, "request body larger than allowed"),
                reset: false,
            }),
        });
    }

    /// The client's END_STREAM (on DATA or trailers): the request is
    /// complete.
    pub(super) fn end_of_request(&mut self, i: usize) -> Result<(), Fatal> {
        let ended_by_data = self.ended_by_data(self.streams[i].id);
        let s = &mut self.streams[i];
        s.recv = Recv::Closed;
        let id = s.id;
        if s.declared.is_some_and(|n| n != s.received) {
            return self.stream_error(id, ErrorCode::Protocol);
        }
        match &s.taking {
            Taking::Whole { .. } => {
                let body = Bytes::from(std::mem::take(&mut s.body));
                self.events.push_back(Event::Body { stream: id, body });
            }
            // An END_STREAM on trailers: the end of a streamed body.
            Taking::Stream(_) if !ended_by_data => {
                self.events.push_back(Event::Data {
                    stream: id,
                    data: Bytes::new(),
                    end: true,
                });
            }
            _ => {}
        }
        self.close_window(i);
        self.retire(i);
        Ok(())
    }

    /// Whether the last event is the DATA that ended `stream`.
    fn ended_by_data(&self, stream: u32) -> bool {
        matches!(self.events.back(), Some(Event::Data { stream: s, end: true, .. }) if *s == stream)
    }

    /// The backend decided from its head how `stream`'s body is taken;
    /// what arrived meanwhile is handed on (or dropped, or refused).
    pub(crate) fn take_body(&mut self, stream: u32, intake: Intake, now: Instant) {
        let Some(i) = self.position(stream) else {
            return;
        };
        let s = &mut self.streams[i];
        if s.taking != Taking::Undecided {
            return;
        }
        let held = std::mem::take(&mut s.body);
        let ended = s.recv == Recv::Closed;
        match intake {
            Intake::Discard => s.taking = Taking::Discard,
            Intake::Drain { max } => match max.checked_sub(held.len() as u64) {
                Some(left) => {
                    s.taking = Taking::Drain { left };
                    if !ended {
                        // What waited is credited now.
                        self.credit_stream(i, held.len() as u32, false);
                    }
                }
                None => s.taking = Taking::Discard,
            },
            Intake::Whole { limit } => {
                s.taking = Taking::Whole { limit };
                let over = limit.is_some_and(|l| held.len() as u64 > l);
                let len = held.len() as u32;
                s.body = held;
                if over {
                    self.too_large(i);
                } else if ended {
                    let body = Bytes::from(std::mem::take(&mut self.streams[i].body));
                    self.events.push_back(Event::Body { stream, body });
                } else {
                    // What waited is credited now.
                    self.credit_stream(i, len, false);
                }
            }
            Intake::Stream if ended => {
                s.taking = Taking::None;
                self.events.push_back(Event::Data {
                    stream,
                    data: Bytes::from(held),
                    end: true,
                });
            }
            Intake::Stream => {
                self.open_window(i, held.len() as u64, now);
                if !held.is_empty() {
                    self.events.push_back(Event::Data {
                        stream,
                        data: Bytes::from(held),
                        end: false,
                    });
                }
            }
        }
    }

    /// The backend reads no more of `stream`'s body (it answered without
    /// it: a limit, a clock, a failed sink): what comes is dropped, and the
    /// stream is reset once its answer is out.
    pub(crate) fn stop_body(&mut self, stream: u32) {
        if let Some(i) = self.position(stream) {
            self.close_window(i);
            let s = &mut self.streams[i];
            s.taking = Taking::Discard;
            s.body = Vec::new();
        }
    }

    /// A streamed body answered before it all came: what still comes of
    /// it is let arrive and dropped, up to `max` octets (past them, or if
    /// it is not streaming, as [`Core::stop_body`]: the stream goes once
    /// its answer is out).
    pub(crate) fn drain_body(&mut self, stream: u32, max: u64) {
        let Some(i) = self.position(stream) else {
            return;
        };
        if !matches!(self.streams[i].taking, Taking::Stream(_))
            || self.streams[i].recv != Recv::Open
        {
            return self.stop_body(stream);
        }
        self.close_window(i);
        let s = &mut self.streams[i];
        s.taking = Taking::Drain { left: max };
        s.body = Vec::new();
    }

    /// A streamed body's sink took `n` octets of `stream`: its credit goes
    /// back to the client (and its window grows if it limits the rate).
    pub(crate) fn consumed(&mut self, stream: u32, n: usize, now: Instant) {
        let rtt = self.rtt.unwrap_or(RTT_FLOOR).max(RTT_FLOOR);
        let windows: u64 = self.streaming_windows();
        let Some(i) = self.position(stream) else {
            return;
        };
        let s = &mut self.streams[i];
        let (Taking::Stream(w), Recv::Open) = (&mut s.taking, &s.recv) else {
            return;
        };
        w.taken += n as u64;
        let mut grant = n as u64;
        let elapsed = now.saturating_duration_since(w.epoch);
        if elapsed >= rtt {
            // Octets per round trip: near the window, the window is what
            // holds the client back.
            let per_rtt = w.taken as f64 * rtt.as_secs_f64() / elapsed.as_secs_f64();
            let grow = w.size.min(STREAM_WINDOW_MAX - w.size);
            if per_rtt * 2.0 >= f64::from(w.size)
                && grow > 0
                && windows + u64::from(grow) <= WINDOWS_MAX
            {
                w.size += grow;
                w.granted += grow;
                self.conn_grown += u64::from(grow);
                grant += u64::from(grow);
                frame::put_window_update(&mut self.out, 0, grow);
            }
            w.epoch = now;
            w.taken = 0;
        }
        s.recv_owed = s.recv_owed.saturating_add(grant as u32);
        let step = (w.size / 4).max(CREDIT_STEP);
        if s.recv_owed >= step {
            let owed = std::mem::take(&mut s.recv_owed);
            s.recv_window += i64::from(owed);
            frame::put_window_update(&mut self.out, stream, owed);
        }
    }

    /// What all streamed bodies' windows add up to.
    fn streaming_windows(&self) -> u64 {
        self.streams
            .iter()
            .map(|s| match &s.taking {
                Taking::Stream(w) => u64::from(w.size),
                _ => 0,
            })
            .sum()
    }

    /// Opens stream `i`'s window for a streamed body, `held` octets of it
    /// already here, and grows the connection's by as much.
    fn open_window(&mut self, i: usize, held: u64, now: Instant) {
        // Past the connection's budget, a stream keeps its first window:
        // what paused sinks may hold on one connection stays bounded.
        let full = self.streaming_windows() + u64::from(STREAM_WINDOW) > WINDOWS_MAX;
        let size = if full { FIRST_WINDOW } else { STREAM_WINDOW };
        let s = &mut self.streams[i];
        let room = i64::from(size) - held as i64;
        let grant = (room - s.recv_window).max(0);
        if grant > 0 {
            s.recv_window += grant;
            frame::put_window_update(&mut self.out, s.id, grant as u32);
        }
        let granted = if full { 0 } else { size };
        s.taking = Taking::Stream(Window {
            size,
            granted,
            epoch: now,
            taken: 0,
        });
        if granted > 0 {
            self.conn_grown += u64::from(granted);
            frame::put_window_update(&mut self.out, 0, granted);
        }
    }

    /// A streamed body ended (or will not be read): what the connection's
    /// window grew by for it is taken back from the credit to come.
    pub(super) fn close_window(&mut self, i: usize) {
        if let Taking::Stream(w) = &mut self.streams[i].taking {
            self.conn_withheld += u64::from(std::mem::take(&mut w.granted));
        }
    }

    /// Returns `len` octets of credit on stream `i` once a quarter of its
    /// window is owed (not after its END_STREAM).
    fn credit_stream(&mut self, i: usize, len: u32, end: bool) {
        let s = &mut self.streams[i];
        s.recv_owed += len;
        let step = match &s.taking {
            Taking::Stream(w) => (w.size / 4).max(CREDIT_STEP),
            _ => CREDIT_STEP,
        };
        if s.recv_owed >= step && !end {
            let owed = std::mem::take(&mut s.recv_owed);
            s.recv_window += i64::from(owed);
            frame::put_window_update(&mut self.out, s.id, owed);
        }
    }

    /// Returns the connection's credit for what arrived, less what the
    /// ended streamed bodies' windows had added.
    pub(super) fn credit_connection(&mut self, len: u32) {
        self.conn_owed += len;
        // A quarter of the window at a time: 16 KiB of the first 65 535,
        // more while streamed bodies have grown it.
        let step = ((65_535 + self.conn_grown) / 4).max(u64::from(CREDIT_STEP));
        if u64::from(self.conn_owed) >= step {
            let owed = u64::from(std::mem::take(&mut self.conn_owed));
            let kept = owed.min(self.conn_withheld);
            self.conn_withheld -= kept;
            self.conn_grown -= kept;
            if owed > kept {
                frame::put_window_update(&mut self.out, 0, (owed - kept) as u32);
            }
        }
    }
}
