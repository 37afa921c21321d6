//! The server: worker threads, each with its own epoll, sharing one
//! listening socket per address (each worker waits on it with
//! `EPOLLEXCLUSIVE`); no hand-off between threads per request.

use super::app::Server;
use super::conn::{Conn, IoDone, Next, Turn};
use super::router::Router;
use crate::cache::Cache;
use crate::rt::log::{Logs, Sink};
use crate::rt::pool::{IoPool, Mailbox};
use crate::rt::stats::Stats;
use crate::rt::stats_socket::StatsSocket;
use crate::rt::Runtime;
use crate::text::date::DateCache;
use rustix::event::epoll;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a shutdown waits for responses already being sent.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// How long accepting pauses after the process ran out of descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// Connections accepted per listener wake-up before others are served.
const ACCEPT_BATCH: usize = 64;

const LISTENER: u64 = u64::MAX;
const WAKER: u64 = u64::MAX - 1;

/// What every worker shares: routes, the runtime, logs, and the stop flag.
pub(crate) struct Shared {
    pub(crate) started: Instant,
    pub(crate) router: Router,
    pub(crate) rt: Runtime,
    pub(crate) logs: Logs,
    pub(crate) cache: Cache<super::file::Meta>,
    pub(crate) stats: Stats,
    pub(crate) pool: IoPool,
    /// The HTTPS side, when the runtime names a certificate and key.
    pub(crate) tls: Option<crate::tls::Tls>,
    stop: AtomicBool,
    connections: AtomicUsize,
    /// `max-connections`, lowered if the descriptor limit cannot hold it.
    max_connections: usize,
}

impl Server {
    /// Binds, starts the workers, and returns at once.
    pub fn start(self) -> io::Result<Running> {
        let workers = self.rt.workers.max(1);
        let listener = Arc::new(listen(self.rt.listen)?);
        let addr = local_addr(&listener)?;
        let mut shared = Shared::new(self.router, self.rt)?;
        shared.max_connections = connection_budget(&shared, workers);
        let shared = Arc::new(shared);
        let stats = match &shared.rt.stats_socket {
            Some(path) => {
                let shared = shared.clone();
                Some(StatsSocket::start(path, move || shared.report())?)
            }
            None => None,
        };
        let mut threads = Vec::with_capacity(workers);
        let mut wakers = Vec::with_capacity(workers);
        for i in 0..workers {
            let waker = rustix::event::eventfd(
                0,
                rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
            )?;
            let mailbox = Arc::new(Mailbox::new(waker));
            let worker = Worker::new(shared.clone(), listener.clone(), mailbox.clone())?;
            wakers.push(mailbox);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("nikaia-worker-{i}"))
                    .spawn(move || worker.run())?,
            );
        }
        Ok(Running {
            stats: Mutex::new(stats),
            addr,
            control: Arc::new(Control { shared, wakers }),
            threads: Mutex::new(threads),
        })
    }

    /// Starts, prints nothing, and serves until SIGINT or SIGTERM; then
    /// finishes responses in flight (up to [`SHUTDOWN_GRACE`]) and returns.
    pub fn run(self) -> io::Result<()> {
        let running = self.start()?;
        running.stop_on_signals()?;
        running.wait();
        Ok(())
    }
}

struct Control {
    shared: Arc<Shared>,
    wakers: Vec<Arc<Mailbox<IoDone>>>,
}

impl Control {
    fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for w in &self.wakers {
            w.wake();
        }
    }
}

/// A started server.
pub struct Running {
    /// Answers `nikaia explain`; removed when the server stops.
    stats: Mutex<Option<StatsSocket>>,
    addr: SocketAddr,
    control: Arc<Control>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Running {
    /// The address the server listens on (the real port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https` when the runtime named a TLS certificate and key, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.control.shared.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// The server's counters, for `nikaia explain` and tests (see
    /// [`Report`](crate::rt::Report)).
    #[doc(hidden)]
    pub fn report(&self) -> crate::rt::Report {
        self.control.shared.report()
    }

    /// Begins a graceful shutdown: stop accepting, close idle connections,
    /// finish responses in flight. Returns at once; [`Running::wait`] waits.
    pub fn shutdown(&self) {
        self.control.shutdown();
    }

    /// Waits until every worker has finished.
    pub fn wait(&self) {
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        if threads.is_empty() {
            return;
        }
        for t in threads {
            let _ = t.join();
        }
        self.control.shared.pool.close();
        drop(self.stats.lock().unwrap_or_else(|e| e.into_inner()).take());
    }

    /// The first SIGINT or SIGTERM starts a graceful shutdown; a second one
    /// exits at once. SIGHUP reloads what can be reloaded without a restart:
    /// the TLS certificate and key. SIGUSR1 reopens the log files
    /// ([`Running::reopen_logs`]).
    pub fn stop_on_signals(&self) -> io::Result<()> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP, SIGUSR1])?;
        let control = self.control.clone();
        std::thread::Builder::new()
            .name("nikaia-signals".into())
            .spawn(move || {
                let mut seen = 0;
                for signal in signals.forever() {
                    if signal == SIGHUP {
                        control.shared.reload();
                        continue;
                    }
                    if signal == SIGUSR1 {
                        let _ = control.shared.logs.reopen();
                        continue;
                    }
                    seen += 1;
                    if seen == 1 {
                        control.shutdown();
                    } else {
                        std::process::exit(130);
                    }
                }
            })?;
        Ok(())
    }

    /// What SIGHUP does: reloads the TLS certificate and key. New
    /// connections use the new pair; open ones keep their sessions; a pair
    /// that does not load is logged and the old one stays.
    pub fn reload(&self) {
        self.control.shared.reload();
    }
}

impl Running {
    /// What SIGUSR1 does, logrotate's convention: opens the access and error
    /// log files again at their paths (created if missing, appended to,
    /// never truncated), after the operator moved them away. Lines written
    /// before the reopen are in the moved file, later ones in the new file;
    /// none is lost. A file that cannot be opened is reported on the error
    /// log and returned; that log keeps its old file.
    pub fn reopen_logs(&self) -> io::Result<()> {
        self.control.shared.logs.reopen()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown();
        self.wait();
    }
}

/// The Linux server's side of resolving a file: its kept table, an open
/// that only uses the kernel's caches, and `send-file`.
impl super::file::Files for Shared {
    fn kept(
        &self,
        root: &crate::fs::Root,
        name: &std::path::Path,
    ) -> Option<(bytes::Bytes, crate::fs::Identity, super::file::Meta)> {
        self.cache.lookup(root, name)
    }

    fn offer(
        &self,
        root: &crate::fs::Root,
        name: &std::path::Path,
        opened: &crate::fs::Opened,
        meta: &super::file::Meta,
    ) -> Option<bytes::Bytes> {
        self.cache.offer(root, name, opened, || meta.clone())
    }

    fn open_now(
        &self,
        root: &crate::fs::Root,
        name: &std::path::Path,
    ) -> Result<crate::fs::Opened, crate::fs::Error> {
        root.open_cached(name)
    }

    fn known_absent(&self, root: &crate::fs::Root, name: &std::path::Path) -> bool {
        self.cache.known_absent(root, name)
    }

    fn note_absent(&self, root: &crate::fs::Root, name: &std::path::Path) {
        self.cache.note_absent(root, name)
    }

    fn vehicle(&self, len: u64) -> crate::send::Vehicle {
        crate::send::choose(self.rt.send_file, len, self.tls.is_some())
    }

    fn runtime(&self) -> Option<&Runtime> {
        Some(&self.rt)
    }

    fn precompressed(&self) -> &[crate::rt::Coding] {
        &self.rt.precompressed
    }
}

impl Shared {
    pub(crate) fn new(router: Router, rt: Runtime) -> io::Result<Shared> {
        let tls = match (&rt.tls_cert, &rt.tls_key) {
            (Some(cert), Some(key)) => Some(crate::tls::Tls::new(cert, key)?),
            _ => None,
        };
        // Under TLS the kept table holds copies: rustls reads the bytes in
        // user mode, where a mapping of a file cut short would be SIGBUS.
        let keep = if tls.is_some() {
            crate::cache::Keep::Copies
        } else {
            crate::cache::Keep::Mappings
        };
        Ok(Shared {
            started: Instant::now(),
            router,
            tls,
            cache: Cache::new(rt.static_cache, rt.static_cache_bytes, keep),
            stats: Stats::default(),
            pool: IoPool::new(rt.io_threads)?,
            logs: Logs {
                access: Sink::open(&rt.access_log)?,
                error: Sink::open(&rt.error_log)?,
                format: rt.access_log_format,
            },
            rt,
            stop: AtomicBool::new(false),
            connections: AtomicUsize::new(0),
            max_connections: 0,
        })
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
            }),
        }
    }

    fn reload(&self) {
        let Some(tls) = &self.tls else {
            self.logs.error(format_args!(
                "SIGHUP: no TLS certificate to reload; nothing done"
            ));
            return;
        };
        match tls.reload() {
            Ok(()) => self.logs.error(format_args!(
                "SIGHUP: TLS certificate and key reloaded; new connections use them"
            )),
            Err(e) => self.logs.error(format_args!(
                "SIGHUP: TLS certificate and key not reloaded, the old pair stays: {e}"
            )),
        }
    }
}

/// How many connections the process can hold open and still open files:
/// raises the soft descriptor limit to the hard one, then keeps an eighth of
/// it (16 to 1024) for the files being sent, the logs and the workers' own
/// descriptors. `max-connections` is lowered to fit, with a line in the
/// error log, so the server stops accepting before it runs out of
/// descriptors rather than answering 500 for want of one.
fn connection_budget(shared: &Shared, workers: usize) -> usize {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let asked = shared.rt.max_connections;
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
    let reserve = (limit / 8).clamp(16, 1024) + 3 * workers as u64;
    let budget = limit.saturating_sub(open_now + reserve).max(1);
    if (asked as u64) > budget {
        shared.logs.error(format_args!(
            "max-connections {asked} lowered to {budget}: the process may open {limit} descriptors (RLIMIT_NOFILE)"
        ));
        return budget as usize;
    }
    asked
}

/// The one listening socket of `addr`, which every worker shares.
///
/// It is bound without `SO_REUSEPORT`, so the bind itself is the check that
/// nobody holds the address: a socket of any process bound there (with the
/// option or without it) makes it fail, and no socket bound later can join
/// ours, whatever options it sets (`spec/http.md`, "Threads").
/// `SO_REUSEADDR` only lets a restart bind past connections in TIME_WAIT.
fn listen(addr: SocketAddr) -> io::Result<OwnedFd> {
    let fd = bind(addr)?;
    rustix::net::listen(&fd, 1024)?;
    Ok(fd)
}

/// A nonblocking TCP socket bound to `addr` and not yet listening; an
/// address someone holds is [`io::ErrorKind::AddrInUse`], with a message
/// that names it.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<OwnedFd> {
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = rustix::net::socket_with(
        family,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::net::sockopt::set_socket_reuseaddr(&fd, true)?;
    rustix::net::bind(&fd, &addr).map_err(|e| {
        let why = match e {
            Errno::ADDRINUSE => "address already in use".to_owned(),
            e => io::Error::from(e).to_string(),
        };
        io::Error::new(
            io::Error::from(e).kind(),
            format!("cannot listen on {addr}: {why}"),
        )
    })?;
    Ok(fd)
}

fn local_addr(fd: &OwnedFd) -> io::Result<SocketAddr> {
    SocketAddr::try_from(rustix::net::getsockname(fd)?)
        .map_err(|_| io::Error::other("listener has no IP address"))
}

/// Waits on the shared listener level-triggered with `EPOLLEXCLUSIVE`: a new
/// connection wakes one idle worker, not all of them (a worker that is busy
/// finds it at its next wait, and its `accept` may find nothing: `EAGAIN`).
fn watch_listener(epoll: &OwnedFd, listener: &OwnedFd) -> io::Result<()> {
    epoll::add(
        epoll,
        listener,
        epoll::EventData::new_u64(LISTENER),
        epoll::EventFlags::IN | epoll::EventFlags::EXCLUSIVE,
    )?;
    Ok(())
}

struct Worker {
    shared: Arc<Shared>,
    epoll: OwnedFd,
    /// The listener every worker shares; `None` once this one stopped
    /// accepting for good.
    listener: Option<Arc<OwnedFd>>,
    mailbox: Arc<Mailbox<IoDone>>,
    next_id: u64,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    live: usize,
    again: Vec<usize>,
    date: DateCache,
    access: Vec<u8>,
    accept_paused_until: Option<Instant>,
    stopping: bool,
    grace_end: Option<Instant>,
}

impl Worker {
    fn new(
        shared: Arc<Shared>,
        listener: Arc<OwnedFd>,
        mailbox: Arc<Mailbox<IoDone>>,
    ) -> io::Result<Worker> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        watch_listener(&epoll, &listener)?;
        epoll::add(
            &epoll,
            mailbox.waker(),
            epoll::EventData::new_u64(WAKER),
            epoll::EventFlags::IN,
        )?;
        Ok(Worker {
            shared,
            epoll,
            listener: Some(listener),
            mailbox,
            next_id: 0,
            conns: Vec::new(),
            free: Vec::new(),
            live: 0,
            again: Vec::new(),
            date: DateCache::new(),
            access: Vec::with_capacity(16 << 10),
            accept_paused_until: None,
            stopping: false,
            grace_end: None,
        })
    }

    /// How often deadlines are checked: a quarter of the shortest timeout,
    /// between 10 ms and 500 ms.
    fn tick(&self) -> Duration {
        let rt = &self.shared.rt;
        let shortest = rt
            .header_timeout
            .min(rt.send_timeout)
            .min(rt.keepalive_timeout.max(Duration::from_millis(40)));
        (shortest / 4).clamp(Duration::from_millis(10), Duration::from_millis(500))
    }

    fn run(mut self) {
        let mut events = Vec::with_capacity(256);
        let tick = self.tick();
        let mut next_sweep = Instant::now() + tick;
        loop {
            let timeout = if self.again.is_empty() {
                rustix::time::Timespec::try_from(tick).unwrap_or(rustix::time::Timespec {
                    tv_sec: 0,
                    tv_nsec: 100_000_000,
                })
            } else {
                rustix::time::Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                }
            };
            events.clear();
            match epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(&mut events),
                Some(&timeout),
            ) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => {
                    self.shared
                        .logs
                        .error(format_args!("epoll_wait failed: {e}; worker stops"));
                    break;
                }
            }
            self.date.refresh();
            let now = Instant::now();
            let again = std::mem::take(&mut self.again);
            self.dispatch(&events, now);
            // Connections that used their share last turn go on, one at a
            // time; between two of them, anything newly ready goes first, so
            // a small request waits for at most one share of a large one.
            for (n, i) in again.into_iter().enumerate() {
                if n > 0 {
                    events.clear();
                    let zero = rustix::time::Timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    };
                    if epoll::wait(
                        &self.epoll,
                        rustix::buffer::spare_capacity(&mut events),
                        Some(&zero),
                    )
                    .is_ok()
                    {
                        self.dispatch(&events, Instant::now());
                    }
                }
                self.drive(i, Instant::now());
            }
            if now >= next_sweep {
                self.sweep(now);
                next_sweep = now + tick;
            }
            if !self.access.is_empty() {
                self.shared.logs.access.write(&self.access);
                self.access.clear();
            }
            if self.stopping && (self.live == 0 || self.grace_end.is_some_and(|end| now >= end)) {
                break;
            }
        }
    }

    fn dispatch(&mut self, events: &[epoll::Event], now: Instant) {
        for ev in events {
            match ev.data.u64() {
                LISTENER => self.accept(now),
                WAKER => self.wake(now),
                i => {
                    let i = i as usize;
                    if let Some(Some(conn)) = self.conns.get_mut(i) {
                        let flags = ev.flags;
                        if flags.intersects(
                            epoll::EventFlags::IN
                                | epoll::EventFlags::RDHUP
                                | epoll::EventFlags::HUP
                                | epoll::EventFlags::ERR,
                        ) {
                            conn.readable(flags.intersects(
                                epoll::EventFlags::RDHUP
                                    | epoll::EventFlags::HUP
                                    | epoll::EventFlags::ERR,
                            ));
                        }
                    }
                    if !self.again.contains(&i) {
                        self.drive(i, now);
                    }
                }
            }
        }
    }

    fn drive(&mut self, i: usize, now: Instant) {
        self.drive_with(i, now, None);
    }

    /// Runs connection `i`, first handing it an io-pool result if there is
    /// one for it.
    fn drive_with(&mut self, i: usize, now: Instant, done: Option<IoDone>) {
        let Some(Some(conn)) = self.conns.get_mut(i) else {
            return;
        };
        let mut turn = Turn {
            shared: &self.shared,
            date: self.date.get(),
            access: &mut self.access,
            now,
            stopping: self.stopping,
            mailbox: &self.mailbox,
            slot: i,
        };
        if let Some(done) = done {
            conn.io_done(&mut turn, done);
        }
        match conn.drive(&mut turn) {
            Next::Wait => {}
            Next::Yield => self.again.push(i),
            Next::Close => self.close(i),
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(conn) = self.conns.get_mut(i).and_then(Option::take) {
            drop(conn);
            self.free.push(i);
            self.live -= 1;
            self.shared.connections.fetch_sub(1, Ordering::Relaxed);
            // A slot opened: accepting may resume if it stopped at the limit.
            if self.accept_paused_until.is_some() {
                self.resume_accepting();
            }
        }
    }

    fn accept(&mut self, now: Instant) {
        for _ in 0..ACCEPT_BATCH {
            if self.listener.is_none() {
                return;
            }
            let max = self.shared.max_connections;
            // Full: a new connection is taken only if an idle one can make
            // room for it (closed once the new one is really there).
            let full = self.shared.connections.load(Ordering::Relaxed) >= max;
            let room = if full { self.oldest_idle() } else { None };
            if full && room.is_none() {
                self.pause_accepting(now);
                return;
            }
            let Some(listener) = &self.listener else {
                return;
            };
            let (fd, peer) = match rustix::net::acceptfrom_with(
                listener,
                SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            ) {
                Ok(pair) => pair,
                Err(Errno::AGAIN) => return,
                Err(Errno::INTR | Errno::CONNABORTED | Errno::PROTO) => continue,
                Err(e @ (Errno::MFILE | Errno::NFILE | Errno::NOBUFS | Errno::NOMEM)) => {
                    self.shared.logs.error(format_args!(
                        "accept: {e}; pausing new connections for {ACCEPT_BACKOFF:?}"
                    ));
                    self.pause_accepting(now);
                    return;
                }
                Err(e) => {
                    self.shared.logs.error(format_args!("accept: {e}"));
                    return;
                }
            };
            if let Some(idle) = room {
                self.close(idle);
                self.shared
                    .stats
                    .idle_closed
                    .fetch_add(1, Ordering::Relaxed);
            }
            let peer = peer
                .and_then(|a| SocketAddr::try_from(a).ok())
                .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
            let tls = match &self.shared.tls {
                Some(tls) => match tls.session() {
                    Ok(session) => Some(Box::new(session)),
                    Err(e) => {
                        self.shared.logs.error(format_args!("TLS session: {e}"));
                        continue;
                    }
                },
                None => None,
            };
            let _ = rustix::net::sockopt::set_tcp_nodelay(&fd, true);
            self.shared.connections.fetch_add(1, Ordering::Relaxed);
            let slot = self.free.pop().unwrap_or_else(|| {
                self.conns.push(None);
                self.conns.len() - 1
            });
            let registered = epoll::add(
                &self.epoll,
                &fd,
                epoll::EventData::new_u64(slot as u64),
                epoll::EventFlags::IN
                    | epoll::EventFlags::OUT
                    | epoll::EventFlags::RDHUP
                    | epoll::EventFlags::ET,
            );
            self.next_id += 1;
            self.conns[slot] = Some(Conn::new(self.next_id, fd, tls, peer, now, &self.shared));
            self.live += 1;
            if registered.is_err() {
                self.close(slot);
                continue;
            }
            // Data may already be waiting (the request often arrives with
            // the handshake's last packet); edge-triggered epoll would not
            // report it again.
            self.drive(slot, now);
        }
    }

    /// At `max-connections` room is made as nginx does: the connection of
    /// this worker that has waited longest for a request (kept alive, or
    /// accepted and silent) is closed for a new one, so idle connections
    /// cannot lock out a client with something to ask. `None` when every
    /// connection is busy.
    fn oldest_idle(&self) -> Option<usize> {
        self.conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((c.as_ref()?.idle_since()?, i)))
            .min()
            .map(|(_, i)| i)
    }

    /// Stops waiting on the listener (an `EPOLLEXCLUSIVE` entry cannot be
    /// modified, only removed and added again); while this worker does not
    /// wait, new connections wake the others.
    fn pause_accepting(&mut self, now: Instant) {
        if self.accept_paused_until.is_none() {
            if let Some(l) = &self.listener {
                let _ = epoll::delete(&self.epoll, l.as_fd());
            }
        }
        self.accept_paused_until = Some(now + ACCEPT_BACKOFF);
    }

    fn resume_accepting(&mut self) {
        if self.accept_paused_until.take().is_some() {
            if let Some(l) = &self.listener {
                let _ = watch_listener(&self.epoll, l);
            }
        }
    }

    fn wake(&mut self, now: Instant) {
        for done in self.mailbox.take() {
            let (slot, id) = done.target();
            let Some(Some(conn)) = self.conns.get_mut(slot) else {
                continue;
            };
            if conn.id() != id {
                continue; // that connection closed; its slot was reused
            }
            self.drive_with(slot, now, Some(done));
        }
        if self.shared.stop.load(Ordering::SeqCst) && !self.stopping {
            self.stopping = true;
            self.grace_end = Some(now + SHUTDOWN_GRACE);
            // This worker stops accepting; the socket closes when the last
            // worker lets go of it.
            if let Some(l) = self.listener.take() {
                if self.accept_paused_until.is_none() {
                    let _ = epoll::delete(&self.epoll, l.as_fd());
                }
            }
            for i in 0..self.conns.len() {
                if self.conns[i].as_ref().is_some_and(Conn::is_idle) {
                    self.close(i);
                }
            }
        }
    }

    /// Closes connections past their deadline; resumes accepting after a
    /// back-off.
    fn sweep(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let Some(conn) = self.conns[i].as_ref().filter(|c| c.expired(now)) else {
                continue;
            };
            if conn.is_sending() {
                let stats = &self.shared.stats;
                stats.send_timeouts.fetch_add(1, Ordering::Relaxed);
                if let Some(unlogged) = stats.send_timeouts_logged.pass() {
                    self.shared.logs.error(format_args!(
                        "{}: closed: the answer made no progress for send-timeout ({:?}); \
                         the client stopped reading or reads slower than that \
                         ({unlogged} more not logged since the last line)",
                        conn.peer(),
                        self.shared.rt.send_timeout,
                    ));
                }
            }
            self.close(i);
        }
        if self.accept_paused_until.is_some_and(|t| now >= t) {
            self.resume_accepting();
        }
    }
}
