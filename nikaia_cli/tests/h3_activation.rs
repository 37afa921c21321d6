//! Socket activation with a datagram socket (`spec/http3.md`,
//! "Lifecycle"; `ListenDatagram=` in a systemd socket unit): the UDP
//! socket passed for a TLS address is used, shared by every worker.
//! `systemd-socket-activate` passes one kind of socket per call, so two are
//! nested: the outer one listens on TCP, and once a connection comes
//! executes the inner one, which takes the TCP socket from `LISTEN_FDS`,
//! binds a UDP socket on the same port (`--datagram`) and passes both to
//! `nikaia serve`. With no datagram socket passed the start succeeds with a
//! notice and no HTTP/3: `h3_lifecycle.rs`,
//! `socket_activation_without_a_udp_socket_leaves_http3_off`.
//! The HTTP/3 client is ngtcp2's `gtlsclient`.

mod common;

use common::{explain, spawn_serving};
use nikaia_tests::{TestPki, TlsClient};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A port free for TCP and for UDP on 127.0.0.1.
fn free_port() -> u16 {
    loop {
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// gtlsclient GETs `path` from 127.0.0.1:`port` into `into`: the bytes.
fn h3_download(port: u16, path: &str, into: &Path) -> Vec<u8> {
    let out = Command::new("timeout")
        .args(["30", "gtlsclient", "-q", "--exit-on-all-streams-close"])
        .arg("--timeout=10s")
        .arg(format!("--download={}", into.display()))
        .args(["--sni=localhost", "127.0.0.1", &port.to_string()])
        .arg(format!("https://localhost:{port}{path}"))
        .output()
        .expect("gtlsclient runs (test.sh installs ngtcp2-client)");
    assert!(out.status.success(), "{out:?}");
    let name = path.rsplit('/').next().unwrap();
    std::fs::read(into.join(name)).unwrap_or_default()
}

#[test]
fn a_passed_datagram_socket_serves_http3_on_2_workers() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("index.html"), "the index\n").unwrap();
    let big = nikaia_tests::corpus::random(3 << 20, 53);
    std::fs::write(root.join("big.bin"), &big).unwrap();
    let pki = TestPki::new();
    let port = free_port();
    let sock = dir.path().join("stats.sock");
    let runtime = dir.path().join("runtime.toml");
    std::fs::write(
        &runtime,
        format!(
            "listen = \"127.0.0.1:{port}\"\nworkers = 2\nhttp3 = true\n\
             access-log = \"{}\"\nerror-log = \"{}\"\nstats-socket = \"{}\"\n\
             tls-cert = \"{}\"\ntls-key = \"{}\"\n",
            dir.path().join("access.log").display(),
            dir.path().join("error.log").display(),
            sock.display(),
            pki.cert.display(),
            pki.key.display()
        ),
    )
    .unwrap();
    let at = format!("127.0.0.1:{port}");
    let mut cmd = Command::new("systemd-socket-activate");
    cmd.arg(format!("--listen={at}"))
        .arg("systemd-socket-activate")
        .arg("--datagram")
        .arg(format!("--listen={at}"))
        .arg(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(&root)
        .arg("--runtime")
        .arg(&runtime);
    // The first TCP connection wakes both parents.
    let first = at.clone();
    let poke = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(&first).is_err() {
            assert!(
                Instant::now() < end,
                "systemd-socket-activate never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let (server, line) = spawn_serving(cmd);
    poke.join().unwrap();
    assert!(line.contains(&format!("https://{at}/")), "{line}");

    // HTTPS says HTTP/3 is there, and it is: four connections, each
    // byte-exact.
    let reply = TlsClient::connect_tls(at.parse().unwrap(), pki.client_config()).get("/index.html");
    assert_eq!(reply.status, 200);
    let alt = format!("h3=\":{port}\"; ma=86400");
    assert_eq!(reply.header("alt-svc"), Some(alt.as_str()));
    for run in 0..4 {
        let into = tempfile::tempdir().unwrap();
        assert_eq!(
            h3_download(port, "/index.html", into.path()),
            b"the index\n"
        );
        let got = h3_download(port, "/big.bin", into.path());
        assert!(
            got == big,
            "run {run}: {} of {} bytes",
            got.len(),
            big.len()
        );
    }
    let socket = sock.to_str().unwrap();
    let mut h3 = serde_json::Value::Null;
    for _ in 0..100 {
        let out = explain(&["--socket", socket, "--json"]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        h3 = report["h3"].clone();
        if h3["streams"] == 8 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        (h3["connections"].as_u64(), h3["streams"].as_u64()),
        (Some(8), Some(8)),
        "{h3}"
    );
    let log = std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default();
    assert!(!log.contains("passed no UDP socket"), "{log}");
    assert!(!log.contains("HTTP/3 is off"), "{log}");
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let access = std::fs::read_to_string(dir.path().join("access.log")).unwrap_or_default();
        if access.matches(" HTTP/3.0\" 200 ").count() == 8 {
            break;
        }
        assert!(Instant::now() < end, "{access}");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(server);
}
