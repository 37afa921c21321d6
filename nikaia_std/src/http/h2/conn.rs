//! The server side of one HTTP/2 connection, sans-IO (RFC 9113): bytes in
//! ([`Core::receive`]), requests out ([`Event`]), and the frames the server
//! writes — SETTINGS and their ACKs, PING answers, WINDOW_UPDATE credit,
//! RST_STREAM, GOAWAY, response HEADERS — gathered in one buffer
//! ([`Core::take_output`]). DATA frames are the backend's to fill: it asks
//! which stream may send how much ([`Core::next_send`]) and gets the frame
//! header back ([`Core::data`]), so a body travels as slices of the bytes
//! it already has.
//!
//! The limits and the flood answers are in `spec/http2.md`.

use super::frame::{self, flag, kind, setting, ErrorCode, Header, DEFAULT_MAX_FRAME};
use super::frame::{DEFAULT_WINDOW, HEADER_LEN, PREFACE};
use crate::http::fields::request::Parsed;

mod body;
mod control;
mod headers;
mod send;

use super::hpack::{Decoder, Encoder, DEFAULT_TABLE_SIZE};
pub(crate) use crate::http::body::Intake;
use crate::http::request::Reject;
use body::Taking;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use body::STREAM_WINDOW;
use bytes::{Buf, Bytes, BytesMut};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// What a connection allows; the defaults and their reasons are in
/// `spec/http2.md`, "Limits".
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_streams: u32,
    /// Streams one connection may open before it is asked to go away.
    pub max_requests: u32,
    /// The decoded header list (RFC 9113 §6.5.2), `max-header-bytes`.
    pub max_list: usize,
}

/// Resets one connection may cause or take (RFC 9113's RST_STREAM from the
/// client of a stream still being answered, and every stream error the
/// server raises) before it is closed; each stream answered in full earns
/// one back. CVE-2023-44487 (rapid reset) and CVE-2025-8671 (MadeYouReset)
/// both spend it.
const RESET_BUDGET: i32 = 100;
/// Frames that ask for work and carry no request — SETTINGS, PING,
/// PRIORITY, PRIORITY_UPDATE, WINDOW_UPDATE, empty DATA, empty header
/// fragments, unknown types — one connection may send in a burst, ...
const CALM_BURST: u32 = 1000;
/// ... and per second after it; each DATA frame the server sends earns one
/// more (a client returning credit for what it reads is never a flood).
const CALM_RATE: u32 = 100;
/// CONTINUATION frames one header block may have.
const MAX_CONTINUATIONS: u32 = 16;
/// Streams this server reset whose late frames are still ignored quietly
/// (the client may have sent them before it saw the reset, §5.1).
const REMEMBERED_RESETS: usize = 64;
/// The PING payload of the graceful shutdown's round trip.
const SHUTDOWN_PING: [u8; 8] = *b"nk-drain";
/// How long the graceful shutdown waits for that PING's answer before the
/// final GOAWAY.
const SHUTDOWN_RTT: Duration = Duration::from_secs(1);
/// Connection credit is returned once this much is owed.
const CREDIT_STEP: u32 = 16 << 10;

/// What the connection hands its backend.
#[derive(Debug)]
pub(crate) enum Event {
    /// A request without a body: answer it on `stream`. `Err`: answer
    /// with that status (its stream may still be sending a body, which is
    /// dropped).
    Request {
        stream: u32,
        request: Result<Parsed, Refused>,
    },
    /// A request whose body follows: decide from its head how the body is
    /// taken ([`Core::take_body`]); until then it waits in the stream's
    /// initial window.
    Head { stream: u32, request: Parsed },
    /// The whole body of a request taken [`Intake::Whole`].
    Body { stream: u32, body: Bytes },
    /// The next piece of a body taken [`Intake::Stream`]; `end`: the last
    /// (possibly empty). Its credit returns as [`Core::consumed`] says.
    Data { stream: u32, data: Bytes, end: bool },
    /// A stream being answered is gone (the client reset it, or it broke a
    /// rule and was reset): drop its answer, and its body.
    Cancel { stream: u32 },
}

/// A request answered with a status page instead of the pipeline.
#[derive(Debug)]
pub(crate) struct Refused {
    pub reject: Reject,
    /// Malformed: after its answer the stream is reset with PROTOCOL_ERROR
    /// ([`Core::malformed`]) instead of ended.
    pub reset: bool,
}

/// What happened on the connection since the backend last looked: for the
/// counters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Tally {
    pub streams: u64,
    pub resets_sent: u64,
    pub resets_received: u64,
    /// The GOAWAY sent with a code, if one was.
    pub goaway: Option<ErrorCode>,
    /// Closed for a flood (ENHANCE_YOUR_CALM).
    pub flood: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The 24-octet preface is still arriving.
    Preface,
    /// The preface is in; the client's first frame must be SETTINGS.
    FirstSettings,
    Open,
    /// A GOAWAY with an error went out: nothing more is read.
    Failed,
}

#[derive(Debug, PartialEq, Eq)]
enum Recv {
    /// The request's header block or body is still arriving.
    Open,
    /// The client ended its side (END_STREAM).
    Closed,
}

#[derive(Debug, PartialEq, Eq)]
enum Send {
    /// No response yet.
    Idle,
    /// HEADERS sent; DATA follows.
    Body,
    /// END_STREAM sent.
    Done,
}

#[derive(Debug)]
struct Stream {
    id: u32,
    recv: Recv,
    send: Send,
    send_window: i64,
    /// What the client may still send on the stream before its credit.
    recv_window: i64,
    recv_owed: u32,
    urgency: u8,
    /// The backend has body bytes to frame now.
    ready: bool,
    /// The request body's `content-length`, if it gave one.
    declared: Option<u64>,
    /// Octets of body received (padding left out).
    received: u64,
    /// How its body is taken.
    taking: Taking,
    /// A body not yet decided, or gathered whole.
    body: Vec<u8>,
    /// The request went to the backend: a reset must cancel its answer.
    handed: bool,
}

/// A header block that has not seen END_HEADERS yet.
struct Block {
    stream: u32,
    flags: u8,
    fragment: Vec<u8>,
    continuations: u32,
    self_dependent: bool,
}

/// How the connection goes away without a lost request (§6.8).
#[derive(Debug, Default)]
struct Drain {
    /// The first GOAWAY (last stream 2^31-1) and its PING went out.
    since: Option<Instant>,
    /// The final GOAWAY went out naming this last stream: later streams
    /// are ignored.
    last: Option<u32>,
}

pub(crate) struct Core {
    limits: Limits,
    phase: Phase,
    out: Vec<u8>,
    decoder: Decoder,
    encoder: Encoder,
    peer_max_frame: usize,
    peer_initial_window: i64,
    send_window: i64,
    conn_owed: u32,
    /// Connection credit not to return: what ended streamed bodies' windows
    /// had added.
    conn_withheld: u64,
    /// What streamed bodies grew the connection's window by, beyond its
    /// first 65 535, and not yet taken back.
    conn_grown: u64,
    /// When our first SETTINGS went out, and the round trip its ACK took.
    settings_sent: Instant,
    rtt: Option<Duration>,
    streams: Vec<Stream>,
    /// The highest stream the client opened (or tried to).
    last_id: u32,
    /// The streams the client opened: a frame on one of them is on a
    /// closed stream, on any other lower id an idle one.
    used: Used,
    /// How many streams the client opened (the request cap counts them).
    opened: u32,
    reset_by_us: VecDeque<u32>,
    block: Option<Block>,
    drain: Drain,
    /// The client sent GOAWAY: no new stream will come.
    peer_gone: bool,
    reset_budget: i32,
    calm: u32,
    calm_at: Instant,
    events: VecDeque<Event>,
    tally: Tally,
    /// The last stream served at each urgency (round-robin among equals).
    served: [u32; 8],
}

/// The ids of the streams a client opened, as runs of consecutive odd
/// ids (a client that counts up by two, as they do, is one run). A client
/// that skips ids makes a run each time; past [`MAX_RUNS`] the oldest are
/// forgotten, and a late frame on one of them reads as one on an idle
/// stream (a connection error instead of a stream error).
#[derive(Default)]
struct Used {
    runs: VecDeque<(u32, u32)>,
}

const MAX_RUNS: usize = 1024;

impl Used {
    /// Records `id`, higher than every id before it.
    fn push(&mut self, id: u32) {
        match self.runs.back_mut() {
            Some((_, end)) if end.checked_add(2) == Some(id) => *end = id,
            _ => {
                if self.runs.len() == MAX_RUNS {
                    self.runs.pop_front();
                }
                self.runs.push_back((id, id));
            }
        }
    }

    fn contains(&self, id: u32) -> bool {
        let i = self.runs.partition_point(|&(start, _)| start <= id);
        i > 0 && id <= self.runs[i - 1].1 && (id - self.runs[i - 1].0).is_multiple_of(2)
    }
}

/// A connection error: the GOAWAY's code and why, for the log.
type Fatal = (ErrorCode, &'static str);

impl Core {
    /// A connection whose preface is about to arrive: its SETTINGS are the
    /// first bytes of output.
    pub(crate) fn new(limits: Limits, now: Instant) -> Core {
        let mut out = Vec::with_capacity(256);
        frame::put_settings(
            &mut out,
            &[
                (setting::MAX_CONCURRENT_STREAMS, limits.max_streams),
                (setting::MAX_HEADER_LIST_SIZE, limits.max_list as u32),
                (setting::NO_RFC7540_PRIORITIES, 1),
            ],
        );
        Core {
            limits,
            phase: Phase::Preface,
            out,
            decoder: Decoder::new(DEFAULT_TABLE_SIZE),
            encoder: Encoder::new(),
            peer_max_frame: DEFAULT_MAX_FRAME,
            peer_initial_window: DEFAULT_WINDOW,
            send_window: DEFAULT_WINDOW,
            conn_owed: 0,
            conn_withheld: 0,
            conn_grown: 0,
            settings_sent: now,
            rtt: None,
            streams: Vec::new(),
            last_id: 0,
            used: Used::default(),
            opened: 0,
            reset_by_us: VecDeque::new(),
            block: None,
            drain: Drain::default(),
            peer_gone: false,
            reset_budget: RESET_BUDGET,
            calm: CALM_BURST,
            calm_at: now,
            events: VecDeque::new(),
            tally: Tally::default(),
            served: [0; 8],
        }
    }

    /// Reads every complete frame at the front of `buf`. After a connection
    /// error the GOAWAY is in the output and nothing more is read; the
    /// reason is returned once, for the log.
    pub(crate) fn receive(&mut self, buf: &mut BytesMut, now: Instant) -> Option<&'static str> {
        if self.phase == Phase::Preface {
            let n = buf.len().min(PREFACE.len());
            if buf[..n] != PREFACE[..n] {
                return self.fail((ErrorCode::Protocol, "not the HTTP/2 connection preface"));
            }
            if n < PREFACE.len() {
                return None;
            }
            buf.advance(PREFACE.len());
            self.phase = Phase::FirstSettings;
        }
        while self.phase != Phase::Failed {
            let h = Header::parse(buf)?;
            if h.len > DEFAULT_MAX_FRAME {
                return self.fail((
                    ErrorCode::FrameSize,
                    "a frame larger than SETTINGS_MAX_FRAME_SIZE",
                ));
            }
            if buf.len() < HEADER_LEN + h.len {
                return None;
            }
            buf.advance(HEADER_LEN);
            let payload = buf.split_to(h.len).freeze();
            if let Err(fatal) = self.frame(h, payload, now) {
                return self.fail(fatal);
            }
        }
        None
    }

    fn fail(&mut self, (code, why): Fatal) -> Option<&'static str> {
        if self.phase == Phase::Failed {
            return None;
        }
        frame::put_goaway(&mut self.out, self.last_id, code);
        self.tally.goaway = Some(code);
        self.tally.flood |= code == ErrorCode::EnhanceYourCalm;
        self.phase = Phase::Failed;
        for s in std::mem::take(&mut self.streams) {
            if s.handed {
                self.events.push_back(Event::Cancel { stream: s.id });
            }
        }
        Some(why)
    }

    fn frame(&mut self, h: Header, payload: Bytes, now: Instant) -> Result<(), Fatal> {
        if self.phase == Phase::FirstSettings {
            if h.kind != kind::SETTINGS || h.has(flag::ACK) {
                return Err((ErrorCode::Protocol, "the first frame was not SETTINGS"));
            }
            self.phase = Phase::Open;
        }
        if let Some(b) = &self.block {
            if h.kind != kind::CONTINUATION || h.stream != b.stream {
                return Err((ErrorCode::Protocol, "a frame inside a header block"));
            }
        }
        if h.kind == kind::DATA {
            return self.data_frame(h, payload, now);
        }
        let p = &payload[..];
        match h.kind {
            kind::HEADERS => self.headers_frame(h, p, now),
            kind::CONTINUATION => self.continuation(h, p, now),
            kind::PRIORITY => {
                self.spend(now)?;
                if h.stream == 0 {
                    return Err((ErrorCode::Protocol, "PRIORITY on stream 0"));
                }
                let bad = p.len() != 5 || dependency(p) == h.stream;
                if bad && h.stream.is_multiple_of(2) {
                    // A stream only the server could open: no stream of
                    // the client's to reset.
                    return Err((
                        ErrorCode::Protocol,
                        "a malformed PRIORITY on a server stream",
                    ));
                }
                if p.len() != 5 {
                    self.stream_error(h.stream, ErrorCode::FrameSize)?;
                } else if dependency(p) == h.stream {
                    self.stream_error(h.stream, ErrorCode::Protocol)?;
                }
                Ok(())
            }
            kind::RST_STREAM => self.rst_frame(h, p),
            kind::SETTINGS => self.settings_frame(h, p, now),
            kind::PUSH_PROMISE => Err((ErrorCode::Protocol, "PUSH_PROMISE from a client")),
            kind::PING => {
                if h.stream != 0 {
                    return Err((ErrorCode::Protocol, "PING on a stream"));
                }
                if p.len() != 8 {
                    return Err((ErrorCode::FrameSize, "PING not 8 octets"));
                }
                let payload: [u8; 8] = p.try_into().unwrap_or_default();
                if h.has(flag::ACK) {
                    if payload == SHUTDOWN_PING && self.drain.since.is_some() {
                        self.final_goaway();
                    }
                    return Ok(());
                }
                self.spend(now)?;
                frame::put_ping(&mut self.out, payload, true);
                Ok(())
            }
            kind::GOAWAY => {
                if h.stream != 0 {
                    return Err((ErrorCode::Protocol, "GOAWAY on a stream"));
                }
                if p.len() < 8 {
                    return Err((ErrorCode::FrameSize, "GOAWAY shorter than 8 octets"));
                }
                self.peer_gone = true;
                Ok(())
            }
            kind::WINDOW_UPDATE => self.window_update(h, p, now),
            kind::PRIORITY_UPDATE => {
                self.spend(now)?;
                if h.stream != 0 {
                    return Err((ErrorCode::Protocol, "PRIORITY_UPDATE on a stream"));
                }
                if p.len() < 4 {
                    return Err((
                        ErrorCode::FrameSize,
                        "PRIORITY_UPDATE shorter than 4 octets",
                    ));
                }
                let id = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
                if id == 0 {
                    return Err((ErrorCode::Protocol, "PRIORITY_UPDATE for stream 0"));
                }
                let u = crate::http::fields::request::urgency(&p[4..]);
                if let Some(s) = self.stream_mut(id) {
                    s.urgency = u;
                }
                Ok(())
            }
            _ => self.spend(now),
        }
    }

    /// One more frame that asks for work: past the budget, the connection
    /// is closed (ENHANCE_YOUR_CALM).
    fn spend(&mut self, now: Instant) -> Result<(), Fatal> {
        let ms = now.saturating_duration_since(self.calm_at).as_millis();
        let earned = (ms * u128::from(CALM_RATE) / 1000).min(u128::from(CALM_BURST)) as u32;
        if earned > 0 {
            self.calm = (self.calm + earned).min(CALM_BURST);
            self.calm_at = now;
        }
        if self.calm == 0 {
            return Err((ErrorCode::EnhanceYourCalm, "a flood of control frames"));
        }
        self.calm -= 1;
        Ok(())
    }

    fn stream_mut(&mut self, id: u32) -> Option<&mut Stream> {
        self.streams.iter_mut().find(|s| s.id == id)
    }

    fn position(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    /// An id the client never opened and that is not above the last it did.
    fn is_idle(&self, id: u32) -> bool {
        id > self.last_id || (!self.used.contains(id) && !self.reset_by_us.contains(&id))
    }

    /// A stream broke a rule: it is reset, and the reset is spent from the
    /// budget (MadeYouReset).
    fn stream_error(&mut self, id: u32, code: ErrorCode) -> Result<(), Fatal> {
        self.reset_stream(id, code);
        self.spend_reset()
    }

    fn reset_stream(&mut self, id: u32, code: ErrorCode) {
        frame::put_rst(&mut self.out, id, code);
        self.tally.resets_sent += 1;
        if let Some(i) = self.position(id) {
            self.close_window(i);
            let s = self.streams.remove(i);
            if s.handed {
                self.events.push_back(Event::Cancel { stream: id });
            }
        }
        self.remember_reset(id);
    }

    fn remember_reset(&mut self, id: u32) {
        if self.reset_by_us.len() == REMEMBERED_RESETS {
            self.reset_by_us.pop_front();
        }
        self.reset_by_us.push_back(id);
    }

    /// Removes a stream both sides have ended; one that ended only ours
    /// while the client still sends is reset with NO_ERROR (§8.1).
    fn retire(&mut self, i: usize) {
        let s = &self.streams[i];
        if s.send != Send::Done {
            return;
        }
        if s.recv == Recv::Open {
            if let Taking::Drain { .. } = s.taking {
                return; // the client finishes its body; then it goes
            }
            let id = s.id;
            self.reset_stream(id, ErrorCode::NoError);
            return;
        }
        self.streams.remove(i);
        self.reset_budget = (self.reset_budget + 1).min(RESET_BUDGET);
    }

    /// The next event for the backend.
    pub(crate) fn next_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The frames written since the last call.
    pub(crate) fn take_output(&mut self) -> Option<Vec<u8>> {
        (!self.out.is_empty()).then(|| std::mem::take(&mut self.out))
    }

    /// Counts since the last call.
    pub(crate) fn take_tally(&mut self) -> Tally {
        std::mem::take(&mut self.tally)
    }

    /// Streams the client opened that are not finished.
    pub(crate) fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Nothing more will happen: a connection error was sent, or our final
    /// GOAWAY and every stream is done. (A client's GOAWAY only means it
    /// opens no more streams: the connection idles out, or the client
    /// closes it.)
    pub(crate) fn is_finished(&self) -> bool {
        self.phase == Phase::Failed || (self.drain.last.is_some() && self.streams.is_empty())
    }
}

/// The stream a PRIORITY or HEADERS priority block depends on.
fn dependency(p: &[u8]) -> u32 {
    u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff
}
