//! What a running server counts for its operator (`nikaia explain`):
//! requests and bytes per vehicle. The kept table counts its own hits.

use crate::send::Vehicle;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub(crate) struct Stats {
    requests: [AtomicU64; 4],
    bytes: [AtomicU64; 4],
    /// Sends whose pages were not in the page cache, read on the io pool.
    pub cold_reads: AtomicU64,
    /// Opens that could not complete from the kernel's caches.
    pub pool_opens: AtomicU64,
    /// Bodies cut short because the file shrank or failed mid-transfer.
    pub truncated: AtomicU64,
}

impl Stats {
    pub(crate) fn record(&self, v: Vehicle, bytes: u64) {
        self.requests[v.index()].fetch_add(1, Ordering::Relaxed);
        self.bytes[v.index()].fetch_add(bytes, Ordering::Relaxed);
    }

    /// (vehicle, requests, bytes) for each vehicle.
    pub(crate) fn per_vehicle(&self) -> Vec<(Vehicle, u64, u64)> {
        Vehicle::ALL
            .iter()
            .map(|&v| {
                (
                    v,
                    self.requests[v.index()].load(Ordering::Relaxed),
                    self.bytes[v.index()].load(Ordering::Relaxed),
                )
            })
            .collect()
    }
}
