//! `nikaia serve`'s routes in a test server (`Server::serve_dir`, as the
//! CLI registers them): the directory handler for GET, HEAD and OPTIONS,
//! the directory writer for PUT and DELETE, and the tus endpoint where the
//! runtime has `[resumable]`; and how the test programs (`src/bin/`)
//! tell their test where they listen.

use nikaia_std::fs::Root;
use nikaia_std::http::{Running, Server};
use nikaia_std::rt::Runtime;
use std::path::Path;

/// Serves `dir` under `rt` with `nikaia serve`'s routes (`hidden`: dot-
/// names shown; `list`: directories listed).
pub fn serve_dir(dir: &Path, rt: Runtime, hidden: bool, list: bool) -> Running {
    let root = Root::dir(dir).expect("the served directory");
    crate::start(Server::with_runtime(rt).serve_dir(root, hidden, list))
}

/// What a test program does once `running` listens: hands the signals to
/// it (`Running::stop_on_signals`), writes `PORT PID` to `port_file`
/// (through a file renamed over it, so a reader never sees half of it;
/// an upgraded process writes it again), and serves until it stops.
pub fn announce_and_wait(running: &Running, port_file: &str) {
    running.stop_on_signals().expect("signals");
    let pid = std::process::id();
    let tmp = format!("{port_file}.{pid}.tmp");
    let said = format!("{} {pid}", running.local_addr().port());
    std::fs::write(&tmp, said).unwrap();
    std::fs::rename(&tmp, port_file).unwrap();
    running.wait();
}
