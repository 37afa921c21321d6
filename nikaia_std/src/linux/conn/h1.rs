//! The HTTP/1.1 unit of a connection: read a head, read or refuse its
//! body, hand the request to the answer pipeline, queue the answer's head
//! and body; again, in order (pipelined requests wait their turn), until
//! the client or a limit ends it. The wire format is `http::h1`; what the
//! answer is, `http::answer`.

mod body;
mod stream;

use super::{access, serving, Link, Next, Turn};
use crate::http::answer::{Answer, Done, Payload, Progress, Waiting};
use crate::http::h1::kept::{Heads, Inputs};
use crate::http::h1::parse::{parse_head, Framing, Head};
use crate::http::h2::frame::PREFACE;
use crate::http::request::{Reject, Spare};
use crate::http::response::{bodiless, UNKNOWN_LENGTH};
use crate::http::site::Verdict;
use crate::http::{Request, Response, Version};
use crate::linux::out::{Flushed, Sent};
use crate::linux::send::FileSend;
use crate::linux::transport::Input;
use body::{Drain, Whole};
use bytes::{Bytes, BytesMut};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;
use stream::{Answering, Streaming};

/// Pipelined responses gathered before they are written together.
const BATCH_BYTES: usize = 64 << 10;

enum State {
    /// Between requests: nothing of the next one has arrived.
    Idle,
    /// Part of a head has arrived.
    Head,
    /// A body is read whole into memory.
    Body(Box<Whole>),
    /// A body is fed to its route's sink as it arrives.
    Streaming(Box<Streaming>),
    /// A body no one reads is thrown away, to a bound.
    Draining(Box<Drain>),
    /// An answer waits for its file to open on the io pool.
    Opening(Box<Opening>),
    /// An answer waits for the sink its body went to (a file written).
    Answering(Box<Answering>),
}

/// A request whose file is being opened on the io pool.
struct Opening {
    req: Request,
    waiting: Waiting,
    started: Instant,
}

pub(super) struct H1 {
    /// What has arrived of the requests not yet answered.
    pub(super) rbuf: BytesMut,
    state: State,
    /// No request has been read on this connection yet: its first bytes
    /// may still turn out to be the HTTP/2 preface.
    fresh: bool,
    /// The connection speaks HTTP/2 from here (h2c by prior knowledge, or
    /// ALPN `h2`): `rbuf` is handed to the HTTP/2 unit.
    pub(super) switch_to_h2: bool,
    /// Where heads are written, and the head kept while the next answer's
    /// inputs are the same (`http::h1::kept`).
    heads: Box<Heads>,
    /// The last answered request's buffers, for the next one's text.
    spare: Spare,
    /// The worker's turn this connection last read a body in, and how
    /// much of it was taken in that turn (`body.rs`'s share).
    slice: (Instant, u64),
}

impl Default for H1 {
    fn default() -> H1 {
        H1 {
            rbuf: BytesMut::new(),
            state: State::Idle,
            fresh: true,
            switch_to_h2: false,
            heads: Box::default(),
            spare: Spare::default(),
            slice: (Instant::now(), 0),
        }
    }
}

impl H1 {
    /// No request has been read on this connection yet.
    pub(super) fn is_fresh(&self) -> bool {
        self.fresh
    }

    /// No request in progress, nothing of the next one here.
    pub(super) fn is_idle(&self) -> bool {
        matches!(self.state, State::Idle) && self.rbuf.is_empty()
    }

    /// An answer waits for the io pool.
    pub(super) fn is_waiting(&self) -> bool {
        matches!(self.state, State::Opening(_) | State::Answering(_))
    }

    /// More pipelined requests are here and may be answered in the same
    /// write as the one just queued.
    pub(super) fn more_pipelined(&self, link: &Link) -> bool {
        !self.rbuf.is_empty() && link.out.queued() < BATCH_BYTES && !link.close_after
    }

    /// Everything queued was written: how long the client may take to send
    /// more.
    pub(super) fn written(&self, link: &mut Link, turn: &Turn<'_>) {
        let rt = turn.rt;
        if link.lingering {
            return;
        }
        link.deadline = match self.state {
            State::Idle if self.rbuf.is_empty() => {
                link.idle_since = turn.now;
                let keep = if turn.stopping {
                    rt.keepalive_timeout.min(super::super::worker::DRAIN_IDLE)
                } else {
                    rt.keepalive_timeout
                };
                turn.now + keep
            }
            State::Body(_) | State::Streaming(_) | State::Draining(_) => self.body_wait(turn),
            // The sink's work (a sync) has no clock of the client's.
            State::Answering(_) => super::sink::never(turn.now),
            _ => turn.now + rt.header_timeout,
        };
    }

    /// Moves the current request one step. `Ok(true)`: an answer was
    /// queued. `Ok(false)`: progress, go round again. `Err(next)`: stop here.
    pub(super) fn advance(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> Result<bool, Next> {
        let rt = turn.rt;
        match self.state {
            State::Body(_) => return self.read_whole(link, turn),
            State::Streaming(_) => return self.feed(link, turn),
            State::Draining(_) => return self.drain(link, turn),
            _ => {}
        }
        if self.fresh {
            if link.transport.alpn_h2() {
                self.switch_to_h2 = true;
                return Ok(false);
            }
            if rt.http2 && !link.transport.encrypts() {
                // h2c by prior knowledge: the preface decides (nginx's rule).
                let n = self.rbuf.len().min(PREFACE.len());
                if n > 0 && self.rbuf[..n] == PREFACE[..n] {
                    if n == PREFACE.len() {
                        self.switch_to_h2 = true;
                        return Ok(false);
                    }
                    self.read_more(link, turn)?;
                    return Ok(false);
                }
            }
        }
        match parse_head(&self.rbuf, rt.max_header_bytes, &mut self.spare) {
            Err(reject) => {
                self.refuse(link, turn, reject);
                Ok(true)
            }
            Ok(None) => {
                self.read_more(link, turn)?;
                Ok(false)
            }
            Ok(Some(head)) => {
                self.fresh = false;
                // A head with a body, or one whose route may take even an
                // empty body (any method but GET: a file written from no
                // bytes is still written), is decided first.
                if head.framing != Framing::None || !reads_only(&self.rbuf, &head) {
                    return self.with_body(link, turn, head);
                }
                // No body (nearly every GET): answered at once, the head
                // never boxed into a state.
                self.state = State::Idle;
                let head_bytes = self.rbuf.split_to(head.len).freeze();
                self.respond(link, turn, head, head_bytes);
                self.next_begun();
                Ok(true)
            }
        }
    }

    /// Bytes of the next request are already here (unless this one waits
    /// for its file to open: then they wait too): its head has begun.
    pub(super) fn next_begun(&mut self) {
        if matches!(self.state, State::Idle) && !self.rbuf.is_empty() {
            self.state = State::Head;
        }
    }

    /// Hands a request without a body to the answer pipeline.
    fn respond(&mut self, link: &mut Link, turn: &mut Turn<'_>, head: Head, head_bytes: Bytes) {
        let started = Instant::now();
        let may_keep = head.keep_alive && may_keep(turn);
        let mut req = head.request(head_bytes, Bytes::new(), link.peer.clone());
        req.client = link.client.clone();
        let progress = super::pipeline(turn, link, &mut req, may_keep);
        self.go_on(link, turn, req, progress, started);
    }

    /// Queues a decided answer, or sends the open it waits for to the pool.
    pub(super) fn go_on(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        req: Request,
        progress: Progress,
        started: Instant,
    ) {
        match progress {
            Progress::Ready(decided) => {
                self.queue(link, turn, &req, decided, started);
                self.spare.keep(req);
            }
            Progress::Open(job, waiting) => {
                link.open_on_pool(turn, job, 0);
                // Requests pipelined behind this one wait their turn.
                self.state = State::Opening(Box::new(Opening {
                    req,
                    waiting,
                    started,
                }));
            }
            Progress::Verify(check, waiting) => match link.verify_off_loop(turn, check, 0) {
                Ok(()) => {
                    self.state = State::Opening(Box::new(Opening {
                        req,
                        waiting,
                        started,
                    }))
                }
                Err(check) => {
                    let progress = waiting.verified(
                        &serving(turn, link),
                        &req,
                        *check,
                        Verdict::Busy,
                        &mut log_error(turn, link),
                    );
                    self.go_on(link, turn, req, progress, started);
                }
            },
        }
    }

    /// The io pool opened the file, or the verifier threads checked the
    /// credentials, an answer waits for.
    pub(super) fn resumed(&mut self, link: &mut Link, turn: &mut Turn<'_>, done: Done) {
        let State::Opening(pending) = std::mem::replace(&mut self.state, State::Idle) else {
            return;
        };
        let Opening {
            req,
            waiting,
            started,
        } = *pending;
        let progress = waiting.resume(&serving(turn, link), &req, done, &mut log_error(turn, link));
        self.go_on(link, turn, req, progress, started);
        self.next_begun();
    }

    /// Queues an answer's head and body, and the marker that logs it.
    pub(super) fn queue(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        req: &Request,
        decided: Answer,
        started: Instant,
    ) {
        let Answer {
            resp,
            length,
            payload,
            close,
            user: decided_user,
        } = super::readable(link, turn, req, decided);
        // A body without a length on HTTP/1.0 ends with the connection.
        let unframed = length == UNKNOWN_LENGTH && !bodiless(resp.status());
        let close = close || (unframed && req.version == Version::Http10);
        let body = match &payload {
            Payload::Memory(b) | Payload::Mapped(b) | Payload::Kept(b) => &b[..],
            _ => &[],
        };
        let head = self.heads.head(
            body,
            Inputs {
                resp: &resp,
                length,
                date: turn.date,
                close,
                version: req.version,
            },
        );
        link.out.push(head);
        let vehicle = payload.vehicle();
        let bytes = payload.len();
        match payload {
            Payload::None => {}
            Payload::Memory(b) | Payload::Mapped(b) | Payload::Kept(b) => link.out.push(b),
            Payload::File {
                file,
                start,
                end,
                vehicle,
            } => link
                .out
                .push_file(FileSend::new(file, start, end, vehicle, req.path())),
            Payload::Produced(mut sending) => {
                sending.count_in(&turn.shared.stats.produced);
                let chunked = unframed && req.version != Version::Http10;
                link.out.push_produced(sending, chunked);
            }
        }
        let (referer, user_agent) = access::quoted(turn, req);
        link.out.end(Sent {
            head: req.fields.clone(),
            method: req.method.clone(),
            target: req.target.clone(),
            version: req.version.log_name(),
            referer,
            user_agent,
            status: resp.status(),
            bytes,
            vehicle,
            started,
            client: req.client.clone(),
            user: decided_user,
            received: req.received(),
        });
        link.close_after |= close;
        // From here the client has send-timeout to take each part of it.
        link.deadline = turn.now + turn.rt.send_timeout;
    }

    /// Answers a request that cannot be served with its status, then closes.
    pub(super) fn refuse(&mut self, link: &mut Link, turn: &mut Turn<'_>, reject: Reject) {
        let page = Response::status_page(reject.status);
        self.refuse_with(link, turn, reject, page);
    }

    /// [`H1::refuse`] with a page of its own.
    fn refuse_with(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        reject: Reject,
        mut resp: Response,
    ) {
        link.advertise(&mut resp);
        let (length, body) = resp.memory_body();
        let head = self.heads.write(Inputs {
            resp: &resp,
            length,
            date: turn.date,
            close: true,
            version: Version::Http11,
        });
        link.out.push(head);
        link.out.push(body);
        turn.shared.stats.status(reject.status);
        if turn.shared.logs.access.is_on() {
            access::refused(turn, &link.client, &self.rbuf, reject);
        }
        self.state = State::Idle;
        self.rbuf.clear();
        link.close_after = true;
        link.deadline = turn.now + turn.rt.send_timeout;
    }

    /// Reads what the transport has. `Err(Wait)` when it has nothing yet,
    /// `Err(Close)` at EOF or on an error.
    /// [`super::Conn::prefetch`]: reads where [`H1::advance`] would read
    /// next (nothing of a request here, or part of a head), when nothing
    /// waits to be written.
    pub(super) fn prefetch(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> Result<(), Next> {
        let between = matches!(self.state, State::Idle) && self.rbuf.is_empty();
        if (between || matches!(self.state, State::Head))
            && link.out.is_empty()
            && !self.switch_to_h2
        {
            self.read_more(link, turn)?;
        }
        Ok(())
    }

    pub(super) fn read_more(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> Result<(), Next> {
        match link.read(turn, &mut self.rbuf)? {
            Input::PlainOnTls => {
                if let Some(tls) = &turn.shared.tls {
                    tls.counters.plain_http.fetch_add(1, Relaxed);
                }
                self.refuse_with(
                    link,
                    turn,
                    Reject {
                        status: 400,
                        why: "plain HTTP on the TLS port",
                    },
                    Response::plain_http_on_tls_port(),
                );
            }
            _ => {
                if let State::Idle = self.state {
                    // The next request has begun: its head has header-timeout.
                    self.state = State::Head;
                    link.deadline = turn.now + turn.rt.header_timeout;
                }
            }
        }
        Ok(())
    }
}

/// Whether answers on this connection may keep it open, as far as the
/// server is concerned (the request has its say too).
/// Whether the head's method is GET. A `HEAD` is decided as a head too:
/// the tus endpoint answers it off the workers (`spec/site.md`,
/// "Resumable uploads").
fn reads_only(rbuf: &[u8], head: &Head) -> bool {
    &rbuf[head.text.method.clone()] == b"GET"
}

fn may_keep(turn: &Turn<'_>) -> bool {
    !turn.stopping && !turn.rt.keepalive_timeout.is_zero()
}

/// Writes an error an answer hides from its client to the error log.
pub(super) fn log_error<'a>(turn: &'a Turn<'_>, link: &'a Link) -> impl FnMut(&Request, &str) + 'a {
    log_error_by(turn, &link.peer)
}

/// The error log's line for a request from `peer`, whatever carried it.
pub(super) fn log_error_by<'a>(
    turn: &'a Turn<'_>,
    peer: &'a crate::http::Peer,
) -> impl FnMut(&Request, &str) + 'a {
    move |req, e| {
        turn.shared.logs.error(format_args!(
            "{} {} {}: {e}",
            peer,
            req.method(),
            req.target()
        ))
    }
}

/// The HTTP/1.1 connection's turn.
pub(super) fn drive(proto: &mut H1, link: &mut Link, turn: &mut Turn<'_>) -> Next {
    let mut budget = turn.rt.send_file_max_chunk as usize;
    let slice_end = Instant::now() + super::SLICE;
    let mut requests = 0;
    // The protocol has more pipelined requests to answer: their answers
    // are queued behind this one and written together (the flush is
    // skipped once). Any other way out of the loop flushes first.
    let mut gather = false;
    loop {
        if link.close_now {
            return Next::Close;
        }
        let gathered = std::mem::take(&mut gather);
        if !link.out.is_empty() && !gathered {
            match link.flush(turn, &mut budget, slice_end) {
                Ok(Flushed::All) => proto.written(link, turn),
                Ok(Flushed::Blocked) => {
                    // A producer's clock-free wait is over: the client has
                    // send-timeout to take what it gave.
                    link.deadline = link.deadline.min(turn.now + turn.rt.send_timeout);
                    return Next::Wait;
                }
                Ok(Flushed::Waiting) => return Next::Wait,
                // The producer has nothing yet: no clock runs on the
                // client meanwhile (an event stream may be quiet for long).
                Ok(Flushed::Producing) => {
                    // A client that left while the producer has nothing is
                    // noticed now, not at the next write (an event stream
                    // may be quiet for hours): its producer is cancelled.
                    if link.transport.peer_closed() {
                        return Next::Close;
                    }
                    link.deadline = super::sink::never(turn.now);
                    return Next::Wait;
                }
                Ok(Flushed::Budget) => return Next::Yield,
                Ok(Flushed::Cold { offset, len }) => {
                    if let Some(file) = link.out.front_file() {
                        link.read_on_pool(turn, file, offset, len, 0);
                    }
                    return Next::Wait;
                }
                Err(e) => {
                    link.log_send_error(turn, e);
                    return Next::Close;
                }
            }
        }
        // What the transport still holds goes out before anything else.
        match link.transport.push() {
            Ok(true) => {}
            Ok(false) => return Next::Wait,
            Err(_) => return Next::Close,
        }
        if link.close_after || link.lingering {
            return super::link::close_gently(link, turn);
        }
        // Leaving the loop with gathered answers unwritten: write them.
        let unwritten = gathered && !link.out.is_empty();
        if proto.is_waiting() || requests >= super::BATCH_REQUESTS {
            if unwritten {
                continue;
            }
            return match proto.is_waiting() {
                true => Next::Wait,
                false => Next::Yield,
            };
        }
        match proto.advance(link, turn) {
            Ok(true) => {
                requests += 1;
                gather = requests < super::BATCH_REQUESTS && proto.more_pipelined(link);
            }
            Ok(false) if proto.switch_to_h2 => return Next::Wait,
            Ok(false) => {}
            Err(_) if unwritten => continue,
            Err(next) => return next,
        }
    }
}
