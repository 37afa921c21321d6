//! Answers framed onto an HTTP/2 connection: bodies cut into DATA frames
//! as the core's flow control and the streams' urgency allow — kept and
//! in-memory bytes as slices (a frame header beside them, no copy), files
//! read a frame at a time by the same D9 rules as HTTP/1.1, produced
//! bodies pulled a frame at a time as credit allows — and the response
//! HEADERS block (kept while its inputs are the same: `http::h2::kept`).

use super::super::{access, Link, Turn};
use super::{Body, FileBody, Source, DATA_MAX, FILL_HIGH, H2};
use crate::http::answer::{Answer, Payload};
use crate::http::h2::conn::Refused;
use crate::http::h2::frame::{ErrorCode, HEADER_LEN};
use crate::http::produce::Next;
use crate::http::response::Response;
use crate::http::Request;
use crate::linux::out::COLD_READ;
use crate::linux::send::{self, Residency};
use bytes::{Bytes, BytesMut};
use rustix::io::Errno;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

impl H2 {
    /// Frames bodies into the queue, the stream the core picks each time,
    /// until `FILL_HIGH` is queued (`true`: more may follow once it is
    /// written) or no stream may send.
    pub(super) fn fill(&mut self, link: &mut Link, turn: &mut Turn<'_>) -> bool {
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
            Source::Opening(_) | Source::Answering(_) => {
                self.core.set_ready(stream, false);
                return;
            }
            Source::Memory(b) => {
                let n = b.len().min(allowed);
                let part = b.split_to(n);
                (part, b.is_empty())
            }
            Source::Produced(p) => {
                let mut make = super::super::link::puller(turn, link.id, stream);
                match p.next(allowed, &mut make) {
                    Next::Bytes(b) => (b, false),
                    Next::End => {
                        if let Some(record) = &mut body.sent {
                            record.bytes = p.sent;
                        }
                        (Bytes::new(), true)
                    }
                    Next::Wait => {
                        self.core.set_ready(stream, false);
                        return;
                    }
                    Next::Fail(why) => return self.produced_failed(link, turn, i, why),
                }
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

    /// Queues a decided answer's HEADERS; its body is framed as credit
    /// allows.
    pub(super) fn respond(
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
        } = super::super::readable(link, turn, req, decided);
        let sent = access::record(
            turn,
            req,
            resp.status(),
            &payload,
            user,
            started,
            "HTTP/2.0",
        );
        let source = match payload {
            Payload::None => None,
            Payload::Memory(b) | Payload::Mapped(b) | Payload::Kept(b) => Some(Source::Memory(b)),
            Payload::Produced(mut sending) => {
                sending.count_in(&turn.shared.stats.produced);
                Some(Source::Produced(sending))
            }
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
        let body = match &source {
            Some(Source::Memory(b)) => &b[..],
            _ => &[],
        };
        let kept = &mut self.kept;
        let headed = self.core.respond(stream, source.is_none(), |enc, out| {
            kept.block(enc, out, body, &resp, length, date)
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
    pub(super) fn refuse(
        &mut self,
        link: &mut Link,
        turn: &mut Turn<'_>,
        stream: u32,
        refused: Refused,
    ) {
        let Refused { reject, reset } = refused;
        let mut resp = Response::status_page(reject.status);
        link.advertise(&mut resp);
        let (length, body) = resp.memory_body();
        let date = turn.date;
        let kept = &mut self.kept;
        if !self
            .core
            .respond(stream, body.is_empty() && !reset, |enc, out| {
                kept.block(enc, out, &body, &resp, length, date)
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

    /// A produced body's producer failed: its stream is reset
    /// (`INTERNAL_ERROR`) and the failure logged; the others go on.
    fn produced_failed(&mut self, link: &mut Link, turn: &mut Turn<'_>, i: usize, why: String) {
        let body = self.bodies.swap_remove(i);
        self.core.reset(body.stream, ErrorCode::Internal);
        self.push_output(link);
        turn.shared.logs.error(format_args!(
            "{}: a produced body on HTTP/2 stream {} ended short: {why}; stream reset",
            link.peer, body.stream
        ));
        self.count(turn);
    }

    /// A file body ended early or failed: its stream is reset and the
    /// failure logged; the others go on.
    pub(super) fn file_failed(
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
