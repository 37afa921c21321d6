//! What a QUIC server endpoint answers with: its TLS — the same pairs as
//! the TCP listeners, chosen by the same rules (`linux/tls/choose.rs`), a
//! renewal reaching new handshakes as it reaches TCP ones — and its
//! transport's bounds, where quinn-proto's defaults are generous.

use crate::linux::tls::{provider, Tls};
use crate::rt::Runtime;
use quinn_proto::crypto::rustls::QuicServerConfig;
use quinn_proto::{IdleTimeout, ServerConfig, TransportConfig, VarInt};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The one application protocol offered: HTTP/3 (RFC 9114 §3.1). Never
/// `acme-tls/1`: TLS-ALPN-01 is answered over TCP only.
pub(crate) const ALPN_H3: &[u8] = b"h3";

/// Request streams a client may have open at once: HTTP/2's 128.
pub(crate) const MAX_BIDI_STREAMS: u32 = 128;

/// Unidirectional streams a client may have open at once: its control
/// stream and QPACK's two (RFC 9114 §6.2 asks for at least 3); a reserved
/// one is stopped at once and its credit comes back.
pub(crate) const MAX_UNI_STREAMS: u32 = 3;

/// What one stream's body may hold unread: HTTP/2's initial stream
/// window for a streamed body.
pub(crate) const STREAM_WINDOW: u32 = 256 << 10;

/// What one connection's streams may hold unread in all (quinn-proto's
/// default is unlimited): HTTP/2's bound for a connection.
pub(crate) const CONNECTION_WINDOW: u32 = 16 << 20;

/// What one connection may have sent and not yet acknowledged.
pub(crate) const SEND_WINDOW: u64 = 8 << 20;

/// Handshakes waiting to be accepted, and the datagrams they may hold.
pub(crate) const MAX_INCOMING: usize = 1024;
pub(crate) const INCOMING_BUFFER: u64 = 16 << 10;
pub(crate) const INCOMING_BUFFER_TOTAL: u64 = 8 << 20;

/// The server configuration for `tls`'s pairs under `rt`.
pub(crate) fn server(tls: Arc<Tls>, rt: &Runtime) -> Result<ServerConfig, String> {
    let mut crypto = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(ByName(tls)));
    crypto.alpn_protocols = vec![ALPN_H3.to_vec()];
    // 0-RTT off: early data may be replayed (RFC 9001 §9.2), and QUIC
    // allows only 0 or u32::MAX here.
    crypto.max_early_data_size = 0;
    let crypto = QuicServerConfig::try_from(Arc::new(crypto)).map_err(|e| e.to_string())?;
    let mut config = ServerConfig::with_crypto(Arc::new(crypto));
    config
        .transport_config(Arc::new(transport(rt)))
        // A client that moves (or whose NAT gives it a new port) keeps
        // its connection: quinn validates the new path (PATH_CHALLENGE),
        // within three times what it received there until it is.
        .migration(true)
        .max_incoming(MAX_INCOMING)
        .incoming_buffer_size(INCOMING_BUFFER)
        .incoming_buffer_size_total(INCOMING_BUFFER_TOTAL);
    Ok(config)
}

/// The transport's bounds and its idle timeout ([`idle_timeout`]).
pub(crate) fn transport(rt: &Runtime) -> TransportConfig {
    let mut t = TransportConfig::default();
    t.max_concurrent_bidi_streams(VarInt::from_u32(MAX_BIDI_STREAMS))
        .max_concurrent_uni_streams(VarInt::from_u32(MAX_UNI_STREAMS))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .receive_window(VarInt::from_u32(CONNECTION_WINDOW))
        .send_window(SEND_WINDOW)
        // No DATAGRAM frames (RFC 9221): nothing reads them, and quinn
        // would buffer a client's for us by default.
        .datagram_receive_buffer_size(None);
    t.max_idle_timeout(Some(idle_timeout(rt)));
    t
}

/// QUIC's idle timeout: a connection silent this long is gone (the peer
/// vanished). It must not cut a request the server's own clocks let wait
/// (a body paused up to `body-idle-timeout`, an answer the client reads
/// slowly up to `send-timeout`), and QUIC's 0 means none at all: so the
/// longest of `keepalive-timeout`, `header-timeout`, `body-idle-timeout`
/// and `send-timeout`, at least a second. The unit closes an idle
/// connection at `keepalive-timeout` itself, PINGs or not.
fn idle_timeout(rt: &Runtime) -> IdleTimeout {
    let longest = (rt.keepalive_timeout)
        .max(rt.header_timeout)
        .max(rt.body_idle_timeout)
        .max(rt.send_timeout)
        .max(std::time::Duration::from_secs(1));
    let ms = u64::try_from(longest.as_millis()).unwrap_or(u64::MAX);
    VarInt::from_u64(ms).map_or(IdleTimeout::from(VarInt::MAX), IdleTimeout::from)
}

/// The certificate for a QUIC handshake: the TLS set's pair for the name
/// the ClientHello asks, by the TCP path's rules (an exact name, a
/// wildcard one label up, the default); none, and the handshake is
/// refused.
struct ByName(Arc<Tls>);

impl std::fmt::Debug for ByName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ByName")
    }
}

impl ResolvesServerCert for ByName {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let certs = self.0.current();
        let served = certs.choose(hello.server_name(), || None)?;
        served.handshakes.fetch_add(1, Ordering::Relaxed);
        Some(served.pair.key.clone())
    }
}
