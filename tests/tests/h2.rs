//! HTTP/2 over real sockets with real clients: h2c by prior knowledge on a
//! plain listener, `h2` by ALPN on a TLS one (curl, nghttp, h2load, httpwg,
//! openssl, rustls, and a minimal client written here). Every answer must be
//! the one HTTP/1.1 gives, but for the connection's own headers: the
//! equality corpus (`nikaia_tests::corpus`, which `tests/tests/h3.rs` asks
//! over HTTP/3 too) in `h2/equality.rs`; byte-exact downloads and many
//! streams on one connection in `h2/downloads.rs`; the minimal client in
//! `h2/client.rs`; httpwg in `h2/conformance.rs`; files truncated or
//! renamed over under downloads in `h2/truncated.rs`; ALPN and
//! `http2 = false` in `h2/alpn.rs`.

#[path = "h2/alpn.rs"]
mod alpn;
#[path = "h2/client.rs"]
mod client;
#[path = "h2/conformance.rs"]
mod conformance;
#[path = "h2/downloads.rs"]
mod downloads;
#[path = "h2/equality.rs"]
mod equality;
#[path = "h2/truncated.rs"]
mod truncated;

use nikaia_std::http::Running;
use nikaia_tests::curl::curl_output as curl;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn base(server: &Running) -> String {
    format!("http://127.0.0.1:{}", server.local_addr().port())
}

fn tls_base(server: &Running) -> String {
    format!("https://localhost:{}", server.local_addr().port())
}
