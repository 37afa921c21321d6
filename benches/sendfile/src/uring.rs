//! The `splice` vehicle: io_uring `IORING_OP_SPLICE`, file → pipe → socket,
//! the two hops submitted as one linked pair per request.

use crate::vehicles::Vehicle;
use io_uring::{opcode, squeue, types, IoUring};
use rustix::fd::{AsRawFd, OwnedFd};
use std::fs::File;
use std::io;
use std::net::TcpStream;
use std::path::Path;

const FILL: u64 = 1;
const DRAIN: u64 = 2;

pub struct Splice {
    ring: IoUring,
    file: File,
    pipe_r: OwnedFd,
    pipe_w: OwnedFd,
    len: usize,
}

impl Splice {
    /// The ring, the file and a pipe widened to hold the whole payload (so
    /// a request is not chopped into pipe-sized pieces). Fails where
    /// io_uring cannot be set up.
    pub fn new(path: &Path, len: usize) -> io::Result<Splice> {
        let ring = IoUring::new(8)?;
        let file = File::open(path)?;
        let (pipe_r, pipe_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let got = rustix::pipe::fcntl_setpipe_size(&pipe_w, len.max(64 << 10))?;
        if got < len {
            return Err(io::Error::other(format!(
                "the pipe could only be widened to {got} bytes"
            )));
        }
        Ok(Splice {
            ring,
            file,
            pipe_r,
            pipe_w,
            len,
        })
    }

    /// Pushes `entries` and waits for as many completions; returns
    /// (bytes into the pipe, bytes out to the socket).
    fn run(&mut self, entries: &[squeue::Entry]) -> io::Result<(u64, u64)> {
        // SAFETY: every entry names descriptors `self` owns and no buffers;
        // they stay open until the completions are reaped below.
        unsafe {
            let mut sq = self.ring.submission();
            for e in entries {
                sq.push(e)
                    .map_err(|_| io::Error::other("submission queue full"))?;
            }
        }
        self.ring.submit_and_wait(entries.len())?;
        let (mut filled, mut drained) = (0u64, 0u64);
        let mut seen = 0;
        while seen < entries.len() {
            let cqes: Vec<(u64, i32)> = self
                .ring
                .completion()
                .map(|c| (c.user_data(), c.result()))
                .collect();
            if cqes.is_empty() {
                self.ring.submit_and_wait(entries.len() - seen)?;
                continue;
            }
            for (what, res) in cqes {
                seen += 1;
                // A short first hop fails the link: the second comes back
                // cancelled and is resubmitted by the caller.
                if res == -libc::ECANCELED {
                    continue;
                }
                if res < 0 {
                    return Err(io::Error::from_raw_os_error(-res));
                }
                match what {
                    FILL => filled += res as u64,
                    _ => drained += res as u64,
                }
            }
        }
        Ok((filled, drained))
    }
}

impl Vehicle for Splice {
    fn send(&mut self, sock: &TcpStream, _: usize) -> io::Result<u64> {
        let len = self.len as u64;
        let file = types::Fd(self.file.as_raw_fd());
        let pr = types::Fd(self.pipe_r.as_raw_fd());
        let pw = types::Fd(self.pipe_w.as_raw_fd());
        let sk = types::Fd(sock.as_raw_fd());
        let (mut filled, mut sent) = (0u64, 0u64);
        while sent < len {
            let (f, d) = if filled == sent {
                // The pipe is empty: both hops, linked.
                let n = (len - filled) as u32;
                let fill = opcode::Splice::new(file, filled as i64, pw, -1, n)
                    .build()
                    .flags(squeue::Flags::IO_LINK)
                    .user_data(FILL);
                let drain = opcode::Splice::new(pr, -1, sk, -1, n)
                    .build()
                    .user_data(DRAIN);
                self.run(&[fill, drain])?
            } else {
                // Bytes left in the pipe from a short hop: drain them.
                let n = (filled - sent) as u32;
                let drain = opcode::Splice::new(pr, -1, sk, -1, n)
                    .build()
                    .user_data(DRAIN);
                self.run(&[drain])?
            };
            if f == 0 && d == 0 && filled == sent {
                return Err(io::Error::other("splice moved nothing"));
            }
            filled += f;
            sent += d;
        }
        Ok(sent)
    }
}
