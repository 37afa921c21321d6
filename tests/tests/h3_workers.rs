//! HTTP/3 on every worker, with clients that move (issue #48,
//! `spec/http3.md`, "Workers: how a datagram finds its connection" and
//! "Lifecycle"), driven by real clients: Debian's `gtlsclient` (ngtcp2)
//! rebinding its address and migrating mid-download, a client whose
//! datagrams reach the server from rotating source ports (tests/h3/relay.py
//! in front of gtlsclient), an aioquic client that moves while it
//! downloads and watches for stateless resets (tests/h3/mover.py), and
//! headless Chromium, forced onto QUIC and led there by Alt-Svc with the
//! test CA trusted through a temporary NSS database.
//!
//! No assertion is about time: loopback carries 8 MiB in about 80 ms, so a
//! move is made mid-download by construction (the server holds the rest
//! of the body until it counted the client's new address, or the client
//! moves between two reads of the body), and each test asserts bytes,
//! statuses and the server's counters (`path_changes`, `handed`). A
//! stateless reset is watched for where the client can see one (aioquic,
//! on its live path): the server's own count may move for a datagram of a
//! connection that ended, or of an ID the client retired, still on its
//! way, as it should.

#[path = "h3_workers/browser.rs"]
mod browser;
#[path = "h3_workers/moves.rs"]
mod moves;

use nikaia_std::http::Running;
use nikaia_std::rt::Runtime;
use nikaia_tests::TestPki;
use serde_json::Value;

/// A runtime serving HTTPS with `pki`'s pair and HTTP/3 on the same port,
/// on `workers` workers (loopback, port 0, quiet logs).
pub fn h3_runtime(pki: &TestPki, workers: usize) -> Runtime {
    let mut rt = pki.runtime();
    rt.http3 = Some(true);
    rt.workers = workers;
    rt
}

/// The server's HTTP/3 counter `key`, as `nikaia explain --json` shows it
/// under `"h3"` (the stats socket sends this same JSON).
pub fn h3_counter(server: &Running, key: &str) -> u64 {
    let report: Value = serde_json::from_str(&server.report().to_json()).unwrap();
    report["h3"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("no HTTP/3 counter {key:?} in the report: {}", report["h3"]))
}
