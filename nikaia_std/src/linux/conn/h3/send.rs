//! Answers onto HTTP/3 request streams: the HEADERS frame, then the body
//! as one DATA frame when its length is known (kept and in-memory bytes
//! handed to quinn as they are; a file's bytes read by `pread` a piece at
//! a time, cold pages on the io pool), or a DATA frame per piece a
//! producer gives. quinn takes what the stream's and the connection's
//! credit allow; the rest waits here, and the stream goes on when it is
//! writable again.

use super::super::access;
use super::{short, H3};
use crate::fs::OpenFile;
use crate::http::answer::{Answer, Payload, Waiting};
use crate::http::h3::conn::Refused;
use crate::http::h3::frame::Code;
use crate::http::h3::response::{data_head, head};
use crate::http::produce::{Next, Sending};
use crate::http::response::Response;
use crate::http::Request;
use crate::linux::out::{Sent, COLD_READ};
use crate::linux::send::{self, Residency};
use bytes::{Bytes, BytesMut};
use quinn_proto::{Connection, StreamId, VarInt, WriteError};
use rustix::io::Errno;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

/// A file is read this much at a time (one `pread`), once quinn took the
/// last piece.
const FILE_PIECE: usize = 64 << 10;

/// One stream's answer, from its head on.
pub(super) struct Body {
    pub stream: u64,
    pub(super) source: Source,
    /// Octets quinn has not taken yet, in order.
    pending: VecDeque<Bytes>,
    /// What the access log says once the last byte is handed on.
    sent: Option<Sent>,
    /// When the stream last had octets taken (its send-timeout).
    pub(super) progress: Instant,
    /// The answer to a malformed request: its stream is reset after it
    /// instead of finished.
    then_reset: bool,
}

pub(super) enum Source {
    /// The file is being opened (or credentials checked) off the loop.
    Opening(Box<(Request, Waiting, Instant)>),
    /// The sink the body went to answers once its work is done.
    Answering(Box<(Request, Instant)>),
    /// Nothing more to make: once `pending` is taken, the stream ends.
    Done,
    File(FileBody),
    Produced(Box<Sending>),
}

pub(super) struct FileBody {
    file: Arc<OpenFile>,
    offset: u64,
    end: u64,
    /// Up to where the page cache was last found warm.
    warm_to: u64,
    /// A read is on the io pool.
    waiting: bool,
    pub(super) name: Arc<str>,
}

impl Body {
    pub(super) fn opening(
        stream: u64,
        req: Request,
        waiting: Waiting,
        started: Instant,
        now: Instant,
    ) -> Body {
        Body::new(
            stream,
            Source::Opening(Box::new((req, waiting, started))),
            now,
        )
    }

    pub(super) fn answering(stream: u64, req: Request, started: Instant, now: Instant) -> Body {
        Body::new(stream, Source::Answering(Box::new((req, started))), now)
    }

    fn new(stream: u64, source: Source, now: Instant) -> Body {
        Body {
            stream,
            source,
            pending: VecDeque::new(),
            sent: None,
            progress: now,
            then_reset: false,
        }
    }

    pub(super) fn take_opening(&mut self) -> Option<(Request, Waiting, Instant)> {
        match std::mem::replace(&mut self.source, Source::Done) {
            Source::Opening(p) => Some(*p),
            other => {
                self.source = other;
                None
            }
        }
    }

    pub(super) fn take_answering(&mut self) -> Option<(Request, Instant)> {
        match std::mem::replace(&mut self.source, Source::Done) {
            Source::Answering(p) => Some(*p),
            other => {
                self.source = other;
                None
            }
        }
    }

    /// Whether the stream's send clock runs: not while the server works
    /// on its answer, nor while a producer has nothing to give.
    pub(super) fn clocked(&self) -> bool {
        match &self.source {
            Source::Opening(_) | Source::Answering(_) => false,
            Source::Produced(p) => !p.waiting || !self.pending.is_empty(),
            Source::File(f) => !f.waiting,
            Source::Done => true,
        }
    }
}

/// How writing a body's octets went.
enum Wrote {
    /// Everything so far is taken; more may be made.
    All,
    /// The stream (or the connection) has no credit: wait.
    Blocked,
    /// The client stopped the stream (with its code), or it is gone.
    Gone(Option<VarInt>),
}

impl H3 {
    /// Starts a decided answer: its HEADERS, and its body to follow.
    pub(super) fn respond(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
        req: &Request,
        decided: Answer,
        started: Instant,
    ) {
        let decided = super::super::user_mode(turn, &self.peer, true, req, decided);
        let Answer {
            resp,
            length,
            payload,
            user,
            ..
        } = decided;
        let sent = access::record(
            turn,
            req,
            resp.status(),
            &payload,
            user,
            started,
            "HTTP/3.0",
        );
        let mut body = Body::new(stream, Source::Done, turn.now);
        body.pending
            .push_back(Bytes::from(head(&resp, length, turn.date)));
        match payload {
            Payload::None => {}
            Payload::Memory(b) | Payload::Mapped(b) | Payload::Kept(b) => {
                if !b.is_empty() {
                    body.pending.push_back(data_frame_head(b.len() as u64));
                    body.pending.push_back(b);
                }
            }
            Payload::Produced(mut sending) => {
                sending.count_in(&turn.shared.stats.produced);
                body.source = Source::Produced(sending);
            }
            Payload::File {
                file, start, end, ..
            } => {
                if end > start {
                    body.pending.push_back(data_frame_head(end - start));
                    body.source = Source::File(FileBody {
                        file,
                        offset: start,
                        end,
                        warm_to: 0,
                        waiting: false,
                        name: Arc::from(req.path()),
                    });
                }
            }
        }
        body.sent = Some(sent);
        self.bodies.push(body);
        self.write_stream(conn, turn, stream);
    }

    /// A request refused before it reached the pipeline: its status page.
    pub(super) fn refuse(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
        refused: Refused,
    ) {
        let Refused { reject, reset } = refused;
        let resp = Response::status_page(reject.status);
        let (length, page) = resp.memory_body();
        turn.shared.stats.status(reject.status);
        if turn.shared.logs.access.is_on() {
            access::refused(turn, &self.peer, b"", reject);
        }
        let mut body = Body::new(stream, Source::Done, turn.now);
        body.pending
            .push_back(Bytes::from(head(&resp, length, turn.date)));
        if !page.is_empty() {
            body.pending.push_back(data_frame_head(page.len() as u64));
            body.pending.push_back(page);
        }
        body.then_reset = reset;
        self.bodies.push(body);
        self.write_stream(conn, turn, stream);
    }

    /// Writes one stream's answer as far as it goes now.
    fn write_stream(&mut self, conn: &mut Connection, turn: &mut super::Turn<'_>, stream: u64) {
        let mut budget = turn.rt.send_file_max_chunk as usize;
        if let Some(i) = self.bodies.iter().position(|b| b.stream == stream) {
            self.write_one(conn, turn, i, &mut budget);
        }
    }

    /// Hands each answer's octets to quinn as credit allows, making more
    /// (file pieces, produced pieces) as what was made is taken, within
    /// the turn's byte budget. Whether the budget ran out first.
    pub(super) fn write(&mut self, conn: &mut Connection, turn: &mut super::Turn<'_>) -> bool {
        let mut budget = turn.rt.send_file_max_chunk as usize;
        let mut i = 0;
        while i < self.bodies.len() {
            match self.write_one(conn, turn, i, &mut budget) {
                Some(true) => {
                    // Ended or gone: removed; `i` now holds the next one.
                }
                Some(false) | None => i += 1,
            }
            if budget == 0 {
                return true;
            }
        }
        false
    }

    /// Writes body `i` as far as it goes. `Some(true)`: it is over and was
    /// removed.
    fn write_one(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        i: usize,
        budget: &mut usize,
    ) -> Option<bool> {
        loop {
            let body = &mut self.bodies[i];
            if matches!(body.source, Source::Opening(_) | Source::Answering(_)) {
                return Some(false);
            }
            let sid = stream_id(body.stream)?;
            match write_pending(conn, sid, &mut body.pending, budget) {
                Wrote::Blocked => return Some(false),
                Wrote::Gone(Some(code)) => {
                    // Stopped by the client: our side is reset now; its
                    // Stopped event, which comes next, is counted then.
                    let _ = conn.send_stream(sid).reset(code);
                    self.bodies.swap_remove(i);
                    return Some(true);
                }
                Wrote::Gone(None) => {
                    self.bodies.swap_remove(i);
                    return Some(true);
                }
                Wrote::All => {}
            }
            body.progress = turn.now;
            if *budget == 0 {
                return Some(false);
            }
            // All taken: make more, or end.
            let made = match &mut body.source {
                Source::Done => return Some(self.finish(conn, turn, i)),
                Source::Opening(_) | Source::Answering(_) => return Some(false),
                Source::File(f) if f.waiting => return Some(false),
                Source::File(f) => match next_piece(f) {
                    Ok(Some(piece)) => piece,
                    Ok(None) if f.offset >= f.end => {
                        body.source = Source::Done;
                        continue;
                    }
                    Ok(None) => {
                        f.waiting = true;
                        let (file, offset) = (f.file.clone(), f.offset);
                        let len = ((f.end - f.offset) as usize).min(COLD_READ);
                        super::super::link::read_on_pool(
                            turn,
                            self.id,
                            file,
                            offset,
                            len,
                            short(body.stream),
                        );
                        return Some(false);
                    }
                    Err(e) => {
                        self.file_failed(conn, turn, i, e);
                        return Some(true);
                    }
                },
                Source::Produced(p) => {
                    let mut make = super::super::link::puller(turn, self.id, short(body.stream));
                    match p.next(FILE_PIECE, &mut make) {
                        // `next` never gives an empty piece; were it to, wait.
                        Next::Bytes(b) if b.is_empty() => return Some(false),
                        Next::Bytes(b) => {
                            body.pending.push_back(data_frame_head(b.len() as u64));
                            b
                        }
                        Next::End => {
                            if let Some(record) = &mut body.sent {
                                record.bytes = p.sent;
                            }
                            body.source = Source::Done;
                            continue;
                        }
                        Next::Wait => return Some(false),
                        Next::Fail(why) => {
                            self.produced_failed(conn, turn, i, why);
                            return Some(true);
                        }
                    }
                }
            };
            self.bodies[i].pending.push_back(made);
        }
    }

    /// Body `i` is all handed on: its stream ends (or is reset, after the
    /// answer to a malformed request) and its line is logged.
    fn finish(&mut self, conn: &mut Connection, turn: &mut super::Turn<'_>, i: usize) -> bool {
        let body = self.bodies.swap_remove(i);
        let Some(sid) = stream_id(body.stream) else {
            return true;
        };
        if body.then_reset {
            let code = VarInt::from_u64(Code::MessageError.value()).unwrap_or(VarInt::from_u32(0));
            let _ = conn.send_stream(sid).reset(code);
            let _ = conn.recv_stream(sid).stop(code);
            turn.shared.stats.h3.resets_sent.fetch_add(1, Relaxed);
            self.recv_over(body.stream);
        } else {
            if conn.send_stream(sid).finish().is_ok() {
                self.unacked.insert(body.stream);
            }
            self.core.answered(body.stream);
            self.act(conn, turn);
        }
        self.send_over(body.stream);
        if let Some(sent) = body.sent {
            let stats = &turn.shared.stats;
            stats.record(sent.vehicle, sent.bytes, true);
            stats.status(sent.status);
            if turn.shared.logs.access.is_on() {
                let format = turn.rt.access_log_format;
                access::sent(turn.access, format, &sent, true, Instant::now());
            }
        }
        true
    }

    /// The io pool read a stream's cold pages.
    pub(super) fn read_done(
        &mut self,
        conn: &mut Connection,
        turn: &mut super::Turn<'_>,
        stream: u64,
        result: Result<Vec<u8>, Errno>,
    ) {
        let Some(i) = self.bodies.iter().position(|b| b.stream == stream) else {
            return;
        };
        let body = &mut self.bodies[i];
        let Source::File(f) = &mut body.source else {
            return;
        };
        f.waiting = false;
        match result {
            Ok(data) if !data.is_empty() => {
                let len = (data.len() as u64).min(f.end - f.offset) as usize;
                f.offset += len as u64;
                body.pending.push_back(Bytes::from(data).slice(..len));
            }
            Ok(_) => self.file_failed(conn, turn, i, None),
            Err(e) => self.file_failed(conn, turn, i, Some(e)),
        }
    }

    /// A produced body's producer has more: its clock starts again.
    pub(super) fn pull_again(&mut self, turn: &super::Turn<'_>, stream: u64) {
        if let Some(b) = self.bodies.iter_mut().find(|b| b.stream == stream) {
            b.progress = turn.now;
        }
    }

    /// A stream is gone: its answer, and its body, are dropped (a
    /// produced one's producer told the client reset it).
    pub(super) fn forget_answer(&mut self, stream: u64) {
        for b in self.bodies.iter_mut().filter(|b| b.stream == stream) {
            if let Source::Produced(p) = &mut b.source {
                p.why = crate::http::Cancelled::Reset;
            }
        }
        self.bodies.retain(|b| b.stream != stream);
        self.drop_body(stream);
    }

    /// The server stops: each produced body ends here, its producer told
    /// it is cancelled. Whether there was one.
    pub(crate) fn stop_producing(&mut self) -> bool {
        let mut any = false;
        for b in &mut self.bodies {
            if let Source::Produced(p) = &mut b.source {
                p.why = crate::http::Cancelled::Stopping;
                b.source = Source::Done;
                any = true;
            }
        }
        any
    }
}

/// A request stream's id as quinn names it.
pub(super) fn stream_id(stream: u64) -> Option<StreamId> {
    VarInt::from_u64(stream).ok().map(StreamId::from)
}

/// The head of a DATA frame of `len` octets.
fn data_frame_head(len: u64) -> Bytes {
    let (head, n) = data_head(len);
    Bytes::copy_from_slice(&head[..n])
}

/// Hands `pending` to quinn's stream `sid` until it is taken, the stream
/// has no credit, or `budget` is spent.
fn write_pending(
    conn: &mut Connection,
    sid: StreamId,
    pending: &mut VecDeque<Bytes>,
    budget: &mut usize,
) -> Wrote {
    while let Some(front) = pending.front_mut() {
        if front.is_empty() {
            pending.pop_front();
            continue;
        }
        let before = front.len();
        let mut one = [std::mem::take(front)];
        let result = conn.send_stream(sid).write_chunks(&mut one);
        *front = std::mem::take(&mut one[0]);
        match result {
            Ok(written) => {
                *budget = budget.saturating_sub(written.bytes);
                if written.bytes < before {
                    return Wrote::Blocked;
                }
                pending.pop_front();
                if *budget == 0 {
                    return Wrote::All;
                }
            }
            Err(WriteError::Blocked) => return Wrote::Blocked,
            Err(WriteError::Stopped(code)) => return Wrote::Gone(Some(code)),
            Err(WriteError::ClosedStream) => return Wrote::Gone(None),
        }
    }
    Wrote::All
}

/// The next piece of a file body, read by `pread` when its pages are in
/// the page cache: `Ok(None)` when they are not (D9: read on the io pool)
/// or the body is all read.
fn next_piece(f: &mut FileBody) -> Result<Option<Bytes>, Option<Errno>> {
    if f.offset >= f.end {
        return Ok(None);
    }
    let want = ((f.end - f.offset) as usize).min(FILE_PIECE);
    if f.offset >= f.warm_to {
        let to = f.end.min(f.offset + COLD_READ as u64);
        if send::residency(&f.file, send::probe_points(f.offset, to)) == Residency::Cold {
            return Ok(None);
        }
        f.warm_to = to;
    }
    let mut buf = BytesMut::zeroed(want);
    match send::pread(&f.file, &mut buf, f.offset) {
        Ok(0) => Err(None),
        Ok(n) => {
            buf.truncate(n);
            f.offset += n as u64;
            Ok(Some(buf.freeze()))
        }
        Err(e) => Err(Some(e)),
    }
}
