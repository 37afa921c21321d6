//! How a file travels to the socket (D3): the vehicles, the choice between
//! them, and the state of one file body being sent. One backend per target:
//! `linux.rs` has every syscall. Normative text: `spec/files.md`.
//! On wasm32 only the vehicles' names are used: a file body there is read.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::{guarded_copy, pread, residency, sendfile, Residency};

#[cfg(target_os = "linux")]
use crate::rt::SendFile;
#[cfg(target_os = "linux")]
use std::fs::File;
#[cfg(target_os = "linux")]
use std::sync::Arc;

/// The ways a body reaches the socket; also the rows of `nikaia explain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Vehicle {
    /// `sendfile(2)` from the descriptor opened for this request.
    Sendfile,
    /// A kept mapping (D8) written with the head in one `sendmsg`.
    Kept,
    /// `pread` into a pooled buffer, then written.
    Read,
    /// A body the handler had in memory (`Bytes`, `String`, a `Mapped`).
    Memory,
}

impl Vehicle {
    pub(crate) const ALL: [Vehicle; 4] = [
        Vehicle::Sendfile,
        Vehicle::Kept,
        Vehicle::Read,
        Vehicle::Memory,
    ];

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Vehicle::Sendfile => "sendfile",
            Vehicle::Kept => "kept mapping",
            Vehicle::Read => "read",
            Vehicle::Memory => "in-memory",
        }
    }
}

#[cfg(target_os = "linux")]
/// Files at most this large may be kept as mappings (D8). On this machine
/// a validated kept mapping costs less machine CPU than `sendfile` of a
/// file opened per request at 4 and 8 KiB, as much or more at 16 KiB, and
/// more from 32 KiB up (benches/sendfile, `docs/history/zero-copy-send.md`);
/// the record saw it tie at 64 KiB.
pub(crate) const KEEP_MAX: u64 = 8 << 10;

#[cfg(target_os = "linux")]
/// Bytes read per `pread` on the read vehicle, and the size of a pooled buffer.
pub(crate) const READ_BUF: usize = 64 << 10;

#[cfg(target_os = "linux")]
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

#[cfg(target_os = "linux")]
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

#[cfg(target_os = "linux")]
#[derive(Debug)]
pub(crate) struct Buffered {
    pub data: Vec<u8>,
    pub pos: usize,
}

#[cfg(target_os = "linux")]
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

#[cfg(target_os = "linux")]
/// The offsets probed before sending `[from, to)`: its first and last byte
/// and one in each 256 KiB between, so a window evicted in part is caught.
pub(crate) fn probe_points(from: u64, to: u64) -> impl Iterator<Item = u64> {
    const STEP: u64 = 256 << 10;
    let last = to.saturating_sub(1).max(from);
    (from..last)
        .step_by(STEP as usize)
        .chain(std::iter::once(last))
}
