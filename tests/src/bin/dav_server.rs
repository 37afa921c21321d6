//! A program serving a directory as `nikaia serve` does, for the tests
//! that signal it (`tests/tests/dav_locks/lifecycle.rs`).
//!
//! `dav_server ROOT RUNTIME PORT_FILE`: serves ROOT with `nikaia serve`'s
//! routes (`Server::serve_dir`, listings on) under the runtime file
//! RUNTIME, on 127.0.0.1 (a free port, written to PORT_FILE with the
//! process id once listening; an upgraded process inherits the socket and
//! writes it again), two workers, no access log. SIGHUP reads RUNTIME
//! again, SIGUSR2 upgrades, SIGTERM stops it.

use nikaia_std::fs::Root;
use nikaia_std::http::Server;
use nikaia_std::rt::{Listen, LogTarget, Runtime};
use std::path::Path;

/// What the program sets over the runtime file, at start and at every
/// reload.
fn adjust(rt: &mut Runtime) {
    rt.listen = vec![Listen::tcp(([127, 0, 0, 1], 0).into())];
    rt.workers = 2;
    rt.access_log = LogTarget::Off;
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, root, runtime, port_file] = &args[..] else {
        eprintln!("usage: dav_server ROOT RUNTIME PORT_FILE");
        std::process::exit(2);
    };
    let mut rt = Runtime::load(Path::new(runtime)).unwrap_or_else(|e| panic!("{e:?}"));
    adjust(&mut rt);
    let root = Root::dir(root).expect("the served directory");
    let server = Server::with_runtime(rt)
        .serve_dir(root, false, true)
        .reload_from(runtime, adjust);
    let running = server.start().expect("start");
    nikaia_tests::serve::announce_and_wait(&running, port_file);
}
