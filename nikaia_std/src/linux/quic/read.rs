//! Reading the shared UDP sockets and handing each datagram to the worker
//! that owns its connection (`spec/http3.md`, "Workers"): a bounded
//! number of reads per turn, the datagrams for other workers posted to
//! their inboxes (one wake each per read), those of an upgrade's other
//! process carried over the pair.

use super::common::Handed;
use super::endpoint::{Quic, PAIR};
use super::pair::{Read, ROOM};
use super::route::Owner;
use crate::linux::conn::Turn;
use bytes::BytesMut;
use rustix::event::epoll;
use std::sync::atomic::Ordering::Relaxed;

/// Reads (each up to a batch of datagrams) per socket per loop turn: a
/// flood of datagrams cannot starve the worker's TCP connections.
const READS_PER_TURN: usize = 4;
/// Messages read from the pair per turn.
const PAIR_READS_PER_TURN: usize = 256;
/// Datagrams a worker's inbox holds at most: past it (its worker slow,
/// or gone) they are dropped, as a full socket buffer drops them, and
/// QUIC sends them again.
const INBOX_CAP: usize = 8192;

impl Quic {
    /// Reads socket `i`'s datagrams, a bounded number, and routes them.
    pub(crate) fn readable(&mut self, i: usize, turn: &mut Turn<'_>) {
        for _ in 0..READS_PER_TURN {
            let socket = self.common.sockets[i].clone();
            let n = match socket.recv(&mut self.batch) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    turn.shared
                        .logs
                        .error(format_args!("HTTP/3: reading UDP: {e}"));
                    break;
                }
            };
            let mut datagrams = Vec::new();
            self.batch.each(n, |data, meta| {
                datagrams.push((
                    BytesMut::from(data),
                    meta.addr,
                    meta.dst_ip,
                    meta.ecn.map(|e| e as u8),
                ));
            });
            let stats = &turn.shared.stats.h3;
            stats.datagrams.fetch_add(datagrams.len() as u64, Relaxed);
            for (data, from, to, ecn) in datagrams {
                self.route(turn, i, data, from, to, ecn);
            }
            if n < super::socket::RECV_BATCH {
                self.post_staged(turn);
                return;
            }
        }
        self.post_staged(turn);
        // The turn's share is read; the rest waits for the next turn.
        self.more = true;
    }

    /// Sends one datagram its way: to this worker's endpoint, to another
    /// worker's inbox, or over the pair to the other process.
    fn route(
        &mut self,
        turn: &mut Turn<'_>,
        socket: usize,
        data: BytesMut,
        from: std::net::SocketAddr,
        to: Option<std::net::IpAddr>,
        ecn: Option<u8>,
    ) {
        let ecn_point = ecn.and_then(quinn_proto::EcnCodepoint::from_bits);
        match self.common.place.owner(&data) {
            Some(Owner::Worker(w)) if w != self.worker => self.staged[w].push(Handed {
                socket,
                data,
                from,
                to,
                ecn: ecn_point,
            }),
            Some(Owner::Other) => {
                let stats = &turn.shared.stats.h3;
                let carried = self.common.pair().is_some_and(|pair| {
                    let address = self.common.sockets[socket].address;
                    pair.send(address, from, to, ecn, &data).unwrap_or(false)
                });
                match carried {
                    true => stats.forwarded.fetch_add(1, Relaxed),
                    // The other process is gone, or its pair is full: the
                    // datagram is dropped, never answered with a reset
                    // (our keys are not the ones its connection knows).
                    false => stats.forward_lost.fetch_add(1, Relaxed),
                };
            }
            _ => self.datagram(turn, socket, data, from, to, ecn_point),
        }
    }

    /// Posts what this read staged for other workers: one wake each.
    fn post_staged(&mut self, turn: &Turn<'_>) {
        for (w, staged) in self.staged.iter_mut().enumerate() {
            if staged.is_empty() {
                continue;
            }
            let n = staged.len() as u64;
            let dropped = self.common.inboxes[w].post_all(std::mem::take(staged), INBOX_CAP);
            let stats = &turn.shared.stats.h3;
            stats.handed.fetch_add(n - dropped as u64, Relaxed);
            stats.handed_lost.fetch_add(dropped as u64, Relaxed);
        }
    }

    /// The datagrams other workers handed to this one.
    pub(crate) fn inbox(&mut self, turn: &mut Turn<'_>) {
        let handed = self.common.inboxes[self.worker].take();
        for h in handed {
            self.datagram(turn, h.socket, h.data, h.from, h.to, h.ecn);
        }
    }

    /// Watches the upgrade's pair from this worker (the first) while there
    /// is one; called at each wake.
    pub(crate) fn watch_pair(&mut self) {
        if self.worker != 0 || self.watching_pair {
            return;
        }
        if let (Some(pair), Some(epoll_fd)) = (self.common.pair(), self.epoll.as_ref()) {
            let added = epoll::add(
                epoll_fd,
                pair.fd(),
                epoll::EventData::new_u64(PAIR),
                epoll::EventFlags::IN,
            );
            self.watching_pair = added.is_ok();
        }
    }

    /// Datagrams the other process carried here over the pair.
    pub(crate) fn pair_readable(&mut self, turn: &mut Turn<'_>) {
        let Some(pair) = self.common.pair() else {
            return;
        };
        if self.pair_buf.len() < ROOM {
            self.pair_buf = vec![0; ROOM];
        }
        for _ in 0..PAIR_READS_PER_TURN {
            let carried = match pair.recv(&mut self.pair_buf) {
                Ok(Read::Datagram(c)) => c,
                Ok(Read::Empty) => {
                    self.post_staged(turn);
                    return;
                }
                Ok(Read::Closed) => {
                    // The other process is gone: its datagrams are
                    // dropped from now on.
                    if let Some(epoll_fd) = self.epoll.as_ref() {
                        let _ = epoll::delete(epoll_fd, pair.fd());
                    }
                    *crate::sync::lock(&self.common.pair) = None;
                    self.watching_pair = false;
                    turn.shared.logs.notice(format_args!(
                        "HTTP/3: the process on the other side of the upgrade is gone"
                    ));
                    self.post_staged(turn);
                    return;
                }
                Err(e) => {
                    turn.shared
                        .logs
                        .error(format_args!("HTTP/3: the upgrade's pair: {e}"));
                    continue;
                }
            };
            turn.shared.stats.h3.forwarded_in.fetch_add(1, Relaxed);
            let Some(socket) = self.common.socket_at(carried.socket) else {
                continue;
            };
            let ecn = carried.ecn.and_then(quinn_proto::EcnCodepoint::from_bits);
            match self.common.place.owner(&carried.data) {
                Some(Owner::Worker(w)) if w != self.worker => self.staged[w].push(Handed {
                    socket,
                    data: carried.data,
                    from: carried.from,
                    to: carried.to,
                    ecn,
                }),
                // Carried back would loop: a datagram the other process
                // thinks is ours and we think is its is dropped.
                Some(Owner::Other) => {}
                _ => self.datagram(turn, socket, carried.data, carried.from, carried.to, ecn),
            }
        }
        self.post_staged(turn);
        self.more = true;
    }
}
