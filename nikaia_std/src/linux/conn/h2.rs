//! The HTTP/2 unit of a connection: bytes read off the link go to the
//! sans-IO core (`http::h2::conn`), each request it hands back goes to the
//! answer pipeline, and the answers' bodies are framed into the link's send
//! queue as the core's flow control and the streams' urgency allow — kept
//! and in-memory bytes as slices (a frame header beside them, no copy),
//! files read a frame at a time by the same D9 rules as HTTP/1.1 (a probe,
//! cold pages read on the io pool while the other streams go on).
//!
//! Normative text: `spec/http2.md`.

mod clock;
mod frames;
mod intake;

use super::{serving, Link, Next, Turn};
use crate::fs::OpenFile;
use crate::http::answer::{Done, Progress, Waiting};
use crate::http::fields::request::Parsed;
use crate::http::h2::conn::{Core, Event, Limits, Tally};
use crate::http::h2::frame::HEADER_LEN;
use crate::http::h2::kept::KeptBlock;
use crate::http::response::Response;
use crate::http::site::Verdict;
use crate::http::Request;
use crate::linux::out::{Flushed, Sent};
use crate::linux::transport::Input;
use bytes::{Bytes, BytesMut};
use clock::Wait;
use intake::Inbound;
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
    /// The sink the body went to answers once its work is done (a file
    /// synced and named).
    Answering(Box<(Request, Instant)>),
    /// Bytes in memory (kept, a row's, a status page), sent as slices.
    Memory(Bytes),
    File(FileBody),
    /// A body the program produces, pulled as credit allows.
    Produced(Box<crate::http::produce::Sending>),
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

impl Body {
    /// Whether the stream's send clock runs: not while a sink works on
    /// its answer (that wait is the server's, not the client's).
    fn clocked(&self) -> bool {
        match &self.source {
            Source::Answering(_) => false,
            // Waiting for its producer (an event stream between events).
            Source::Produced(p) => !p.waiting,
            _ => true,
        }
    }
}

pub(super) struct H2 {
    core: Core,
    rbuf: BytesMut,
    bodies: Vec<Body>,
    /// Requests whose bodies are arriving (`intake.rs`).
    inbound: Vec<Inbound>,
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
    /// The HEADERS block kept while the next answer's inputs are the same.
    kept: KeptBlock,
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
        };
        turn.shared.stats.h2.connections.fetch_add(1, Relaxed);
        H2 {
            core: Core::new(limits, turn.now),
            rbuf,
            bodies: Vec::new(),
            inbound: Vec::new(),
            arena: BytesMut::new(),
            shutting_down: false,
            waiting: Wait::Request,
            served: false,
            since: turn.now,
            first_deadline: turn.now + rt.header_timeout,
            kept: KeptBlock::default(),
        }
    }

    /// No stream open, nothing of one arriving.
    pub(super) fn is_idle(&self) -> bool {
        self.core.open_streams() == 0
            && self.bodies.is_empty()
            && self.inbound.is_empty()
            && self.rbuf.is_empty()
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
                return super::link::close_gently(link, turn);
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
                    Ok(
                        Flushed::Blocked
                        | Flushed::Waiting
                        | Flushed::Cold { .. }
                        | Flushed::Producing,
                    ) => {
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
                return super::link::close_gently(link, turn);
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
                    "{peer}: HTTP/2 connection closed: {why}{unlogged}"
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
            let done = match event {
                Event::Request {
                    stream,
                    request: Ok(parsed),
                } if !reads_only(&parsed) => {
                    // A route may take even an empty body (a file
                    // written from no bytes): decided as a head.
                    self.head(link, turn, stream, parsed, false)
                }
                Event::Request {
                    stream,
                    request: Ok(parsed),
                } => {
                    let started = Instant::now();
                    let mut req =
                        Request::new(parsed.fields, parsed.text, Bytes::new(), link.peer.clone());
                    req.client = link.client.clone();
                    self.answer_request(link, turn, stream, req, started);
                    true
                }
                Event::Request {
                    stream,
                    request: Err(reject),
                } => {
                    self.drop_body(stream);
                    self.refuse(link, turn, stream, reject);
                    true
                }
                Event::Head { stream, request } => self.head(link, turn, stream, request, true),
                Event::Body { stream, body } => self.whole_body(link, turn, stream, body),
                Event::Data { stream, data, end } => self.data(link, turn, stream, data, end),
                Event::Cancel { stream } => {
                    self.forget(stream);
                    false
                }
            };
            answered += usize::from(done);
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

    /// Hands a request (its body, if any, in it) to the answer pipeline.
    fn answer_request(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        stream: u32,
        mut req: Request,
        started: Instant,
    ) {
        let progress = super::pipeline(turn, link, &mut req, true);
        self.go_on(link, turn, stream, req, progress, started);
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

    /// A stream's answer waits for the sink its body went to.
    fn wait_for_sink(&mut self, turn: &Turn<'_>, stream: u32, req: Request, started: Instant) {
        self.bodies.push(Body {
            stream,
            source: Source::Answering(Box::new((req, started))),
            sent: None,
            progress: turn.now,
            then_reset: false,
        });
    }

    /// The sink a stream's body went to answered.
    fn sink_answered(&mut self, link: &mut Link, turn: &mut Turn<'_>, stream: u32, resp: Response) {
        let Some(i) = self.bodies.iter().position(|b| b.stream == stream) else {
            return;
        };
        if !matches!(self.bodies[i].source, Source::Answering(_)) {
            return;
        }
        let Source::Answering(pending) = self.bodies.swap_remove(i).source else {
            unreachable!("matched above");
        };
        let (mut req, started) = *pending;
        let progress = super::answer::answer_with(
            &serving(turn, link),
            &mut req,
            resp,
            true,
            &mut super::h1::log_error(turn, link),
        );
        self.go_on(link, turn, stream, req, progress, started);
        self.push_output(link);
        self.count(turn);
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

    /// A stream is gone: its answer, and its body, are dropped (a
    /// produced one's producer told the client reset it).
    fn forget(&mut self, stream: u32) {
        for b in self.bodies.iter_mut().filter(|b| b.stream == stream) {
            if let Source::Produced(p) = &mut b.source {
                p.why = crate::http::Cancelled::Reset;
            }
        }
        self.bodies.retain(|b| b.stream != stream);
        self.drop_body(stream);
    }

    /// The server stops: each produced body ends here, with END_STREAM
    /// once what it framed is out (its producer told it is cancelled).
    pub(super) fn stop_producing(&mut self) -> bool {
        let mut any = false;
        for b in &mut self.bodies {
            if let Source::Produced(p) = &mut b.source {
                p.why = crate::http::Cancelled::Stopping;
                b.source = Source::Memory(Bytes::new());
                self.core.set_ready(b.stream, true);
                any = true;
            }
        }
        any
    }

    /// A produced body's producer has more: its stream may send again.
    pub(super) fn pull_again(&mut self, link: &mut Link, turn: &mut Turn<'_>, stream: u32) {
        if let Some(b) = self.bodies.iter_mut().find(|b| b.stream == stream) {
            // Its clock starts again from here, not from before the wait.
            b.progress = turn.now;
            self.core.set_ready(stream, true);
            self.push_output(link);
        }
    }

    /// Moves the core's frames (SETTINGS, HEADERS, ...) into the queue:
    /// they go before any DATA framed after them.
    fn push_output(&mut self, link: &mut Link) {
        if let Some(out) = self.core.take_output() {
            link.out.push(Bytes::from(out));
        }
    }
}

/// Whether a request's method is GET (no route takes a body with it).
/// A `HEAD` is decided as a head too: the tus endpoint answers it off the
/// workers (`spec/site.md`, "Resumable uploads").
fn reads_only(parsed: &Parsed) -> bool {
    &parsed.fields[parsed.text.method.clone()] == b"GET"
}
