//! A worker's window of kept names' checks (`spec/files.md`, "How often:
//! never older than the request").

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a kept name's check covers: the requests its worker had read when
/// the check was made. A hit shares a check of its window, and a window
/// ends at the first read that brings bytes after one of its checks, so a
/// hit is always answered from a `statx` made after its request arrived:
/// a client that changed a file and then asks for it never gets the bytes
/// from before its change, and requests read together (one wait's batch,
/// pipelined requests, HTTP/2 streams) share one check per name. No clock
/// is involved. One per worker; ids are unique across workers.
pub(crate) struct Window {
    /// 0: no window, every hit checks.
    id: Cell<u64>,
    /// A check was made in this window.
    checked: Cell<bool>,
}

impl Window {
    pub(crate) fn new() -> Window {
        Window {
            id: Cell::new(fresh_id()),
            checked: Cell::new(false),
        }
    }

    /// No sharing: every hit makes its own check.
    #[cfg(any(test, feature = "bench"))]
    pub(crate) fn none() -> Window {
        Window {
            id: Cell::new(0),
            checked: Cell::new(false),
        }
    }

    /// Bytes of requests came in: a check already made in this window may
    /// be older than them, so the window ends.
    pub(crate) fn bytes_read(&self) {
        if self.checked.replace(false) {
            self.id.set(fresh_id());
        }
    }

    pub(super) fn id(&self) -> u64 {
        self.id.get()
    }

    pub(super) fn checked(&self) {
        if self.id() != 0 {
            self.checked.set(true);
        }
    }
}

fn fresh_id() -> u64 {
    static IDS: AtomicU64 = AtomicU64::new(1);
    IDS.fetch_add(1, Ordering::Relaxed)
}
