//! One connection's state machine: read a head, read or refuse its body, run
//! the handler, queue the response, write it; again, in order, until the
//! client or a limit ends it.

use super::chunked::Chunked;
use super::file::{self, File, Plan, Prepared, Step, Target};
use super::out::{Flushed, Out, PlainWire, SendError, Sent, COLD_READ};
use super::parse::{parse_head, Framing, Head, Reject};
use super::request::{Request, Version};
use super::response::{write_head, Body, Response};
use super::server::Shared;
use crate::fs::{self as nfs, Opened};
use crate::rt::log::{AccessEntry, RequestLine};
use crate::rt::pool::Mailbox;
use crate::rt::AccessLogFormat;
use crate::send::{FileSend, Vehicle};
use crate::tls::{Input, Session, TlsWire};
use bytes::{Bytes, BytesMut};
use rustix::io::Errno;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The largest request body read into memory; past it, 413 and close.
pub(crate) const MAX_BODY: usize = 1 << 20;
/// How long a closing connection keeps draining what the client still sends,
/// so its last response is not destroyed by a reset.
const LINGER: Duration = Duration::from_secs(2);
/// Pipelined responses gathered before they are written together.
const BATCH_BYTES: usize = 64 << 10;
/// Requests one connection may run in one loop turn before others go.
const BATCH_REQUESTS: usize = 32;
const READ_CHUNK: usize = 16 << 10;
/// The most of a refused request line the access log shows.
const MAX_LOGGED_LINE: usize = 1024;
/// The longest one connection writes in one loop turn (besides the
/// `send-file-max-chunk` byte bound) before the worker serves the others.
const SLICE: Duration = Duration::from_micros(200);

/// What the worker should do with the connection next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// A syscall said EAGAIN: wait for epoll.
    Wait,
    /// Work remains, but this turn's share is used: run again next turn.
    Yield,
    Close,
}

enum State {
    /// Between requests: nothing of the next one has arrived.
    Idle,
    /// Part of a head has arrived.
    Head,
    /// A head is parsed and its body is still arriving.
    Body(Box<Head>, BodyRead),
    /// A file response waits for its open on the io pool.
    Opening(Box<Opening>),
    /// The last response is out; draining the client's input before closing.
    Lingering,
}

/// A request whose file is being opened on the io pool.
struct Opening {
    req: Request,
    user: Response,
    file: File,
    /// What resolving carries across the open.
    then: file::Then,
    close: bool,
    started: Instant,
}

/// What the io pool sends back to a worker, for one connection.
pub(crate) enum IoDone {
    Opened {
        slot: usize,
        conn: u64,
        name: Target,
        result: Result<Opened, nfs::Error>,
    },
    Read {
        slot: usize,
        conn: u64,
        result: Result<Vec<u8>, Errno>,
    },
}

impl IoDone {
    pub(crate) fn target(&self) -> (usize, u64) {
        match self {
            IoDone::Opened { slot, conn, .. } | IoDone::Read { slot, conn, .. } => (*slot, *conn),
        }
    }
}

enum BodyRead {
    Length(usize),
    Chunked(Chunked),
}

/// What the worker lends a connection for one turn.
pub(crate) struct Turn<'a> {
    pub shared: &'a Arc<Shared>,
    pub date: &'a [u8],
    pub access: &'a mut Vec<u8>,
    pub now: Instant,
    pub stopping: bool,
    /// Where the io pool posts results for this worker.
    pub mailbox: &'a Arc<Mailbox<IoDone>>,
    /// This connection's slot in the worker.
    pub slot: usize,
}

pub(crate) struct Conn {
    /// Unique in its worker: io results for a closed connection whose slot
    /// was reused are recognised and dropped.
    id: u64,
    fd: OwnedFd,
    /// The TLS session in front of the socket, on an HTTPS listener.
    tls: Option<Box<Session>>,
    /// No request has been answered yet.
    fresh: bool,
    peer: SocketAddr,
    rbuf: BytesMut,
    out: Out,
    state: State,
    deadline: Instant,
    /// Close once everything queued is written.
    close_after: bool,
    /// Close at once: a file body failed after its head went out.
    close_now: bool,
    /// When the connection last began to wait for a request (accepted, or
    /// its last response written): the oldest idle one is closed first
    /// when the server is full.
    idle_since: Instant,
    /// The last read returned less than it was offered: the socket had no
    /// more. Edge-triggered epoll reports the next arrival, so no read is
    /// tried (and no `EAGAIN` paid) until then.
    drained: bool,
    /// epoll reported the peer's FIN (`EPOLLRDHUP`, often in the same edge
    /// as its last bytes): a short read no longer means "wait for the next
    /// edge" (none will come), so reads go on to EOF (nginx's
    /// `pending_eof`).
    peer_closed: bool,
}

enum Read {
    Data,
    Eof,
    Blocked,
}

impl Conn {
    pub(crate) fn new(
        id: u64,
        fd: OwnedFd,
        tls: Option<Box<Session>>,
        peer: SocketAddr,
        now: Instant,
        shared: &Shared,
    ) -> Conn {
        Conn {
            id,
            fd,
            tls,
            fresh: true,
            peer,
            rbuf: BytesMut::new(),
            out: Out::default(),
            state: State::Idle,
            // The first request's head must arrive within header-timeout.
            deadline: now + shared.rt.header_timeout,
            close_after: false,
            close_now: false,
            idle_since: now,
            drained: false,
            peer_closed: false,
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// epoll said the socket is readable (or closed): read again. `closed`:
    /// it also said the peer has closed its end.
    pub(crate) fn readable(&mut self, closed: bool) {
        self.drained = false;
        self.peer_closed |= closed;
    }

    /// Idle: no request in progress and nothing to write.
    pub(crate) fn is_idle(&self) -> bool {
        matches!(self.state, State::Idle)
            && self.out.is_empty()
            && self.rbuf.is_empty()
            && !self.tls.as_ref().is_some_and(|t| t.pending())
    }

    /// Since when it has been idle (waiting for a request, nothing of it
    /// arrived, nothing to write), if it is.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        self.is_idle().then_some(self.idle_since)
    }

    /// Whether this connection came through the TLS listener and still
    /// speaks TLS.
    pub(crate) fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Runs the connection as far as it can go without waiting.
    pub(crate) fn drive(&mut self, turn: &mut Turn<'_>) -> Next {
        let mut budget = turn.shared.rt.send_file_max_chunk as usize;
        let slice_end = Instant::now() + SLICE;
        let mut requests = 0;
        loop {
            if self.close_now {
                return Next::Close;
            }
            if !self.out.is_empty() {
                match self.flush(turn, &mut budget, slice_end) {
                    Ok(Flushed::All) => {}
                    Ok(Flushed::Blocked | Flushed::Waiting) => return Next::Wait,
                    Ok(Flushed::Budget) => return Next::Yield,
                    Ok(Flushed::Cold { offset, len }) => {
                        self.read_on_pool(turn, offset, len);
                        return Next::Wait;
                    }
                    Err(e) => {
                        self.log_send_error(turn, e);
                        return Next::Close;
                    }
                }
            }
            // Records the session still holds go out before anything else.
            if let Some(tls) = &mut self.tls {
                match tls.push(self.fd.as_fd()) {
                    Ok(true) => {}
                    Ok(false) => return Next::Wait,
                    Err(_) => return Next::Close,
                }
            }
            if self.close_after && !matches!(self.state, State::Lingering) {
                if let Some(tls) = &mut self.tls {
                    tls.close_notify();
                    match tls.push(self.fd.as_fd()) {
                        Ok(true) => {}
                        Ok(false) => return Next::Wait,
                        Err(_) => return Next::Close,
                    }
                }
                let _ = rustix::net::shutdown(&self.fd, rustix::net::Shutdown::Write);
                self.state = State::Lingering;
                self.deadline = turn.now + LINGER;
            }
            match self.state {
                State::Lingering => return self.drain(),
                State::Opening(_) => return Next::Wait,
                _ => {}
            }
            if turn.stopping && self.is_idle() {
                return Next::Close;
            }
            if requests >= BATCH_REQUESTS {
                return Next::Yield;
            }
            match self.advance(turn) {
                Ok(true) => {
                    requests += 1;
                    // Gather pipelined responses into one write.
                    let more = !self.rbuf.is_empty()
                        && self.out.queued() < BATCH_BYTES
                        && !self.close_after;
                    if more {
                        continue;
                    }
                }
                Ok(false) => {}
                Err(next) => return next,
            }
        }
    }

    /// Called when the deadline passed: a slow head, an idle keep-alive, a
    /// reader that stopped reading, or a linger that ran out.
    pub(crate) fn expired(&self, now: Instant) -> bool {
        now >= self.deadline
    }

    /// An answer is partly out and the client has not taken the rest: past
    /// the deadline, this is a send timeout (the client stopped reading, or
    /// reads slower than the socket drains), not an idle or slow client.
    pub(crate) fn is_sending(&self) -> bool {
        !matches!(self.state, State::Lingering)
            && (!self.out.is_empty() || self.tls.as_ref().is_some_and(|t| t.pending()))
    }

    pub(crate) fn peer(&self) -> SocketAddr {
        self.peer
    }

    fn flush(
        &mut self,
        turn: &mut Turn<'_>,
        budget: &mut usize,
        slice_end: Instant,
    ) -> Result<Flushed, SendError> {
        let mut progress = false;
        let access = &mut *turn.access;
        let log_on = turn.shared.logs.access.is_on();
        let format = turn.shared.logs.format;
        let stats = &turn.shared.stats;
        let peer = self.peer;
        let tls = self.tls.is_some();
        let done = |sent: Box<Sent>| {
            stats.record(sent.vehicle, sent.bytes, tls);
            stats.status(sent.status);
            if log_on {
                log_sent(access, format, peer, &sent, tls, Instant::now());
            }
        };
        let fd = self.fd.as_fd();
        let r = match &mut self.tls {
            Some(session) => {
                let mut wire = TlsWire { fd, session };
                self.out
                    .flush(&mut wire, budget, slice_end, &mut progress, done)
            }
            None => self
                .out
                .flush(&mut PlainWire(fd), budget, slice_end, &mut progress, done),
        };
        if progress {
            self.deadline = turn.now + turn.shared.rt.send_timeout;
        }
        if let Ok(Flushed::All) = r {
            self.set_wait_deadline(turn);
        }
        r
    }

    /// After the queue drained: how long the client may take to send more.
    fn set_wait_deadline(&mut self, turn: &Turn<'_>) {
        let rt = &turn.shared.rt;
        self.deadline = match self.state {
            State::Idle if self.rbuf.is_empty() => {
                self.idle_since = turn.now;
                turn.now + rt.keepalive_timeout
            }
            State::Lingering => self.deadline,
            _ => turn.now + rt.header_timeout,
        };
    }

    /// Reads and discards until EOF; then the connection can close.
    fn drain(&mut self) -> Next {
        let mut sink = [0u8; 4096];
        loop {
            match rustix::io::read(&self.fd, &mut sink) {
                Ok(0) => return Next::Close,
                Ok(_) => continue,
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => return Next::Wait,
                Err(_) => return Next::Close,
            }
        }
    }

    /// Moves the current request one step. `Ok(true)`: a response was
    /// queued. `Ok(false)`: progress, go round again. `Err(next)`: stop here.
    fn advance(&mut self, turn: &mut Turn<'_>) -> Result<bool, Next> {
        let rt = &turn.shared.rt;
        if let State::Body(..) = self.state {
            return self.advance_body(turn);
        }
        if self.fresh && !self.is_tls() && self.rbuf.first() == Some(&TLS_HANDSHAKE) {
            // A TLS client on a plain port: it would not understand an
            // HTTP answer, so none is sent.
            return Err(Next::Close);
        }
        match parse_head(&self.rbuf, rt.max_header_bytes) {
            Err(reject) => {
                self.refuse(turn, reject);
                Ok(true)
            }
            Ok(None) => {
                self.read_more(turn)?;
                Ok(false)
            }
            Ok(Some(head)) => {
                let body = match head.framing {
                    Framing::None => BodyRead::Length(0),
                    Framing::Length(n) if n > MAX_BODY as u64 => {
                        self.refuse(
                            turn,
                            Reject {
                                status: 413,
                                why: "request body larger than allowed",
                            },
                        );
                        return Ok(true);
                    }
                    Framing::Length(n) => BodyRead::Length(n as usize),
                    Framing::Chunked => {
                        BodyRead::Chunked(Chunked::new(MAX_BODY, rt.max_header_bytes))
                    }
                };
                let waiting = match &body {
                    BodyRead::Length(n) => self.rbuf.len() < head.len + n,
                    BodyRead::Chunked(_) => true,
                };
                if head.expect_continue && waiting {
                    self.out
                        .push(Bytes::from_static(b"HTTP/1.1 100 Continue\r\n\r\n"));
                }
                self.state = State::Body(Box::new(head), body);
                self.advance_body(turn)
            }
        }
    }

    fn advance_body(&mut self, turn: &mut Turn<'_>) -> Result<bool, Next> {
        let State::Body(head, body) = &mut self.state else {
            return Ok(false);
        };
        let body_end = match body {
            BodyRead::Length(n) => {
                let end = head.len + *n;
                (self.rbuf.len() >= end).then_some(end)
            }
            BodyRead::Chunked(dec) => {
                let from = head.len + dec.consumed;
                match dec.feed(&self.rbuf[from..]) {
                    Ok(true) => Some(head.len + dec.consumed),
                    Ok(false) => None,
                    Err(reject) => {
                        self.refuse(turn, reject);
                        return Ok(true);
                    }
                }
            }
        };
        let Some(end) = body_end else {
            if !self.out.is_empty() {
                // A 100 Continue waits to be written first.
                return Ok(false);
            }
            self.read_more(turn)?;
            self.deadline = turn.now + turn.shared.rt.header_timeout;
            return Ok(false);
        };
        let State::Body(head, body) = std::mem::replace(&mut self.state, State::Idle) else {
            unreachable!("checked above");
        };
        let head_bytes = self.rbuf.split_to(head.len).freeze();
        let body = match body {
            BodyRead::Length(n) => self.rbuf.split_to(n).freeze(),
            BodyRead::Chunked(dec) => {
                let _ = self.rbuf.split_to(end - head.len);
                Bytes::from(dec.body)
            }
        };
        self.respond(turn, *head, head_bytes, body);
        // Bytes of the next request are already here (unless this one
        // waits for its file to open: then they wait too).
        if matches!(self.state, State::Idle) && !self.rbuf.is_empty() {
            self.state = State::Head;
        }
        Ok(true)
    }

    /// Routes the request, runs its handler, queues the response.
    fn respond(&mut self, turn: &mut Turn<'_>, head: Head, head_bytes: Bytes, body: Bytes) {
        let started = Instant::now();
        let keep_alive = head.keep_alive;
        let mut req = Request::new(head_bytes, head, body, self.peer);
        let resp = super::app::route(&turn.shared.router, &mut req);
        self.log_error(turn, &req, &resp);
        let mut resp = super::app::hide_error(resp);
        let asked_close = resp
            .get_header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let keep = keep_alive
            && !turn.stopping
            && !asked_close
            && !turn.shared.rt.keepalive_timeout.is_zero();
        let close = !keep;
        match std::mem::replace(&mut resp.body, Body::Empty) {
            Body::File(f) => {
                let step = file::begin(&**turn.shared, &req, &resp, &f);
                let pending = Opening {
                    req,
                    user: resp,
                    file: *f,
                    then: file::Then::default(),
                    close,
                    started,
                };
                self.file_step(turn, step, pending);
                return;
            }
            // Under TLS rustls reads the body in user mode: a program's
            // mapping is copied by the kernel first, where a file cut short
            // is an error and not SIGBUS.
            Body::Mapped(b) if self.tls.is_some() => match crate::send::guarded_copy(&b) {
                Ok(copy) => resp.body = Body::Bytes(Bytes::from(copy)),
                Err(e) => {
                    let failed = Response::internal_error(format!(
                        "the mapped body could not be read ({}); did its file shrink?",
                        std::io::Error::from(e)
                    ));
                    self.log_error(turn, &req, &failed);
                    resp = Response::status_page(500);
                }
            },
            body => resp.body = body,
        }
        let length = resp.body.len();
        let prepared = Prepared {
            resp,
            length,
            plan: Plan::None,
        };
        self.queue(turn, &req, prepared, close, started);
    }

    /// Queues a resolved file response, or sends its open to the io pool.
    fn file_step(&mut self, turn: &mut Turn<'_>, step: Step, mut pending: Opening) {
        match step {
            Step::Ready(prepared) => {
                self.log_error(turn, &pending.req, &prepared.resp);
                self.queue(turn, &pending.req, prepared, pending.close, pending.started);
            }
            Step::Open(name, then) => {
                pending.then = then;
                turn.shared
                    .stats
                    .pool_opens
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let root = pending.file.root.clone();
                let mailbox = turn.mailbox.clone();
                let (slot, conn) = (turn.slot, self.id);
                turn.shared.pool.submit(move || {
                    let result = root.open(&name);
                    mailbox.post(IoDone::Opened {
                        slot,
                        conn,
                        name,
                        result,
                    });
                });
                // Requests pipelined behind this one wait their turn.
                self.state = State::Opening(Box::new(pending));
                self.deadline = turn.now + turn.shared.rt.send_timeout;
            }
        }
    }

    /// A result from the io pool for this connection.
    pub(crate) fn io_done(&mut self, turn: &mut Turn<'_>, done: IoDone) {
        match done {
            IoDone::Opened { name, result, .. } => {
                let State::Opening(mut pending) = std::mem::replace(&mut self.state, State::Idle)
                else {
                    return;
                };
                let then = std::mem::take(&mut pending.then);
                let step = file::opened(
                    &**turn.shared,
                    &pending.req,
                    &pending.user,
                    &pending.file,
                    name,
                    then,
                    result,
                );
                self.file_step(turn, step, *pending);
                if let State::Idle = self.state {
                    if !self.rbuf.is_empty() {
                        self.state = State::Head;
                    }
                }
            }
            IoDone::Read { result, .. } => {
                if let Err(e) = self.out.fill(result) {
                    self.log_send_error(turn, e);
                    self.close_now = true;
                }
            }
        }
    }

    /// Reads cold file pages on the io pool (D9); the send resumes when they
    /// arrive.
    fn read_on_pool(&mut self, turn: &mut Turn<'_>, offset: u64, len: usize) {
        let Some(file) = self.out.front_file() else {
            return;
        };
        turn.shared
            .stats
            .cold_reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mailbox = turn.mailbox.clone();
        let (slot, conn) = (turn.slot, self.id);
        let len = len.min(COLD_READ);
        turn.shared.pool.submit(move || {
            let mut data = vec![0u8; len];
            let mut got = 0;
            let result = loop {
                match crate::send::pread(&file, &mut data[got..], offset + got as u64) {
                    Ok(0) => break Ok(()),
                    Ok(n) => {
                        got += n;
                        if got == len {
                            break Ok(());
                        }
                    }
                    Err(e) => break Err(e),
                }
            };
            data.truncate(got);
            mailbox.post(IoDone::Read {
                slot,
                conn,
                result: result.map(|()| data),
            });
        });
    }

    fn log_send_error(&self, turn: &Turn<'_>, e: SendError) {
        if let SendError::File {
            name,
            sent,
            promised,
            cause,
        } = e
        {
            turn.shared
                .stats
                .truncated
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let why = match cause {
                None => "the file ended early (truncated?)".to_owned(),
                Some(errno) => format!("{}", std::io::Error::from(errno)),
            };
            turn.shared.logs.error(format_args!(
                "{}: sending {name:?}: {why}; sent {sent} of {promised} bytes, connection closed",
                self.peer
            ));
        }
    }

    fn log_error(&self, turn: &Turn<'_>, req: &Request, resp: &Response) {
        if let Some(e) = &resp.log_error {
            turn.shared.logs.error(format_args!(
                "{} {} {}: {e}",
                self.peer,
                req.method(),
                req.target()
            ));
        }
    }

    /// Queues a response's head and body, and the marker that logs it.
    fn queue(
        &mut self,
        turn: &mut Turn<'_>,
        req: &Request,
        p: Prepared,
        close: bool,
        started: Instant,
    ) {
        let Prepared { resp, length, plan } = p;
        let version = req.version;
        let mut head = Vec::with_capacity(256);
        let keep_alive_10 = version == Version::Http10 && !close;
        write_head(&mut head, &resp, length, turn.date, close, keep_alive_10);
        self.out.push(Bytes::from(head));
        let send_body = !req.is_head() && !super::response::bodiless(resp.status);
        let (vehicle, bytes) = match (send_body, plan, resp.body) {
            (false, _, _) => (Vehicle::Memory, 0),
            (true, Plan::Kept(b), _) => {
                let n = b.len() as u64;
                self.out.push(b);
                (Vehicle::Kept, n)
            }
            (
                true,
                Plan::File {
                    file,
                    start,
                    end,
                    vehicle,
                },
                _,
            ) => {
                self.out
                    .push_file(FileSend::new(file, start, end, vehicle, req.path()));
                (vehicle, end - start)
            }
            (true, Plan::None, Body::Bytes(b) | Body::Mapped(b)) => {
                let n = b.len() as u64;
                self.out.push(b);
                (Vehicle::Memory, n)
            }
            (true, Plan::None, _) => (Vehicle::Memory, 0),
        };
        self.fresh = false;
        self.out.end(Sent {
            head: req.head.clone(),
            method: req.method.clone(),
            target: req.target.clone(),
            version: match version {
                Version::Http10 => "HTTP/1.0",
                Version::Http11 => "HTTP/1.1",
            },
            referer: req.header_range("referer"),
            user_agent: req.header_range("user-agent"),
            status: resp.status,
            bytes,
            vehicle,
            started,
        });
        self.close_after |= close;
        // From here the client has send-timeout to take each part of it.
        self.deadline = turn.now + turn.shared.rt.send_timeout;
    }

    /// Answers a request that cannot be served with its status, then closes.
    fn refuse(&mut self, turn: &mut Turn<'_>, reject: Reject) {
        let page = Response::status_page(reject.status);
        self.refuse_with(turn, reject, page);
    }

    /// [`Conn::refuse`] with a page of its own.
    fn refuse_with(&mut self, turn: &mut Turn<'_>, reject: Reject, resp: Response) {
        let mut head = Vec::with_capacity(160);
        write_head(&mut head, &resp, resp.body.len(), turn.date, true, false);
        self.out.push(Bytes::from(head));
        if let Body::Bytes(b) = resp.body {
            self.out.push(b);
        }
        turn.shared.stats.status(reject.status);
        if turn.shared.logs.access.is_on() {
            // nginx logs what came of the request line; so does this.
            let line = self.rbuf[..]
                .split(|&b| b == b'\n')
                .next()
                .unwrap_or_default();
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            AccessEntry {
                peer: self.peer,
                request: RequestLine::Refused {
                    line: &line[..line.len().min(MAX_LOGGED_LINE)],
                    why: reject.why,
                },
                status: reject.status,
                bytes: 0,
                referer: None,
                user_agent: None,
                duration: Duration::ZERO,
                vehicle: None,
            }
            .append_to(turn.access, turn.shared.logs.format);
        }
        self.state = State::Idle;
        self.rbuf.clear();
        self.close_after = true;
        self.deadline = turn.now + turn.shared.rt.send_timeout;
    }

    /// Reads what the socket has. `Err(Wait)` when it has nothing yet,
    /// `Err(Close)` at EOF or on an error.
    fn read_more(&mut self, turn: &mut Turn<'_>) -> Result<(), Next> {
        match self.read(turn)? {
            Read::Data => {
                if let State::Idle = self.state {
                    // The next request has begun: its head has header-timeout.
                    self.state = State::Head;
                    self.deadline = turn.now + turn.shared.rt.header_timeout;
                }
                Ok(())
            }
            Read::Eof => Err(Next::Close),
            Read::Blocked => Err(Next::Wait),
        }
    }

    fn read(&mut self, turn: &mut Turn<'_>) -> Result<Read, Next> {
        if self.tls.is_some() {
            return self.read_tls(turn);
        }
        if self.drained {
            return Ok(Read::Blocked);
        }
        if self.rbuf.capacity() - self.rbuf.len() < READ_CHUNK / 4 {
            self.rbuf.reserve(READ_CHUNK);
        }
        loop {
            let spare = self.rbuf.spare_capacity_mut();
            let offered = spare.len();
            match rustix::io::read(&self.fd, spare) {
                Ok(([], _)) => return Ok(Read::Eof),
                Ok((filled, _)) => {
                    let n = filled.len();
                    self.drained = n < offered && !self.peer_closed;
                    // SAFETY: the kernel initialised `n` bytes of the spare
                    // capacity that `read` was given.
                    unsafe { self.rbuf.set_len(self.rbuf.len() + n) };
                    return Ok(Read::Data);
                }
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => {
                    self.drained = true;
                    return Ok(Read::Blocked);
                }
                Err(_) => return Err(Next::Close),
            }
        }
    }
}

/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE: u8 = 0x16;

impl Conn {
    /// Reads through the TLS session: ciphertext until the socket is empty,
    /// plaintext into `rbuf`.
    fn read_tls(&mut self, turn: &mut Turn<'_>) -> Result<Read, Next> {
        let Some(session) = &mut self.tls else {
            return Ok(Read::Blocked);
        };
        let input = session.read(
            self.fd.as_fd(),
            &mut self.rbuf,
            &mut self.drained,
            self.peer_closed,
        );
        if let (Some(kind), Some(tls)) = (session.established(), &turn.shared.tls) {
            let counter = match kind {
                rustls::HandshakeKind::Resumed => &tls.counters.resumed,
                _ => &tls.counters.full,
            };
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        match input {
            Input::Data => Ok(Read::Data),
            Input::Blocked => Ok(Read::Blocked),
            Input::Eof | Input::Broken => Err(Next::Close),
            Input::Failed { error, handshake } => {
                // The alert rustls queued goes out if the socket takes it.
                let _ = session.push(self.fd.as_fd());
                if let Some(tls) = &turn.shared.tls {
                    let stage = if handshake { "handshake" } else { "session" };
                    if let Some(unlogged) = tls.failure_to_log() {
                        turn.shared.logs.error(format_args!(
                            "{}: TLS {stage} failed: {error} ({unlogged} more failures not logged since the last line)",
                            self.peer
                        ));
                    }
                }
                Err(Next::Close)
            }
            Input::PlainHttp => {
                self.tls = None;
                if let Some(tls) = &turn.shared.tls {
                    tls.counters
                        .plain_http
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                self.refuse_with(
                    turn,
                    Reject {
                        status: 400,
                        why: "plain HTTP on the TLS port",
                    },
                    Response::plain_http_on_tls_port(),
                );
                // The refusal is queued: go round to write it, then close.
                Ok(Read::Data)
            }
        }
    }
}

fn log_sent(
    out: &mut Vec<u8>,
    format: AccessLogFormat,
    peer: SocketAddr,
    sent: &Sent,
    tls: bool,
    now: Instant,
) {
    let bytes = |r: &std::ops::Range<usize>| sent.head.get(r.clone()).unwrap_or_default();
    AccessEntry {
        peer,
        request: RequestLine::Parsed {
            method: bytes(&sent.method),
            target: bytes(&sent.target),
            version: sent.version,
        },
        status: sent.status,
        bytes: sent.bytes,
        referer: sent.referer.as_ref().map(bytes),
        user_agent: sent.user_agent.as_ref().map(bytes),
        duration: now.saturating_duration_since(sent.started),
        vehicle: Some(match sent.vehicle {
            Vehicle::Kept if tls => "kept copy",
            v => v.name(),
        }),
    }
    .append_to(out, format);
}
