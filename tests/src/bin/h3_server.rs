//! A program serving HTTPS and HTTP/3, for the test that upgrades it
//! under an h3 download (`tests/tests/h3_outside.rs`).
//!
//! `h3_server PORT_FILE CERT KEY`: serves `GET /big` (64 MiB) on 127.0.0.1
//! (a free port, written to PORT_FILE with the process id once listening;
//! an upgraded process inherits the sockets and writes it again), over
//! TLS with CERT and KEY and over HTTP/3 on the same port. SIGUSR2
//! upgrades it, SIGTERM stops it.

use nikaia_std::http::Server;
use nikaia_std::Bytes;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, port_file, cert, key] = &args[..] else {
        eprintln!("usage: h3_server PORT_FILE CERT KEY");
        std::process::exit(2);
    };
    let mut rt = nikaia_std::rt::Runtime::default();
    rt.listen = vec![nikaia_std::rt::Listen::tcp(([127, 0, 0, 1], 0).into())];
    rt.workers = 2;
    rt.access_log = nikaia_std::rt::LogTarget::Off;
    rt.tls_cert = Some(cert.into());
    rt.tls_key = Some(key.into());
    rt.http3 = Some(true);
    let big = Bytes::from(vec![7u8; 64 << 20]);
    let server = Server::with_runtime(rt).route("/big", move |_| big.clone());
    let running = server.start().expect("start");
    nikaia_tests::serve::announce_and_wait(&running, port_file);
}
