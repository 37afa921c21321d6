//! The four vehicles that land a body from the socket in a file
//! (read+write and splice, one thread or two) and the plumbing they share.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::mpsc;

/// User buffer for read+write.
pub const RW_BUF: usize = 128 * 1024;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Vehicle {
    /// read into 128 KiB, write it, one thread.
    Rw1,
    /// reader thread fills pooled 128 KiB buffers, writer thread writes them.
    Rw2,
    /// splice socket -> pipe, then pipe -> file, one thread.
    Splice1,
    /// thread 1 splices socket -> pipe, thread 2 splices pipe -> file.
    Splice2,
}

impl Vehicle {
    pub const ALL: [Vehicle; 4] = [
        Vehicle::Rw1,
        Vehicle::Rw2,
        Vehicle::Splice1,
        Vehicle::Splice2,
    ];

    pub fn short(self) -> &'static str {
        match self {
            Vehicle::Rw1 => "rw1",
            Vehicle::Rw2 => "rw2",
            Vehicle::Splice1 => "splice1",
            Vehicle::Splice2 => "splice2",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Vehicle::Rw1 => "read+write 1T",
            Vehicle::Rw2 => "read+write 2T",
            Vehicle::Splice1 => "splice 1T",
            Vehicle::Splice2 => "splice 2T",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Durability {
    /// close without syncing.
    None,
    /// `fdatasync` before close.
    Data,
}

impl Durability {
    pub fn name(self) -> &'static str {
        match self {
            Durability::None => "none",
            Durability::Data => "data",
        }
    }
}

// ---------------------------------------------------------------- plumbing

/// A fresh unnamed file in `dir`; it disappears when closed.
pub fn open_tmpfile(dir: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(dir)
}

/// A pipe widened to `want` bytes if the kernel allows it. Returns
/// (read end, write end, actual size).
pub fn make_pipe(want: usize) -> io::Result<(OwnedFd, OwnedFd, usize)> {
    let (r, w) = io::pipe()?;
    let (r, w) = (OwnedFd::from(r), OwnedFd::from(w));
    let want = libc::c_int::try_from(want).unwrap_or(libc::c_int::MAX);
    // SAFETY: `w` is an open pipe descriptor; F_SETPIPE_SZ takes one int argument.
    let set = unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, want) };
    let size = if set > 0 {
        set
    } else {
        // SAFETY: `w` is an open pipe descriptor; F_GETPIPE_SZ takes no argument.
        unsafe { libc::fcntl(w.as_raw_fd(), libc::F_GETPIPE_SZ) }
    };
    if size <= 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((r, w, size as usize))
}

/// One `splice(2)` with no offsets (the file position is used and advanced),
/// retried on EINTR. Blocking: waits for data / pipe room.
fn splice(from: BorrowedFd<'_>, to: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    loop {
        // SAFETY: both descriptors are borrowed, so they stay open for the call;
        // null offset pointers are allowed and mean "use the file position".
        let n = unsafe {
            libc::splice(
                from.as_raw_fd(),
                std::ptr::null_mut(),
                to.as_raw_fd(),
                std::ptr::null_mut(),
                len,
                libc::SPLICE_F_MOVE,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn read_some(sock: &mut TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match sock.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// The end of every vehicle, on whichever thread wrote the file.
fn finish(file: &File, durability: Durability) -> io::Result<()> {
    if durability == Durability::Data {
        file.sync_data()?; // fdatasync(2)
    }
    Ok(())
}

pub fn broken(what: &str) -> io::Error {
    io::Error::other(what.to_string())
}

// ---------------------------------------------------------------- vehicles

/// What one side of a vehicle moved: bytes and the system calls it took.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Moved {
    pub bytes: u64,
    pub calls: u64,
}

impl Moved {
    fn add(&mut self, n: usize) {
        self.bytes += n as u64;
        self.calls += 1;
    }
}

/// `write` all of `buf` to the file, counting the calls.
fn write_counted(mut file: &File, mut buf: &[u8], out: &mut Moved) -> io::Result<()> {
    while !buf.is_empty() {
        match file.write(buf) {
            Ok(0) => return Err(broken("file write returned 0")),
            Ok(n) => {
                out.add(n);
                buf = &buf[n..];
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Both sides must have moved the same bytes.
fn settle_counts(inn: Moved, out: Moved) -> io::Result<(Moved, Moved)> {
    if inn.bytes != out.bytes {
        return Err(broken(&format!(
            "received {} bytes but wrote {}",
            inn.bytes, out.bytes
        )));
    }
    Ok((inn, out))
}

pub fn rw_single(
    sock: &mut TcpStream,
    file: &File,
    buf: &mut [u8],
    durability: Durability,
) -> io::Result<(Moved, Moved)> {
    let (mut inn, mut out) = (Moved::default(), Moved::default());
    loop {
        let n = read_some(sock, buf)?;
        if n == 0 {
            break;
        }
        inn.add(n);
        write_counted(file, &buf[..n], &mut out)?;
    }
    finish(file, durability)?;
    settle_counts(inn, out)
}

/// Reader (this thread) reads into buffers taken from a bounded pool and
/// hands them over a channel; the writer thread writes them and returns them.
pub fn rw_split(
    sock: &mut TcpStream,
    file: &File,
    pool: Vec<Vec<u8>>,
    durability: Durability,
) -> io::Result<(Moved, Moved)> {
    let (full_tx, full_rx) = mpsc::sync_channel::<(Vec<u8>, usize)>(pool.len());
    let (free_tx, free_rx) = mpsc::sync_channel::<Vec<u8>>(pool.len());
    for buf in pool {
        free_tx.send(buf).map_err(|_| broken("pool channel"))?;
    }
    std::thread::scope(|s| {
        let writer = s.spawn(move || -> io::Result<Moved> {
            let mut out = Moved::default();
            for (buf, n) in full_rx {
                write_counted(file, &buf[..n], &mut out)?;
                // The reader may already have stopped; then nobody needs it back.
                let _ = free_tx.send(buf);
            }
            finish(file, durability)?;
            Ok(out)
        });
        let read_result = (|| -> io::Result<Moved> {
            let mut inn = Moved::default();
            loop {
                let mut buf = free_rx.recv().map_err(|_| broken("writer stopped"))?;
                let n = read_some(sock, &mut buf)?;
                if n == 0 {
                    return Ok(inn);
                }
                inn.add(n);
                full_tx
                    .send((buf, n))
                    .map_err(|_| broken("writer stopped"))?;
            }
        })();
        drop(full_tx); // end of body for the writer
        let out = writer.join().map_err(|_| broken("writer panicked"))??;
        settle_counts(read_result?, out)
    })
}

pub fn splice_single(
    sock: &TcpStream,
    file: &File,
    pipe_r: &OwnedFd,
    pipe_w: &OwnedFd,
    pipe_size: usize,
    durability: Durability,
) -> io::Result<(Moved, Moved)> {
    let (mut inn, mut out) = (Moved::default(), Moved::default());
    loop {
        let n = splice(sock.as_fd(), pipe_w.as_fd(), pipe_size)?;
        if n == 0 {
            break;
        }
        inn.add(n);
        let mut left = n;
        while left > 0 {
            let m = splice(pipe_r.as_fd(), file.as_fd(), left)?;
            if m == 0 {
                return Err(broken("pipe ran dry"));
            }
            out.add(m);
            left -= m;
        }
    }
    finish(file, durability)?;
    settle_counts(inn, out)
}

/// This thread splices socket -> pipe; a writer thread splices pipe -> file.
/// Each end of the pipe is closed by the thread that owns it, so EOF and
/// errors travel to the other side (writer sees EOF, reader sees EPIPE).
pub fn splice_split(
    sock: &TcpStream,
    file: &File,
    pipe_r: OwnedFd,
    pipe_w: OwnedFd,
    pipe_size: usize,
    durability: Durability,
) -> io::Result<(Moved, Moved)> {
    std::thread::scope(|s| {
        let writer = s.spawn(move || -> io::Result<Moved> {
            let pipe_r = pipe_r;
            let mut out = Moved::default();
            loop {
                let m = splice(pipe_r.as_fd(), file.as_fd(), pipe_size)?;
                if m == 0 {
                    break;
                }
                out.add(m);
            }
            finish(file, durability)?;
            Ok(out)
        });
        let read_result = (|| -> io::Result<Moved> {
            let mut inn = Moved::default();
            loop {
                let n = splice(sock.as_fd(), pipe_w.as_fd(), pipe_size)?;
                if n == 0 {
                    return Ok(inn);
                }
                inn.add(n);
            }
        })();
        drop(pipe_w);
        let out = writer.join().map_err(|_| broken("writer panicked"))??;
        settle_counts(read_result?, out)
    })
}
