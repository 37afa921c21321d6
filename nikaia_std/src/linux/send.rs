//! How a file travels on Linux (D3): the vehicles' syscalls — the only
//! place `sendfile`, the read vehicle's `pread` and the residency probe are
//! called (whole reads, for the io pool and the kept copies, are
//! `fs::read_full_at`) — the choice between them, and the state of one
//! file body being sent.
//! Normative text: `spec/files.md`.

use rustix::io::{Errno, ReadWriteFlags};
use std::fs::File;
use std::io::IoSliceMut;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::rt::{SendFile, Vehicle};

/// `sendfile(sock, file, offset, count)`: the kernel copies page-cache pages
/// to the socket; the program never has the bytes. Advances `offset`.
pub(crate) fn sendfile(
    sock: impl AsFd,
    file: &File,
    offset: &mut u64,
    count: usize,
) -> Result<usize, Errno> {
    loop {
        match rustix::fs::sendfile(&sock, file, Some(offset), count) {
            Err(Errno::INTR) => continue,
            other => return other,
        }
    }
}

/// `pread` at `offset` into `buf`.
pub(crate) fn pread(file: &File, buf: &mut [u8], offset: u64) -> Result<usize, Errno> {
    loop {
        match rustix::io::pread(file, &mut *buf, offset) {
            Err(Errno::INTR) => continue,
            other => return other,
        }
    }
}

/// Whether the page cache holds the bytes at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Residency {
    Warm,
    /// Reading it would wait for the disk.
    Cold,
}

/// Set once `RWF_NOWAIT` turned out to be unsupported here: every probe then
/// says Warm (the send may block, as it would without D9).
static NO_PROBE: AtomicBool = AtomicBool::new(false);

/// Probes one byte at each offset with `preadv2(RWF_NOWAIT)`, which reads
/// from the page cache or fails with `EAGAIN` instead of waiting for the
/// disk. Works for any file the process can read (unlike `mincore`, which
/// only reports the pages of files the caller could write).
pub(crate) fn residency(file: &File, offsets: impl IntoIterator<Item = u64>) -> Residency {
    if NO_PROBE.load(Ordering::Relaxed) {
        return Residency::Warm;
    }
    let mut byte = [0u8; 1];
    for off in offsets {
        let mut iov = [IoSliceMut::new(&mut byte)];
        match rustix::io::preadv2(file.as_fd(), &mut iov, off, ReadWriteFlags::NOWAIT) {
            Ok(_) => {}
            Err(Errno::AGAIN) => return Residency::Cold,
            Err(Errno::OPNOTSUPP | Errno::INVAL | Errno::NOSYS) => {
                NO_PROBE.store(true, Ordering::Relaxed);
                return Residency::Warm;
            }
            // A real read error shows itself when the bytes are sent.
            Err(_) => return Residency::Warm,
        }
    }
    Residency::Warm
}

/// Copies `src` into a new buffer through the kernel, for bytes that may be
/// a mapping of a file another process can truncate (a program's
/// `fs::Mapped`, sent through TLS). Reading such a page in user mode past
/// the file's new end raises SIGBUS and ends the process; the kernel reading
/// it on our behalf fails with `EFAULT` instead, and that is an error the
/// caller answers. `process_vm_readv` on this process does it in one call;
/// where a sandbox refuses that call, a pipe does it in two per 64 KiB.
pub(crate) fn guarded_copy(src: &[u8]) -> Result<Vec<u8>, Errno> {
    let mut dst: Vec<u8> = Vec::with_capacity(src.len());
    let mut done = 0;
    while done < src.len() {
        let left = src.len() - done;
        let local = libc::iovec {
            // The spare capacity begins at `done` already.
            iov_base: dst.spare_capacity_mut().as_mut_ptr().cast(),
            iov_len: left,
        };
        let remote = libc::iovec {
            iov_base: src[done..].as_ptr() as *mut libc::c_void,
            iov_len: left,
        };
        // SAFETY: `local` is `left` bytes of `dst`'s spare capacity, which
        // this function owns; `remote` names `left` bytes of `src` in this
        // same process, only read (by the kernel, which reports a fault as
        // EFAULT rather than a signal). Both iovec arrays have one element.
        let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
        if n < 0 {
            let e = Errno::from_raw_os_error(
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            );
            return match e {
                Errno::INTR => continue,
                Errno::NOSYS | Errno::PERM => guarded_copy_by_pipe(src, dst, done),
                e => Err(e),
            };
        }
        if n == 0 {
            return Err(Errno::FAULT);
        }
        done += n as usize;
        // SAFETY: the kernel wrote `n` more bytes into the spare capacity,
        // right after the `done - n` already counted.
        unsafe { dst.set_len(done) };
    }
    Ok(dst)
}

/// [`guarded_copy`] where `process_vm_readv` is refused: `write` into a
/// pipe (the kernel reads `src`), then `read` back.
fn guarded_copy_by_pipe(src: &[u8], mut dst: Vec<u8>, mut done: usize) -> Result<Vec<u8>, Errno> {
    const STEP: usize = 64 << 10;
    let (rd, wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    dst.resize(src.len(), 0);
    while done < src.len() {
        let end = src.len().min(done + STEP);
        let wrote = rustix::io::write(&wr, &src[done..end])?;
        let mut got = 0;
        while got < wrote {
            got += rustix::io::read(&rd, &mut dst[done + got..done + wrote])?;
        }
        done += wrote;
    }
    Ok(dst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn guarded_copy_copies_and_a_truncated_mapping_is_efault_not_sigbus() {
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..3 * 4096u32).map(|i| (i % 251) as u8).collect();
        f.write_all(&data).unwrap();
        // SAFETY: a private temporary file only this test writes.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        assert_eq!(guarded_copy(&map).unwrap(), data);
        f.set_len(4096).unwrap();
        // The first page is still there; the rest is past the end now.
        assert_eq!(guarded_copy(&map[..4096]).unwrap(), &data[..4096]);
        assert_eq!(guarded_copy(&map), Err(Errno::FAULT));
        let empty = Vec::new();
        assert_eq!(
            guarded_copy_by_pipe(&map[..10], empty, 0).unwrap(),
            &data[..10]
        );
        assert_eq!(guarded_copy_by_pipe(&map, Vec::new(), 0), Err(Errno::FAULT));
    }

    #[test]
    fn a_copy_cut_short_after_a_first_part_is_efault_not_a_panic() {
        // The first call copies what is left of the file; the second one
        // starts where it stopped and faults. It once started twice as far
        // (an offset counted twice) and panicked the worker.
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 253) as u8).collect();
        f.write_all(&data).unwrap();
        // SAFETY: a private temporary file only this test writes.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        f.set_len(768 << 10).unwrap();
        assert_eq!(guarded_copy(&map), Err(Errno::FAULT));
        assert_eq!(guarded_copy(&map[..768 << 10]).unwrap(), &data[..768 << 10]);
    }
}

/// Files at most this large may be kept as mappings (D8). On this machine
/// a validated kept mapping costs less machine CPU than `sendfile` of a
/// file opened per request at 4 and 8 KiB, as much or more at 16 KiB, and
/// more from 32 KiB up (benches/sendfile, `docs/history/zero-copy-send.md`);
/// the record saw it tie at 64 KiB.
pub(crate) const KEEP_MAX: u64 = 8 << 10;

/// Bytes read per `pread` on the read vehicle, and the size of a pooled buffer.
pub(crate) const READ_BUF: usize = 64 << 10;

/// The vehicle for a body of `len` bytes that is not kept, under the
/// runtime file's `send-file`. Through TLS the bytes must pass through the
/// session, so they are read (kTLS, which would let `sendfile` encrypt in
/// the kernel, is not built: `spec/tls.md`).
pub(crate) fn choose(policy: SendFile, len: u64, tls: bool) -> Vehicle {
    if tls {
        return Vehicle::Read;
    }
    match policy {
        // sendfile was never worse than reading, at any size, in either
        // family, in every run of the record and of benches/sendfile here.
        SendFile::Auto => Vehicle::Sendfile,
        SendFile::Never => Vehicle::Read,
        SendFile::AtLeast(min) if len >= min => Vehicle::Sendfile,
        SendFile::AtLeast(_) => Vehicle::Read,
    }
}

/// A file body in a connection's queue: the descriptor opened for this
/// response and the part of it still to send.
#[derive(Debug)]
pub(crate) struct FileSend {
    pub file: Arc<File>,
    /// Where this response's part of the file starts (for the log).
    pub start: u64,
    pub offset: u64,
    pub end: u64,
    pub vehicle: Vehicle,
    /// Bytes read (by `pread` here or on the io pool) and not yet written.
    pub buf: Option<Buffered>,
    /// Up to where the page cache was last found warm.
    pub warm_to: u64,
    /// A read of cold pages is on the io pool.
    pub waiting: bool,
    /// For the error log when the file turns out shorter than promised.
    pub name: Arc<str>,
}

#[derive(Debug)]
pub(crate) struct Buffered {
    pub data: Vec<u8>,
    pub pos: usize,
}

impl FileSend {
    /// Bytes `start..end` of `file`, by `vehicle`; `name` is for the log.
    pub(crate) fn new(
        file: Arc<File>,
        start: u64,
        end: u64,
        vehicle: Vehicle,
        name: &str,
    ) -> FileSend {
        FileSend {
            file,
            start,
            offset: start,
            end,
            vehicle,
            buf: None,
            warm_to: 0,
            waiting: false,
            name: Arc::from(name),
        }
    }

    pub(crate) fn remaining(&self) -> u64 {
        self.end - self.offset
            + self
                .buf
                .as_ref()
                .map_or(0, |b| (b.data.len() - b.pos) as u64)
    }
}

/// The offsets probed before sending `[from, to)`: its first and last byte
/// and one in each 256 KiB between, so a window evicted in part is caught.
pub(crate) fn probe_points(from: u64, to: u64) -> impl Iterator<Item = u64> {
    const STEP: u64 = 256 << 10;
    let last = to.saturating_sub(1).max(from);
    (from..last)
        .step_by(STEP as usize)
        .chain(std::iter::once(last))
}
