//! ALPN and `http2 = false`: h2 chosen when offered, HTTP/1.1 without
//! ALPN, a refusal when nothing is in common, and neither h2c nor ALPN
//! `h2` when HTTP/2 is turned off.

use super::client::{frame, PREFACE};
use super::{base, curl, text, tls_base};
use nikaia_tests::corpus::{dir_server, runtime_from, write};
use nikaia_tests::{TestPki, TlsClient};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

pub type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A TLS connection to `addr` with its handshake done, read and written
/// raw (no HTTP parsing).
pub fn tls_connect(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> Tls {
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    sock.set_nodelay(true).unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(config, name).unwrap();
    let mut s = rustls::StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).expect("TLS handshake");
    }
    s
}

pub fn alpn(s: &Tls) -> Option<&[u8]> {
    s.conn.alpn_protocol()
}

/// A client configuration trusting the test CA, offering `alpn`.
pub fn alpn_config(pki: &TestPki, alpn: &[&str]) -> Arc<rustls::ClientConfig> {
    let mut config = (*pki.client_config()).clone();
    config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    Arc::new(config)
}

#[test]
fn http2_false_turns_off_h2c_and_alpn_h2() {
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("a.txt"), b"aaa");
    let rt = runtime_from("http2 = false", None);
    assert!(!rt.http2);
    let plain = dir_server(rt, tmp.path(), false);
    let pki = TestPki::new();
    let tls = dir_server(runtime_from("http2 = false", Some(&pki)), tmp.path(), false);

    let url = format!("{}/a.txt", base(&plain));
    let out = curl(&[
        "-s",
        "--http2-prior-knowledge",
        "--max-time",
        "10",
        "-w",
        "%{http_version} %{http_code}",
        "-o",
        "/dev/null",
        &url,
    ]);
    let seen = text(&out.stdout);
    assert!(
        !out.status.success() || !seen.starts_with("2 "),
        "h2c by prior knowledge was served with http2 = false: {seen}"
    );
    // The preface, sent raw: answered as HTTP/1.1 (400 or 505) or closed.
    let mut sock = TcpStream::connect(plain.local_addr()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    sock.write_all(PREFACE).unwrap();
    sock.write_all(&frame(0x4, 0, 0, &[])).unwrap();
    let mut got = Vec::new();
    let _ = sock.read_to_end(&mut got);
    let got = text(&got);
    assert!(
        got.is_empty() || got.starts_with("HTTP/1.1 400") || got.starts_with("HTTP/1.1 505"),
        "{got:?}"
    );
    // HTTP/1.1 goes on.
    let out = curl(&["-sS", "--http1.1", &url]);
    assert_eq!(out.stdout, b"aaa");

    let ca = pki.ca_pem.to_str().unwrap();
    let turl = format!("{}/a.txt", tls_base(&tls));
    let out = curl(&[
        "-sS",
        "--http2",
        "--cacert",
        ca,
        "-w",
        " %{http_version}",
        &turl,
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text(&out.stdout), "aaa 1.1");
    let c = tls_connect(tls.local_addr(), alpn_config(&pki, &["h2", "http/1.1"]));
    assert_eq!(alpn(&c), Some(&b"http/1.1"[..]));
    assert_eq!(
        plain.report().h2.connections + tls.report().h2.connections,
        0
    );
}

#[test]
fn alpn_absent_stays_http_1_1_and_alpn_without_a_match_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("a.txt"), b"aaa");
    let pki = TestPki::new();
    let tls = dir_server(pki.runtime(), tmp.path(), false);
    let addr = tls.local_addr();

    // No ALPN: HTTP/1.1.
    let mut c = TlsClient::over(TcpStream::connect(addr).unwrap(), alpn_config(&pki, &[]));
    assert_eq!(c.session().alpn_protocol(), None);
    let r = c.get("/a.txt");
    assert_eq!((r.status, &r.body[..]), (200, &b"aaa"[..]));
    // Both offered, in either order: the server's preference, h2.
    for offer in [&["h2", "http/1.1"][..], &["http/1.1", "h2"]] {
        let c = tls_connect(addr, alpn_config(&pki, offer));
        assert_eq!(alpn(&c), Some(&b"h2"[..]), "{offer:?}");
    }
    let c = tls_connect(addr, alpn_config(&pki, &["http/1.1"]));
    assert_eq!(alpn(&c), Some(&b"http/1.1"[..]));

    // Nothing in common: the handshake fails with an alert.
    let err = handshake_error(addr, alpn_config(&pki, &["spdy/3"]));
    assert!(
        matches!(
            err,
            rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)
        ),
        "{err:?}"
    );

    // openssl without -alpn: no ALPN, HTTP/1.1.
    let mut child = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{}", addr.port()),
        ])
        .args(["-servername", "localhost", "-ign_eof", "-CAfile"])
        .arg(&pki.ca_pem)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl runs (test.sh installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let t = text(&out.stdout);
    assert!(t.contains("No ALPN negotiated"), "{t}");
    assert!(t.contains("HTTP/1.1 200 OK"), "{t}");
    // And openssl with only an unknown protocol: refused.
    let out = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{}", addr.port()),
        ])
        .args(["-servername", "localhost", "-alpn", "spdy/3", "-CAfile"])
        .arg(&pki.ca_pem)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let t = text(&out.stdout) + &text(&out.stderr);
    assert!(t.contains("no application protocol"), "{t}");
}

/// The error of a handshake the server refuses.
fn handshake_error(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> rustls::Error {
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(config, name).unwrap();
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut sock) {
            let inner = e.into_inner().expect("a TLS error, not only I/O");
            return *inner.downcast::<rustls::Error>().expect("a rustls::Error");
        }
    }
    panic!("the handshake succeeded, ALPN {:?}", conn.alpn_protocol());
}
