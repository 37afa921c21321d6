//! A worker: one thread, one epoll, the shared listeners and UDP sockets,
//! and the connections it accepted. Only QUIC datagrams are handed
//! between workers: each goes to the worker that owns its connection
//! (`spec/http3.md`, "Workers").

mod accept;

use super::clock::DateCache;
use super::conn::{Conn, Expired, IoDone, Mailbox, Next, Turn, Via};
use super::listen::{watch_listener, Listener, LISTENERS};
use super::quic::endpoint::{Quic, INBOX, PAIR, QUIC_SLOT, SOCKETS};
use super::shared::Shared;
use crate::http::client::trusted;
use crate::http::redirect::ToHttps;
use crate::http::Peer;
use crate::rt::Runtime;
use rustix::event::epoll;
use rustix::io::Errno;
use rustix::net::SocketFlags;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a shutdown waits for responses already being sent.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// How long a graceful stop waits for the next request of a connection
/// kept alive between answers before it closes it (`spec/http.md`,
/// "Shutdown").
pub(crate) const DRAIN_IDLE: Duration = Duration::from_secs(1);
/// How long accepting pauses after the process ran out of descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// Connections accepted per listener wake-up before others are served.
const ACCEPT_BATCH: usize = 64;
const WAKER: u64 = u64::MAX - 1;

pub(crate) struct Worker {
    shared: Arc<Shared>,
    /// The runtime of this loop turn, and the generation it is.
    rt: Arc<Runtime>,
    generation: u64,
    epoll: OwnedFd,
    /// The listeners every worker shares; empty once this one stopped
    /// accepting for good.
    listeners: Vec<Arc<Listener>>,
    mailbox: Arc<Mailbox>,
    next_id: u64,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    live: usize,
    again: Vec<usize>,
    date: DateCache,
    /// What a kept name's check covers (`cache::Window`).
    window: super::cache::Window,
    access: Vec<u8>,
    accept_paused_until: Option<Instant>,
    /// HTTP/3: this worker's QUIC endpoint and the connections it owns
    /// (`spec/http3.md`, "Workers").
    quic: Option<Quic>,
    stopping: bool,
    grace_end: Option<Instant>,
}

impl Worker {
    pub(crate) fn new(
        shared: Arc<Shared>,
        mailbox: Arc<Mailbox>,
        index: usize,
    ) -> io::Result<Worker> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        let listeners = shared.listeners();
        for (i, l) in listeners.iter().enumerate() {
            watch_listener(&epoll, &l.fd, i)?;
        }
        epoll::add(
            &epoll,
            mailbox.waker(),
            epoll::EventData::new_u64(WAKER),
            epoll::EventFlags::IN,
        )?;
        let mut quic = shared.quic_for(index);
        if let Some(q) = quic.as_mut() {
            q.watch(&epoll)?;
            q.watch_pair();
        }
        Ok(Worker {
            rt: shared.runtime(),
            generation: shared.generation(),
            shared,
            epoll,
            listeners,
            mailbox,
            next_id: 0,
            conns: Vec::new(),
            free: Vec::new(),
            live: 0,
            again: Vec::new(),
            date: DateCache::new(),
            window: super::cache::Window::new(),
            access: Vec::with_capacity(16 << 10),
            accept_paused_until: None,
            quic,
            stopping: false,
            grace_end: None,
        })
    }

    /// How often deadlines are checked: a quarter of the shortest timeout,
    /// between 10 ms and 500 ms.
    fn tick(&self) -> Duration {
        let rt = &self.rt;
        let shortest = rt
            .header_timeout
            .min(rt.send_timeout)
            .min(rt.body_idle_timeout)
            .min(rt.keepalive_timeout.max(Duration::from_millis(40)));
        (shortest / 4).clamp(Duration::from_millis(10), Duration::from_millis(500))
    }

    pub(crate) fn run(mut self) {
        let mut events = Vec::with_capacity(256);
        let mut tick = self.tick();
        let mut next_sweep = Instant::now() + tick;
        loop {
            let quic_more = self.quic.as_ref().is_some_and(|q| q.more);
            let timeout = if self.again.is_empty() && !quic_more {
                // QUIC's timers (acknowledgements, loss, pacing) are finer
                // than the sweep's tick.
                let wait = match self.quic.as_ref().and_then(Quic::next_timer) {
                    Some(t) => tick.min(t.saturating_duration_since(Instant::now())),
                    None => tick,
                };
                rustix::time::Timespec::try_from(wait).unwrap_or(rustix::time::Timespec {
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
            let generation = self.shared.generation();
            if generation != self.generation {
                // A reload: new requests of this turn on use the new runtime.
                self.rt = self.shared.runtime();
                self.generation = generation;
                tick = self.tick();
                if let Some(q) = self.quic.as_mut() {
                    q.reconfigure(&self.rt, generation);
                }
            }
            let now = Instant::now();
            let again = std::mem::take(&mut self.again);
            if let Some(q) = self.quic.as_mut() {
                q.more = false;
            }
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
            self.with_quic(Instant::now(), Quic::drive);
            if now >= next_sweep {
                self.sweep(now);
                next_sweep = now + tick;
            }
            if !self.access.is_empty() {
                self.shared.logs.access.write(&self.access);
                self.access.clear();
            }
            let quic_live = self.quic.as_ref().map_or(0, Quic::live);
            if self.stopping
                && ((self.live == 0 && quic_live == 0)
                    || self.grace_end.is_some_and(|end| now >= end))
            {
                for conn in self.conns.iter_mut().flatten() {
                    conn.stop();
                }
                self.with_quic(Instant::now(), Quic::stop);
                break;
            }
        }
    }

    /// Handles what one wait returned. Every connection it reported
    /// readable is read first, and only then is any driven: the requests
    /// of one wait are all read before the first answer checks a kept
    /// name, so they share that check (`cache::Window`).
    fn dispatch(&mut self, events: &[epoll::Event], now: Instant) {
        let input = epoll::EventFlags::IN
            | epoll::EventFlags::RDHUP
            | epoll::EventFlags::HUP
            | epoll::EventFlags::ERR;
        let closed = epoll::EventFlags::RDHUP | epoll::EventFlags::HUP | epoll::EventFlags::ERR;
        for ev in events {
            let (i, flags) = (ev.data.u64(), ev.flags);
            if i >= PAIR || !flags.intersects(input) {
                continue;
            }
            self.with_conn(i as usize, now, |conn, turn| {
                conn.readable(flags.intersects(closed));
                conn.prefetch(turn);
            });
        }
        for ev in events {
            match ev.data.u64() {
                WAKER => self.wake(now),
                INBOX => {
                    self.with_quic(now, Quic::inbox);
                }
                PAIR => {
                    self.with_quic(now, Quic::pair_readable);
                }
                token if (SOCKETS..LISTENERS).contains(&token) => {
                    let i = (token - SOCKETS) as usize;
                    self.with_quic(now, |q, turn| q.readable(i, turn));
                }
                token if token >= LISTENERS => self.accept((token - LISTENERS) as usize, now),
                i => {
                    let i = i as usize;
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
        let next = self.with_conn(i, now, |conn, turn| {
            if let Some(done) = done {
                conn.io_done(turn, done);
            }
            conn.drive(turn)
        });
        match next {
            Some(Next::Wait) | None => {}
            Some(Next::Yield) => self.again.push(i),
            Some(Next::Close) => self.close(i),
        }
    }

    /// Lends connection `i` what the worker holds for this turn.
    fn with_conn<R>(
        &mut self,
        i: usize,
        now: Instant,
        f: impl FnOnce(&mut Conn, &mut Turn<'_>) -> R,
    ) -> Option<R> {
        let conn = self.conns.get_mut(i)?.as_mut()?;
        let mut turn = Turn {
            shared: &self.shared,
            rt: &self.rt,
            date: self.date.get(),
            access: &mut self.access,
            now,
            window: &self.window,
            stopping: self.stopping,
            mailbox: &self.mailbox,
            slot: i,
        };
        Some(f(conn, &mut turn))
    }

    /// Lends the QUIC endpoint what the worker holds for this turn.
    fn with_quic<R>(
        &mut self,
        now: Instant,
        f: impl FnOnce(&mut Quic, &mut Turn<'_>) -> R,
    ) -> Option<R> {
        let quic = self.quic.as_mut()?;
        let mut turn = Turn {
            shared: &self.shared,
            rt: &self.rt,
            date: self.date.get(),
            access: &mut self.access,
            now,
            window: &self.window,
            stopping: self.stopping,
            mailbox: &self.mailbox,
            slot: QUIC_SLOT,
        };
        Some(f(quic, &mut turn))
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

    fn wake(&mut self, now: Instant) {
        if let Some(q) = self.quic.as_mut() {
            q.watch_pair();
        }
        for done in self.mailbox.take() {
            let (slot, id) = done.target();
            if slot == QUIC_SLOT {
                self.with_quic(now, |q, turn| q.io_done(turn, done));
                continue;
            }
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
            // This worker stops accepting; a socket closes when the last
            // worker lets go of it (unless a successor holds it too).
            for l in std::mem::take(&mut self.listeners) {
                if self.accept_paused_until.is_none() {
                    let _ = epoll::delete(&self.epoll, l.fd.as_fd());
                }
            }
            if let Some(q) = self.quic.as_mut() {
                q.stop_producing();
            }
            // An upgrade's new process is ready: it reads the UDP sockets
            // from now on and carries this one's datagrams over the pair;
            // its QUIC connections drain here as at a stop.
            if let Some(q) = self.quic.as_mut() {
                q.unwatch_if_handed();
            }
            for i in 0..self.conns.len() {
                // Produced bodies end now, so their clients (an event
                // stream's) reconnect to whoever serves next.
                if self.conns[i].as_mut().is_some_and(Conn::stop_producing) {
                    self.drive(i, now);
                }
                match self.conns[i].as_mut() {
                    // HTTP/2 says it is going away first (spec/http2.md).
                    Some(c) if c.is_h2() => self.drive(i, now),
                    Some(c) => c.drain_by(now + DRAIN_IDLE),
                    None => {}
                }
            }
        }
    }

    /// Closes connections past their deadline; resumes accepting after a
    /// back-off.
    fn sweep(&mut self, now: Instant) {
        self.with_quic(now, Quic::sweep);
        if self.stopping {
            // The graceful GOAWAY's second step may be due (its PING's
            // answer did not come).
            for i in 0..self.conns.len() {
                if self.conns[i].as_ref().is_some_and(Conn::is_h2) {
                    self.drive(i, now);
                }
            }
        }
        for i in 0..self.conns.len() {
            if !self.conns[i].as_ref().is_some_and(|c| c.expired(now)) {
                continue;
            }
            let Some((expired, peer)) = self.with_conn(i, now, |conn, turn| {
                (conn.expire(turn), conn.peer().clone())
            }) else {
                continue;
            };
            let sending = match expired {
                Expired::Streams(n) => {
                    let stats = &self.shared.stats;
                    stats.h2.stalled.fetch_add(n as u64, Ordering::Relaxed);
                    stats.send_timeouts.fetch_add(n as u64, Ordering::Relaxed);
                    if let Some(unlogged) = stats.send_timeouts_logged.pass() {
                        self.shared.logs.error(format_args!(
                            "{}: {n} HTTP/2 stream(s) reset: no progress for send-timeout ({:?}); \
                             the connection's other streams go on{unlogged}",
                            peer, self.rt.send_timeout,
                        ));
                    }
                    self.drive(i, now);
                    continue;
                }
                Expired::Bodies(n) => {
                    let timeouts = &self.shared.stats.bodies.timeouts;
                    timeouts.fetch_add(n as u64, Ordering::Relaxed);
                    self.drive(i, now);
                    continue;
                }
                Expired::Close { sending } => sending,
            };
            if sending {
                let stats = &self.shared.stats;
                stats.send_timeouts.fetch_add(1, Ordering::Relaxed);
                if let Some(unlogged) = stats.send_timeouts_logged.pass() {
                    self.shared.logs.error(format_args!(
                        "{}: closed: the answer made no progress for send-timeout ({:?}); \
                         the client stopped reading or reads slower than that{unlogged}",
                        peer, self.rt.send_timeout,
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
