//! The QUIC endpoint one worker drives: quinn-proto's sans-IO endpoint and
//! the connections this worker owns, on the worker's loop — handshakes
//! admitted, retried or refused, each connection's HTTP/3 unit run, its
//! datagrams sent (GSO), and its timers kept for the loop's wait. Reading
//! the shared sockets and handing datagrams to their owner is `read.rs`.
//! No tokio: quinn-proto is a state machine, and this is its driver
//! (`spec/http3.md`, "Workers", "Transport").

use super::common::Common;
use super::socket::Batch;
use crate::http::Peer;
use crate::linux::conn::h3::H3;
use crate::linux::conn::{IoDone, Turn};
use crate::rt::{Http3Retry, Runtime};
use bytes::{Bytes, BytesMut};
use quinn_proto::{Connection, ConnectionHandle, DatagramEvent, Endpoint, Incoming, VarInt};
use rustix::event::epoll;
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

/// The epoll token of UDP socket `i` is `SOCKETS + i`.
pub(crate) const SOCKETS: u64 = (1 << 62) - (1 << 20);
/// The `slot` io results for a QUIC connection carry: their connection
/// is found by its id among the endpoint's.
pub(crate) const QUIC_SLOT: usize = usize::MAX;
/// The epoll tokens of this worker's inbox and of the upgrade's pair.
pub(crate) const INBOX: u64 = SOCKETS - 1;
pub(crate) const PAIR: u64 = SOCKETS - 2;
/// Sends (each up to the GSO segment count) per connection per turn.
const SENDS_PER_TURN: usize = 16;

struct Entry {
    conn: Connection,
    unit: H3,
    /// The socket its datagrams came to, and leave from.
    socket: usize,
    /// The client's address, as of its last datagram: a change is a path
    /// change (migration, or a NAT's new port).
    remote: SocketAddr,
    /// Its handshake is over (it no longer counts for Retry).
    connected: bool,
    /// Something happened to it since it was last driven.
    dirty: bool,
    /// When quinn wants to be told the time.
    timer: Option<Instant>,
    /// We closed it; it waits out its draining period.
    closing: bool,
}

pub(crate) struct Quic {
    endpoint: Endpoint,
    pub(super) common: Arc<Common>,
    /// This worker's number, which the IDs it issues carry.
    pub(super) worker: usize,
    /// By quinn's connection handle (its slab index).
    conns: Vec<Option<Entry>>,
    live: usize,
    pub(super) batch: Batch,
    /// Datagrams read for other workers, by worker, until the read ends.
    pub(super) staged: Vec<Vec<super::common::Handed>>,
    /// Where a message of the upgrade's pair is read.
    pub(super) pair_buf: Vec<u8>,
    /// The pair is in this worker's epoll.
    pub(super) watching_pair: bool,
    /// The shared sockets are in this worker's epoll.
    reading: bool,
    /// The worker's epoll (a second descriptor of it), for the pair that
    /// an upgrade opens later.
    pub(super) epoll: Option<OwnedFd>,
    /// A datagram's response (a Retry, a refusal, a version negotiation).
    scratch: Vec<u8>,
    /// Outgoing datagrams of one connection, one transmit at a time.
    out: Vec<u8>,
    next_id: u64,
    /// Datagrams may wait unread, or datagrams unsent: turn again
    /// without waiting.
    pub more: bool,
}

impl Quic {
    /// Worker `worker`'s endpoint over the shared sockets.
    pub(crate) fn new(common: Arc<Common>, worker: usize, rt: &Runtime, generation: u64) -> Quic {
        let endpoint = Endpoint::new(
            Arc::new(common.endpoint(worker)),
            Some(common.server(rt, generation)),
            true,
            None,
        );
        let workers = common.place.workers;
        Quic {
            endpoint,
            common,
            worker,
            conns: Vec::new(),
            live: 0,
            batch: Batch::default(),
            staged: (0..workers).map(|_| Vec::new()).collect(),
            pair_buf: Vec::new(),
            watching_pair: false,
            reading: false,
            epoll: None,
            scratch: Vec::new(),
            out: Vec::new(),
            next_id: 0,
            more: false,
        }
    }

    /// A reload: new connections take the new runtime's transport (its
    /// `keepalive-timeout`); the TLS set was shared all along, and so are
    /// the keys.
    pub(crate) fn reconfigure(&mut self, rt: &Runtime, generation: u64) {
        (self.endpoint).set_server_config(Some(self.common.server(rt, generation)));
    }

    /// Waits on each shared socket, level-triggered and exclusive (one
    /// idle worker woken per datagram burst, as for the TCP listeners;
    /// what a turn leaves unread wakes the next one), and on this worker's
    /// inbox.
    pub(crate) fn watch(&mut self, epoll_fd: &OwnedFd) -> io::Result<()> {
        self.epoll = Some(epoll_fd.try_clone()?);
        self.read_sockets(true)?;
        epoll::add(
            epoll_fd,
            self.common.inboxes[self.worker].waker(),
            epoll::EventData::new_u64(INBOX),
            epoll::EventFlags::IN,
        )?;
        Ok(())
    }

    /// Connections not yet closed by us.
    ///
    /// The worker that reads an upgrade's pair counts every worker's: the
    /// others' connections hear from their clients through it, so it stays
    /// while any of them lives.
    pub(crate) fn live(&self) -> usize {
        match self.watching_pair {
            true => self.common.live.load(Relaxed),
            false => self.live,
        }
    }

    /// A datagram of this worker's (read here, or handed to it), to its
    /// connection or the endpoint.
    pub(super) fn datagram(
        &mut self,
        turn: &mut Turn<'_>,
        socket: usize,
        data: BytesMut,
        from: std::net::SocketAddr,
        to: Option<std::net::IpAddr>,
        ecn: Option<quinn_proto::EcnCodepoint>,
    ) {
        self.scratch.clear();
        let endpoint = &mut self.endpoint;
        let scratch = &mut self.scratch;
        let now = turn.now;
        let handled = catch_unwind(AssertUnwindSafe(|| {
            endpoint.handle(now, from, to, ecn, data, scratch)
        }));
        let Ok(event) = handled else {
            panicked(turn, "a datagram");
            return;
        };
        match event {
            Some(DatagramEvent::NewConnection(incoming)) => self.incoming(turn, socket, incoming),
            Some(DatagramEvent::ConnectionEvent(handle, event)) => {
                if let Some(Some(e)) = self.conns.get_mut(handle.0) {
                    let conn = &mut e.conn;
                    match catch_unwind(AssertUnwindSafe(|| conn.handle_event(event))) {
                        Ok(()) => e.dirty = true,
                        Err(_) => self.abandon(handle.0, turn),
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => {
                // A short header: a stateless reset (the others are long).
                if self.scratch.first().is_some_and(|b| b & 0x80 == 0) {
                    (turn.shared.stats.h3.stateless_resets).fetch_add(1, Relaxed);
                }
                let _ = self.common.sockets[socket].send(&t, &self.scratch[..t.size]);
            }
            None => {}
        }
    }

    /// A new handshake: refused at `max-connections`, asked to prove its
    /// address (Retry) as `http3-retry` says, or accepted.
    fn incoming(&mut self, turn: &mut Turn<'_>, socket: usize, incoming: Incoming) {
        let shared = turn.shared;
        let stats = &shared.stats.h3;
        let full = shared.connections.load(Relaxed) >= shared.max_connections.load(Relaxed)
            || turn.stopping;
        self.scratch.clear();
        let full = full
            && match (turn.stopping, self.oldest_idle()) {
                // An idle connection of ours makes room, as for TCP.
                (false, Some((_, handle))) => {
                    shared.stats.idle_closed.fetch_add(1, Relaxed);
                    if let Some(Some(e)) = self.conns.get_mut(handle) {
                        e.conn
                            .close(turn.now, VarInt::from_u32(0x100), Bytes::new());
                        e.dirty = true;
                    }
                    false
                }
                _ => true,
            };
        if full {
            stats.refused.fetch_add(1, Relaxed);
            let t = self.endpoint.refuse(incoming, &mut self.scratch);
            let _ = self.common.sockets[socket].send(&t, &self.scratch[..t.size]);
            return;
        }
        let retry = match turn.rt.http3_retry {
            Http3Retry::Always => true,
            Http3Retry::Never => false,
            Http3Retry::Auto => {
                self.common.handshaking.load(Relaxed) >= turn.rt.http3_retry_handshakes
            }
        };
        if retry && !incoming.remote_address_validated() && incoming.may_retry() {
            match self.endpoint.retry(incoming, &mut self.scratch) {
                Ok(t) => {
                    stats.retries.fetch_add(1, Relaxed);
                    let _ = self.common.sockets[socket].send(&t, &self.scratch[..t.size]);
                }
                Err(e) => self.endpoint.ignore(e.into_incoming()),
            }
            return;
        }
        let remote = incoming.remote_address();
        let peer = Peer::Quic(remote);
        match self
            .endpoint
            .accept(incoming, turn.now, &mut self.scratch, None)
        {
            Ok((handle, conn)) => {
                shared.connections.fetch_add(1, Relaxed);
                stats.connections.fetch_add(1, Relaxed);
                self.next_id += 1;
                let unit = H3::new(self.next_id, peer, turn);
                if self.conns.len() <= handle.0 {
                    self.conns.resize_with(handle.0 + 1, || None);
                }
                self.conns[handle.0] = Some(Entry {
                    conn,
                    unit,
                    socket,
                    remote,
                    connected: false,
                    dirty: true,
                    timer: None,
                    closing: false,
                });
                self.live += 1;
                self.common.live.fetch_add(1, Relaxed);
                self.common.handshaking.fetch_add(1, Relaxed);
            }
            Err(e) => {
                if let Some(t) = e.response {
                    let _ = self.common.sockets[socket].send(&t, &self.scratch[..t.size]);
                }
            }
        }
    }

    /// Runs every connection something happened to, or whose timer is
    /// due: quinn's events, its HTTP/3, its datagrams out.
    pub(crate) fn drive(&mut self, turn: &mut Turn<'_>) {
        for i in 0..self.conns.len() {
            let due = match &self.conns[i] {
                Some(e) => e.dirty || e.timer.is_some_and(|t| t <= turn.now) || turn.stopping,
                None => false,
            };
            if due {
                let driven = catch_unwind(AssertUnwindSafe(|| self.drive_one(i, turn)));
                if driven.is_err() {
                    self.abandon(i, turn);
                }
            }
        }
    }

    /// A connection whose quinn state or unit panicked: dropped at once
    /// (its client hears nothing and ends at its idle timeout), the
    /// worker and every other connection going on.
    fn abandon(&mut self, i: usize, turn: &mut Turn<'_>) {
        panicked(turn, "a connection");
        if let Some(e) = self.remove(i, turn) {
            let mut unit = e.unit;
            let _ = catch_unwind(AssertUnwindSafe(|| unit.lost()));
        }
    }

    fn drive_one(&mut self, i: usize, turn: &mut Turn<'_>) {
        let Some(e) = self.conns[i].as_mut() else {
            return;
        };
        e.dirty = false;
        if e.timer.is_some_and(|t| t <= turn.now) {
            e.conn.handle_timeout(turn.now);
        }
        let handle = ConnectionHandle(i);
        while let Some(event) = e.conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(handle, event) {
                e.conn.handle_event(back);
            }
        }
        if !e.connected && !e.conn.is_handshaking() {
            e.connected = true;
            self.common.handshaking.fetch_sub(1, Relaxed);
        }
        let remote = e.conn.remote_address();
        if remote != e.remote {
            // The client moved (or its NAT gave it a new port): quinn
            // validates the new path; requests from now on come from it.
            e.remote = remote;
            e.unit.moved(Peer::Quic(remote));
            (turn.shared.stats.h3.path_changes).fetch_add(1, Relaxed);
        }
        if !e.closing {
            if e.unit.drive(&mut e.conn, turn) {
                e.dirty = true;
                self.more = true;
            }
            if turn.stopping && (e.conn.is_handshaking() || e.unit.may_close(turn.now)) {
                e.conn
                    .close(turn.now, VarInt::from_u32(0x100), Bytes::new());
            }
        }
        if e.conn.is_closed() && !e.closing {
            // Closed: it still counts against max-connections (it holds its
            // state) until it has waited out its draining period.
            e.closing = true;
            Quic::ended(&mut self.live, &self.common, turn);
            e.unit.lost();
        }
        let socket = &self.common.sockets[e.socket];
        let segments = match turn.rt.http3_gso {
            true => socket.max_segments(),
            false => 1,
        };
        let mut sent = 0;
        loop {
            if sent == SENDS_PER_TURN {
                e.dirty = true;
                self.more = true;
                break;
            }
            self.out.clear();
            let Some(t) = e.conn.poll_transmit(turn.now, segments, &mut self.out) else {
                break;
            };
            sent += 1;
            match socket.send(&t, &self.out[..t.size]) {
                Ok(true) => {}
                // The socket's buffer is full: that datagram is lost (QUIC
                // sends it again); the rest waits for the next turn.
                Ok(false) => {
                    e.dirty = true;
                    break;
                }
                Err(err) => {
                    turn.shared
                        .logs
                        .error(format_args!("HTTP/3: sending UDP: {err}"));
                    break;
                }
            }
        }
        while let Some(event) = e.conn.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(handle, event) {
                e.conn.handle_event(back);
            }
        }
        e.timer = e.conn.poll_timeout();
        if e.conn.is_drained() {
            let _ = self.remove(i, turn);
        }
    }

    /// A connection is closed (by either side): it no longer counts as
    /// live, and after an upgrade's handover it is one this process
    /// finished.
    fn ended(live: &mut usize, common: &Common, turn: &Turn<'_>) {
        *live -= 1;
        common.live.fetch_sub(1, Relaxed);
        if common.handed_over.load(Relaxed) {
            turn.shared.stats.h3.drained.fetch_add(1, Relaxed);
        }
    }

    /// Forgets connection `i` (drained, or abandoned): what it counted
    /// for is given back.
    fn remove(&mut self, i: usize, turn: &Turn<'_>) -> Option<Entry> {
        let e = self.conns.get_mut(i).and_then(Option::take)?;
        if !e.closing {
            Quic::ended(&mut self.live, &self.common, turn);
        }
        if !e.connected {
            self.common.handshaking.fetch_sub(1, Relaxed);
        }
        turn.shared.connections.fetch_sub(1, Relaxed);
        Some(e)
    }

    /// The connection idle longest (served, every answer acknowledged,
    /// nothing arriving), and its handle.
    pub(crate) fn oldest_idle(&self) -> Option<(Instant, usize)> {
        (self.conns.iter().enumerate())
            .filter_map(|(i, e)| {
                let e = e.as_ref().filter(|e| !e.closing)?;
                Some((e.unit.idle_since()?, i))
            })
            .min()
    }

    /// Closes idle connection `handle` to make room for a new one.
    pub(crate) fn close_idle(&mut self, handle: usize, turn: &mut Turn<'_>) {
        if let Some(Some(e)) = self.conns.get_mut(handle) {
            e.conn
                .close(turn.now, VarInt::from_u32(0x100), Bytes::new());
            e.dirty = true;
        }
        self.drive(turn);
    }

    /// The soonest timer of any connection.
    pub(crate) fn next_timer(&self) -> Option<Instant> {
        self.conns.iter().flatten().filter_map(|e| e.timer).min()
    }

    /// An io result for the connection whose unit has id `id`.
    pub(crate) fn io_done(&mut self, turn: &mut Turn<'_>, done: IoDone) {
        let (_, id) = done.target();
        let Some(e) = self.conns.iter_mut().flatten().find(|e| e.unit.id() == id) else {
            return;
        };
        if e.closing {
            return;
        }
        e.unit.io_done(&mut e.conn, turn, done);
        e.dirty = true;
    }

    /// The units' clocks: a connection past header-timeout or idle with
    /// `keepalive-timeout = 0` closes; stalled streams are reset.
    pub(crate) fn sweep(&mut self, turn: &mut Turn<'_>) {
        for e in self.conns.iter_mut().flatten() {
            if e.closing {
                continue;
            }
            if e.unit.expire(&mut e.conn, turn) {
                e.conn
                    .close(turn.now, VarInt::from_u32(0x100), Bytes::new());
            }
            e.dirty = true;
        }
    }

    /// The server stops now (the grace is over): every connection is
    /// closed and its sinks told.
    pub(crate) fn stop(&mut self, turn: &mut Turn<'_>) {
        for e in self.conns.iter_mut().flatten() {
            e.unit.stop();
            if !e.closing {
                e.conn
                    .close(turn.now, VarInt::from_u32(0x100), Bytes::new());
                e.dirty = true;
            }
        }
        self.drive(turn);
    }

    /// An upgrade's new process is ready: the UDP sockets are no longer
    /// read here, so every datagram reaches it, and it carries this
    /// process's over the pair (`spec/http3.md`, "Lifecycle").
    ///
    /// And reads them again once that process is gone while this one still
    /// drains (the pair closed): nobody else reads them then.
    pub(crate) fn follow_handover(&mut self) {
        let read = !self.common.handed.load(Relaxed);
        if read != self.reading {
            let _ = self.read_sockets(read);
            // Datagrams may have waited meanwhile: read them without
            // waiting for a new one.
            self.more |= read;
        }
    }

    /// Puts the shared sockets in this worker's epoll (level-triggered and
    /// exclusive), or takes them out: every one, the first error said.
    fn read_sockets(&mut self, read: bool) -> io::Result<()> {
        let Some(epoll_fd) = self.epoll.as_ref() else {
            return Ok(());
        };
        let mut first = Ok(());
        for (i, s) in self.common.sockets.iter().enumerate() {
            let done = match read {
                true => epoll::add(
                    epoll_fd,
                    s.fd(),
                    epoll::EventData::new_u64(SOCKETS + i as u64),
                    epoll::EventFlags::IN | epoll::EventFlags::EXCLUSIVE,
                ),
                false => epoll::delete(epoll_fd, s.fd()),
            };
            if first.is_ok() {
                first = done.map_err(io::Error::from);
            }
        }
        self.reading = read;
        first
    }

    /// Produced bodies end now (the server stops). Whether there was one.
    pub(crate) fn stop_producing(&mut self) -> bool {
        let mut any = false;
        for e in self.conns.iter_mut().flatten() {
            if e.unit.stop_producing() {
                e.dirty = true;
                any = true;
            }
        }
        any
    }
}

/// quinn-proto (or the unit) panicked on what `what` brought: logged; the
/// caller drops it.
fn panicked(turn: &Turn<'_>, what: &str) {
    turn.shared.logs.error(format_args!(
        "HTTP/3: the QUIC state machine panicked on {what}; it is dropped, and the worker goes on"
    ));
}
