//! The running server: [`Server::start`] opens the listeners (bound, or
//! passed by socket activation or the process it replaces) and starts the
//! workers; [`Running`] is the handle a program (and `nikaia serve`) holds —
//! its addresses, signals, reload, upgrade, log reopening and shutdown.

use super::activation::{self, Activation};
use super::conn::Mailbox;
use super::listen;
use super::reload::Reloaded;
use super::shared::{connection_budget, Shared};
use super::stats_socket::StatsSocket;
use super::unix_path::Claim;
use super::upgrade::Program;
use super::worker::Worker;
use control::{Control, Ready};

mod control;
use crate::http::Server;
use crate::rt::ListenAddr;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

impl Server {
    /// Opens the listeners, starts the workers, and returns at once.
    pub fn start(self) -> io::Result<Running> {
        // Before anything is bound: no names, or the terms not agreed.
        if let Some(why) = self.rt.acme.as_ref().and_then(crate::rt::Acme::incomplete) {
            return Err(io::Error::other(format!("key `acme`: {why}")));
        }
        // Before anything listens: a SIGHUP (or SIGUSR1, SIGUSR2) that
        // comes once the port answers must not end the process with the
        // default action while `stop_on_signals` is not yet called; it
        // waits for it.
        let early = {
            use signal_hook::consts::{SIGHUP, SIGUSR1, SIGUSR2};
            signal_hook::iterator::Signals::new([SIGHUP, SIGUSR1, SIGUSR2])?
        };
        let program = Program::current().ok();
        let workers = self.rt.workers.max(1);
        let mut passed = activation::from_env()?;
        let stats_passed = passed.as_mut().and_then(Activation::take_stats);
        // An upgrade's pair to the process this one replaces, and this
        // process's bit (`spec/http3.md`, "Lifecycle").
        let pair_passed = passed.as_mut().and_then(Activation::take_pair);
        let udp_passed = (passed.as_mut().map(Activation::take_datagrams)).unwrap_or_default();
        let came = match &passed {
            None => super::quic::Came::Bound,
            Some(p) if p.is_upgrade() => super::quic::Came::Upgraded,
            Some(_) => super::quic::Came::Activated,
        };
        let (opened, udp, notices) = open_sockets(&self.rt, passed.as_mut(), came, udp_passed)?;
        let listening: Vec<(ListenAddr, bool)> = (opened.listeners.iter())
            .map(|l| (l.address.clone(), l.tls))
            .collect();
        let (asked, max_writes) = (self.rt.max_connections, self.rt.max_writes);
        let mut shared = Shared::new(self.router, self.rt, opened.listeners)?;
        shared.h3_addresses = udp.sockets.iter().map(|u| u.address).collect();
        let mut udp_adopted = udp.adopted;
        let (pair, process) = match pair_passed {
            Some((p, bit)) if !udp.sockets.is_empty() => {
                udp_adopted.push(p.index);
                (Some(super::quic::pair::Pair::adopt(p.fd)?), bit)
            }
            _ => (None, false),
        };
        if let Some(tls) = shared.tls.clone() {
            let rt = shared.runtime();
            let common = super::quic::common::Common::new(
                udp.sockets,
                tls,
                &rt,
                workers,
                process,
                pair,
                shared.generation(),
            )?;
            shared.quic = common.map(Arc::new);
        }
        let budget = connection_budget(&shared, asked, workers, max_writes);
        shared.max_connections.store(budget, Ordering::Relaxed);
        let shared = Arc::new(shared);
        for notice in &notices {
            shared.logs.notice(format_args!("{notice}"));
        }
        let rt = shared.runtime();
        start_acme(&shared, rt.acme.as_ref())?;
        // A start that fails from here stops ACME again (its thread, its
        // presence mark in the storage): nothing of it outlives the error.
        let mut acme_guard = StopAcmeUnlessStarted(Some(shared.clone()));
        let mut adopted: Vec<usize> = (shared.listeners().iter())
            .filter_map(|l| l.passed)
            .chain(udp_adopted)
            .collect();
        let stats = match (&rt.stats_socket, stats_passed) {
            (Some(path), Some(passed)) if passed_path(&passed.fd).as_deref() == Some(path) => {
                adopted.push(passed.index);
                // A socket whose path is not the family's (none recorded)
                // gets an identity no file has: it is never removed.
                let claim = Claim::adopted(path, passed.own.unwrap_or((0, 0)));
                let report = shared.clone();
                Some(StatsSocket::adopt(passed.fd, claim, move || {
                    report.report()
                })?)
            }
            (Some(path), _) => {
                let report = shared.clone();
                Some(StatsSocket::start(path, move || report.report())?)
            }
            (None, _) => None,
        };
        let mut threads = Vec::with_capacity(workers);
        let mut wakers = Vec::with_capacity(workers);
        for i in 0..workers {
            let waker = rustix::event::eventfd(
                0,
                rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
            )?;
            let mailbox = Arc::new(Mailbox::new(waker));
            let worker = Worker::new(shared.clone(), mailbox.clone(), i)?;
            wakers.push(mailbox);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("nikaia-worker-{i}"))
                    .spawn(move || worker.run())?,
            );
        }
        let ready = passed.and_then(|p| p.ready).map(|fd| Ready { fd, adopted });
        acme_guard.0 = None;
        Ok(Running {
            listening,
            early: Mutex::new(Some(early)),
            control: Arc::new(Control {
                stats: Mutex::new(stats),
                shared,
                wakers,
                source: self.source,
                workers,
                program,
                upgrading: AtomicBool::new(false),
                reloading: Mutex::new(()),
                ready: Mutex::new(ready),
            }),
            threads: Mutex::new(threads),
        })
    }

    /// Starts, prints nothing, and serves until SIGINT or SIGTERM; then
    /// finishes responses in flight (up to [`SHUTDOWN_GRACE`](crate::http::SHUTDOWN_GRACE)) and returns.
    pub fn run(self) -> io::Result<()> {
        let running = self.start()?;
        running.stop_on_signals()?;
        running.wait();
        Ok(())
    }
}

/// How many times the listeners are bound again when the UDP port HTTP/3
/// needs beside a port-0 TLS listener is taken.
const PORT_TRIES: usize = 5;

/// The listeners and HTTP/3's UDP sockets, and the notices of both. A TLS
/// listener asked on port 0 gets a port the kernel chose for TCP; if that
/// port is taken for UDP, every socket is closed and bound again, a few
/// times, rather than failing (`spec/http3.md`, "Sockets").
fn open_sockets(
    rt: &crate::rt::Runtime,
    mut passed: Option<&mut Activation>,
    came: super::quic::Came,
    udp_passed: Vec<activation::Passed>,
) -> io::Result<(listen::Opened, super::quic::Opened, Vec<String>)> {
    let any_port = rt.listen.iter().any(|l| match &l.address {
        ListenAddr::Tcp(a) => a.port() == 0 && rt.speaks_tls(l),
        ListenAddr::Unix(_) => false,
    });
    let retry = rt.http3 && any_port && matches!(came, super::quic::Came::Bound);
    let mut udp_passed = Some(udp_passed);
    for attempt in 1.. {
        let opened = listen::open(rt, passed.as_deref_mut())?;
        let mut notices = opened.notices.clone();
        let given = udp_passed.take().unwrap_or_default();
        match super::quic::open(rt, &opened.listeners, came.clone(), given, &mut notices) {
            Ok(udp) => return Ok((opened, udp, notices)),
            Err(e) if retry && e.kind() == io::ErrorKind::AddrInUse && attempt < PORT_TRIES => {
                drop(opened);
            }
            Err(e) => return Err(e),
        }
    }
    unreachable!("the loop returns")
}

/// Starts obtaining and renewing the `[acme]` names, the stored pairs
/// served at once; refused in a program built without ACME.
pub(crate) fn start_acme(shared: &Arc<Shared>, acme: Option<&crate::rt::Acme>) -> io::Result<()> {
    let Some(acme) = acme else {
        return Ok(());
    };
    #[cfg(feature = "acme")]
    {
        let manager = super::acme::Manager::start(acme_context(shared), acme)?;
        *shared.acme.lock().unwrap_or_else(|e| e.into_inner()) = Some(manager);
        Ok(())
    }
    #[cfg(not(feature = "acme"))]
    {
        let _ = (shared, acme);
        Err(io::Error::other(NO_ACME))
    }
}

/// What ACME uses of the server: the TLS set it serves its pairs in, the
/// validations, the logs, the stop, its report, and which challenges the
/// listeners can answer.
#[cfg(feature = "acme")]
pub(crate) fn acme_context(shared: &Shared) -> super::acme::Context {
    super::acme::Context {
        tls: shared.tls.clone(),
        challenges: shared.challenges.clone(),
        logs: shared.logs.clone(),
        stop: shared.stop.clone(),
        status: shared.acme_status.clone(),
        answerable: super::acme::Context::answerable(&shared.listeners()),
    }
}

/// Stops the ACME manager, if one runs: its thread ends and its presence
/// mark leaves the storage (a stop, a start that failed).
fn stop_acme(shared: &Shared) {
    #[cfg(feature = "acme")]
    if let Some(acme) = shared
        .acme
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
    {
        acme.stop();
    }
    #[cfg(not(feature = "acme"))]
    let _ = shared;
}

/// [`stop_acme`] when dropped still holding the server: a start that
/// failed after ACME began.
struct StopAcmeUnlessStarted(Option<Arc<Shared>>);

impl Drop for StopAcmeUnlessStarted {
    fn drop(&mut self) {
        if let Some(shared) = self.0.take() {
            stop_acme(&shared);
        }
    }
}

/// Why a program without ACME refuses an `[acme]` table.
#[cfg(not(feature = "acme"))]
pub(crate) const NO_ACME: &str =
    "the runtime file has an [acme] table, and this program was built \
    without nikaia_std's `acme` feature; build it with `--features nikaia_std/acme` (the nikaia \
    tool has it), or name the certificates in [[certificate]] tables";

/// The path of a passed Unix socket.
fn passed_path(fd: &std::os::fd::OwnedFd) -> Option<std::path::PathBuf> {
    match listen::socket_address(fd).ok()? {
        ListenAddr::Unix(path) => Some(path),
        ListenAddr::Tcp(_) => None,
    }
}

/// A started server.
pub struct Running {
    /// Each listener's address and whether it speaks TLS.
    listening: Vec<(ListenAddr, bool)>,
    /// SIGHUP, SIGUSR1 and SIGUSR2 as they came since the start, for
    /// [`Running::stop_on_signals`] to act on.
    early: Mutex<Option<signal_hook::iterator::Signals>>,
    control: Arc<Control>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Running {
    /// The first TCP address the server listens on (the real port when 0
    /// was asked); the unspecified address when it listens on Unix sockets
    /// only ([`Running::addresses`] has them all).
    pub fn local_addr(&self) -> SocketAddr {
        self.listening
            .iter()
            .find_map(|(a, _)| match a {
                ListenAddr::Tcp(addr) => Some(*addr),
                ListenAddr::Unix(_) => None,
            })
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// Every address the server listens on, in the order of `listen`, with
    /// whether it speaks TLS.
    pub fn addresses(&self) -> Vec<(ListenAddr, bool)> {
        self.listening.clone()
    }

    /// `https` when the first listener speaks TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.listening.first().is_some_and(|(_, tls)| *tls) {
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
        // A program that handles no signals: ready once it waits.
        self.control.say_ready();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        if threads.is_empty() {
            return;
        }
        for t in threads {
            let _ = t.join();
        }
        if let Some(q) = &self.control.shared.quic {
            let drained = self.control.shared.stats.h3.drained.load(Ordering::Relaxed);
            if q.handed.load(Ordering::Relaxed) {
                self.control.shared.logs.notice(format_args!(
                    "upgrade: {drained} QUIC connection(s) finished after the handover"
                ));
            }
        }
        self.control.shared.pool.close();
        self.control.shared.wing.close();
        self.control.shared.auth.close();
        self.control.shared.variants.close();
        drop(
            self.control
                .stats
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
    }

    /// The first SIGINT or SIGTERM starts a graceful shutdown; a second one
    /// exits at once. SIGHUP reloads the runtime file ([`Running::reload`]);
    /// SIGUSR2 upgrades ([`Running::upgrade`]); SIGUSR1 reopens the log
    /// files ([`Running::reopen_logs`]). From [`Server::start`] on, SIGHUP,
    /// SIGUSR1 and SIGUSR2 no longer end the process: those that came
    /// before this call are acted on now.
    pub fn stop_on_signals(&self) -> io::Result<()> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2};
        let early = self.early.lock().unwrap_or_else(|e| e.into_inner()).take();
        let mut signals = match early {
            Some(signals) => signals,
            None => signal_hook::iterator::Signals::new([SIGHUP, SIGUSR1, SIGUSR2])?,
        };
        signals.add_signal(SIGINT)?;
        signals.add_signal(SIGTERM)?;
        let control = self.control.clone();
        std::thread::Builder::new()
            .name("nikaia-signals".into())
            .spawn(move || {
                let mut seen = 0;
                for signal in signals.forever() {
                    match signal {
                        SIGHUP => {
                            let _ = control.reload();
                        }
                        SIGUSR1 => {
                            let _ = control.shared.logs.reopen();
                        }
                        SIGUSR2 => {
                            // On its own thread: the wait for the new
                            // process must not hold up other signals.
                            let control = control.clone();
                            let _ = std::thread::Builder::new()
                                .name("nikaia-upgrade".into())
                                .spawn(move || control.upgrade());
                        }
                        _ => {
                            seen += 1;
                            if seen == 1 {
                                control.shutdown();
                            } else {
                                std::process::exit(130);
                            }
                        }
                    }
                }
            })?;
        // An upgraded process says ready once its signals are handled: a
        // SIGHUP right after the old one drained must not end it.
        self.control.say_ready();
        Ok(())
    }

    /// What SIGHUP does: reads the runtime file again, checks it as `nikaia
    /// check` does and applies it to new requests; a bad file is refused
    /// whole (each error logged) and the old configuration stays. Keys
    /// that cannot change live are named in [`Reloaded::restart_needed`]
    /// and keep their old value (`spec/listeners.md`, "Reload").
    pub fn reload(&self) -> Result<Reloaded, Vec<String>> {
        self.control.reload()
    }

    /// What SIGUSR2 does: starts this program again with every listening
    /// socket, waits until it is ready, then drains this server (as
    /// [`Running::shutdown`]). `Err`: the new process failed; this one
    /// keeps serving (`spec/listeners.md`, "Upgrade").
    pub fn upgrade(&self) -> Result<(), String> {
        self.control.upgrade()
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
