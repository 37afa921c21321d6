//! What a running server counts as it goes, for its operator (`nikaia
//! explain`): requests and bytes per vehicle, statuses, the io pool's work.
//! The kept table counts its own hits; `rt::Report` is the snapshot.

use crate::rt::Vehicle;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub(crate) struct Stats {
    /// Per vehicle: [plain, through TLS].
    requests: [[AtomicU64; 4]; 2],
    bytes: [[AtomicU64; 4]; 2],
    /// Sends whose pages were not in the page cache, read on the io pool.
    pub cold_reads: AtomicU64,
    /// Opens that could not complete from the kernel's caches.
    pub pool_opens: AtomicU64,
    /// Bodies cut short because the file shrank or failed mid-transfer.
    pub truncated: AtomicU64,
    /// Idle connections closed to admit new ones at `max-connections`.
    pub idle_closed: AtomicU64,
    /// Connections closed because an answer made no progress for
    /// `send-timeout`; and the error log's rate limit for saying so.
    pub send_timeouts: AtomicU64,
    pub send_timeouts_logged: crate::linux::log::Throttle,
    /// Responses by status class, 1xx to 5xx.
    statuses: [AtomicU64; 5],
    pub h2: H2Stats,
    pub h3: H3Stats,
    pub bodies: std::sync::Arc<BodyStats>,
    pub writes: std::sync::Arc<WriteStats>,
    /// Produced response bodies (`http::produce`).
    pub produced: std::sync::Arc<crate::http::produce::sending::Tally>,
}

/// The statuses a write of the directory writer is refused with, counted
/// each on its own (`rt::WritesReport`); any other is counted as 500.
const WRITE_REFUSALS: [u16; 17] = [
    400, 401, 403, 404, 405, 409, 412, 413, 415, 500, 503, 507, 408, 411, 424, 502, 423,
];

/// What the directory writer did (`rt::WritesReport`).
#[derive(Default)]
pub(crate) struct WriteStats {
    pub created: AtomicU64,
    pub replaced: AtomicU64,
    pub bytes: AtomicU64,
    pub deleted: AtomicU64,
    refused: [AtomicU64; WRITE_REFUSALS.len()],
    /// WebDAV requests answered, by method ([`DAV_METHODS`]).
    dav: [AtomicU64; DAV_METHODS.len()],
}

/// WebDAV's methods, as `nikaia explain` counts them.
use crate::http::site::dav::METHODS as DAV_METHODS;

impl WriteStats {
    /// Counts a write refused (or failed) with `status`.
    pub(crate) fn refused(&self, status: u16) {
        let i = WRITE_REFUSALS.iter().position(|&s| s == status);
        let i = i.unwrap_or_else(|| WRITE_REFUSALS.iter().position(|&s| s == 500).unwrap_or(0));
        self.refused[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a WebDAV request answered (whatever its status).
    pub(crate) fn dav_answered(&self, method: &str) {
        if let Some(i) = DAV_METHODS.iter().position(|&m| m == method) {
            self.dav[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn report(&self) -> crate::rt::WritesReport {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let dav = (DAV_METHODS.iter().zip(&self.dav))
            .map(|(&m, c)| (m, load(c)))
            .filter(|&(_, n)| n > 0)
            .collect();
        let mut refused: Vec<(u16, u64)> = WRITE_REFUSALS
            .iter()
            .zip(&self.refused)
            .map(|(&s, c)| (s, load(c)))
            .filter(|&(_, n)| n > 0)
            .collect();
        refused.sort_unstable();
        crate::rt::WritesReport {
            created: load(&self.created),
            replaced: load(&self.replaced),
            bytes: load(&self.bytes),
            deleted: load(&self.deleted),
            refused,
            dav,
        }
    }
}

/// What became of request bodies (`rt::BodiesReport`).
#[derive(Default)]
pub(crate) struct BodyStats {
    pub whole: AtomicU64,
    pub streamed: AtomicU64,
    pub bytes: AtomicU64,
    pub refused: AtomicU64,
    pub drained: AtomicU64,
    pub timeouts: AtomicU64,
    pub aborted: AtomicU64,
    pub files_written: AtomicU64,
    pub files_refused: AtomicU64,
    pub files_failed: AtomicU64,
}

impl BodyStats {
    pub(crate) fn report(&self) -> crate::rt::BodiesReport {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        crate::rt::BodiesReport {
            whole: load(&self.whole),
            streamed: load(&self.streamed),
            bytes: load(&self.bytes),
            refused: load(&self.refused),
            drained: load(&self.drained),
            timeouts: load(&self.timeouts),
            aborted: load(&self.aborted),
            files_written: load(&self.files_written),
            files_refused: load(&self.files_refused),
            files_failed: load(&self.files_failed),
        }
    }
}

/// What HTTP/2 connections count (`spec/http2.md`, "What an operator sees").
#[derive(Default)]
pub(crate) struct H2Stats {
    /// Connections that spoke HTTP/2 (h2 and h2c).
    pub connections: AtomicU64,
    /// Streams clients opened.
    pub streams: AtomicU64,
    /// RST_STREAM frames sent, and received.
    pub resets_sent: AtomicU64,
    pub resets_received: AtomicU64,
    /// GOAWAY frames sent, by error code (RFC 9113 §7).
    pub goaway: [AtomicU64; 14],
    /// Connections closed for a flood (ENHANCE_YOUR_CALM).
    pub floods: AtomicU64,
    /// Streams reset because they made no progress for send-timeout.
    pub stalled: AtomicU64,
    /// The error log's rate limit for connection errors.
    pub logged: crate::linux::log::Throttle,
}

/// What QUIC connections and their HTTP/3 count (`spec/http3.md`,
/// "What an operator sees").
#[derive(Default)]
pub(crate) struct H3Stats {
    /// QUIC connections accepted (their handshake began).
    pub connections: AtomicU64,
    /// Handshakes refused (CONNECTION_REFUSED) at `max-connections`.
    pub refused: AtomicU64,
    /// Retry packets sent (address validation).
    pub retries: AtomicU64,
    /// Request streams clients opened.
    pub streams: AtomicU64,
    /// Streams we reset, and streams the client reset or stopped.
    pub resets_sent: AtomicU64,
    pub resets_received: AtomicU64,
    /// Connections closed for a flood (H3_EXCESSIVE_LOAD).
    pub floods: AtomicU64,
    /// Streams reset because they made no progress for send-timeout.
    pub stalled: AtomicU64,
    /// Connections closed with no request head by header-timeout.
    pub header_timeouts: AtomicU64,
    /// Datagrams read.
    pub datagrams: AtomicU64,
    /// Datagrams a worker read for another worker's connection, and
    /// handed to it.
    pub handed: AtomicU64,
    /// Datagrams dropped because their worker's inbox was full.
    pub handed_lost: AtomicU64,
    /// Times a connection's client address changed (migration, NAT).
    pub path_changes: AtomicU64,
    /// Stateless resets sent.
    pub stateless_resets: AtomicU64,
    /// An upgrade: datagrams carried to the other process, carried here
    /// from it, and lost (the pair full, or the other process gone).
    pub forwarded: AtomicU64,
    pub forwarded_in: AtomicU64,
    pub forward_lost: AtomicU64,
    /// QUIC connections that finished here after an upgrade's handover.
    pub drained: AtomicU64,
    /// The error log's rate limit for connection errors.
    pub logged: crate::linux::log::Throttle,
}

impl H3Stats {
    pub(crate) fn report(&self) -> crate::rt::H3Report {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        crate::rt::H3Report {
            connections: load(&self.connections),
            refused: load(&self.refused),
            retries: load(&self.retries),
            streams: load(&self.streams),
            resets_sent: load(&self.resets_sent),
            resets_received: load(&self.resets_received),
            floods: load(&self.floods),
            stalled: load(&self.stalled),
            header_timeouts: load(&self.header_timeouts),
            handed: load(&self.handed),
            handed_lost: load(&self.handed_lost),
            path_changes: load(&self.path_changes),
            stateless_resets: load(&self.stateless_resets),
            forwarded: load(&self.forwarded),
            forwarded_in: load(&self.forwarded_in),
            forward_lost: load(&self.forward_lost),
            drained: load(&self.drained),
            datagrams: load(&self.datagrams),
        }
    }
}

impl H2Stats {
    pub(crate) fn report(&self) -> crate::rt::H2Report {
        use crate::http::h2::frame::ErrorCode;
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        crate::rt::H2Report {
            connections: load(&self.connections),
            streams: load(&self.streams),
            resets_sent: load(&self.resets_sent),
            resets_received: load(&self.resets_received),
            goaway: ErrorCode::ALL
                .iter()
                .map(|&code| (code.name().to_owned(), load(&self.goaway[code as usize])))
                .filter(|(_, n)| *n > 0)
                .collect(),
            floods: load(&self.floods),
            stalled: load(&self.stalled),
        }
    }
}

impl Stats {
    /// Counts one response's body: `tls` when it went through a session.
    pub(crate) fn record(&self, v: Vehicle, bytes: u64, tls: bool) {
        let t = usize::from(tls);
        self.requests[t][v.index()].fetch_add(1, Ordering::Relaxed);
        self.bytes[t][v.index()].fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts one response by its status class.
    pub(crate) fn status(&self, status: u16) {
        let class = usize::from(status / 100).clamp(1, 5) - 1;
        self.statuses[class].fetch_add(1, Ordering::Relaxed);
    }

    /// Responses by status class: [1xx, 2xx, 3xx, 4xx, 5xx].
    pub(crate) fn statuses(&self) -> [u64; 5] {
        std::array::from_fn(|i| self.statuses[i].load(Ordering::Relaxed))
    }

    /// (vehicle, requests, bytes) for each vehicle, plain or through TLS.
    /// Under TLS the kept table holds copies, not mappings (`spec/tls.md`);
    /// sendfile never carries a TLS body.
    pub(crate) fn per_vehicle(&self, tls: bool) -> Vec<(String, u64, u64)> {
        let t = usize::from(tls);
        Vehicle::ALL
            .iter()
            .filter(|&&v| !(tls && v == Vehicle::Sendfile))
            .map(|&v| {
                let name = match v {
                    Vehicle::Kept if tls => "kept copy",
                    v => v.name(),
                };
                (
                    name.to_owned(),
                    self.requests[t][v.index()].load(Ordering::Relaxed),
                    self.bytes[t][v.index()].load(Ordering::Relaxed),
                )
            })
            .collect()
    }
}
