//! A program with an event stream, for the test that upgrades it while
//! clients listen (`tests/tests/events_upgrade.rs`).
//!
//! `sse_server PORT_FILE`: serves `GET /events` on 127.0.0.1 (a free port,
//! written to PORT_FILE with the process id once listening; an upgraded
//! process inherits the socket and writes it again): an event stream
//! whose events say `PID N`, one every 20 ms, until the client leaves or
//! the server stops. SIGUSR2 upgrades it, SIGTERM stops it.

use nikaia_std::http::{event_stream, Event, Server};

fn main() {
    let Some(port_file) = std::env::args().nth(1) else {
        eprintln!("usage: sse_server PORT_FILE");
        std::process::exit(2);
    };
    let mut rt = nikaia_std::rt::Runtime::default();
    rt.listen = vec![nikaia_std::rt::Listen::tcp(([127, 0, 0, 1], 0).into())];
    rt.workers = 1;
    rt.access_log = nikaia_std::rt::LogTarget::Off;
    let pid = std::process::id();
    let server = Server::with_runtime(rt).route("/events", move |_| {
        let (events, answer) = event_stream();
        std::thread::spawn(move || {
            for n in 0u64.. {
                if events.send(&Event::data(format!("{pid} {n}"))).is_err() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        answer
    });
    let running = server.start().expect("start");
    running.stop_on_signals().expect("signals");
    let tmp = format!("{port_file}.{pid}.tmp");
    let said = format!("{} {pid}", running.local_addr().port());
    std::fs::write(&tmp, said).unwrap();
    std::fs::rename(&tmp, &port_file).unwrap();
    running.wait();
}
