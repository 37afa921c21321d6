//! HTTPS (D5): rustls sessions driven by the same epoll workers as plain
//! connections. What a request is answered with does not change under TLS;
//! only how the bytes reach the socket does (`spec/tls.md`).
//!
//! - this file: the server's certificates (loaded, checked, reloaded on
//!   SIGHUP), its configuration, and the counters;
//! - `pair.rs`: one certificate chain and its key;
//! - `choose.rs`: which pair a handshake gets, by the name it asks for;
//! - `der.rs`: the two fields of a certificate std reads itself;
//! - `session.rs`: one connection's session: the ClientHello, then
//!   ciphertext in and out of the socket, plaintext in and out of the
//!   connection's buffers.

mod choose;
mod der;
mod hello;
mod pair;
mod session;

pub(crate) use choose::{Certs, Served};
pub(crate) use pair::{Pair, Part};
pub(crate) use session::{Input, Session, TlsWire};

use crate::rt::{CertFiles, Runtime};
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert, ServerConfig, ServerSessionMemoryCache};
use rustls::sign::CertifiedKey;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// The crypto provider: aws-lc-rs (`spec/tls.md` says why).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Sessions remembered for resumption by session ID (TLS 1.2) and for
/// tickets the client cannot carry; about 300 bytes each.
const SESSION_CACHE: usize = 8192;

/// The certificate of the handshakes one configuration answers (the pair
/// was chosen before the configuration: [`Certs::choose`]).
#[derive(Debug)]
struct Fixed(Arc<CertifiedKey>);

impl ResolvesServerCert for Fixed {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// Loads every pair `rt` names, in its order: each one's files, and the
/// pair or why it could not be loaded.
pub(crate) fn load_pairs(rt: &Runtime) -> Vec<(CertFiles, Result<Pair, pair::PairError>)> {
    rt.pairs()
        .into_iter()
        .map(|files| {
            let pair = Pair::load(&files.cert, &files.key);
            (files, pair)
        })
        .collect()
}

/// The runtime key a pair's problem is reported at: `tls-cert` or
/// `tls-key` for the short pair, `certificate` for a table.
pub(crate) fn key_of(rt: &Runtime, files: &CertFiles, part: Part) -> &'static str {
    let short = rt.tls_cert.as_ref() == Some(&files.cert)
        && rt.tls_key.as_ref() == Some(&files.key)
        && !files.default;
    match (short, part) {
        (true, Part::Cert) => "tls-cert",
        (true, Part::Key) => "tls-key",
        (false, _) => "certificate",
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
    /// Handshakes refused because no pair covers the name (or address)
    /// asked for (`unrecognized_name`); counted in `failed` too.
    pub unrecognized: AtomicU64,
    /// The error log's rate limit for failures.
    logged: crate::linux::log::Throttle,
}

/// The HTTPS side of a server: certificates, configuration, reload,
/// counters.
pub(crate) struct Tls {
    /// The pairs new handshakes choose among; swapped whole by a reload.
    certs: RwLock<Arc<Certs>>,
    /// What every pair's configuration shares: versions, resumption (one
    /// session cache and one ticketer, so sessions resume across pairs'
    /// reloads), ALPN.
    template: RwLock<ServerConfig>,
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
    /// Loads every pair `rt` names and builds the configuration: TLS 1.3
    /// and 1.2, ALPN `h2` (when `http2`) then `http/1.1`, resumption by
    /// tickets and by session ID. The first pair that does not load stops
    /// the start, named.
    pub(crate) fn new(rt: &Runtime) -> std::io::Result<Tls> {
        let mut template = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(std::io::Error::other)?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(Unchosen));
        template.alpn_protocols = alpn(rt.http2);
        template.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
        template.ticketer =
            rustls::crypto::aws_lc_rs::Ticketer::new().map_err(std::io::Error::other)?;
        let tls = Tls {
            certs: RwLock::new(Arc::new(Certs::new(Vec::new()))),
            template: RwLock::new(template),
            counters: Counters::default(),
        };
        let certs = tls.certs_for(rt).map_err(|problems| {
            std::io::Error::other(
                problems
                    .into_iter()
                    .next()
                    .map_or(String::new(), |(_, m)| m),
            )
        })?;
        tls.install(certs, rt.http2);
        Ok(tls)
    }

    /// Loads the pairs `rt` names into a set, each with its configuration;
    /// or every pair's problem, at its runtime key. Nothing changes.
    pub(crate) fn certs_for(&self, rt: &Runtime) -> Result<Certs, Vec<(&'static str, String)>> {
        let old = self.current();
        let mut template =
            ServerConfig::clone(&self.template.read().unwrap_or_else(|e| e.into_inner()));
        template.alpn_protocols = alpn(rt.http2);
        let mut served = Vec::new();
        let mut problems = Vec::new();
        for (files, pair) in load_pairs(rt) {
            match pair {
                Ok(pair) => {
                    let mut config = template.clone();
                    config.cert_resolver = Arc::new(Fixed(pair.key.clone()));
                    served.push(Served {
                        handshakes: old.handshakes_of(&files).unwrap_or_default(),
                        config: Arc::new(config),
                        pair,
                        files,
                    })
                }
                Err((part, message)) => problems.push((key_of(rt, &files, part), message)),
            }
        }
        match problems.is_empty() {
            true => Ok(Certs::new(served)),
            false => Err(problems),
        }
    }

    /// Makes `certs` the set new handshakes choose from (a reload), and
    /// `http2` what ALPN offers them: connections already established keep
    /// their sessions, and sessions still resume.
    pub(crate) fn install(&self, certs: Certs, http2: bool) {
        self.template
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .alpn_protocols = alpn(http2);
        *self.certs.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(certs);
    }

    /// The set new handshakes choose from now.
    pub(crate) fn current(&self) -> Arc<Certs> {
        self.certs.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The certificates new handshakes choose among, for `nikaia explain`.
    pub(crate) fn report(&self) -> Vec<crate::rt::CertReport> {
        let now = std::time::SystemTime::now();
        let secs = |t: std::time::SystemTime| {
            t.duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        };
        let certs = self.current();
        (certs.served().iter().enumerate())
            .map(|(i, s)| crate::rt::CertReport {
                source: "file".into(),
                cert: s.files.cert.display().to_string(),
                names: s.pair.names(),
                default: certs.is_default(i),
                not_after: s.pair.not_after.map_or(0, secs),
                expires_in: (s.pair.not_after).map_or(0, |end| secs(end) as i64 - secs(now) as i64),
                handshakes: s.handshakes.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// A session for a connection just accepted: it chooses its pair when
    /// the ClientHello has arrived.
    pub(crate) fn session(&self) -> Session {
        Session::new(self.current())
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

/// The template's resolver: the template never answers a handshake (each
/// pair's configuration has the pair's own).
#[derive(Debug)]
struct Unchosen;

impl ResolvesServerCert for Unchosen {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        None
    }
}
