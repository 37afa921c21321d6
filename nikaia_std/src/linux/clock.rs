//! A worker's clock: the `Date` header formatted once per second per
//! worker, never per request.

use crate::text::date::imf_fixdate;

/// Seconds since the Unix epoch, now, by the system clock (on wasm32, where
/// `SystemTime::now` panics, the host passes its clock with each request:
/// `wasm/mod.rs`).
fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A worker's copy of the current `Date` value (IMF-fixdate, RFC 9110 §5.6.7).
pub(crate) struct DateCache {
    second: u64,
    text: [u8; 29],
}

impl DateCache {
    pub(crate) fn new() -> DateCache {
        let mut cache = DateCache {
            second: u64::MAX,
            text: [b' '; 29],
        };
        cache.refresh();
        cache
    }

    /// Re-formats the value if the second changed since the last call.
    pub(crate) fn refresh(&mut self) {
        let now = unix_seconds();
        if now != self.second {
            self.second = now;
            self.text = imf_fixdate(now);
        }
    }

    pub(crate) fn get(&self) -> &[u8] {
        &self.text
    }
}
