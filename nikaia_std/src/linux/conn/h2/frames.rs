//! Answers framed onto an HTTP/2 connection: bodies cut into DATA frames
//! as the core's flow control and the streams' urgency allow — kept and
//! in-memory bytes as slices (a frame header beside them, no copy), files
//! read a frame at a time by the same D9 rules as HTTP/1.1 — and the
//! response HEADERS block.

use super::super::{Link, Turn};
use super::{FileBody, Source, DATA_MAX, FILL_HIGH, H2};
use crate::http::h2::frame::{ErrorCode, HEADER_LEN};
use crate::http::h2::hpack::Encoder;
use crate::http::response::{each_field, Response};
use crate::linux::out::COLD_READ;
use crate::linux::send::{self, Residency};
use bytes::{Bytes, BytesMut};
use rustix::io::Errno;
use std::sync::atomic::Ordering::Relaxed;

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

/// The response's HEADERS block: `:status`, `date`, then the fields every
/// backend sends, lowercased, less those HTTP/2 forbids (§8.2.2).
pub(super) fn head(
    enc: &mut Encoder,
    out: &mut Vec<u8>,
    resp: &Response,
    length: u64,
    date: &[u8],
) {
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
