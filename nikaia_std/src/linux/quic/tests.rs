//! The server configuration against a real QUIC client, in memory: a
//! quinn-proto client endpoint and ours exchange their datagrams by hand
//! (no socket), with real TLS 1.3 and the TLS set's pair.

use super::config::{self, ALPN_H3, MAX_BIDI_STREAMS, MAX_UNI_STREAMS};
use crate::http::h3::conn::{Core, Event, Limits};
use crate::http::h3::frame::{kind, write_frame};
use crate::http::h3::qpack::encode;
use crate::linux::challenges::Challenges;
use crate::linux::tls::Tls;
use crate::rt::Runtime;
use bytes::{Bytes, BytesMut};
use quinn_proto::crypto::rustls::{HandshakeData, QuicClientConfig};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// A TLS set with one self-signed pair for `localhost`, and its
/// certificate for the client to trust.
fn tls() -> (tempfile::TempDir, Arc<Tls>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    std::fs::write(dir.path().join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
    let rt = Runtime {
        tls_cert: Some(dir.path().join("cert.pem")),
        tls_key: Some(dir.path().join("key.pem")),
        ..Runtime::default()
    };
    let tls = Tls::new(&rt, Arc::new(Challenges::default())).unwrap();
    (dir, Arc::new(tls), cert.der().to_vec())
}

fn client_config(trusted: &[u8], alpn: &[&[u8]]) -> ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(trusted.to_vec().into()).unwrap();
    let mut crypto = rustls::ClientConfig::builder_with_provider(crate::linux::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    crypto.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    ClientConfig::new(Arc::new(
        QuicClientConfig::try_from(Arc::new(crypto)).unwrap(),
    ))
}

const CLIENT: &str = "127.0.0.1:40000";
const SERVER: &str = "127.0.0.1:443";

/// Two endpoints and their connection, the datagrams carried by [`Net::pump`].
struct Net {
    now: Instant,
    client: Endpoint,
    server: Endpoint,
    conn: Connection,
    handle: ConnectionHandle,
    accepted: Option<(ConnectionHandle, Connection)>,
}

impl Net {
    fn new(alpn: &[&[u8]], name: &str) -> (Net, tempfile::TempDir, Arc<Tls>) {
        let (dir, tls, cert) = tls();
        let server_config = config::server(tls.clone(), &Runtime::default()).unwrap();
        let endpoint = || Arc::new(EndpointConfig::default());
        let server = Endpoint::new(endpoint(), Some(Arc::new(server_config)), true, None);
        let mut client = Endpoint::new(endpoint(), None, true, None);
        let now = Instant::now();
        let (handle, conn) = client
            .connect(
                now,
                client_config(&cert, alpn),
                SERVER.parse().unwrap(),
                name,
            )
            .unwrap();
        let net = Net {
            now,
            client,
            server,
            conn,
            handle,
            accepted: None,
        };
        (net, dir, tls)
    }

    /// Carries datagrams both ways until neither side has more to send.
    fn pump(&mut self) {
        let (client_addr, server_addr): (SocketAddr, SocketAddr) =
            (CLIENT.parse().unwrap(), SERVER.parse().unwrap());
        for _ in 0..100 {
            let mut moved = false;
            let mut buf = Vec::new();
            while let Some(t) = self.conn.poll_transmit(self.now, 1, &mut buf) {
                moved = true;
                let data = BytesMut::from(&buf[..t.size]);
                let mut reply = Vec::new();
                match self
                    .server
                    .handle(self.now, client_addr, None, None, data, &mut reply)
                {
                    Some(DatagramEvent::NewConnection(incoming)) => {
                        let mut out = Vec::new();
                        let accepted = self.server.accept(incoming, self.now, &mut out, None);
                        self.accepted = Some(accepted.map_err(|e| e.cause).unwrap());
                    }
                    Some(DatagramEvent::ConnectionEvent(_, event)) => {
                        self.accepted.as_mut().unwrap().1.handle_event(event);
                    }
                    Some(DatagramEvent::Response(_)) | None => {}
                }
                buf.clear();
            }
            if let Some((handle, conn)) = self.accepted.as_mut() {
                while let Some(t) = conn.poll_transmit(self.now, 1, &mut buf) {
                    moved = true;
                    let data = BytesMut::from(&buf[..t.size]);
                    let mut reply = Vec::new();
                    let event =
                        self.client
                            .handle(self.now, server_addr, None, None, data, &mut reply);
                    if let Some(DatagramEvent::ConnectionEvent(_, event)) = event {
                        self.conn.handle_event(event);
                    }
                    buf.clear();
                }
                while let Some(e) = conn.poll_endpoint_events() {
                    if let Some(back) = self.server.handle_event(*handle, e) {
                        conn.handle_event(back);
                    }
                }
            }
            while let Some(e) = self.conn.poll_endpoint_events() {
                if let Some(back) = self.client.handle_event(self.handle, e) {
                    self.conn.handle_event(back);
                }
            }
            if !moved {
                return;
            }
        }
        panic!("the endpoints never went quiet");
    }

    fn server_conn(&mut self) -> &mut Connection {
        &mut self.accepted.as_mut().expect("the server accepted").1
    }
}

fn events(conn: &mut Connection) -> Vec<String> {
    std::iter::from_fn(|| conn.poll())
        .map(|e| match e {
            quinn_proto::Event::ConnectionLost { reason } => format!("lost: {reason}"),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_handshake_agrees_on_h3_with_the_pair_for_the_name() {
    let (mut net, _dir, tls) = Net::new(&[b"h3"], "localhost");
    net.pump();
    assert!(events(&mut net.conn).iter().any(|e| e == "Connected"));
    let server = net.server_conn();
    assert!(events(server).iter().any(|e| e == "Connected"));
    let data = server.crypto_session().handshake_data().unwrap();
    let data = data.downcast::<HandshakeData>().unwrap();
    assert_eq!(data.protocol.as_deref(), Some(ALPN_H3));
    assert_eq!(data.server_name.as_deref(), Some("localhost"));
    let served = tls.current().served()[0]
        .handshakes
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(served, 1, "the pair's handshakes are counted");
}

#[test]
fn a_client_without_h3_or_with_an_unknown_name_is_refused() {
    let (mut net, _dir, _tls) = Net::new(&[b"h2", b"http/1.1"], "localhost");
    net.pump();
    let seen = events(&mut net.conn);
    assert!(seen.iter().any(|e| e.starts_with("lost:")), "{seen:?}");
    assert!(!seen.iter().any(|e| e == "Connected"), "{seen:?}");
    // A name no pair covers, with one pair that is therefore the default:
    // served by it, and the client's check of the name refuses it.
    let (mut net, _dir, _tls) = Net::new(&[b"h3"], "elsewhere.test");
    net.pump();
    let seen = events(&mut net.conn);
    assert!(seen.iter().any(|e| e.starts_with("lost:")), "{seen:?}");
}

#[test]
fn the_stream_bounds_reach_the_client() {
    let (mut net, _dir, _tls) = Net::new(&[b"h3"], "localhost");
    net.pump();
    events(&mut net.conn);
    let mut uni = 0;
    while net.conn.streams().open(Dir::Uni).is_some() {
        uni += 1;
    }
    let mut bidi = 0;
    while net.conn.streams().open(Dir::Bi).is_some() {
        bidi += 1;
    }
    assert_eq!((uni, bidi), (MAX_UNI_STREAMS, MAX_BIDI_STREAMS));
}

#[test]
fn a_request_travels_from_a_quic_stream_into_the_h3_core() {
    let (mut net, _dir, _tls) = Net::new(&[b"h3"], "localhost");
    net.pump();
    events(&mut net.conn);
    let id = net.conn.streams().open(Dir::Bi).unwrap();
    let mut section = Vec::new();
    encode::begin(&mut section);
    for (n, v) in [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", "/over-quic"),
    ] {
        encode::field(&mut section, n.as_bytes(), v.as_bytes());
    }
    let mut frame = Vec::new();
    write_frame(&mut frame, kind::HEADERS, &section);
    net.conn.send_stream(id).write(&frame).unwrap();
    net.conn.send_stream(id).finish().unwrap();
    net.pump();
    let server = net.server_conn();
    events(server);
    let got = server
        .streams()
        .accept(Dir::Bi)
        .expect("the request stream");
    assert_eq!(got, id);
    let mut core = Core::new(Limits {
        max_requests: 1000,
        max_list: 16 << 10,
    });
    let mut stream = server.recv_stream(got);
    let mut chunks = stream.read(true).unwrap();
    let mut fin = false;
    let mut pieces = Vec::new();
    loop {
        match chunks.next(usize::MAX) {
            Ok(Some(chunk)) => pieces.push(chunk.bytes),
            Ok(None) => {
                fin = true;
                break;
            }
            Err(_) => break,
        }
    }
    let _ = chunks.finalize();
    let n = pieces.len();
    for (i, piece) in pieces.into_iter().enumerate() {
        core.request_data(u64::from(id), piece, fin && i + 1 == n)
            .unwrap();
    }
    if n == 0 {
        core.request_data(u64::from(id), Bytes::new(), fin).unwrap();
    }
    match core.poll_event() {
        Some(Event::Request { request: Ok(p), .. }) => {
            assert_eq!(&p.fields[p.text.target.clone()], b"/over-quic");
        }
        other => panic!("{other:?}"),
    }
}
