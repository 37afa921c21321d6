//! The HTTP/3 unit of a QUIC connection: the octets of the client's
//! streams go to the sans-IO core (`http::h3::conn`), each request it
//! hands back goes to the answer pipeline, and the answers go onto their
//! request streams as QUIC's flow control takes them — kept and in-memory
//! bytes as one DATA frame handed to quinn without a copy, files read by
//! `pread` a piece at a time under D9 (cold pages on the io pool while the
//! other streams go on), produced bodies pulled as they come.
//!
//! quinn-proto owns the connection (packets, TLS, loss, flow control);
//! `linux/quic` drives it on the worker's loop and lends it here.
//! Normative text: `spec/http3.md`.

mod ends;
mod intake;
mod pipeline;
mod send;

use super::Turn;

use crate::http::fields::request::Parsed;
use crate::http::h3::conn::{Action, Core, Event, Fatal, Limits, Tally};
use crate::http::h3::frame::Code;

use crate::http::{Peer, Request};

use bytes::Bytes;
use intake::Inbound;
use quinn_proto::{Connection, Dir, ReadError, StreamEvent, StreamId, VarInt};
use send::Body;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// Requests one connection may start in one turn before others go.
const BATCH_REQUESTS: usize = 32;

pub(crate) struct H3 {
    /// Unique in its worker: io results for a connection gone are dropped.
    id: u64,
    peer: Peer,
    core: Core,
    /// Our control stream, once the handshake is done.
    control: Option<StreamId>,
    bodies: Vec<Body>,
    inbound: Vec<Inbound>,
    /// Request streams not read while their body's sink holds it: quinn
    /// returns no credit for what is not read, so the client waits.
    held: HashSet<u64>,
    /// Streams whose receiving side is over (ended, reset, or stopped by
    /// us) and whose sending side is over: both, and the core forgets it.
    recv_over: HashSet<u64>,
    send_over: HashSet<u64>,
    /// Streams whose answer is all handed to quinn and not yet all
    /// acknowledged: the connection is not idle (a close now would lose
    /// their tails).
    unacked: HashSet<u64>,
    goaway: bool,
    /// When our GOAWAY went out.
    goaway_at: Option<Instant>,
    /// Request streams whose head is arriving, since their first octet:
    /// each has header-timeout to finish it.
    heading: HashMap<u64, Instant>,
    /// header-timeout: from the first Initial to the first request head.
    first_deadline: Option<Instant>,
    /// When the last stream ended, for `keepalive-timeout = 0`.
    idle_since: Option<Instant>,
}

impl H3 {
    pub(crate) fn new(id: u64, peer: Peer, turn: &Turn<'_>) -> H3 {
        let limits = Limits {
            max_requests: turn.rt.http2_max_requests,
            max_list: turn.rt.max_header_bytes,
        };
        H3 {
            id,
            peer,
            core: Core::new(limits),
            control: None,
            bodies: Vec::new(),
            inbound: Vec::new(),
            held: HashSet::new(),
            recv_over: HashSet::new(),
            send_over: HashSet::new(),
            unacked: HashSet::new(),
            goaway: false,
            goaway_at: None,
            heading: HashMap::new(),
            first_deadline: Some(turn.now + turn.rt.header_timeout),
            idle_since: None,
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The client's address changed (a validated migration, or a NAT's new
    /// port): the requests that arrive from now on come from `peer`, and
    /// every per-address decision (the auth cap, the access log,
    /// `trusted-proxies`) sees it.
    pub(crate) fn moved(&mut self, peer: Peer) {
        self.peer = peer;
    }

    /// No request being answered or arriving, and every answer
    /// acknowledged.
    pub(crate) fn is_idle(&self) -> bool {
        self.bodies.is_empty() && self.inbound.is_empty() && self.unacked.is_empty()
    }

    /// Runs the connection's HTTP/3 as far as it goes: quinn's events,
    /// the streams' octets into the core, the core's requests into the
    /// pipeline, its stream actions, and the answers onto their streams.
    /// Whether this turn's share ran out with work left (run it again).
    pub(crate) fn drive(&mut self, conn: &mut Connection, turn: &mut Turn<'_>) -> bool {
        while let Some(event) = conn.poll() {
            match event {
                quinn_proto::Event::Connected => self.open_control(conn),
                quinn_proto::Event::Stream(StreamEvent::Opened { .. }) => {}
                quinn_proto::Event::Stream(StreamEvent::Readable { id }) => {
                    self.read(conn, turn, id);
                }
                quinn_proto::Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                    self.stopped(conn, turn, id, error_code);
                }
                quinn_proto::Event::Stream(StreamEvent::Finished { id }) => {
                    self.unacked.remove(&u64::from(id));
                }
                quinn_proto::Event::Stream(
                    StreamEvent::Writable { .. } | StreamEvent::Available { .. },
                )
                | quinn_proto::Event::HandshakeDataReady
                | quinn_proto::Event::ConnectionLost { .. }
                | quinn_proto::Event::DatagramReceived
                | quinn_proto::Event::DatagramsUnblocked => {}
            }
        }
        for dir in [Dir::Uni, Dir::Bi] {
            while let Some(id) = conn.streams().accept(dir) {
                self.read(conn, turn, id);
            }
        }
        if (turn.stopping || self.core.going_away()) && !self.goaway {
            self.go_away(conn, turn.now);
        }
        let mut requests = 0;
        let mut more = false;
        loop {
            let Some(event) = self.core.poll_event() else {
                break;
            };
            requests += usize::from(self.event(conn, turn, event));
            if requests == BATCH_REQUESTS {
                more = true;
                break;
            }
        }
        self.act(conn, turn);
        more |= self.write(conn, turn);
        self.count(turn);
        if self.is_idle() {
            self.idle_since.get_or_insert(turn.now);
        } else {
            self.idle_since = None;
        }
        more
    }

    /// The server stops and this connection may close now: its GOAWAY
    /// went out a while ago (a request the client sent before it heard it
    /// is in by then) and it has nothing left to answer.
    pub(crate) fn may_close(&self, now: Instant) -> bool {
        self.is_idle()
            && self
                .goaway_at
                .is_some_and(|at| now >= at + crate::linux::worker::DRAIN_IDLE)
    }

    /// The connection is gone (closed by either side, or timed out): the
    /// answers are dropped, a produced one's producer told the client
    /// went, and each sink told its body will not come whole.
    pub(crate) fn lost(&mut self) {
        for stream in self.bodies.iter().map(|b| b.stream).collect::<Vec<_>>() {
            self.forget_answer(stream);
        }
        self.inbound.clear();
        self.heading.clear();
        self.unacked.clear();
    }

    /// Our control stream, opened first, with SETTINGS. We open no QPACK
    /// streams: with a table of capacity 0 neither would carry anything
    /// (RFC 9204 §4.2 lets an endpoint leave them unopened).
    fn open_control(&mut self, conn: &mut Connection) {
        if self.control.is_some() {
            return;
        }
        let Some(id) = conn.streams().open(Dir::Uni) else {
            return;
        };
        let mut grease = [0u8; 4];
        let _ = crate::fs::random(&mut grease);
        let start = self.core.control_stream_start(u32::from_le_bytes(grease));
        // The client's credit for our first stream is at least its
        // initial_max_stream_data_uni; SETTINGS fit in any sane one.
        let _ = conn.send_stream(id).write(&start);
        self.control = Some(id);
    }

    /// GOAWAY on the control stream: no new request is taken; streams
    /// already open are answered.
    fn go_away(&mut self, conn: &mut Connection, now: Instant) {
        self.goaway = true;
        self.goaway_at = Some(now);
        let next = self.next_unopened(conn);
        let frame = self.core.goaway(next);
        if let Some(id) = self.control {
            let _ = conn.send_stream(id).write(&frame);
        }
    }

    /// The first client request stream not yet opened.
    fn next_unopened(&self, conn: &mut Connection) -> u64 {
        let _ = conn;
        self.core.next_request_stream()
    }

    /// Reads what stream `id` holds into the core.
    fn read(&mut self, conn: &mut Connection, turn: &mut Turn<'_>, id: StreamId) {
        let raw = u64::from(id);
        if self.held.contains(&raw) {
            return;
        }
        let mut recv = conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let mut pieces: Vec<Bytes> = Vec::new();
        let mut end = End::Open;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => pieces.push(chunk.bytes),
                Ok(None) => {
                    end = End::Fin;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(_)) => {
                    end = End::Reset;
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        let fatal = match id.dir() {
            Dir::Uni => self.uni(raw, &pieces, end),
            Dir::Bi => {
                if !pieces.is_empty() && !self.core.is_handed(raw) {
                    self.heading.entry(raw).or_insert(turn.now);
                }
                self.request(raw, pieces, end)
            }
        };
        if end == End::Reset && id.dir() == Dir::Bi {
            // The client cancelled its request: its answer is aborted
            // (RFC 9114 §4.1.1), and our side ends too, so the stream's
            // state is freed on both ends (a no-op if the answer was done).
            self.forget_answer(raw);
            self.unacked.remove(&raw);
            let code =
                VarInt::from_u64(Code::RequestCancelled.value()).unwrap_or(VarInt::from_u32(0));
            let _ = conn.send_stream(id).reset(code);
            self.send_over(raw);
        }
        if end != End::Open {
            self.recv_over(raw);
        }
        self.fail(conn, turn, fatal.err());
    }

    fn uni(&mut self, id: u64, pieces: &[Bytes], end: End) -> Result<(), Fatal> {
        let last = pieces.len().saturating_sub(1);
        for (i, p) in pieces.iter().enumerate() {
            self.core.uni_data(id, p, end == End::Fin && i == last)?;
        }
        match end {
            End::Fin if pieces.is_empty() => self.core.uni_data(id, &[], true),
            End::Reset => self.core.uni_closed(id),
            _ => Ok(()),
        }
    }

    fn request(&mut self, id: u64, pieces: Vec<Bytes>, end: End) -> Result<(), Fatal> {
        let count = pieces.len();
        let empty = pieces.is_empty();
        for (i, p) in pieces.into_iter().enumerate() {
            self.core
                .request_data(id, p, end == End::Fin && i + 1 == count)?;
        }
        match end {
            End::Fin if empty => self.core.request_data(id, Bytes::new(), true),
            End::Reset => self.core.request_reset(id),
            _ => Ok(()),
        }
    }

    /// The client asked us to stop sending on stream `id` (STOP_SENDING):
    /// its answer is dropped and our side reset with the client's code, as
    /// RFC 9000 §3.5 requires (what quinn still held of it is never sent,
    /// and the stream's state is freed).
    fn stopped(&mut self, conn: &mut Connection, turn: &Turn<'_>, id: StreamId, code: VarInt) {
        let raw = u64::from(id);
        self.unacked.remove(&raw);
        self.forget_answer(raw);
        let _ = conn.send_stream(id).reset(code);
        let fatal = self.core.stopped(raw).err();
        self.send_over(raw);
        self.fail(conn, turn, fatal);
    }

    /// A connection error: QUIC closes it with the core's code (once: what
    /// the core still finds wrong after it is closed is not counted again).
    fn fail(&mut self, conn: &mut Connection, turn: &Turn<'_>, fatal: Option<Fatal>) {
        let Some(Fatal { code, reason }) = fatal else {
            return;
        };
        if conn.is_closed() {
            return;
        }
        let stats = &turn.shared.stats.h3;
        if code == Code::ExcessiveLoad {
            stats.floods.fetch_add(1, Relaxed);
        }
        if let Some(unlogged) = stats.logged.pass() {
            turn.shared.logs.error(format_args!(
                "{}: HTTP/3 connection closed: {reason} ({code:?}){unlogged}",
                self.peer
            ));
        }
        conn.close(
            turn.now,
            VarInt::from_u64(code.value()).unwrap_or(VarInt::from_u32(0x102)),
            Bytes::from_static(reason.as_bytes()),
        );
    }

    /// One event of the core. Whether a request was started.
    fn event(&mut self, conn: &mut Connection, turn: &mut Turn<'_>, event: Event) -> bool {
        self.first_deadline = None;
        if let Event::Request { stream, .. } | Event::Head { stream, .. } = &event {
            self.heading.remove(stream);
        }
        match event {
            Event::Request {
                stream,
                request: Ok(parsed),
            } => {
                if reads_only(&parsed) {
                    let started = Instant::now();
                    let req = self.request_of(parsed);
                    self.answer_request(conn, turn, stream, req, started);
                } else {
                    self.head(conn, turn, stream, parsed, false);
                }
                true
            }
            Event::Request {
                stream,
                request: Err(refused),
            } => {
                self.drop_body(stream);
                self.refuse(conn, turn, stream, refused);
                true
            }
            Event::Head { stream, request } => {
                self.head(conn, turn, stream, request, true);
                true
            }
            Event::Body { stream, body } => self.whole_body(conn, turn, stream, body),
            Event::Data { stream, data, end } => self.data(conn, turn, stream, data, end),
            Event::TooLarge { stream } => self.too_large(conn, turn, stream),
            Event::Cancel { stream } => {
                self.forget_answer(stream);
                false
            }
        }
    }

    /// A request of this connection, as the pipeline takes it.
    fn request_of(&self, parsed: Parsed) -> Request {
        Request::new(parsed.fields, parsed.text, Bytes::new(), self.peer.clone())
    }

    /// Applies the core's stream actions.
    fn act(&mut self, conn: &mut Connection, turn: &Turn<'_>) {
        while let Some(action) = self.core.poll_action() {
            let (id, code, reset) = match action {
                Action::Reset { stream, code } => (stream, code, true),
                Action::StopSending { stream, code } => (stream, code, false),
            };
            let Ok(varint) = VarInt::from_u64(id) else {
                continue;
            };
            let sid = StreamId::from(varint);
            let code = VarInt::from_u64(code.value()).unwrap_or(VarInt::from_u32(0x102));
            if sid.dir() == Dir::Uni {
                // A reserved or unknown stream type: never read again.
                let _ = conn.recv_stream(sid).stop(code);
                continue;
            }
            let _ = conn.recv_stream(sid).stop(code);
            self.held.remove(&id);
            self.heading.remove(&id);
            self.recv_over(id);
            if reset {
                let _ = conn.send_stream(sid).reset(code);
                self.bodies.retain(|b| b.stream != id);
                self.send_over(id);
            }
        }
        let _ = turn;
    }

    fn recv_over(&mut self, id: u64) {
        if self.send_over.remove(&id) {
            self.core.forget(id);
        } else {
            self.recv_over.insert(id);
        }
    }

    fn send_over(&mut self, id: u64) {
        if self.recv_over.remove(&id) {
            self.core.forget(id);
        } else {
            self.send_over.insert(id);
        }
    }

    fn count(&mut self, turn: &Turn<'_>) {
        let Tally {
            streams,
            resets_sent,
            resets_received,
        } = self.core.take_tally();
        let h3 = &turn.shared.stats.h3;
        h3.streams.fetch_add(streams, Relaxed);
        h3.resets_sent.fetch_add(resets_sent, Relaxed);
        h3.resets_received.fetch_add(resets_received, Relaxed);
    }

    /// The server stops: a body still arriving tells its sink so.
    pub(crate) fn stop(&mut self) {
        self.stop_bodies();
    }

    /// Past the deadlines the unit keeps: no request head by
    /// header-timeout (the connection closes), answers that made no
    /// progress for send-timeout (their streams are reset with
    /// H3_REQUEST_CANCELLED), bodies past their clocks (408), and
    /// `keepalive-timeout = 0` once the last stream ended. Whether the
    /// connection should close.
    pub(crate) fn expire(&mut self, conn: &mut Connection, turn: &mut Turn<'_>) -> bool {
        if self.first_deadline.is_some_and(|d| turn.now >= d) {
            turn.shared.stats.h3.header_timeouts.fetch_add(1, Relaxed);
            return true;
        }
        // Idle (every answer acknowledged, nothing arriving) for
        // keepalive-timeout: closed, whatever PINGs keep QUIC's own clock
        // going, as HTTP/2 closes a connection that only pings.
        let keepalive = turn.rt.keepalive_timeout;
        if self.served() && self.idle_since.is_some_and(|t| turn.now >= t + keepalive) {
            return true;
        }
        let late = self.bodies_expired(conn, turn);
        if late > 0 {
            turn.shared
                .stats
                .bodies
                .timeouts
                .fetch_add(late as u64, Relaxed);
        }
        self.stalled(conn, turn);
        self.slow_heads(conn, turn);
        false
    }

    /// Request streams whose head did not arrive whole within
    /// header-timeout of its first octet are reset with
    /// H3_REQUEST_INCOMPLETE; the connection goes on.
    fn slow_heads(&mut self, conn: &mut Connection, turn: &mut Turn<'_>) {
        let limit = turn.rt.header_timeout;
        let late: Vec<u64> = (self.heading.iter())
            .filter(|(_, since)| turn.now.saturating_duration_since(**since) >= limit)
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            self.heading.remove(&id);
            let fatal = self.core.cancel(id, Code::RequestIncomplete).err();
            turn.shared.stats.h3.header_timeouts.fetch_add(1, Relaxed);
            self.fail(conn, turn, fatal);
        }
        self.act(conn, turn);
    }

    /// Since when it has been idle: served, every answer acknowledged,
    /// nothing arriving.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        self.idle_since.filter(|_| self.served() && self.is_idle())
    }

    /// Whether a request was answered on it.
    fn served(&self) -> bool {
        self.first_deadline.is_none()
    }
}

/// How a read of a stream ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Open,
    Fin,
    Reset,
}

/// A client request stream's id in an io result: its index (ids are
/// `4 × index`; a connection opens at most `http2-max-requests`).
fn short(stream: u64) -> u32 {
    u32::try_from(stream >> 2).unwrap_or(u32::MAX)
}

fn long(stream: u32) -> u64 {
    u64::from(stream) << 2
}

/// Whether a request's method is GET (no route takes a body with it).
fn reads_only(parsed: &Parsed) -> bool {
    &parsed.fields[parsed.text.method.clone()] == b"GET"
}
