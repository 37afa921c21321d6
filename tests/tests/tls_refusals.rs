//! HTTPS refusing what it must, with real clients (rustls, openssl): plain
//! HTTP on the TLS port (400, nginx's words), a TLS client on a plain port
//! (closed without a reply), a handshake that never finishes (closed at
//! its deadline), and resumed handshakes counted with failures logged
//! sparingly. `spec/tls.md` is what these check.

use nikaia_tests::https::{app, app_logging_errors, site};
use nikaia_tests::{test_runtime, Client, TestPki, TlsClient};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn plain_http_on_the_tls_port_is_400_then_closed() {
    let s = site();
    let pki = TestPki::new();
    let tls = app(pki.runtime(), &s.root);
    let mut c = Client::connect(tls.local_addr());
    let r = c.get("/text");
    assert_eq!(r.status, 400);
    assert!(
        r.text()
            .contains("The plain HTTP request was sent to HTTPS port"),
        "{}",
        r.text()
    );
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.is_closed());
    // curl says the same.
    let out = Command::new("curl")
        .args([
            "-sS",
            &format!("http://127.0.0.1:{}/text", tls.local_addr().port()),
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("plain HTTP request was sent to HTTPS port")
    );
    // HTTPS clients are still served.
    let mut t = TlsClient::connect_tls(tls.local_addr(), pki.client_config());
    assert_eq!(t.get("/text").text(), "plain text");
    assert_eq!(tls.report().tls.unwrap().plain_http, 2);
}

/// The bytes a rustls client sends first: its ClientHello record.
fn client_hello(pki: &TestPki) -> Vec<u8> {
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(pki.client_config(), name).unwrap();
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).unwrap();
    assert_eq!(hello[0], 0x16);
    hello
}

#[test]
fn a_tls_client_on_a_plain_port_is_closed_without_a_reply() {
    let s = site();
    let pki = TestPki::new();
    let plain = app(test_runtime(), &s.root);
    let mut sock = TcpStream::connect(plain.local_addr()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    sock.write_all(&client_hello(&pki)).unwrap();
    let mut got = Vec::new();
    let _ = sock.read_to_end(&mut got);
    assert!(
        got.is_empty(),
        "a stray reply: {:?}",
        String::from_utf8_lossy(&got)
    );
    // The plain port goes on serving.
    assert_eq!(Client::connect(plain.local_addr()).get("/text").status, 200);
}

#[test]
fn a_client_that_never_finishes_its_handshake_is_closed_at_the_deadline() {
    let s = site();
    let pki = TestPki::new();
    let mut rt = pki.runtime();
    rt.header_timeout = Duration::from_millis(300);
    let tls = app(rt, &s.root);
    let hello = client_hello(&pki);
    let silent = TcpStream::connect(tls.local_addr()).unwrap();
    let mut partial = TcpStream::connect(tls.local_addr()).unwrap();
    partial.write_all(&hello[..10]).unwrap();
    let started = Instant::now();
    for mut sock in [silent, partial] {
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut got = Vec::new();
        let _ = sock.read_to_end(&mut got);
        assert!(
            got.is_empty() || got[0] == 0x15,
            "only an alert, if anything: {got:?}"
        );
    }
    // Both were closed by the server, well before the client's own timeout.
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut t = TlsClient::connect_tls(tls.local_addr(), pki.client_config());
    assert_eq!(t.get("/text").status, 200);
}

#[test]
fn resumed_handshakes_are_counted_and_failures_logged_sparingly() {
    let s = site();
    let pki = TestPki::new();
    let (tls, log) = app_logging_errors(&s, &pki);
    let config = pki.client_config();
    let mut first = TlsClient::connect_tls(tls.local_addr(), config.clone());
    // Reading a reply also reads the tickets the server sent.
    assert_eq!(first.get("/text").status, 200);
    let mut again = TlsClient::connect_tls(tls.local_addr(), config.clone());
    assert_eq!(again.get("/text").status, 200);
    assert_eq!(
        again.session().handshake_kind(),
        Some(rustls::HandshakeKind::Resumed)
    );
    // Thirty scanners with broken handshakes: each reads the alert.
    for _ in 0..30 {
        let mut sock = TcpStream::connect(tls.local_addr()).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        sock.write_all(b"\x16\x03\x01\x00\x05hello").unwrap();
        let mut got = Vec::new();
        let _ = sock.read_to_end(&mut got);
        // rustls chose no alert for it (a handshake message longer than
        // its bound): the server's own, decode_error.
        assert_eq!(got, [0x15, 3, 3, 0, 2, 2, 50], "an alert record");
    }
    let t = tls.report().tls.unwrap();
    assert_eq!(
        (t.handshakes_full, t.handshakes_resumed, t.failures),
        (1, 1, 30)
    );
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let lines = text
        .lines()
        .filter(|l| l.contains("TLS handshake failed"))
        .count();
    assert!(
        (1..=2).contains(&lines),
        "rate-limited failure lines: {text}"
    );
    // The first line has none left out before it, and says nothing of it.
    let first = text.lines().find(|l| l.contains("TLS handshake failed"));
    assert!(first.is_some_and(|l| !l.contains("not logged")), "{text}");
}
