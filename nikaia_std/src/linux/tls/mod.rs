//! HTTPS (D5): rustls sessions driven by the same epoll workers as plain
//! connections. What a request is answered with does not change under TLS;
//! only how the bytes reach the socket does (`spec/tls.md`).
//!
//! - this file: the operator's certificate and key (loaded, checked,
//!   reloaded on SIGHUP), the server configuration, and the counters;
//! - `session.rs`: one connection's session: ciphertext in and out of the
//!   socket, plaintext in and out of the connection's buffers.

mod der;
mod session;

pub(crate) use session::{Input, Session, TlsWire};

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert, ServerConfig, ServerSessionMemoryCache};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

/// The crypto provider: aws-lc-rs (`spec/tls.md` says why).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Sessions remembered for resumption by session ID (TLS 1.2) and for
/// tickets the client cannot carry; about 300 bytes each.
const SESSION_CACHE: usize = 8192;

/// A certificate chain and its private key, read from PEM files and checked
/// to belong together.
pub(crate) struct Pair {
    key: Arc<CertifiedKey>,
}

impl Pair {
    /// Reads `cert` (a PEM chain, leaf first) and `key` (a PKCS#8, PKCS#1
    /// or SEC1 PEM key). An error is the runtime key it is about
    /// (`tls-cert` or `tls-key`) and a message naming the file.
    pub(crate) fn load(cert: &Path, key: &Path) -> Result<Pair, (&'static str, String)> {
        let at_cert = |why: String| ("tls-cert", format!("{}: {why}", cert.display()));
        let at_key = |why: String| ("tls-key", format!("{}: {why}", key.display()));
        let cert_pem = std::fs::read(cert).map_err(|e| at_cert(e.to_string()))?;
        let chain = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| at_cert(format!("not a PEM certificate chain: {e}")))?;
        if chain.is_empty() {
            return Err(at_cert("holds no PEM certificate".into()));
        }
        let key_pem = std::fs::read(key).map_err(|e| at_key(e.to_string()))?;
        let der = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
            at_key(format!(
                "not a PEM private key (PKCS#8, PKCS#1 or SEC1): {e}"
            ))
        })?;
        let certified = CertifiedKey::from_der(chain, der, &provider()).map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => at_key(format!(
                "the private key does not match the certificate in {}",
                cert.display()
            )),
            e => at_key(format!("unusable private key: {e}")),
        })?;
        Ok(Pair {
            key: Arc::new(certified),
        })
    }

    /// When the leaf certificate stops being valid, if its DER says.
    pub(crate) fn not_after(&self) -> Option<SystemTime> {
        der::not_after(self.key.cert.first()?.as_ref())
    }
}

/// The certificate new handshakes get; swapped by a reload, while
/// connections already established keep the session they made.
#[derive(Debug)]
struct Current(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(|e| e.into_inner()).clone())
    }
}

/// What `nikaia explain` shows about TLS.
#[derive(Default)]
pub(crate) struct Counters {
    pub full: AtomicU64,
    pub resumed: AtomicU64,
    pub failed: AtomicU64,
    /// Plain HTTP requests answered 400 on the TLS port.
    pub plain_http: AtomicU64,
    /// The error log's rate limit for failures.
    logged: crate::linux::log::Throttle,
}

/// The HTTPS side of a server: configuration, reload, counters.
pub(crate) struct Tls {
    current: Arc<Current>,
    /// Swapped by a reload that changes `http2` (the ALPN list); the
    /// session cache and ticketer are carried over, so sessions resume.
    config: RwLock<Arc<ServerConfig>>,
    pub counters: Counters,
}

/// The protocols ALPN offers, in the server's order.
fn alpn(http2: bool) -> Vec<Vec<u8>> {
    match http2 {
        true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        false => vec![b"http/1.1".to_vec()],
    }
}

impl Tls {
    /// Loads the pair and builds the configuration: TLS 1.3 and 1.2, ALPN
    /// `h2` (when `http2`) then `http/1.1`, resumption by tickets and by
    /// session ID.
    pub(crate) fn new(cert: &Path, key: &Path, http2: bool) -> std::io::Result<Tls> {
        let pair = Pair::load(cert, key).map_err(|(_, e)| std::io::Error::other(e))?;
        let current = Arc::new(Current(RwLock::new(pair.key)));
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(std::io::Error::other)?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        config.alpn_protocols = alpn(http2);
        config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
        config.ticketer =
            rustls::crypto::aws_lc_rs::Ticketer::new().map_err(std::io::Error::other)?;
        Ok(Tls {
            current,
            config: RwLock::new(Arc::new(config)),
            counters: Counters::default(),
        })
    }

    /// A session for a connection just accepted.
    pub(crate) fn session(&self) -> Result<Session, rustls::Error> {
        Session::new(
            self.config
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }

    /// Uses `pair` for new handshakes and offers `h2` or not (a reload):
    /// connections already established keep their sessions.
    pub(crate) fn reload(&self, pair: Pair, http2: bool) {
        *self.current.0.write().unwrap_or_else(|e| e.into_inner()) = pair.key;
        let mut config = self.config.write().unwrap_or_else(|e| e.into_inner());
        let alpn = alpn(http2);
        if config.alpn_protocols != alpn {
            let mut new = ServerConfig::clone(&config);
            new.alpn_protocols = alpn;
            *config = Arc::new(new);
        }
    }

    /// Counts a failed handshake and says whether to log it (at most a
    /// line per 10 s, with the number left out: [`Throttle`]).
    ///
    /// [`Throttle`]: crate::linux::log::Throttle
    pub(crate) fn failure_to_log(&self) -> Option<u64> {
        self.counters.failed.fetch_add(1, Ordering::Relaxed);
        self.counters.logged.pass()
    }
}
