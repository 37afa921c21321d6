//! The HTTP/2 unit of a connection: bytes read off the link go to the
//! sans-IO core (`http::h2::conn`), each request it hands back goes to the
//! answer pipeline, and the answers' bodies are framed into the link's send
//! queue as the core's flow control and the streams' urgency allow — kept
//! and in-memory bytes as slices (a frame header beside them, no copy),
//! files read a frame at a time by the same D9 rules as HTTP/1.1 (a probe,
//! cold pages read on the io pool while the other streams go on).
//!
//! Normative text: `spec/http2.md`.

use super::{access, serving, Link, Next, Turn};
use crate::fs::OpenFile;
use crate::http::answer::{self, Answer, Done, Payload, Progress, Waiting};
use crate::http::h2::conn::{Core, Event, Limits, Refused, Tally};
use crate::http::h2::frame::{ErrorCode, HEADER_LEN};
use crate::http::h2::hpack::Encoder;
use crate::http::response::{each_field, Response};
use crate::http::site::Verdict;
use crate::http::Request;
use crate::linux::out::{Flushed, Sent, COLD_READ};
use crate::linux::send::{self, Residency};
use crate::linux::transport::Input;
use crate::rt::Vehicle;
use bytes::{Bytes, BytesMut};
use rustix::io::Errno;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

/// The most payload one DATA frame carries: with its 9-octet header it
/// fills one TLS record of 16 KiB (`spec/http2.md`, "How bytes travel").
pub(crate) const DATA_MAX: usize = 16_384 - HEADER_LEN;
/// Frames are made until this much is queued and unwritten, so a more
/// urgent stream never waits behind more than this.
const FILL_HIGH: usize = 128 << 10;
/// Input is not read while this much output waits (a client that sends
/// but never reads is not answered without bound).
const READ_HIGH: usize = 512 << 10;
/// Requests one connection may run in one loop turn before others go.
const BATCH_REQUESTS: usize = 32;

/// One stream's answer, from its head on.
struct Body {
    stream: u32,
    source: Source,
    /// What the access log says once the last byte is written.
    sent: Option<Sent>,
    /// When the stream last had a frame queued (its send-timeout).
    progress: Instant,
    /// The answer to a malformed request: its stream is reset after it
    /// instead of ended.
    then_reset: bool,
}

enum Source {
    /// The file is being opened on the io pool.
    Opening(Box<(Request, Waiting, Instant)>),
    /// Bytes in memory (kept, a row's, a status page), sent as slices.
    Memory(Bytes),
    File(FileBody),
}

struct FileBody {
    file: Arc<OpenFile>,
    offset: u64,
    end: u64,
    /// Up to where the page cache was last found warm.
    warm_to: u64,
    /// Bytes the io pool read (cold pages), framed before reading more.
    read: Bytes,
    /// A read is on the io pool.
    waiting: bool,
    name: Arc<str>,
}

pub(super) struct H2 {
    core: Core,
    rbuf: BytesMut,
    bodies: Vec<Body>,
    /// Frame headers and file payloads are cut from it; its memory comes
    /// back once the frames cut from it are written.
    arena: BytesMut,
    shutting_down: bool,
    /// What the connection waits for, for its deadline.
    waiting: Wait,
    /// A request was answered (the first one's header-timeout is over).
    served: bool,
    /// Since when the connection has been in its `waiting` state.
    since: Instant,
    /// The first request's deadline: header-timeout from the accept.
    first_deadline: Instant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// For a request (header-timeout until the first, then keep-alive).
    Idle,
    /// For the rest of a request (header-timeout).
    Request,
    /// For the client to take what is sent (send-timeout).
    Output,
}

impl H2 {
    /// A connection that speaks HTTP/2 from here: `rbuf` holds what has
    /// arrived (the preface, or part of it).
    pub(super) fn new(turn: &Turn<'_>, rbuf: BytesMut) -> H2 {
        let rt = turn.rt;
        let limits = Limits {
            max_streams: 128,
            max_requests: rt.http2_max_requests,
            max_list: rt.max_header_bytes,
            max_body: rt.body_limit as usize,
        };
        turn.shared.stats.h2.connections.fetch_add(1, Relaxed);
        H2 {
            core: Core::new(limits, turn.now),
            rbuf,
            bodies: Vec::new(),
            arena: BytesMut::new(),
            shutting_down: false,
            waiting: Wait::Request,
            served: false,
            since: turn.now,
            first_deadline: turn.now + rt.header_timeout,
        }
    }

    /// No stream open, nothing of one arriving.
    pub(super) fn is_idle(&self) -> bool {
        self.core.open_streams() == 0 && self.bodies.is_empty() && self.rbuf.is_empty()
    }

    pub(super) fn drive(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> Next {
        let mut budget = turn.rt.send_file_max_chunk as usize;
        let slice_end = Instant::now() + super::SLICE;
        let mut requests = 0;
        loop {
            if link.close_now {
                return Next::Close;
            }
            if link.lingering {
                // Everything is out; what the client still sends is dropped.
                return super::close_gently(link, turn);
            }
            if turn.stopping && !self.shutting_down {
                self.shutting_down = true;
                self.core.shutdown(turn.now);
            }
            self.core.tick(turn.now);
            let read = match self.may_read(link) {
                true => match self.read(link, turn) {
                    Ok(read) => read,
                    Err(next) => return next,
                },
                false => false,
            };
            requests += self.answer_events(link, turn);
            let full = self.fill(link, turn);
            if self.core.is_finished() && self.bodies.is_empty() {
                link.close_after = true;
            }
            let mut blocked = false;
            if !link.out.is_empty() {
                match link.flush(turn, &mut budget, slice_end) {
                    Ok(Flushed::All) => {}
                    Ok(Flushed::Blocked | Flushed::Waiting | Flushed::Cold { .. }) => {
                        blocked = true;
                    }
                    Ok(Flushed::Budget) => return Next::Yield,
                    Err(_) => return Next::Close,
                }
            }
            match link.transport.push() {
                Ok(true) => {}
                Ok(false) => blocked = true,
                Err(_) => return Next::Close,
            }
            if link.close_after && link.out.is_empty() && !blocked {
                return super::close_gently(link, turn);
            }
            self.deadline(link, turn);
            if requests >= BATCH_REQUESTS {
                return Next::Yield;
            }
            // Go round again only for what the last pass made possible.
            let more = !blocked && full;
            if !read && !more {
                return Next::Wait;
            }
        }
    }

    /// [`super::Conn::prefetch`]: reads as [`H2::drive`] would first.
    pub(super) fn prefetch(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> Result<(), Next> {
        if self.may_read(link) {
            self.read(link, turn)?;
        }
        Ok(())
    }

    /// Whether to read more: the output is below its mark and the
    /// connection is not finished.
    fn may_read(&self, link: &Link) -> bool {
        link.out.queued() < READ_HIGH && !self.core.is_finished()
    }

    /// Reads and hands what came to the core. `Ok(true)`: bytes came.
    fn read(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> Result<bool, Next> {
        let got = match link.read(turn, &mut self.rbuf) {
            Ok(Input::Data) => true,
            // The TLS listener negotiated h2: a plain request cannot follow.
            Ok(_) => return Err(Next::Close),
            // What HTTP/1.1 read before it saw the preface is still here.
            Err(Next::Wait) if !self.rbuf.is_empty() => false,
            Err(Next::Wait) => return Ok(false),
            Err(next) => return Err(next),
        };
        if let Some(why) = self.core.receive(&mut self.rbuf, turn.now) {
            let peer = &link.peer;
            if let Some(unlogged) = turn.shared.stats.h2.logged.pass() {
                turn.shared.logs.error(format_args!(
                    "{peer}: HTTP/2 connection closed: {why} \
                     ({unlogged} more not logged since the last line)"
                ));
            }
            self.rbuf.clear();
        }
        self.count(turn);
        Ok(got)
    }

    fn count(&mut self, turn: &Turn<'_>) {
        let Tally {
            streams,
            resets_sent,
            resets_received,
            goaway,
            flood,
        } = self.core.take_tally();
        let h2 = &turn.shared.stats.h2;
        h2.streams.fetch_add(streams, Relaxed);
        h2.resets_sent.fetch_add(resets_sent, Relaxed);
        h2.resets_received.fetch_add(resets_received, Relaxed);
        if let Some(code) = goaway {
            h2.goaway[code as usize].fetch_add(1, Relaxed);
        }
        if flood {
            h2.floods.fetch_add(1, Relaxed);
        }
    }

    /// Answers the requests the core completed; drops the answers of the
    /// streams it cancelled. Returns how many requests were answered.
    fn answer_events(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> usize {
        let mut answered = 0;
        while let Some(event) = self.core.next_event() {
            match event {
                Event::Request {
                    stream,
                    request: Ok(parsed),
                    body,
                } => {
                    let started = Instant::now();
                    let mut req = Request::new(parsed.fields, parsed.text, body, link.peer.clone());
                    req.client = link.client.clone();
                    let progress = answer::answer(
                        &serving(turn, link),
                        &turn.shared.router,
                        link.redirect.as_ref(),
                        &mut req,
                        true,
                        &mut super::h1::log_error(turn, link),
                    );
                    self.go_on(link, turn, stream, req, progress, started);
                    answered += 1;
                }
                Event::Request {
                    stream,
                    request: Err(reject),
                    ..
                } => {
                    self.refuse(link, turn, stream, reject);
                    answered += 1;
                }
                Event::Cancel { stream } => self.forget(stream),
            }
        }
        if answered > 0 {
            self.served = true;
            // Answers are output, even those written at once: the idle
            // time starts over when they are out.
            self.waiting = Wait::Output;
            self.push_output(link);
        }
        self.count(turn);
        answered
    }

    fn go_on(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        stream: u32,
        req: Request,
        progress: Progress,
        started: Instant,
    ) {
        match progress {
            Progress::Ready(decided) => self.respond(link, turn, stream, &req, decided, started),
            Progress::Open(job, waiting) => {
                link.open_on_pool(turn, job, stream);
                self.wait_for_pool(turn, stream, req, waiting, started);
            }
            Progress::Verify(check, waiting) => match link.verify_off_loop(turn, check, stream) {
                Ok(()) => self.wait_for_pool(turn, stream, req, waiting, started),
                Err(check) => {
                    let progress = waiting.verified(
                        &serving(turn, link),
                        &req,
                        *check,
                        Verdict::Busy,
                        &mut super::h1::log_error(turn, link),
                    );
                    self.go_on(link, turn, stream, req, progress, started);
                }
            },
        }
    }

    /// A stream's answer waits for the io pool or the verifier threads.
    fn wait_for_pool(
        &mut self,
        turn: &Turn<'_>,
        stream: u32,
        req: Request,
        waiting: Waiting,
        started: Instant,
    ) {
        self.bodies.push(Body {
            stream,
            source: Source::Opening(Box::new((req, waiting, started))),
            sent: None,
            progress: turn.now,
            then_reset: false,
        });
    }

    /// The io pool opened the file, or the verifier threads checked the
    /// credentials, a stream's answer waits for.
    pub(super) fn resumed(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        stream: u32,
        done: Done,
    ) {
        let Some(i) = self.bodies.iter().position(|b| b.stream == stream) else {
            return;
        };
        let body = self.bodies.swap_remove(i);
        let Source::Opening(pending) = body.source else {
            self.bodies.push(body);
            return;
        };
        let (req, waiting, started) = *pending;
        let progress = waiting.resume(
            &serving(turn, link),
            &req,
            done,
            &mut super::h1::log_error(turn, link),
        );
        self.go_on(link, turn, stream, req, progress, started);
        self.push_output(link);
    }

    /// The io pool read a stream's cold pages.
    pub(super) fn read_done(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        stream: u32,
        result: Result<Vec<u8>, Errno>,
    ) {
        let Some(i) = self.bodies.iter().position(|b| b.stream == stream) else {
            return;
        };
        let Source::File(f) = &mut self.bodies[i].source else {
            return;
        };
        f.waiting = false;
        match result {
            Ok(data) if !data.is_empty() => {
                let len = (data.len() as u64).min(f.end - f.offset) as usize;
                f.offset += len as u64;
                f.read = Bytes::from(data).slice(..len);
                self.core.set_ready(stream, true);
            }
            Ok(_) => self.file_failed(link, turn, i, None),
            Err(e) => self.file_failed(link, turn, i, Some(e)),
        }
    }

    /// Queues a decided answer's HEADERS; its body is framed as credit
    /// allows.
    fn respond(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        stream: u32,
        req: &Request,
        decided: Answer,
        started: Instant,
    ) {
        let Answer {
            resp,
            length,
            payload,
            user,
            ..
        } = super::readable(link, turn, req, decided);
        let sent = Sent {
            head: req.fields.clone(),
            method: req.method.clone(),
            target: req.target.clone(),
            version: "HTTP/2.0",
            referer: req.header_range("referer"),
            user_agent: req.header_range("user-agent"),
            status: resp.status(),
            bytes: payload.len(),
            // A file is read a frame at a time on HTTP/2, whatever the
            // vehicle HTTP/1.1 would have chosen.
            vehicle: match payload.vehicle() {
                Vehicle::Sendfile => Vehicle::Read,
                v => v,
            },
            started,
            client: req.client.clone(),
            user,
        };
        let source = match payload {
            Payload::None => None,
            Payload::Memory(b) | Payload::Mapped(b) | Payload::Kept(b) => Some(Source::Memory(b)),
            Payload::File {
                file, start, end, ..
            } => Some(Source::File(FileBody {
                file,
                offset: start,
                end,
                warm_to: 0,
                read: Bytes::new(),
                waiting: false,
                name: Arc::from(req.path()),
            })),
        };
        let date = turn.date;
        let headed = self.core.respond(stream, source.is_none(), |enc, out| {
            head(enc, out, &resp, length, date)
        });
        if !headed {
            return;
        }
        match source {
            None => {
                self.push_output(link);
                link.out.end(sent);
            }
            Some(source) => {
                self.core.set_ready(stream, true);
                self.bodies.push(Body {
                    stream,
                    source,
                    sent: Some(sent),
                    progress: turn.now,
                    then_reset: false,
                });
            }
        }
    }

    /// A request refused before it reached the pipeline: its status page.
    fn refuse(&mut self, link: &mut Link, turn: &mut Turn<'_>, stream: u32, refused: Refused) {
        let Refused { reject, reset } = refused;
        let resp = Response::status_page(reject.status);
        let (length, body) = resp.memory_body();
        let date = turn.date;
        if !self
            .core
            .respond(stream, body.is_empty() && !reset, |enc, out| {
                head(enc, out, &resp, length, date)
            })
        {
            return;
        }
        turn.shared.stats.status(reject.status);
        if turn.shared.logs.access.is_on() {
            access::refused(turn, &link.client, b"", reject);
        }
        if !body.is_empty() {
            self.core.set_ready(stream, true);
            self.bodies.push(Body {
                stream,
                source: Source::Memory(body),
                sent: None,
                progress: turn.now,
                then_reset: reset,
            });
        }
    }

    fn forget(&mut self, stream: u32) {
        self.bodies.retain(|b| b.stream != stream);
    }

    /// Moves the core's frames (SETTINGS, HEADERS, ...) into the queue:
    /// they go before any DATA framed after them.
    fn push_output(&mut self, link: &mut Link) {
        if let Some(out) = self.core.take_output() {
            link.out.push(Bytes::from(out));
        }
    }

    /// Frames bodies into the queue, the stream the core picks each time,
    /// until `FILL_HIGH` is queued (`true`: more may follow once it is
    /// written) or no stream may send.
    fn fill(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> bool {
        self.push_output(link);
        loop {
            if link.out.queued() >= FILL_HIGH {
                self.push_output(link);
                return true;
            }
            let Some((stream, allowed)) = self.core.next_send(DATA_MAX) else {
                break;
            };
            let Some(i) = self.bodies.iter().position(|b| b.stream == stream) else {
                self.core.set_ready(stream, false);
                continue;
            };
            self.frame(link, turn, i, allowed);
        }
        self.push_output(link);
        false
    }

    /// One DATA frame of body `i`, at most `allowed` octets.
    fn frame(&mut self, link: &mut Link, turn: &mut Turn<'_>, i: usize, allowed: usize) {
        let body = &mut self.bodies[i];
        let stream = body.stream;
        let (payload, end) = match &mut body.source {
            Source::Opening(_) => {
                self.core.set_ready(stream, false);
                return;
            }
            Source::Memory(b) => {
                let n = b.len().min(allowed);
                let part = b.split_to(n);
                (part, b.is_empty())
            }
            Source::File(f) => {
                if f.read.is_empty() {
                    match read_frame(f, &mut self.arena, allowed) {
                        Ok(Some(part)) => {
                            let end = f.offset == f.end;
                            (part, end)
                        }
                        Ok(None) => {
                            // Cold: read on the io pool, the others go on.
                            f.waiting = true;
                            let (file, offset) = (f.file.clone(), f.offset);
                            let len = ((f.end - f.offset) as usize).min(COLD_READ);
                            self.core.set_ready(stream, false);
                            link.read_on_pool(turn, file, offset, len, stream);
                            return;
                        }
                        Err(e) => return self.file_failed(link, turn, i, e),
                    }
                } else {
                    let n = f.read.len().min(allowed);
                    let part = f.read.split_to(n);
                    (part, f.read.is_empty() && f.offset == f.end)
                }
            }
        };
        let then_reset = end && body.then_reset;
        let len = payload.len();
        let header = self.core.data(stream, len, end && !then_reset);
        room(&mut self.arena, HEADER_LEN);
        self.arena.extend_from_slice(&header);
        link.out.push(self.arena.split().freeze());
        link.out.push(payload);
        body.progress = turn.now;
        if end {
            let body = self.bodies.swap_remove(i);
            if let Some(sent) = body.sent {
                link.out.end(sent);
            }
            if then_reset {
                self.core.malformed(stream);
                self.push_output(link);
            }
        }
    }

    /// A file body ended early or failed: its stream is reset and the
    /// failure logged; the others go on.
    fn file_failed(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        i: usize,
        cause: Option<Errno>,
    ) {
        let body = self.bodies.swap_remove(i);
        self.core.reset(body.stream, ErrorCode::Internal);
        self.push_output(link);
        turn.shared.stats.truncated.fetch_add(1, Relaxed);
        if let Source::File(f) = &body.source {
            let why = match cause {
                None => "the file ended early (truncated?)".to_owned(),
                Some(errno) => format!("{}", std::io::Error::from(errno)),
            };
            turn.shared.logs.error(format_args!(
                "{}: sending {:?} on HTTP/2 stream {}: {why}; stream reset",
                link.peer, f.name, body.stream
            ));
        }
        self.count(turn);
    }

    /// The connection's next deadline: send-timeout from the stalest
    /// stream's last frame while bodies are sent, header-timeout from when
    /// a request began to arrive, keep-alive from when it became idle (the
    /// first request's header-timeout from the accept, until one came).
    fn deadline(&mut self, link: &mut Link, turn: &Turn<'_>) {
        let rt = turn.rt;
        if !link.out.is_empty() || link.transport.pending() {
            // The flush moves the deadline on each progress.
            self.waiting = Wait::Output;
            return;
        }
        let state =
            if self.bodies.is_empty() && self.core.open_streams() == 0 && self.rbuf.is_empty() {
                Wait::Idle
            } else if self.bodies.is_empty() {
                Wait::Request
            } else {
                Wait::Output
            };
        if state != self.waiting {
            self.waiting = state;
            self.since = turn.now;
            if state == Wait::Idle {
                link.idle_since = turn.now;
            }
        }
        link.deadline = match state {
            Wait::Output => {
                let oldest = self.bodies.iter().map(|b| b.progress).min();
                oldest.unwrap_or(turn.now) + rt.send_timeout
            }
            Wait::Idle if self.served => self.since + rt.keepalive_timeout,
            Wait::Request if self.served => self.since + rt.header_timeout,
            // Until the first request: header-timeout from the accept.
            _ => self.first_deadline,
        };
    }

    /// The deadline passed. Streams that made no progress for send-timeout
    /// are reset (their siblings go on): how many. 0: the connection itself
    /// timed out and closes.
    pub(super) fn expire(&mut self, link: &mut Link, turn: &Turn<'_>) -> usize {
        if !link.out.is_empty() || link.transport.pending() {
            return 0;
        }
        let limit = turn.rt.send_timeout;
        let stalled: Vec<u32> = self
            .bodies
            .iter()
            .filter(|b| turn.now.saturating_duration_since(b.progress) >= limit)
            .map(|b| b.stream)
            .collect();
        for &stream in &stalled {
            self.forget(stream);
            self.core.reset(stream, ErrorCode::Cancel);
        }
        self.push_output(link);
        self.count(turn);
        stalled.len()
    }
}

/// The arena's buffers: frames are cut from one until it is used up, then
/// a new one is taken (or the old one reclaimed, once every frame cut from
/// it is written).
const ARENA: usize = 64 << 10;

/// Makes room for `want` more octets in the arena, without asking for a new
/// buffer while the current one still has that room.
fn room(arena: &mut BytesMut, want: usize) {
    if arena.capacity() - arena.len() < want {
        arena.reserve(want.max(ARENA));
    }
}

/// Reads the next frame's payload of a file body into the arena: `None`
/// when those pages are not in the page cache (D9).
fn read_frame(
    f: &mut FileBody,
    arena: &mut BytesMut,
    allowed: usize,
) -> Result<Option<Bytes>, Option<Errno>> {
    let want = ((f.end - f.offset) as usize).min(allowed);
    if f.offset >= f.warm_to {
        let to = f.end.min(f.offset + COLD_READ as u64);
        if send::residency(&f.file, send::probe_points(f.offset, to)) == Residency::Cold {
            return Ok(None);
        }
        f.warm_to = to;
    }
    room(arena, want);
    let start = arena.len();
    arena.resize(start + want, 0);
    match send::pread(&f.file, &mut arena[start..], f.offset) {
        Ok(0) => {
            arena.truncate(start);
            Err(None)
        }
        Ok(n) => {
            arena.truncate(start + n);
            f.offset += n as u64;
            Ok(Some(arena.split().freeze()))
        }
        Err(e) => {
            arena.truncate(start);
            Err(Some(e))
        }
    }
}

/// The response's HEADERS block: `:status`, `date`, then the fields every
/// backend sends, lowercased, less those HTTP/2 forbids (§8.2.2).
fn head(enc: &mut Encoder, out: &mut Vec<u8>, resp: &Response, length: u64, date: &[u8]) {
    enc.status(resp.status(), out);
    enc.field(b"date", date, false, out);
    let mut lower = Vec::with_capacity(32);
    each_field(resp, length, |name, value| {
        lower.clear();
        lower.extend(name.iter().map(u8::to_ascii_lowercase));
        let index = match lower.as_slice() {
            b"keep-alive" | b"transfer-encoding" | b"upgrade" | b"proxy-connection" => return,
            // RFC 7541 §7.1.3: a secret no table on the way should keep.
            b"set-cookie" | b"authorization" | b"proxy-authenticate" => {
                return enc.field_never_indexed(&lower, value, out);
            }
            b"server"
            | b"content-type"
            | b"accept-ranges"
            | b"cache-control"
            | b"vary"
            | b"content-encoding"
            | b"x-content-type-options" => true,
            _ => false,
        };
        enc.field(&lower, value, index, out);
    });
}
