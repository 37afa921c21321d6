// Passing counterpart of handler_not_send.rs and handler_mutates_capture.rs:
// state every request updates is shared between threads and changed
// atomically (spec/http.md, "Shape" and "Threads").
use nikaia_std::http::Server;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn main() {
    let hits = Arc::new(AtomicU64::new(0));
    let _ = Server::new().route("/", move |_req| {
        let n = hits.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{n} hits")
    });
}
