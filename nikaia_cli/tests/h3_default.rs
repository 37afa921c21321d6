//! HTTP/3 on by default (`spec/http3.md`, "Turning it on"): a TLS
//! listener with no `http3` key serves HTTP/3 and advertises it; a UDP
//! port someone else holds then leaves HTTP/3 off there with a warning,
//! where `http3 = true` refuses the start; and `http3 = false` answers
//! `Alt-Svc: clear` over HTTP/1.1 and HTTP/2 and binds no UDP socket.
//! The HTTP/3 client is ngtcp2's `gtlsclient`, the HTTP/2 one curl.

mod common;

use common::{explain, spawn_serve, Served};
use nikaia_tests::{TestPki, TlsClient};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A site, its pair, and a runtime file serving it over TLS on `listen`,
/// with `http3` as `http3` says (`None`: the key left out) and `extra`.
struct Site {
    dir: tempfile::TempDir,
    pki: TestPki,
}

impl Site {
    fn new(listen: &str, http3: Option<bool>, extra: &str) -> Site {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::write(dir.path().join("root/index.html"), "the index\n").unwrap();
        let pki = TestPki::new();
        let http3 = http3.map_or(String::new(), |on| format!("http3 = {on}\n"));
        std::fs::write(
            dir.path().join("runtime.toml"),
            format!(
                "workers = 2\naccess-log = \"access.log\"\nerror-log = \"error.log\"\n\
                 tls-cert = \"{}\"\ntls-key = \"{}\"\nlisten = \"{listen}\"\n{http3}{extra}",
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

    fn serve_cmd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
        cmd.arg("serve")
            .arg(self.path("root"))
            .arg("--runtime")
            .arg(self.path("runtime.toml"));
        cmd
    }

    fn serve(&self) -> (Served, SocketAddr) {
        let (server, addr) = spawn_serve(self.serve_cmd());
        (server, addr.parse().unwrap())
    }

    fn error_log(&self) -> String {
        std::fs::read_to_string(self.path("error.log")).unwrap_or_default()
    }

    /// A GET over HTTP/1.1 on TLS: (status, its `Alt-Svc`).
    fn get_h1(&self, at: SocketAddr, raw: &str) -> (u16, Option<String>) {
        let mut c = TlsClient::connect_tls(at, self.pki.client_config());
        c.send(raw);
        let reply = c.reply().unwrap();
        (reply.status, reply.header("alt-svc").map(str::to_owned))
    }
}

/// GETs `/index.html` over HTTP/3 from `127.0.0.1:port` with gtlsclient
/// (which checks no certificate): the body it downloaded, or `None`.
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

/// A GET over HTTP/2 with curl: (status line's version and status, the
/// `alt-svc` values), from the head curl wrote.
fn get_h2(at: SocketAddr, path: &str) -> (String, Vec<String>) {
    let out = Command::new("curl")
        .args([
            "-sk",
            "--http2",
            "--max-time",
            "10",
            "-o",
            "/dev/null",
            "-D",
            "-",
        ])
        .arg(format!("https://{at}{path}"))
        .output()
        .expect("curl runs");
    let head = String::from_utf8_lossy(&out.stdout).into_owned();
    let status = head.lines().next().unwrap_or_default().trim().to_owned();
    let alt = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(name, _)| name.eq_ignore_ascii_case("alt-svc"))
        .map(|(_, value)| value.trim().to_owned())
        .collect();
    (status, alt)
}

/// A UDP socket on 127.0.0.1 whose port is free for TCP: what a process
/// holding "our" UDP port looks like.
fn udp_held() -> (UdpSocket, u16) {
    loop {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = udp.local_addr().unwrap().port();
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return (udp, port);
        }
    }
}

#[test]
fn by_default_a_tls_listener_serves_http3_and_advertises_it() {
    let site = Site::new("127.0.0.1:0", None, "");
    let (server, at) = site.serve();
    let alt = format!("h3=\":{}\"; ma=86400", at.port());
    let head = "GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n";
    assert_eq!(site.get_h1(at, head), (200, Some(alt.clone())));
    let (status, h2_alt) = get_h2(at, "/index.html");
    assert_eq!((status.as_str(), h2_alt), ("HTTP/2 200", vec![alt]));
    assert_eq!(h3_get(at.port()).as_deref(), Some(&b"the index\n"[..]));
    let access = || std::fs::read_to_string(site.path("access.log")).unwrap_or_default();
    let end = Instant::now() + Duration::from_secs(5);
    while !access().contains("HTTP/3.0\" 200") {
        assert!(Instant::now() < end, "{}", access());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!site.error_log().contains("http3"), "{}", site.error_log());
    drop(server);
}

#[test]
fn by_default_a_busy_udp_port_leaves_http3_off_there_with_a_warning() {
    let (holder, port) = udp_held();
    let site = Site::new(&format!("127.0.0.1:{port}"), None, "");
    let (server, at) = site.serve();
    assert_eq!(at.port(), port);
    // The warning is logged before the server says it serves.
    let log = site.error_log();
    let notice = log
        .lines()
        .find(|l| l.contains("warn: http3:"))
        .unwrap_or_else(|| panic!("no HTTP/3 warning in {log}"));
    assert!(
        notice.contains(&format!("127.0.0.1:{port}")) && notice.contains("address already in use"),
        "{notice}"
    );
    // TCP serves, and no answer advertises the HTTP/3 that is not there.
    let head = "GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n";
    assert_eq!(site.get_h1(at, head), (200, None));
    let (status, alt) = get_h2(at, "/index.html");
    assert_eq!((status.as_str(), alt), ("HTTP/2 200", vec![]));
    drop(server);
    drop(holder);
}

#[test]
fn http3_true_with_a_busy_udp_port_refuses_the_start_naming_it() {
    let (holder, port) = udp_held();
    let site = Site::new(&format!("127.0.0.1:{port}"), Some(true), "");
    let stderr = std::fs::File::create(site.path("stderr")).unwrap();
    let mut child: Served = site
        .serve_cmd()
        .env("NIKAIA_RUNTIME", "")
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
        .into();
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < end,
            "the server started on a busy UDP port"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success());
    let said = std::fs::read_to_string(site.path("stderr")).unwrap();
    assert!(
        said.contains(&format!("UDP 127.0.0.1:{port}")) && said.contains("address already in use"),
        "{said}"
    );
    drop(holder);
}

#[test]
fn http3_false_answers_alt_svc_clear_and_binds_no_udp_socket() {
    let site = Site::new("127.0.0.1:0", Some(false), "");
    let (server, at) = site.serve();
    let clear = Some("clear".to_owned());
    let head = "GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n";
    assert_eq!(site.get_h1(at, head), (200, clear.clone()));
    let head = "GET /missing HTTP/1.1\r\nHost: t\r\n\r\n";
    assert_eq!(site.get_h1(at, head), (404, clear.clone()));
    // A refusal too: a request without Host.
    assert_eq!(site.get_h1(at, "GET / HTTP/1.1\r\n\r\n"), (400, clear));
    for (path, want) in [("/index.html", "HTTP/2 200"), ("/missing", "HTTP/2 404")] {
        let (status, alt) = get_h2(at, path);
        assert_eq!((status.as_str(), alt), (want, vec!["clear".to_owned()]));
    }
    // No UDP socket holds the listener's port.
    UdpSocket::bind(at).expect("the UDP port is free");
    drop(server);
}

/// `nikaia explain` read through the runtime file shows HTTP/3's lines
/// (at zero, before any datagram) when the file has it on: left out
/// beside a TLS listener, not with `http3 = false`.
#[test]
fn explain_shows_http3_when_the_file_leaves_it_on() {
    let zero = "HTTP/3        0 connections, 0 streams; resets 0 sent, 0 received\n";
    for (http3, shown) in [(None, true), (Some(false), false)] {
        let stats = tempfile::tempdir().unwrap();
        let sock = stats.path().join("stats.sock");
        let extra = format!("stats-socket = \"{}\"\n", sock.display());
        let site = Site::new("127.0.0.1:0", http3, &extra);
        let (server, _) = site.serve();
        let out = explain(&["--runtime", site.path("runtime.toml").to_str().unwrap()]);
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.contains(zero), shown, "http3 {http3:?}:\n{text}");
        drop(server);
    }
}

/// Under socket activation with the key left out, an address no datagram
/// socket was passed for has no HTTP/3, with a notice: the start goes on.
#[test]
fn by_default_socket_activation_without_a_udp_socket_leaves_http3_off_there() {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let site = Site::new(&format!("127.0.0.1:{port}"), None, "");
    let mut cmd = Command::new("systemd-socket-activate");
    cmd.arg(format!("--listen=127.0.0.1:{port}"))
        .arg(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(site.path("root"))
        .arg("--runtime")
        .arg(site.path("runtime.toml"));
    // systemd-socket-activate starts the server at the first connection:
    // a request, its answer read once the server said it serves.
    let at: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let config = site.pki.client_config();
    let first = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(10);
        let tcp = loop {
            match std::net::TcpStream::connect(at) {
                Ok(tcp) => break tcp,
                Err(e) => assert!(Instant::now() < end, "no listener: {e}"),
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let reply = TlsClient::over(tcp, config).get("/index.html");
        (reply.status, reply.header("alt-svc").map(str::to_owned))
    });
    let (server, _line) = common::spawn_serving(cmd);
    assert_eq!(first.join().unwrap(), (200, None));
    let want = format!("notice: http3: socket activation passed no UDP socket for {at}");
    let end = Instant::now() + Duration::from_secs(10);
    while !site.error_log().contains(&want) {
        assert!(Instant::now() < end, "{}", site.error_log());
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(server);
}
