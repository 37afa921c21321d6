//! What every worker shares: the routes, the runtime (swapped whole by a
//! reload), the listeners, the logs, the kept table, the counters, the io
//! pool and the TLS configuration; and the Linux side of the answer
//! pipeline's ports (`http::port`), for one connection ([`Serving`]).

use super::cache::Cache;
use super::listen::Listener;
use super::log::{Logs, Sink};
use super::pool::IoPool;
use super::stats::Stats;
use crate::http::file::Meta;
use crate::http::port::{Challenges, Codings, Reads, Rules, Writes};
use crate::http::router::Router;
use crate::rt::Runtime;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What every worker shares: routes, the runtime, logs, and the stop flag.
pub(crate) struct Shared {
    pub(crate) started: Instant,
    pub(crate) router: Router,
    /// The runtime new requests use; a reload swaps it whole and bumps
    /// its generation, which each worker looks at once per loop turn.
    current: Arc<super::current::Current>,
    /// The listening sockets; each worker holds them too. Taken at
    /// shutdown, so a socket closes once the last worker let go of it.
    pub(crate) listeners: Mutex<Vec<Arc<Listener>>>,
    pub(crate) logs: Arc<Logs>,
    pub(crate) cache: Cache<Meta>,
    /// The kept compressed variants and their compressor thread.
    pub(crate) variants: super::variants::Variants,
    pub(crate) stats: Stats,
    pub(crate) pool: IoPool,
    /// The verifier threads and the table of verified credentials.
    pub(crate) auth: Arc<super::auth_pool::AuthPool>,
    /// The wing for everything that goes to disk (PUT, DELETE, resumable
    /// uploads), with its writer threads.
    pub(crate) wing: Arc<super::write::Wing>,
    /// The HTTPS side, when a listener speaks TLS.
    pub(crate) tls: Option<Arc<super::tls::Tls>>,
    /// ACME's validations in flight, answered on every listener.
    pub(crate) challenges: Arc<super::challenges::Challenges>,
    /// What ACME reports of each of its names (`nikaia explain`); empty
    /// without it.
    pub(crate) acme_status: Arc<Mutex<Vec<crate::rt::CertReport>>>,
    /// The ACME manager, while `[acme]` is set.
    #[cfg(feature = "acme")]
    pub(crate) acme: Mutex<Option<Arc<super::acme::Manager>>>,
    /// What every worker's QUIC endpoint shares, with HTTP/3 on
    /// (`spec/http3.md`, "Workers").
    pub(crate) quic: Option<Arc<super::quic::common::Common>>,
    /// Where HTTP/3 is served (each UDP socket's address).
    pub(crate) h3_addresses: Vec<std::net::SocketAddr>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) connections: AtomicUsize,
    /// `max-connections`, lowered if the descriptor limit cannot hold it.
    pub(crate) max_connections: AtomicUsize,
}

/// The answer pipeline's ports (`http::port`) for one connection: the
/// shared server under the runtime its worker took, through this
/// connection's transport (a TLS connection never uses sendfile).
pub(crate) struct Serving<'a> {
    pub shared: &'a Arc<Shared>,
    pub rt: &'a Runtime,
    pub tls: bool,
    /// The worker's window of kept names' checks (`cache::Window`): a name
    /// checked in it is not checked again.
    pub window: &'a super::cache::Window,
}

/// The Linux server's side of reading a file: its kept table, an open
/// that only uses the kernel's caches, and `send-file`.
impl Reads for Serving<'_> {
    fn kept(
        &self,
        root: &crate::fs::Root,
        name: &std::path::Path,
    ) -> Option<(bytes::Bytes, crate::fs::Identity, Meta)> {
        self.shared.cache.lookup(root, name, self.window)
    }

    fn offer(
        &self,
        root: &crate::fs::Root,
        name: &std::path::Path,
        opened: &crate::fs::Opened,
        meta: &Meta,
    ) -> Option<bytes::Bytes> {
        self.shared.cache.offer(root, name, opened, || meta.clone())
    }

    fn open_now(
        &self,
        root: &crate::fs::Root,
        name: &std::path::Path,
    ) -> Result<crate::fs::Opened, crate::fs::Error> {
        root.open_cached(name)
    }

    fn known_absent(&self, root: &crate::fs::Root, name: &std::path::Path) -> bool {
        self.shared.cache.known_absent(root, name)
    }

    fn note_absent(&self, root: &crate::fs::Root, name: &std::path::Path) {
        self.shared.cache.note_absent(root, name)
    }

    fn vehicle(&self, len: u64) -> crate::rt::Vehicle {
        super::send::choose(self.rt.send_file, len, self.tls)
    }
}

/// Its sinks of bodies that go to disk: the write wing's.
impl Writes for Serving<'_> {
    fn to_file(
        &self,
        req: &crate::http::Request,
        to: crate::http::ToFile,
        length: Option<u64>,
    ) -> Result<Box<dyn crate::http::body::Erased>, crate::http::Response> {
        self.shared.wing.to_file(self.rt, req, to, length)
    }

    fn resume(
        &self,
        req: &crate::http::Request,
        root: crate::fs::Root,
        ask: crate::http::site::resume::Ask,
        hidden: bool,
    ) -> Result<Box<dyn crate::http::body::Erased>, crate::http::Response> {
        (self.shared.wing).resume(req, root, ask, hidden, self.tls)
    }

    fn dav(
        &self,
        req: &crate::http::Request,
        job: crate::http::site::dav::Job,
    ) -> Result<Box<dyn crate::http::body::Erased>, crate::http::Response> {
        self.shared.wing.dav(self.rt, req, job)
    }

    fn count_write(&self, status: u16) {
        self.shared.stats.writes.refused(status);
    }
}

/// The runtime its worker took, its transport, and the verifier pool's
/// table.
impl Rules for Serving<'_> {
    fn runtime(&self) -> Option<&Runtime> {
        Some(self.rt)
    }

    fn tls(&self) -> bool {
        self.tls
    }

    fn verified(&self, check: &crate::http::site::Check) -> bool {
        self.shared.auth.known(check)
    }
}

/// ACME's validations in flight, answered on every listener.
impl Challenges for Serving<'_> {
    fn http01(&self, host: Option<&str>, token: &str) -> crate::http::redirect::Http01 {
        self.shared.challenges.http01(host, token)
    }
}

/// The sidecars `precompressed` names, and the kept variants.
impl Codings for Serving<'_> {
    fn precompressed(&self) -> &[crate::rt::Coding] {
        &self.rt.precompressed
    }

    fn compresses(&self) -> bool {
        self.shared.variants.on()
    }

    fn compressed(
        &self,
        root: &crate::fs::Root,
        name: &std::path::Path,
        id: &crate::fs::Identity,
        coding: crate::rt::Coding,
        queue: bool,
    ) -> crate::http::file::Variant {
        self.shared.variants.get(root, name, id, coding, queue)
    }
}

impl Shared {
    /// The certificates TLS serves, with what ACME says of its names (the
    /// names still without a certificate too).
    fn certificates(&self, tls: &super::tls::Tls) -> Vec<crate::rt::CertReport> {
        let mut served = tls.report();
        let acme = self.acme_status.lock().unwrap_or_else(|e| e.into_inner());
        for status in acme.iter() {
            let same = |c: &&mut crate::rt::CertReport| c.source == "acme" && c.cert == status.cert;
            match served.iter_mut().find(same) {
                Some(entry) => {
                    entry.next_renewal = status.next_renewal;
                    entry.last_attempt = status.last_attempt;
                    entry.last_error = status.last_error.clone();
                    entry.orders = status.orders;
                    entry.failures = status.failures;
                }
                None => served.push(status.clone()),
            }
        }
        let answered = self
            .challenges
            .answered
            .load(std::sync::atomic::Ordering::Relaxed);
        for entry in served.iter_mut().filter(|c| c.source == "acme") {
            entry.challenges = answered;
        }
        served
    }

    pub(crate) fn new(router: Router, rt: Runtime, listeners: Vec<Listener>) -> io::Result<Shared> {
        let challenges = Arc::new(super::challenges::Challenges::default());
        let tls = match listeners.iter().any(|l| l.tls) {
            true => Some(Arc::new(super::tls::Tls::new(&rt, challenges.clone())?)),
            false => None,
        };
        // Any TLS listener in the process means the kept table holds
        // copies: rustls reads the bytes in user mode, where a mapping of
        // a file cut short would be SIGBUS.
        let keep = match tls.is_some() {
            true => super::cache::Keep::Copies,
            false => super::cache::Keep::Mappings,
        };
        let stats = Stats::default();
        let auth = Arc::new(super::auth_pool::AuthPool::new()?);
        let current = Arc::new(super::current::Current::new(rt.clone()));
        Ok(Shared {
            started: Instant::now(),
            router,
            tls,
            challenges,
            acme_status: Arc::default(),
            #[cfg(feature = "acme")]
            acme: Mutex::default(),
            cache: Cache::new(rt.static_cache, rt.static_cache_bytes, keep),
            variants: super::variants::Variants::new(rt.compress, rt.compress_cache_bytes)?,
            pool: IoPool::new(rt.io_threads)?,
            wing: Arc::new(super::write::Wing::new(
                &rt,
                auth.clone(),
                current.clone(),
                stats.bodies.clone(),
                stats.writes.clone(),
            )?),
            auth,
            stats,
            logs: Arc::new(Logs {
                access: Sink::open(&rt.access_log)?,
                error: Sink::open(&rt.error_log)?,
            }),
            max_connections: AtomicUsize::new(rt.max_connections),
            current,
            listeners: Mutex::new(listeners.into_iter().map(Arc::new).collect()),
            quic: None,
            h3_addresses: Vec::new(),
            stop: Arc::default(),
            connections: AtomicUsize::new(0),
        })
    }

    /// `Alt-Svc`'s value for the answers of a connection `listener`
    /// accepted: HTTP/3 on its port with `alt-svc-max-age`, when this
    /// process serves HTTP/3 on its address; `clear` with `http3 = false`,
    /// so a client forgets an HTTP/3 that is gone (RFC 7838 §3). Never on
    /// Unix, PROXY-protocol or redirecting listeners.
    pub(crate) fn alt_svc(&self, listener: &Listener, rt: &Runtime) -> Option<bytes::Bytes> {
        let crate::rt::ListenAddr::Tcp(addr) = &listener.address else {
            return None;
        };
        if !listener.tls || listener.proxy || listener.redirect.is_some() {
            return None;
        }
        if rt.http3 == Some(false) {
            return Some(bytes::Bytes::from_static(b"clear"));
        }
        self.h3_addresses.contains(addr).then(|| {
            let ma = rt.alt_svc_max_age.as_secs();
            bytes::Bytes::from(format!("h3=\":{}\"; ma={ma}", addr.port()))
        })
    }

    /// Worker `worker`'s QUIC endpoint over the shared UDP sockets;
    /// `None` without HTTP/3, and past the workers QUIC runs on.
    pub(crate) fn quic_for(&self, worker: usize) -> Option<super::quic::endpoint::Quic> {
        let common = self.quic.as_ref()?;
        (worker < common.place.workers).then(|| {
            super::quic::endpoint::Quic::new(
                common.clone(),
                worker,
                &self.runtime(),
                self.generation(),
            )
        })
    }

    /// The runtime new requests use now.
    pub(crate) fn runtime(&self) -> Arc<Runtime> {
        self.current.runtime()
    }

    /// Which runtime is current: changes with every reload.
    pub(crate) fn generation(&self) -> u64 {
        self.current.generation()
    }

    /// Makes `rt` the runtime of new requests (a reload).
    pub(crate) fn set_runtime(&self, rt: Runtime) {
        self.current.set(rt);
    }

    /// The listeners, for a worker or an upgrade (empty once shut down).
    pub(crate) fn listeners(&self) -> Vec<Arc<Listener>> {
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn report(&self) -> crate::rt::Report {
        use std::sync::atomic::Ordering::Relaxed;
        let occupancy = self.cache.occupancy();
        let c = &self.cache.counters;
        crate::rt::Report {
            uptime_ms: self.started.elapsed().as_millis() as u64,
            vehicles: self.stats.per_vehicle(false),
            cache_entries: occupancy.entries,
            cache_bytes: occupancy.bytes,
            cache_hits: c.hits.load(Relaxed),
            cache_misses: c.misses.load(Relaxed),
            cache_evictions: c.evictions.load(Relaxed),
            cache_invalidations: c.invalidations.load(Relaxed),
            cache_checks: c.checks.load(Relaxed),
            compressed: self.variants.report(),
            cold_reads: self.stats.cold_reads.load(Relaxed),
            pool_opens: self.stats.pool_opens.load(Relaxed),
            truncated: self.stats.truncated.load(Relaxed),
            idle_closed: self.stats.idle_closed.load(Relaxed),
            send_timeouts: self.stats.send_timeouts.load(Relaxed),
            statuses: self.stats.statuses(),
            connections: self.connections.load(Relaxed) as u64,
            pool_queued: self.pool.queued() as u64,
            anywhere: crate::fs::anywhere_sites()
                .into_iter()
                .map(|(site, n)| (site.to_string(), n))
                .collect(),
            tls: self.tls.as_ref().map(|t| crate::rt::TlsReport {
                connections: self.connections.load(Relaxed) as u64,
                handshakes_full: t.counters.full.load(Relaxed),
                handshakes_resumed: t.counters.resumed.load(Relaxed),
                failures: t.counters.failed.load(Relaxed),
                plain_http: t.counters.plain_http.load(Relaxed),
                vehicles: self.stats.per_vehicle(true),
                unrecognized: t.counters.unrecognized.load(Relaxed),
                certificates: self.certificates(t),
            }),
            h2: self.stats.h2.report(),
            h3: self.stats.h3.report(),
            bodies: self.stats.bodies.report(),
            writes: self.stats.writes.report(),
            produced: self.stats.produced.report(),
            resumable: self.wing.uploads.as_ref().map(|u| u.report()),
            locks: self.wing.locks.as_ref().map(|l| l.report()),
        }
    }
}

/// How many connections the process can hold open and still open files:
/// raises the soft descriptor limit to the hard one, then keeps an eighth of
/// it (16 to 1024) for the files being sent, the logs and the workers' own
/// descriptors, and two for each body `max-writes` lets be written at once
/// (its directory and its file). `max-connections` is lowered to fit, with a line in the
/// error log, so the server stops accepting before it runs out of
/// descriptors rather than answering 500 for want of one.
pub(crate) fn connection_budget(
    shared: &Shared,
    asked: usize,
    workers: usize,
    max_writes: usize,
) -> usize {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current < lim.maximum {
        lim.current = lim.maximum;
        let _ = setrlimit(Resource::Nofile, lim);
        lim = getrlimit(Resource::Nofile);
    }
    let Some(limit) = lim.current else {
        return asked;
    };
    let open_now = std::fs::read_dir("/proc/self/fd").map_or(64, |d| d.count() as u64);
    let writes = 2 * max_writes as u64;
    let reserve = (limit / 8).clamp(16, 1024) + 3 * workers as u64 + writes;
    let budget = limit.saturating_sub(open_now + reserve).max(1);
    if (asked as u64) > budget {
        shared.logs.error(format_args!(
            "max-connections {asked} lowered to {budget}: the process may open {limit} descriptors (RLIMIT_NOFILE)"
        ));
        return budget as usize;
    }
    asked
}
