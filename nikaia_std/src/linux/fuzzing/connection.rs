//! The fuzz targets that drive a real server over its sockets: whole
//! HTTP/1.1 connections (pipelined requests and bodies, split anywhere),
//! HTTP/2 connections, and TLS records. Each server is started once per
//! process.

use bytes::Bytes;

/// The servers of the connection targets, started once per process: one
/// over plain TCP, one over TLS (with the given certificate and key).
fn server(tls: Option<(&str, &str)>) -> std::net::SocketAddr {
    type Once = std::sync::OnceLock<crate::http::Running>;
    static PLAIN: Once = Once::new();
    static TLS: Once = Once::new();
    let once = if tls.is_some() { &TLS } else { &PLAIN };
    once.get_or_init(|| {
        let rt = crate::rt::Runtime {
            listen: vec![std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into()],
            workers: 1,
            access_log: crate::rt::LogTarget::Off,
            // Longer than a client here waits (5 s): a connection the
            // server forgets to close is a failure, not a slow pass.
            header_timeout: std::time::Duration::from_secs(60),
            keepalive_timeout: std::time::Duration::from_secs(60),
            tls_cert: tls.map(|(cert, _)| cert.into()),
            tls_key: tls.map(|(_, key)| key.into()),
            ..crate::rt::Runtime::default()
        };
        crate::http::Server::with_runtime(rt)
            .route("/a", |_| "A")
            .route("/b", |_| "BB".repeat(3000))
            .method("POST", "/echo", |req| Bytes::clone(req.body()))
            .method("POST", "/small", |req| req.body().len().to_string())
            .max_body(crate::http::Limit::Bytes(10))
            .stream("POST", "/count", |_| Count(0))
            .start()
            .expect("the fuzz server starts")
    })
    .local_addr()
}

/// The fuzz server's streamed route: counts the body as it arrives.
struct Count(usize);

impl crate::http::Sink for Count {
    type Answer = String;

    fn piece(&mut self, piece: &[u8], _flow: &mut crate::http::Flow<'_>) {
        self.0 += piece.len();
    }

    fn end(self, _req: &crate::http::Request) -> String {
        self.0.to_string()
    }
}

/// A new connection to the plain or the TLS server, as a client that
/// waits at most 5 s for a byte and does not hold small writes back.
fn dial(tls: bool) -> std::net::TcpStream {
    let server = server(tls.then_some((TLS_CERT, TLS_KEY)));
    let sock = std::net::TcpStream::connect(server).expect("connect");
    sock.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .expect("timeout");
    sock.set_nodelay(true).expect("nodelay");
    sock
}

/// The requests a fuzz input chooses (at most 64, then one that closes)
/// written back to back, and the answers they must get, in order:
/// (status, body, a HEAD so no body is sent).
type Pipeline = (Vec<u8>, Vec<(&'static str, Vec<u8>, bool)>);

fn pipeline(choices: &[u8]) -> Option<Pipeline> {
    let mut wire = Vec::new();
    let mut want = Vec::new();
    for &c in choices.iter().take(64) {
        let (req, status, body): (&str, _, Vec<u8>) = match c % 8 {
            0 => ("GET /a HTTP/1.1\r\nHost: t\r\n\r\n", "200", b"A".to_vec()),
            1 => (
                "GET /b HTTP/1.1\r\nHost: t\r\n\r\n",
                "200",
                "BB".repeat(3000).into_bytes(),
            ),
            2 => ("HEAD /a HTTP/1.1\r\nHost: t\r\n\r\n", "200", Vec::new()),
            3 => (
                "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n",
                "200",
                b"xyz".to_vec(),
            ),
            4 => (
                "GET /missing HTTP/1.1\r\nHost: t\r\n\r\n",
                "404",
                b"404 Not Found\n".to_vec(),
            ),
            // A streamed body, in two chunks.
            5 => (
                "POST /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n",
                "200",
                b"5".to_vec(),
            ),
            // A body to a route that takes none, that looks like a request:
            // thrown away, never answered.
            6 => (
                "GET /a HTTP/1.1\r\nHost: t\r\nContent-Length: 32\r\n\r\nGET /missing HTTP/1.1\r\nHost: t\r\n",
                "200",
                b"A".to_vec(),
            ),
            // Over the route's limit of 10: 413, the body thrown away.
            _ => (
                "POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 21\r\n\r\nGET /b HTTP/1.1\r\n\r\n\r\n",
                "413",
                b"413 Content Too Large\n".to_vec(),
            ),
        };
        wire.extend_from_slice(req.as_bytes());
        want.push((status, body, c % 8 == 2));
    }
    if want.is_empty() {
        return None;
    }
    wire.extend_from_slice(b"GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    want.push(("200", b"A".to_vec(), false));
    Some((wire, want))
}

/// Every answer of `want` arrives whole, in order, with its own bytes, and
/// nothing follows the last.
fn check_answers(got: &[u8], want: &[(&str, Vec<u8>, bool)]) {
    let mut rest = got;
    for (i, (status, body, is_head)) in want.iter().enumerate() {
        let end = rest
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("response {i} has no head"));
        let head = std::str::from_utf8(&rest[..end]).expect("an ASCII head");
        assert!(
            head.starts_with(&format!("HTTP/1.1 {status} ")),
            "response {i}: {head}"
        );
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .and_then(|v| v.parse().ok())
            .expect("a Content-Length");
        let sent = if *is_head { 0 } else { length };
        let bytes = &rest[end + 4..end + 4 + sent];
        if !is_head {
            assert_eq!(bytes, &body[..], "response {i}'s body");
        }
        rest = &rest[end + 4 + sent..];
    }
    assert!(
        rest.is_empty(),
        "{} bytes after the last response",
        rest.len()
    );
}

/// The connection state machine: pipelined requests chosen by the input,
/// written in pieces of the sizes it chooses; every response arrives whole,
/// in order, none with another's bytes, and the server keeps serving.
pub fn connection(data: &[u8]) {
    use std::io::{Read, Write};
    let Some((&pieces, choices)) = data.split_first() else {
        return;
    };
    let Some((wire, want)) = pipeline(choices) else {
        return;
    };
    let mut sock = dial(false);
    let step = usize::from(pieces).max(1);
    for piece in wire.chunks(step) {
        sock.write_all(piece).expect("write");
    }
    let mut got = Vec::new();
    sock.read_to_end(&mut got).expect("read");
    check_answers(&got, &want);
}

/// A whole HTTP/2 connection over a real socket: the preface and an empty
/// SETTINGS, then the input's bytes (in pieces the first octet chooses),
/// then the client's FIN. The server must close the connection (it never
/// hangs), write only whole frames, and then serve a new h2c connection's
/// GET as if nothing had happened.
pub fn h2_connection(data: &[u8]) {
    use crate::http::h2::frame::{self, flag, kind, Header, PREFACE};
    use std::io::{Read, Write};
    let Some((&pieces, rest)) = data.split_first() else {
        return;
    };
    let mut wire = PREFACE.to_vec();
    frame::put_settings(&mut wire, &[]);
    wire.extend_from_slice(rest);
    let mut sock = dial(false);
    for piece in wire.chunks(usize::from(pieces).max(1)) {
        if sock.write_all(piece).is_err() {
            break; // the server closed on an error: its GOAWAY is read below
        }
    }
    let _ = sock.shutdown(std::net::Shutdown::Write);
    let mut got = Vec::new();
    let _ = sock.read_to_end(&mut got);
    let mut at = 0;
    while let Some(h) = Header::parse(&got[at..]) {
        assert!(h.len <= 16_384, "a frame larger than the client allows");
        at += 9 + h.len;
    }
    assert!(at >= got.len(), "bytes after the last whole frame");
    // A well-behaved client is served.
    let mut sock = dial(false);
    let mut hello = PREFACE.to_vec();
    frame::put_settings(&mut hello, &[]);
    let mut enc = crate::http::h2::hpack::Encoder::new();
    let mut block = Vec::new();
    enc.begin(&mut block);
    for (n, v) in [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", "t"),
        (":path", "/a"),
    ] {
        enc.field(n.as_bytes(), v.as_bytes(), false, &mut block);
    }
    frame::put_header(
        &mut hello,
        block.len(),
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
    );
    hello.extend_from_slice(&block);
    sock.write_all(&hello).expect("a new connection");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = sock.read(&mut buf).expect("the answer");
        assert!(n > 0, "closed before the answer");
        got.extend_from_slice(&buf[..n]);
        let mut at = 0;
        let mut done = false;
        while let Some(h) = Header::parse(&got[at..]) {
            if got.len() < at + 9 + h.len {
                break;
            }
            done |= h.kind == kind::DATA && h.stream == 1 && h.has(flag::END_STREAM);
            if h.kind == kind::DATA && h.stream == 1 {
                assert_eq!(&got[at + 9..at + 9 + h.len], b"A");
            }
            at += 9 + h.len;
        }
        if done {
            return;
        }
    }
}

/// The test certificate and key of the TLS target (`fuzz/tls/`, made once
/// with openssl, valid for a century; the key protects nothing).
const TLS_CERT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/tls/cert.pem");
const TLS_KEY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/tls/key.pem");

/// A client that trusts the test certificate; one for the process, so its
/// sessions are resumed (a full handshake per input would be most of the
/// time spent).
fn tls_client() -> std::sync::Arc<rustls::ClientConfig> {
    static CLIENT: std::sync::OnceLock<std::sync::Arc<rustls::ClientConfig>> =
        std::sync::OnceLock::new();
    std::sync::Arc::clone(CLIENT.get_or_init(|| {
        use rustls_pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        let cert =
            rustls_pki_types::CertificateDer::from_pem_file(TLS_CERT).expect("fuzz/tls/cert.pem");
        roots
            .add(cert)
            .expect("the test certificate is a trust anchor");
        std::sync::Arc::new(
            rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
                rustls::crypto::aws_lc_rs::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth(),
        )
    }))
}

/// A connected rustls client over a new TCP connection to the TLS server,
/// the handshake done.
fn tls_connect() -> rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream> {
    let sock = dial(true);
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("a name");
    let conn = rustls::ClientConnection::new(tls_client(), name).expect("a client");
    let mut stream = rustls::StreamOwned::new(conn, sock);
    while stream.conn.is_handshaking() {
        stream
            .conn
            .complete_io(&mut stream.sock)
            .expect("the handshake with the fuzz server");
    }
    stream
}

/// Reads until the server closes; the bytes it sent, or what went wrong.
fn read_to_close(sock: &mut impl std::io::Read) -> Vec<u8> {
    let mut got = Vec::new();
    match sock.read_to_end(&mut got) {
        Ok(_) => got,
        // The server may reset a connection it refused with bytes unread.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => got,
        Err(e) => panic!("the server did not close the connection: {e}"),
    }
}

/// The TLS connection fed what the input chooses (its first byte picks):
/// - raw bytes from the first, as records or anything else, then the
///   client's end closed: the server closes too, and what it sent is TLS
///   records (an alert) or, for a first byte that starts a method, the
///   plain-HTTP refusal;
/// - a real handshake, then pipelined requests (as [`connection`]) in
///   records of the sizes the input chooses: the answers as over plain TCP;
/// - a real handshake, then raw bytes on the socket: the server closes.
///
/// After each, the server still completes a handshake and answers.
pub fn tls_connection(data: &[u8]) {
    use std::io::Write;
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => {
            let mut sock = dial(true);
            // The server may close before it has read everything.
            let _ = sock.write_all(data);
            let _ = sock.shutdown(std::net::Shutdown::Write);
            let got = read_to_close(&mut sock);
            if let Some(&first) = got.first() {
                if data.first().is_some_and(u8::is_ascii_uppercase) {
                    assert!(got.starts_with(b"HTTP/1.1 400 "), "plain HTTP refused");
                } else {
                    // Handshake (ServerHello...) or alert records.
                    assert!(first == 0x15 || first == 0x16, "not a TLS record: {first}");
                }
            }
        }
        1 => {
            let Some((&pieces, choices)) = data.split_first() else {
                return;
            };
            let Some((wire, want)) = pipeline(choices) else {
                return;
            };
            let mut stream = tls_connect();
            for piece in wire.chunks(usize::from(pieces).max(1)) {
                // Each write is its own record.
                stream.write_all(piece).expect("write");
                stream.flush().expect("flush");
            }
            let got = read_to_close(&mut stream);
            check_answers(&got, &want);
        }
        _ => {
            let mut stream = tls_connect();
            let _ = stream.sock.write_all(data);
            let _ = stream.sock.shutdown(std::net::Shutdown::Write);
            // Whatever it sent (an alert, a ticket) is followed by its close.
            let _ = read_to_close(&mut stream.sock);
        }
    }
    let mut stream = tls_connect();
    stream
        .write_all(b"GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .expect("write");
    let got = read_to_close(&mut stream);
    check_answers(&got, &[("200", b"A".to_vec(), false)]);
}
