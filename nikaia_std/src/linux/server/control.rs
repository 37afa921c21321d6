//! The running server's control: what its signals do — shutdown,
//! reload, upgrade (the new process started with the sockets, and the
//! HTTP/3 pair between the two) — and the ready word an upgraded process
//! sends the one it replaces.

use super::stop_acme;
use crate::http::app::Source;
use crate::linux::conn::Mailbox;
use crate::linux::listen::Listener;
use crate::linux::reload::{self, Reloaded};
use crate::linux::shared::Shared;
use crate::linux::stats_socket::StatsSocket;
use crate::linux::upgrade::{self, Handed, Program};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub(super) struct Control {
    /// Answers `nikaia explain`; removed when the server stops.
    pub(super) stats: Mutex<Option<StatsSocket>>,
    pub(super) shared: Arc<Shared>,
    pub(super) wakers: Vec<Arc<Mailbox>>,
    pub(super) source: Option<Source>,
    pub(super) workers: usize,
    /// What an upgrade starts; `None` if it could not be told.
    pub(super) program: Option<Program>,
    pub(super) upgrading: AtomicBool,
    /// Held by a reload: one at a time.
    pub(super) reloading: Mutex<()>,
    /// An upgraded process's word to the one it replaces, said once it
    /// serves with its signals handled.
    pub(super) ready: Mutex<Option<Ready>>,
}

/// The ready pipe of an upgraded process, and which of the passed sockets
/// it took (by `LISTEN_FDS` index).
pub(super) struct Ready {
    pub(super) fd: std::os::fd::OwnedFd,
    pub(super) adopted: Vec<usize>,
}

impl Control {
    pub(super) fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        stop_acme(&self.shared);
        // The workers hold the listeners from here on; each lets go as it
        // stops accepting.
        drop(std::mem::take(
            &mut *self
                .shared
                .listeners
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        ));
        for w in &self.wakers {
            w.wake();
        }
    }

    pub(super) fn reload(&self) -> Result<Reloaded, Vec<String>> {
        let _one = self.reloading.lock().unwrap_or_else(|e| e.into_inner());
        if self.upgrading.load(Ordering::SeqCst) {
            let why = "an upgrade is under way; send SIGHUP again once it ended".to_owned();
            self.shared.logs.error(format_args!("SIGHUP: {why}"));
            return Err(vec![why]);
        }
        reload::reload(
            &self.shared,
            &self.stats,
            self.source.as_ref(),
            self.workers,
        )
    }

    /// An upgraded process tells the one it replaces that it serves, and
    /// which sockets it took; from then on their paths are its own. Once.
    pub(super) fn say_ready(&self) {
        let Some(ready) = self.ready.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        upgrade::say_ready(ready.fd, &ready.adopted);
        for l in self.shared.listeners() {
            if let (Some(_), Some(claim)) = (l.passed, &l.claim) {
                claim.set_handed(false);
            }
        }
        if let Some(stats) = self
            .stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            stats.claim().set_handed(false);
        }
        self.shared.logs.notice(format_args!(
            "upgrade: serving on the sockets of the process this one replaces; told it to drain"
        ));
    }

    /// Starts the new process and waits for it; on its ready, drains.
    pub(super) fn upgrade(&self) -> Result<(), String> {
        let logs = &self.shared.logs;
        let fail = |why: String| {
            logs.error(format_args!("SIGUSR2: {why}; this process keeps serving"));
            Err(why)
        };
        if self.shared.stop.load(Ordering::SeqCst) {
            logs.error(format_args!("SIGUSR2: the server is stopping; no upgrade"));
            return Err("the server is stopping".into());
        }
        if let Some(pid) = self.predecessor() {
            let why = format!(
                "the process this one replaced (pid {pid}) still finishes its HTTP/3 \
                 connections; upgrade again once it ended (at most the shutdown grace)"
            );
            logs.error(format_args!("SIGUSR2: {why}; ignored"));
            return Err(why);
        }
        if self.upgrading.swap(true, Ordering::SeqCst) {
            logs.error(format_args!(
                "SIGUSR2: an upgrade is already under way; ignored"
            ));
            return Err("an upgrade is already under way".into());
        }
        let result = self.upgrade_now();
        if result.is_err() {
            // No new process: no one to carry datagrams to.
            if let Some(q) = &self.shared.quic {
                *crate::sync::lock(&q.pair) = None;
            }
        }
        self.upgrading.store(false, Ordering::SeqCst);
        result.or_else(fail)
    }

    /// The process this one replaced, while it still finishes its QUIC
    /// connections (the pair to it is open).
    fn predecessor(&self) -> Option<u32> {
        let q = self.shared.quic.as_ref()?;
        if q.handed.load(Ordering::SeqCst) || q.pair().is_none() {
            return None;
        }
        Some(rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get() as u32))
    }

    fn upgrade_now(&self) -> Result<(), String> {
        let logs = &self.shared.logs;
        let Some(program) = &self.program else {
            return Err("the path of this program is not known".into());
        };
        let listeners: Vec<Arc<Listener>> = self.shared.listeners();
        let mut count = listeners.len();
        let udp_at;
        let started = {
            // Only while the new process starts: a reload meanwhile is
            // refused, so the stats socket stays the one handed over.
            let stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            let mut handed: Vec<Handed<'_>> =
                listeners.iter().map(|l| Handed::listener(l)).collect();
            if let Some(s) = stats.as_ref() {
                handed.push(Handed::stats(s.fd(), s.claim()));
                count += 1;
            }
            // HTTP/3's UDP sockets go too, and one end of the pair the two
            // processes carry each other's datagrams over (`spec/http3.md`,
            // "Lifecycle").
            let quic = self.shared.quic.as_ref();
            udp_at = count;
            for s in quic.map_or(&[][..], |q| &q.sockets[..]) {
                handed.push(Handed::udp(s.fd()));
                count += 1;
            }
            let pair = match quic {
                Some(q) => Some(q.open_pair().map_err(|e| format!("the HTTP/3 pair: {e}"))?),
                None => None,
            };
            if let Some((fd, name)) = &pair {
                handed.push(Handed::named(std::os::fd::AsFd::as_fd(fd), name));
                count += 1;
            }
            for w in &self.wakers {
                w.wake();
            }
            upgrade::spawn(program, &handed)
                .map_err(|e| format!("cannot start {}: {e}", program.exe.display()))?
        };
        let pid = started.child.id();
        logs.notice(format_args!(
            "SIGUSR2: starting {} (pid {pid}) with {} listening socket(s){}",
            program.exe.display(),
            listeners.len(),
            match self.shared.quic.as_ref().map_or(0, |q| q.sockets.len()) {
                0 => String::new(),
                n => format!(" and {n} HTTP/3 UDP socket(s)"),
            }
        ));
        let (_child, adopted) = started.wait_ready()?;
        // What the new process took is its own now: this one never removes
        // those paths. What it did not take closes with this process.
        for i in &adopted {
            match listeners.get(*i) {
                Some(l) => l.claim.iter().for_each(|c| c.set_handed(true)),
                None if *i == listeners.len() => {
                    let stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(s) = stats.as_ref() {
                        s.claim().set_handed(true);
                    }
                }
                None => {}
            }
        }
        logs.notice(format_args!(
            "SIGUSR2: pid {pid} is ready; this process stops accepting and drains"
        ));
        // The UDP sockets are the new process's to read now; this one's
        // QUIC connections drain here, their datagrams carried over the
        // pair (`spec/http3.md`, "Lifecycle").
        // A new process that took none of them (HTTP/3 off there) leaves
        // them to this one, which reads them while it drains.
        if let Some(q) = &self.shared.quic {
            let udp = udp_at..udp_at + q.sockets.len();
            if adopted.iter().any(|i| udp.contains(i)) {
                q.handed.store(true, Ordering::SeqCst);
            } else {
                *crate::sync::lock(&q.pair) = None;
            }
        }
        if adopted.len() < count {
            logs.notice(format_args!(
                "SIGUSR2: pid {pid} took {} of the {count} sockets; the others close with this process",
                adopted.len()
            ));
        }
        self.shutdown();
        Ok(())
    }
}
