//! A worker's side of accepting: new connections taken from the shared
//! listeners a batch at a time, room made at `max-connections` by closing
//! the connection idle longest (TCP or QUIC), and accepting paused and
//! resumed when the process runs out of descriptors or room.

use super::*;

impl Worker {
    pub(super) fn accept(&mut self, index: usize, now: Instant) {
        // Nothing in the batch changes the list: it empties only at a stop.
        let Some(listener) = self.listeners.get(index).cloned() else {
            return;
        };
        for _ in 0..ACCEPT_BATCH {
            let max = self.shared.max_connections.load(Ordering::Relaxed);
            // Full: a new connection is taken only if an idle one can make
            // room for it (closed once the new one is really there).
            let full = self.shared.connections.load(Ordering::Relaxed) >= max;
            let room = if full { self.room() } else { None };
            if full && room.is_none() {
                self.pause_accepting(now);
                return;
            }
            let (fd, peer) = match rustix::net::acceptfrom_with(
                &listener.fd,
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
                match idle {
                    Room::Tcp(slot) => self.close(slot),
                    Room::Quic(handle) => {
                        self.with_quic(now, |q, turn| q.close_idle(handle, turn));
                    }
                }
                self.shared
                    .stats
                    .idle_closed
                    .fetch_add(1, Ordering::Relaxed);
            }
            let peer = match (&listener.address, peer) {
                (crate::rt::ListenAddr::Unix(_), _) => Peer::Unix,
                (_, peer) => peer
                    .and_then(|a| SocketAddr::try_from(a).ok())
                    .map_or(Peer::UNKNOWN, Peer::Tcp),
            };
            // A PROXY header is believed only from a trusted proxy; anyone
            // else is closed before a byte is read (`spec/site.md`).
            if listener.proxy && !trusted(&self.rt.site.trusted_proxies, &peer) {
                continue;
            }
            let tls = (self.shared.tls.as_ref())
                .filter(|_| listener.tls)
                .map(|tls| Box::new(tls.session()));
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
            let redirect = listener.redirect.map(|port| ToHttps {
                port,
                ip: local_ip(&listener, &fd),
            });
            self.conns[slot] = Some(Conn::new(
                self.next_id,
                fd,
                tls,
                peer,
                now,
                &self.rt,
                Via {
                    redirect,
                    proxy_header: listener.proxy,
                    alt_svc: self.shared.alt_svc(&listener, &self.rt),
                },
            ));
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
    fn oldest_idle(&self) -> Option<(Instant, usize)> {
        self.conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((c.as_ref()?.idle_since()?, i)))
            .min()
    }

    /// The connection to close for a new one at `max-connections`: the
    /// one idle longest, TCP or QUIC (an idle QUIC connection holds a
    /// slot as a kept-alive TCP one does).
    fn room(&self) -> Option<Room> {
        let tcp = self.oldest_idle();
        let quic = self.quic.as_ref().and_then(Quic::oldest_idle);
        match (tcp, quic) {
            (Some((t, slot)), Some((q, _))) if t <= q => Some(Room::Tcp(slot)),
            (_, Some((_, handle))) => Some(Room::Quic(handle)),
            (Some((_, slot)), None) => Some(Room::Tcp(slot)),
            (None, None) => None,
        }
    }

    /// Stops waiting on the listeners (an `EPOLLEXCLUSIVE` entry cannot be
    /// modified, only removed and added again); while this worker does not
    /// wait, new connections wake the others.
    fn pause_accepting(&mut self, now: Instant) {
        if self.accept_paused_until.is_none() {
            for l in &self.listeners {
                let _ = epoll::delete(&self.epoll, l.fd.as_fd());
            }
        }
        self.accept_paused_until = Some(now + ACCEPT_BACKOFF);
    }

    pub(super) fn resume_accepting(&mut self) {
        if self.accept_paused_until.take().is_some() {
            for (i, l) in self.listeners.iter().enumerate() {
                let _ = watch_listener(&self.epoll, &l.fd, i);
            }
        }
    }
}

/// A connection closed to make room for a new one.
enum Room {
    Tcp(usize),
    Quic(usize),
}

/// The IP a connection reached, for a redirect of a request that names no
/// host: the listener's, or the connection's own when the listener is a
/// wildcard (`0.0.0.0`, `[::]`).
fn local_ip(listener: &Listener, fd: &OwnedFd) -> Option<std::net::IpAddr> {
    match listener.ip() {
        Some(ip) if !ip.is_unspecified() => Some(ip),
        Some(_) => rustix::net::getsockname(fd)
            .ok()
            .and_then(|a| SocketAddr::try_from(a).ok())
            .map(|a| a.ip()),
        None => None,
    }
}
