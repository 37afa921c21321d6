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

pub(crate) use choose::{Certs, Served, Source};
pub(crate) use pair::{Pair, Part};
pub(crate) use session::{Input, Session, TlsWire};

use super::challenges::Challenges;
use crate::rt::{CertFiles, Runtime};
use crate::sync::lock;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert, ServerConfig, ServerSessionMemoryCache};
use rustls::sign::CertifiedKey;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// The crypto provider: aws-lc-rs (`spec/tls.md` says why).
pub(crate) fn provider() -> Arc<CryptoProvider> {
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
    /// The pairs new handshakes choose among; rebuilt whole from `parts`.
    certs: RwLock<Arc<Certs>>,
    /// What every pair's configuration shares: versions, resumption (one
    /// session cache and one ticketer, so sessions resume across pairs'
    /// reloads), ALPN.
    template: RwLock<ServerConfig>,
    /// What the set is built from: the file pairs as last loaded, the ACME
    /// pairs by name.
    parts: Mutex<Parts>,
    /// ACME's validations in flight (TLS-ALPN-01 answers).
    pub(crate) challenges: Arc<Challenges>,
    pub counters: Counters,
}

#[derive(Default)]
struct Parts {
    files: Vec<(CertFiles, Arc<Pair>)>,
    acme: BTreeMap<String, Arc<Pair>>,
}

/// The file pairs of a runtime, loaded: what [`Tls::install`] takes.
pub(crate) type Loaded = Vec<(CertFiles, Arc<Pair>)>;

/// The protocols ALPN offers, in the server's order.
fn alpn(http2: bool) -> Vec<Vec<u8>> {
    match http2 {
        true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        false => vec![b"http/1.1".to_vec()],
    }
}

/// The protocol of TLS-ALPN-01 validations (RFC 8737).
pub(crate) const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

impl Tls {
    /// Loads every pair `rt` names and builds the configuration: TLS 1.3
    /// and 1.2, ALPN `h2` (when `http2`) then `http/1.1`, resumption by
    /// tickets and by session ID. The first pair that does not load stops
    /// the start, named.
    pub(crate) fn new(rt: &Runtime, challenges: Arc<Challenges>) -> std::io::Result<Tls> {
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
            certs: RwLock::new(Arc::new(Certs::new(Vec::new(), SystemTime::now()))),
            template: RwLock::new(template),
            parts: Mutex::default(),
            challenges,
            counters: Counters::default(),
        };
        let loaded = Tls::load(rt).map_err(|problems| {
            std::io::Error::other(
                problems
                    .into_iter()
                    .next()
                    .map_or(String::new(), |(_, m)| m),
            )
        })?;
        tls.install(loaded, rt.http2);
        Ok(tls)
    }

    /// Loads the pairs `rt` names; or every pair's problem, at its runtime
    /// key. Nothing changes.
    pub(crate) fn load(rt: &Runtime) -> Result<Loaded, Vec<(&'static str, String)>> {
        let mut loaded = Vec::new();
        let mut problems = Vec::new();
        for (files, pair) in load_pairs(rt) {
            match pair {
                Ok(pair) => loaded.push((files, Arc::new(pair))),
                Err((part, message)) => problems.push((key_of(rt, &files, part), message)),
            }
        }
        match problems.is_empty() {
            true => Ok(loaded),
            false => Err(problems),
        }
    }

    /// Makes `loaded` the file pairs new handshakes choose among (a
    /// reload), and `http2` what ALPN offers them: connections already
    /// established keep their sessions, and sessions still resume.
    pub(crate) fn install(&self, loaded: Loaded, http2: bool) {
        self.template
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .alpn_protocols = alpn(http2);
        let mut parts = lock(&self.parts);
        parts.files = loaded;
        self.rebuild(&parts);
    }

    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    /// Serves `pair` as ACME's certificate for `name` (`None`: no longer).
    pub(crate) fn set_acme(&self, name: &str, pair: Option<Arc<Pair>>) {
        let mut parts = lock(&self.parts);
        match pair {
            Some(pair) => parts.acme.insert(name.to_owned(), pair),
            None => parts.acme.remove(name),
        };
        self.rebuild(&parts);
    }

    /// Serves no ACME pair any more (`[acme]` removed by a reload).
    #[cfg(feature = "acme")]
    pub(crate) fn clear_acme(&self) {
        let mut parts = lock(&self.parts);
        parts.acme.clear();
        self.rebuild(&parts);
    }

    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    /// Builds the set again from what it is made of (a pair expired: the
    /// choice among the rest changes).
    pub(crate) fn refresh(&self) {
        self.rebuild(&lock(&self.parts));
    }

    /// The set from `parts`: each pair with its configuration, its
    /// handshake counter carried over.
    fn rebuild(&self, parts: &Parts) {
        let old = self.current();
        let template = self.template.read().unwrap_or_else(|e| e.into_inner());
        let files = (parts.files.iter()).map(|(f, p)| (Source::File(f.clone()), p));
        let acme = (parts.acme.iter()).map(|(n, p)| (Source::Acme(n.clone()), p));
        let served = files
            .chain(acme)
            .map(|(source, pair)| {
                let mut config = ServerConfig::clone(&template);
                config.cert_resolver = Arc::new(Fixed(pair.key.clone()));
                Served {
                    handshakes: old.handshakes_of(&source).unwrap_or_default(),
                    config: Arc::new(config),
                    pair: pair.clone(),
                    source,
                }
            })
            .collect();
        drop(template);
        *self.certs.write().unwrap_or_else(|e| e.into_inner()) =
            Arc::new(Certs::new(served, SystemTime::now()));
    }

    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    /// A configuration answering TLS-ALPN-01 with `key` (RFC 8737): only
    /// `acme-tls/1`, no resumption.
    pub(crate) fn challenge_config(&self, key: Arc<CertifiedKey>) -> Arc<ServerConfig> {
        let mut config =
            ServerConfig::clone(&self.template.read().unwrap_or_else(|e| e.into_inner()));
        config.alpn_protocols = vec![ACME_TLS_ALPN.to_vec()];
        config.cert_resolver = Arc::new(Fixed(key));
        config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
        Arc::new(config)
    }

    /// The set new handshakes choose from now.
    pub(crate) fn current(&self) -> Arc<Certs> {
        self.certs.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The certificates new handshakes choose among, for `nikaia explain`.
    pub(crate) fn report(&self) -> Vec<crate::rt::CertReport> {
        let now = SystemTime::now();
        let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let certs = self.current();
        (certs.served().iter().enumerate())
            .map(|(i, s)| {
                let (source, cert) = match &s.source {
                    Source::File(f) => ("file", f.cert.display().to_string()),
                    Source::Acme(name) => ("acme", name.clone()),
                };
                let mut r = crate::rt::CertReport::new(source, cert);
                r.names = s.pair.names();
                r.default = certs.is_default(i);
                r.not_after = s.pair.not_after.map_or(0, secs);
                r.expires_in =
                    (s.pair.not_after).map_or(0, |end| secs(end) as i64 - secs(now) as i64);
                r.handshakes = s.handshakes.load(Ordering::Relaxed);
                r
            })
            .collect()
    }

    /// A session for a connection just accepted: it chooses its pair when
    /// the ClientHello has arrived.
    pub(crate) fn session(&self) -> Session {
        Session::new(self.current(), self.challenges.clone())
    }

    /// Counts a failed handshake and says whether to log it (at most a
    /// line per 10 s, with the number left out: [`Throttle`]).
    ///
    /// [`Throttle`]: crate::linux::log::Throttle
    pub(crate) fn failure_to_log(&self) -> Option<crate::linux::log::Unlogged> {
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
