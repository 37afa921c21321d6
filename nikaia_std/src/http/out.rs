//! A connection's queue of bytes to send: response heads and bodies, written
//! together with one vectored `sendmsg`, resumed where the kernel stopped.

use bytes::{Buf, Bytes};
use rustix::io::Errno;
use rustix::net::{SendAncillaryBuffer, SendFlags};
use std::collections::VecDeque;
use std::io::IoSlice;
use std::os::fd::AsFd;
use std::time::Instant;

/// What follows a response's last byte in the queue: what to log once it is
/// all written.
#[derive(Debug)]
pub(crate) struct Sent {
    pub head: Bytes,
    pub method: std::ops::Range<usize>,
    pub target: std::ops::Range<usize>,
    pub version: &'static str,
    pub status: u16,
    pub bytes: u64,
    pub started: Instant,
}

#[derive(Debug)]
pub(crate) enum Chunk {
    Mem(Bytes),
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
}

#[derive(Default, Debug)]
pub(crate) struct Out {
    chunks: VecDeque<Chunk>,
    queued: usize,
}

/// The most slices one `sendmsg` carries.
const MAX_IOV: usize = 64;

impl Out {
    pub(crate) fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Bytes queued and not yet written.
    pub(crate) fn queued(&self) -> usize {
        self.queued
    }

    pub(crate) fn push(&mut self, bytes: Bytes) {
        if !bytes.is_empty() {
            self.queued += bytes.len();
            self.chunks.push_back(Chunk::Mem(bytes));
        }
    }

    pub(crate) fn end(&mut self, sent: Sent) {
        self.chunks.push_back(Chunk::End(Box::new(sent)));
    }

    /// Writes until done, blocked, or `budget` bytes went out. Each finished
    /// response is handed to `done`. `progress` is set when any byte moved.
    pub(crate) fn flush(
        &mut self,
        fd: impl AsFd,
        budget: &mut usize,
        progress: &mut bool,
        mut done: impl FnMut(Box<Sent>),
    ) -> rustix::io::Result<Flushed> {
        loop {
            self.consume(0, &mut done);
            if self.chunks.is_empty() {
                return Ok(Flushed::All);
            }
            if *budget == 0 {
                return Ok(Flushed::Budget);
            }
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let mut n_iov = 0;
            let mut room = *budget;
            for chunk in &self.chunks {
                if n_iov == MAX_IOV || room == 0 {
                    break;
                }
                if let Chunk::Mem(b) = chunk {
                    let take = b.len().min(room);
                    iov[n_iov] = IoSlice::new(&b[..take]);
                    n_iov += 1;
                    room -= take;
                }
            }
            let mut control = SendAncillaryBuffer::default();
            let wrote =
                match rustix::net::sendmsg(&fd, &iov[..n_iov], &mut control, SendFlags::NOSIGNAL) {
                    Ok(n) => n,
                    Err(Errno::INTR) => continue,
                    Err(Errno::AGAIN) => return Ok(Flushed::Blocked),
                    Err(e) => return Err(e),
                };
            *progress |= wrote > 0;
            *budget = budget.saturating_sub(wrote);
            self.consume(wrote, &mut done);
        }
    }

    /// Drops `n` written bytes from the front, reporting each response whose
    /// last byte went out, in order.
    fn consume(&mut self, mut n: usize, done: &mut impl FnMut(Box<Sent>)) {
        self.queued -= n;
        while let Some(front) = self.chunks.front_mut() {
            match front {
                Chunk::End(_) => {
                    if let Some(Chunk::End(sent)) = self.chunks.pop_front() {
                        done(sent);
                    }
                }
                Chunk::Mem(_) if n == 0 => break,
                Chunk::Mem(b) if b.len() <= n => {
                    n -= b.len();
                    self.chunks.pop_front();
                }
                Chunk::Mem(b) => {
                    b.advance(n);
                    break;
                }
            }
        }
    }
}
