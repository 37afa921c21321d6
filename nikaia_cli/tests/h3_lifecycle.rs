//! HTTP/3's UDP sockets through the server's life (`spec/http3.md`,
//! "Sockets" and "Lifecycle"): an upgrade by SIGUSR2 hands them to the new
//! process, which answers over QUIC once the old one is gone; socket
//! activation that passes no UDP socket leaves HTTP/3 off with a notice
//! and no `Alt-Svc`; and a port-0 TLS listener's UDP socket takes its
//! port. The HTTP/3 client is ngtcp2's `gtlsclient` (Debian
//! `ngtcp2-client`, installed by test.sh).

mod common;

use common::{alive, spawn_serve, spawn_serving, Served};
use nikaia_tests::{TestPki, TlsClient};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A site, its pair, and a runtime file serving it over TLS with HTTP/3.
struct Site {
    dir: tempfile::TempDir,
    pki: TestPki,
}

impl Site {
    fn new(extra: &str) -> Site {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::write(dir.path().join("root/index.html"), "the index\n").unwrap();
        let pki = TestPki::new();
        std::fs::write(
            dir.path().join("runtime.toml"),
            format!(
                "workers = 2\naccess-log = \"access.log\"\nerror-log = \"error.log\"\n\
                 tls-cert = \"{}\"\ntls-key = \"{}\"\nhttp3 = true\n{extra}",
                pki.cert.display(),
                pki.key.display()
            ),
        )
        .unwrap();
        Site { dir, pki }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn serve_cmd(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.arg("serve")
            .arg(self.path("root"))
            .arg("--runtime")
            .arg(self.path("runtime.toml"));
        cmd
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    fn wait_for_log(&self, text: &str) -> String {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let log = self.log("error.log");
            if log.contains(text) {
                return log;
            }
            assert!(Instant::now() < end, "no {text:?} in the error log:\n{log}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// GETs `/index.html` over HTTP/3 from `127.0.0.1:port` with gtlsclient
/// (which checks no certificate): the body it downloaded, or `None` if it
/// got none.
fn h3_get(port: u16) -> Option<Vec<u8>> {
    let into = tempfile::tempdir().unwrap();
    Command::new("timeout")
        .arg("10")
        .arg("gtlsclient")
        .arg("-q")
        .arg("--exit-on-all-streams-close")
        .arg("--download")
        .arg(into.path())
        .arg("127.0.0.1")
        .arg(port.to_string())
        .arg(format!("https://localhost:{port}/index.html"))
        .status()
        .expect("gtlsclient runs (test.sh installs ngtcp2-client)");
    std::fs::read(into.path().join("index.html")).ok()
}

fn port_of(addr: &str) -> u16 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

fn signal(child: &Served, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
}

#[test]
fn sigusr2_hands_the_udp_socket_to_the_new_process() {
    let site = Site::new("listen = \"127.0.0.1:0\"\n");
    let (mut server, addr) = spawn_serve(site.serve_cmd(Path::new(env!("CARGO_BIN_EXE_nikaia"))));
    let port = port_of(&addr);
    assert_eq!(h3_get(port).as_deref(), Some(&b"the index\n"[..]));

    signal(&server, rustix::process::Signal::USR2);
    let log = site.wait_for_log("is ready; this process stops accepting and drains");
    assert!(log.contains("and 1 HTTP/3 UDP socket(s)"), "{log}");
    let pid = common::upgraded_pid(&log);
    common::within_grace("the old process did not exit", || {
        server.try_wait().unwrap().is_some()
    });
    // Only the new process holds the port now: it was handed the UDP
    // socket (binding it would have failed while the old one lived).
    assert!(alive(pid));
    assert_eq!(h3_get(port).as_deref(), Some(&b"the index\n"[..]));
    assert!(!site.log("error.log").contains("HTTP/3 is off"));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    common::within_grace("the new process did not stop", || !alive(pid));
}

#[test]
fn socket_activation_without_a_udp_socket_leaves_http3_off() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let site = Site::new(&format!("listen = \"127.0.0.1:{port}\"\n"));
    let mut cmd = Command::new("systemd-socket-activate");
    cmd.arg(format!("--listen=127.0.0.1:{port}"))
        .arg(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(site.path("root"))
        .arg("--runtime")
        .arg(site.path("runtime.toml"));
    let first = format!("127.0.0.1:{port}");
    let poke = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(&first).is_err() {
            assert!(
                Instant::now() < end,
                "systemd-socket-activate never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let (server, _line) = spawn_serving(cmd);
    poke.join().unwrap();
    site.wait_for_log("socket activation passed no UDP socket for 127.0.0.1");
    // No HTTP/3 there, and no answer says there is.
    let at = format!("127.0.0.1:{port}").parse().unwrap();
    let reply = TlsClient::connect_tls(at, site.pki.client_config()).get("/index.html");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("alt-svc"), None);
    assert_eq!(h3_get(port), None);
    drop(server);
}

#[test]
fn a_port_0_tls_listener_serves_http3_on_its_own_port_and_says_so() {
    let site = Site::new("listen = \"127.0.0.1:0\"\n");
    let (server, addr) = spawn_serve(site.serve_cmd(Path::new(env!("CARGO_BIN_EXE_nikaia"))));
    let port = port_of(&addr);
    let reply =
        TlsClient::connect_tls(addr.parse().unwrap(), site.pki.client_config()).get("/index.html");
    let alt = format!("h3=\":{port}\"; ma=86400");
    assert_eq!(reply.header("alt-svc"), Some(alt.as_str()));
    assert_eq!(h3_get(port).as_deref(), Some(&b"the index\n"[..]));
    let end = Instant::now() + Duration::from_secs(5);
    while !site.log("access.log").contains("HTTP/3.0\" 200") {
        assert!(Instant::now() < end, "{}", site.log("access.log"));
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(server);
}
