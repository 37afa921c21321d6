//! A connection's queue of bytes to send: response heads, in-memory bodies
//! and file bodies, written in order and resumed where the kernel stopped.
//! Heads and in-memory bodies go out together in one vectored `sendmsg`; a
//! head before a file body is sent with `MSG_MORE` so it leaves in the same
//! packets as the file's first bytes.

mod produced;

use super::send::{self, Buffered, FileSend, Residency};
use crate::rt::Vehicle;
use bytes::{Buf, Bytes};
use rustix::io::Errno;
use std::collections::VecDeque;
use std::io::IoSlice;
use std::time::Instant;

/// What follows a response's last byte in the queue: what to log and count
/// once it is all written.
#[derive(Debug)]
pub(crate) struct Sent {
    pub head: Bytes,
    pub method: std::ops::Range<usize>,
    pub target: std::ops::Range<usize>,
    pub version: &'static str,
    /// The `Referer` and `User-Agent` values, as ranges of `head`.
    pub referer: Option<std::ops::Range<usize>>,
    pub user_agent: Option<std::ops::Range<usize>>,
    pub status: u16,
    pub bytes: u64,
    pub vehicle: Vehicle,
    pub started: Instant,
    /// Who the request was from (`Request::client`), for the log.
    pub client: crate::http::Peer,
    /// The user its credentials were verified for.
    pub user: Option<String>,
    /// Bytes of request body received.
    pub received: u64,
}

#[derive(Debug)]
pub(crate) enum Chunk {
    Mem(Bytes),
    File(FileSend),
    /// A body the program produces, pulled when it reaches the front.
    Produced(Box<produced::ProducedSend>),
    /// A response ends here.
    End(Box<Sent>),
}

/// How far a flush got.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Flushed {
    /// Everything queued was written.
    All,
    /// The socket is full; wait for EPOLLOUT.
    Blocked,
    /// This turn's byte budget is spent; others go first.
    Budget,
    /// The next file bytes are not in the page cache: read `len` bytes at
    /// `offset` on the io pool, then [`Out::fill`] them.
    Cold { offset: u64, len: usize },
    /// Waiting for a read already on the io pool.
    Waiting,
    /// Waiting for a produced body's producer to have more.
    Producing,
}

/// Why a send stopped for good.
#[derive(Debug)]
pub(crate) enum SendError {
    /// The peer went away or the socket failed: nothing to log.
    Peer,
    /// The file ended (or failed) before the promised length was sent.
    File {
        name: std::sync::Arc<str>,
        sent: u64,
        promised: u64,
        cause: Option<Errno>,
    },
    /// A produced body's producer failed, or broke its promised length.
    Produced(String),
}

/// Where a connection's queue writes: its transport (`transport.rs`: the
/// socket itself, or a TLS session in front of it), or a test's fake.
pub(crate) trait Wire {
    /// Writes a prefix of `iov`, returning its length; `EAGAIN` when
    /// nothing could be taken. `more`: a file body follows at once.
    fn send(&mut self, iov: &[IoSlice<'_>], more: bool) -> Result<usize, Errno>;
    /// `sendfile` from `file` at `offset` (advanced); only a plain socket.
    fn sendfile(
        &mut self,
        file: &std::fs::File,
        offset: &mut u64,
        count: usize,
    ) -> Result<usize, Errno>;
}

#[derive(Default, Debug)]
pub(crate) struct Out {
    chunks: VecDeque<Chunk>,
    queued: usize,
    /// Read buffers kept for reuse by this connection.
    spare: Option<Vec<u8>>,
    /// The record of the last answer reported, kept for the next one's
    /// (an answer's end costs no allocation).
    spare_sent: Option<Box<Sent>>,
}

/// The most slices one `sendmsg` carries.
const MAX_IOV: usize = 64;
/// The slices of a `sendmsg` of one or two answers: a smaller array to
/// fill (an answer is a head, a body and its end marker).
const FEW_IOV: usize = 8;
/// The most bytes one write or `sendfile` call is asked to move, so a
/// connection's time slice is checked between calls (a single call on a
/// loopback socket with a large buffer can otherwise copy megabytes).
const SEND_STEP: usize = 256 << 10;
/// Bytes read per io-pool read of cold pages.
pub(crate) const COLD_READ: usize = 256 << 10;

impl Out {
    pub(crate) fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// In-memory bytes queued and not yet written.
    pub(crate) fn queued(&self) -> usize {
        self.queued
    }

    pub(crate) fn push(&mut self, bytes: Bytes) {
        if !bytes.is_empty() {
            self.queued += bytes.len();
            self.chunks.push_back(Chunk::Mem(bytes));
        }
    }

    pub(crate) fn push_file(&mut self, f: FileSend) {
        self.chunks.push_back(Chunk::File(f));
    }

    pub(crate) fn end(&mut self, sent: Sent) {
        let boxed = match self.spare_sent.take() {
            Some(mut spare) => {
                *spare = sent;
                spare
            }
            None => Box::new(sent),
        };
        self.chunks.push_back(Chunk::End(boxed));
    }

    /// Reports an answer whose bytes all went out, and keeps its record
    /// for the next answer (without the request head it points into, so
    /// the connection's read buffer is not held).
    fn ended(&mut self, mut sent: Box<Sent>, done: &mut impl FnMut(&Sent)) {
        done(&sent);
        sent.head = Bytes::new();
        sent.user = None;
        self.spare_sent = Some(sent);
    }

    /// Hands bytes read on the io pool to the file body waiting for them.
    pub(crate) fn fill(&mut self, data: Result<Vec<u8>, Errno>) -> Result<(), SendError> {
        let Some(Chunk::File(f)) = self.chunks.front_mut() else {
            return Ok(());
        };
        f.waiting = false;
        match data {
            Ok(d) if !d.is_empty() => {
                f.offset += d.len() as u64;
                f.buf = Some(Buffered { data: d, pos: 0 });
                Ok(())
            }
            Ok(_) => Err(short(f, None)),
            Err(e) => Err(short(f, Some(e))),
        }
    }

    /// The file of the body at the front, if it is one.
    pub(crate) fn front_file(&self) -> Option<std::sync::Arc<std::fs::File>> {
        match self.chunks.front() {
            Some(Chunk::File(f)) => Some(f.file.clone()),
            _ => None,
        }
    }

    /// Writes until done, blocked, waiting for the disk, or `budget` bytes
    /// went out. Each finished response is handed to `done`. `progress` is
    /// set when any byte moved.
    pub(crate) fn flush(
        &mut self,
        wire: &mut impl Wire,
        budget: &mut usize,
        slice_end: Instant,
        progress: &mut bool,
        mut done: impl FnMut(&Sent),
        make: &mut dyn FnMut() -> crate::http::body::Resume,
    ) -> Result<Flushed, SendError> {
        let mut wrote_any = false;
        loop {
            self.report_ended(&mut done);
            let few = self.chunks.len() <= FEW_IOV;
            let Some(front) = self.chunks.front_mut() else {
                return Ok(Flushed::All);
            };
            if *budget == 0 || (wrote_any && Instant::now() >= slice_end) {
                return Ok(Flushed::Budget);
            }
            let wrote = match front {
                Chunk::Produced(_) => match self.produce(make)? {
                    Some(state) => return Ok(state),
                    None => 0,
                },
                Chunk::File(f) => match send_file_step(wire, f, *budget, &mut self.spare)? {
                    Step::Wrote(n) => {
                        if f.remaining() == 0 {
                            if let Some(Chunk::File(f)) = self.chunks.pop_front() {
                                if let Some(b) = f.buf {
                                    self.spare = Some(b.data);
                                }
                            }
                        }
                        n
                    }
                    Step::Flushed(state) => return Ok(state),
                },
                _ if few => match self.send_mem::<FEW_IOV>(wire, *budget, &mut done) {
                    Ok(n) => n,
                    Err(Errno::AGAIN) => return Ok(Flushed::Blocked),
                    Err(_) => return Err(SendError::Peer),
                },
                _ => match self.send_mem::<MAX_IOV>(wire, *budget, &mut done) {
                    Ok(n) => n,
                    Err(Errno::AGAIN) => return Ok(Flushed::Blocked),
                    Err(_) => return Err(SendError::Peer),
                },
            };
            *progress |= wrote > 0;
            wrote_any |= wrote > 0;
            *budget = budget.saturating_sub(wrote);
        }
    }

    /// Sends the in-memory chunks at the front in one `sendmsg` of at most
    /// `N` slices.
    fn send_mem<const N: usize>(
        &mut self,
        wire: &mut impl Wire,
        budget: usize,
        done: &mut impl FnMut(&Sent),
    ) -> Result<usize, Errno> {
        let mut iov = [IoSlice::new(&[]); N];
        let mut n_iov = 0;
        let mut room = budget.min(SEND_STEP);
        let mut more = false;
        for chunk in &self.chunks {
            match chunk {
                Chunk::Mem(b) if n_iov < N && room > 0 => {
                    let take = b.len().min(room);
                    iov[n_iov] = IoSlice::new(&b[..take]);
                    n_iov += 1;
                    room -= take;
                }
                Chunk::End(_) => continue,
                Chunk::File(_) => {
                    more = true;
                    break;
                }
                _ => break,
            }
        }
        let wrote = wire.send(&iov[..n_iov], more)?;
        self.queued -= wrote;
        let mut n = wrote;
        while n > 0 {
            match self.chunks.front_mut() {
                Some(Chunk::Mem(b)) if b.len() <= n => {
                    n -= b.len();
                    self.chunks.pop_front();
                }
                Some(Chunk::Mem(b)) => {
                    b.advance(n);
                    n = 0;
                }
                // A response whose bytes all went out, ahead of the next.
                Some(Chunk::End(_)) => {
                    if let Some(Chunk::End(sent)) = self.chunks.pop_front() {
                        self.ended(sent, done);
                    }
                }
                _ => break,
            }
        }
        Ok(wrote)
    }

    /// Reports every marker whose bytes are written.
    fn report_ended(&mut self, done: &mut impl FnMut(&Sent)) {
        while let Some(Chunk::End(_)) = self.chunks.front() {
            if let Some(Chunk::End(sent)) = self.chunks.pop_front() {
                self.ended(sent, done);
            }
        }
    }
}

enum Step {
    Wrote(usize),
    Flushed(Flushed),
}

/// One step of a file body: write what was read, or probe and send more.
fn send_file_step(
    wire: &mut impl Wire,
    f: &mut FileSend,
    budget: usize,
    spare: &mut Option<Vec<u8>>,
) -> Result<Step, SendError> {
    if f.waiting {
        return Ok(Step::Flushed(Flushed::Waiting));
    }
    // Bytes already read (here, or on the io pool) go first.
    if let Some(b) = &mut f.buf {
        let end = b.data.len().min(b.pos + budget);
        let wrote = match wire.send(&[IoSlice::new(&b.data[b.pos..end])], false) {
            Err(Errno::AGAIN) => return Ok(Step::Flushed(Flushed::Blocked)),
            Err(_) => return Err(SendError::Peer),
            Ok(n) => n,
        };
        b.pos += wrote;
        if b.pos == b.data.len() {
            *spare = f.buf.take().map(|b| b.data);
        }
        return Ok(Step::Wrote(wrote));
    }
    let left = f.end - f.offset;
    let window = left.min(budget as u64);
    let step = window.min(SEND_STEP as u64);
    // D9: never wait for the disk on a worker. Probe the window once.
    if f.offset >= f.warm_to {
        let to = f.offset + window;
        if send::residency(&f.file, send::probe_points(f.offset, to)) == Residency::Cold {
            f.waiting = true;
            let len = (left as usize).min(COLD_READ);
            return Ok(Step::Flushed(Flushed::Cold {
                offset: f.offset,
                len,
            }));
        }
        f.warm_to = to;
    }
    match f.vehicle {
        Vehicle::Sendfile => {
            let count = step as usize;
            match wire.sendfile(&f.file, &mut f.offset, count) {
                Ok(0) => Err(short(f, None)),
                Ok(n) => Ok(Step::Wrote(n)),
                Err(Errno::AGAIN) => Ok(Step::Flushed(Flushed::Blocked)),
                // EIO and friends come from the file; EPIPE, ECONNRESET from the peer.
                Err(
                    e @ (Errno::IO | Errno::NXIO | Errno::FAULT | Errno::OVERFLOW | Errno::INVAL),
                ) => Err(short(f, Some(e))),
                Err(_) => Err(SendError::Peer),
            }
        }
        _ => {
            let mut data = spare.take().unwrap_or_default();
            data.resize(send::READ_BUF.min(window as usize), 0);
            match send::pread(&f.file, &mut data, f.offset) {
                Ok(0) => Err(short(f, None)),
                Ok(n) => {
                    data.truncate(n);
                    f.offset += n as u64;
                    f.buf = Some(Buffered { data, pos: 0 });
                    Ok(Step::Wrote(0))
                }
                Err(e) => Err(short(f, Some(e))),
            }
        }
    }
}

fn short(f: &FileSend, cause: Option<Errno>) -> SendError {
    SendError::File {
        name: f.name.clone(),
        sent: f.offset - f.start,
        promised: f.end - f.start,
        cause,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A wire that takes at most `step` bytes per call and says `EAGAIN`
    /// every other call, recording what it was given and whether a file
    /// body was said to follow.
    struct Short {
        step: usize,
        calls: usize,
        got: Vec<u8>,
        more: Vec<bool>,
    }

    impl Wire for Short {
        fn send(&mut self, iov: &[IoSlice<'_>], more: bool) -> Result<usize, Errno> {
            self.calls += 1;
            if self.calls.is_multiple_of(2) {
                return Err(Errno::AGAIN);
            }
            self.more.push(more);
            let mut n = 0;
            for s in iov {
                let take = s.len().min(self.step - n);
                self.got.extend_from_slice(&s[..take]);
                n += take;
                if n == self.step {
                    break;
                }
            }
            Ok(n)
        }

        fn sendfile(
            &mut self,
            file: &std::fs::File,
            offset: &mut u64,
            count: usize,
        ) -> Result<usize, Errno> {
            let mut buf = vec![0; count.min(self.step)];
            let n = crate::fs::read_full_at(file, &mut buf, *offset).map_err(|_| Errno::IO)?;
            self.got.extend_from_slice(&buf[..n]);
            *offset += n as u64;
            Ok(n)
        }
    }

    fn sent(status: u16) -> Sent {
        Sent {
            head: Bytes::from_static(b"GET / HTTP/1.1\r\n\r\n"),
            method: 0..0,
            target: 0..0,
            version: "HTTP/1.1",
            referer: None,
            user_agent: None,
            status,
            bytes: 0,
            vehicle: Vehicle::Memory,
            started: Instant::now(),
            client: crate::http::Peer::Unix,
            user: None,
            received: 0,
        }
    }

    /// Flushes until everything is written, as the worker would over
    /// several turns; the statuses of the answers in the order they ended.
    fn drain(out: &mut Out, wire: &mut Short) -> Vec<u16> {
        let mut ended = Vec::new();
        for _ in 0..10_000 {
            let mut budget = 1 << 20;
            let mut progress = false;
            let far = Instant::now() + std::time::Duration::from_secs(60);
            let mut make = || crate::http::body::Resume::new(|| {});
            match out.flush(
                wire,
                &mut budget,
                far,
                &mut progress,
                |s| ended.push(s.status),
                &mut make,
            ) {
                Ok(Flushed::All) => return ended,
                Ok(Flushed::Blocked | Flushed::Budget) => {}
                other => panic!("{other:?}"),
            }
        }
        panic!("never drained");
    }

    #[test]
    fn short_writes_resume_where_they_stopped_and_answers_end_in_order() {
        let mut out = Out::default();
        out.push(Bytes::from_static(b"HTTP/1.1 200 OK\r\n\r\n"));
        out.push(Bytes::from_static(b"first body"));
        out.end(sent(200));
        out.push(Bytes::from_static(b"HTTP/1.1 404 Not Found\r\n\r\n"));
        out.end(sent(404));
        assert_eq!(
            out.queued(),
            "HTTP/1.1 200 OK\r\n\r\nfirst bodyHTTP/1.1 404 Not Found\r\n\r\n".len()
        );
        let mut wire = Short {
            step: 7,
            calls: 0,
            got: Vec::new(),
            more: Vec::new(),
        };
        assert_eq!(drain(&mut out, &mut wire), [200, 404]);
        assert_eq!(
            wire.got,
            b"HTTP/1.1 200 OK\r\n\r\nfirst bodyHTTP/1.1 404 Not Found\r\n\r\n"
        );
        assert!(out.is_empty() && out.queued() == 0);
        assert!(wire.more.iter().all(|m| !m), "no file body followed");
        // The next answer's record reuses the last one's box: it reports
        // its own status, and the request head it held was let go.
        assert!(out.spare_sent.as_ref().is_some_and(|s| s.head.is_empty()));
        out.push(Bytes::from_static(
            b"HTTP/1.1 500 Internal Server Error\r\n\r\n",
        ));
        out.end(sent(500));
        assert!(out.spare_sent.is_none());
        assert_eq!(drain(&mut out, &mut wire), [500]);
    }

    #[test]
    fn a_head_before_a_file_says_more_and_the_file_follows_byte_exact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = Arc::new(std::fs::File::open(&path).unwrap());
        let mut out = Out::default();
        out.push(Bytes::from_static(b"HEAD"));
        out.push_file(FileSend::new(file, 10, 90_010, Vehicle::Sendfile, "f"));
        out.end(sent(206));
        let mut wire = Short {
            step: 4096,
            calls: 0,
            got: Vec::new(),
            more: Vec::new(),
        };
        assert_eq!(drain(&mut out, &mut wire), [206]);
        assert_eq!(&wire.got[..4], b"HEAD");
        assert_eq!(&wire.got[4..], &data[10..90_010]);
        assert_eq!(wire.more.first(), Some(&true), "MSG_MORE before the file");
    }

    #[test]
    fn a_file_that_ends_early_is_a_short_send_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short");
        std::fs::write(&path, b"only ten b").unwrap();
        let file = Arc::new(std::fs::File::open(&path).unwrap());
        let mut out = Out::default();
        out.push_file(FileSend::new(file, 0, 20, Vehicle::Sendfile, "/short"));
        let mut wire = Short {
            step: 64,
            calls: 0,
            got: Vec::new(),
            more: Vec::new(),
        };
        let mut budget = 1 << 20;
        let far = Instant::now() + std::time::Duration::from_secs(60);
        let mut make = || crate::http::body::Resume::new(|| {});
        let r = out.flush(&mut wire, &mut budget, far, &mut false, |_| {}, &mut make);
        let r = match r {
            Ok(Flushed::All) => panic!("sent more than the file has"),
            Ok(_) => out.flush(&mut wire, &mut budget, far, &mut false, |_| {}, &mut make),
            e => e,
        };
        match r {
            Err(SendError::File {
                name,
                sent,
                promised,
                cause: None,
            }) => {
                assert_eq!((&*name, sent, promised), ("/short", 10, 20));
            }
            other => panic!("{other:?}"),
        }
    }
}
