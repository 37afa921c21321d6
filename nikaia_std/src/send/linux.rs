//! The Linux backend: the only place `sendfile`, `pread` and the residency
//! probe are called.

use rustix::io::{Errno, ReadWriteFlags};
use std::fs::File;
use std::io::IoSliceMut;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};

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
