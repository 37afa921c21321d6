//! The running server: [`Server::start`] binds the listeners and starts the
//! workers; [`Running`] is the handle a program (and `nikaia serve`) holds —
//! its address, signals, reload, log reopening and shutdown.

use super::conn::Mailbox;
use super::listen::{listen, local_addr};
use super::shared::{connection_budget, Shared};
use super::stats_socket::StatsSocket;
use super::worker::Worker;
use crate::http::Server;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

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
    /// finishes responses in flight (up to [`SHUTDOWN_GRACE`](crate::http::SHUTDOWN_GRACE)) and returns.
    pub fn run(self) -> io::Result<()> {
        let running = self.start()?;
        running.stop_on_signals()?;
        running.wait();
        Ok(())
    }
}

struct Control {
    shared: Arc<Shared>,
    wakers: Vec<Arc<Mailbox>>,
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
