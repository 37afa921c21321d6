//! One UDP socket QUIC speaks on: bound like a TCP listener (nobody may
//! hold the address before us or join it after), its datagrams read in
//! batches with `recvmmsg` and GRO and written with GSO, ECN and the
//! address each datagram came to, through quinn-udp.

use quinn_udp::{RecvMeta, Transmit, UdpSockRef, UdpSocketState};
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use std::io::{self, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// The socket buffers asked for: a few round trips of a fast download
/// and a burst of handshakes. The kernel caps them at `rmem_max` and
/// `wmem_max`; a warning says so when it does (`spec/http3.md`).
pub(crate) const BUFFER: usize = 4 << 20;

/// The largest datagram read: a GRO batch of full-size ones.
const DATAGRAM_ROOM: usize = 64 << 10;

/// What one UDP send carries at most (IPv4's 65 535 less its headers).
const MAX_UDP_PAYLOAD: usize = 65_507;
/// The largest datagram quinn-proto sends with its default MTU discovery.
const LARGEST_DATAGRAM: usize = 1_452;

/// Datagram batches (each one `recvmmsg` entry, several datagrams with
/// GRO) read per call.
pub(crate) const RECV_BATCH: usize = 8;

pub(crate) struct Udp {
    socket: UdpSocket,
    state: UdpSocketState,
    /// Where it is bound (the real port when 0 was asked).
    pub address: SocketAddr,
}

/// Datagrams one read brought: each entry's bytes are
/// `buffers[i][..meta[i].len]`, cut in `meta[i].stride` datagrams.
pub(crate) struct Batch {
    buffers: Vec<Vec<u8>>,
    meta: Vec<RecvMeta>,
}

impl Default for Batch {
    fn default() -> Batch {
        Batch {
            buffers: (0..RECV_BATCH).map(|_| vec![0; DATAGRAM_ROOM]).collect(),
            meta: vec![RecvMeta::default(); RECV_BATCH],
        }
    }
}

impl Batch {
    /// Datagram `i` of what the last read brought: its bytes, where it
    /// came from, the address it came to and its ECN mark.
    pub(crate) fn each(&self, n: usize, mut f: impl FnMut(&[u8], &RecvMeta)) {
        for (buf, meta) in self.buffers.iter().zip(&self.meta).take(n) {
            let stride = meta.stride.max(1);
            for datagram in buf[..meta.len].chunks(stride) {
                f(datagram, meta);
            }
        }
    }
}

impl Udp {
    /// A nonblocking UDP socket bound to `addr`. Neither `SO_REUSEADDR`
    /// nor `SO_REUSEPORT` is set, so the bind fails if any socket holds the
    /// address, and no socket can join ours later, whatever its options
    /// (`spec/http3.md`, "Sockets"). An IPv6 socket is IPv6 only, as the
    /// TCP listeners are.
    pub(crate) fn bind(addr: SocketAddr) -> io::Result<Udp> {
        let family = match addr {
            SocketAddr::V4(_) => AddressFamily::INET,
            SocketAddr::V6(_) => AddressFamily::INET6,
        };
        let fd = rustix::net::socket_with(
            family,
            SocketType::DGRAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        )?;
        if addr.is_ipv6() {
            rustix::net::sockopt::set_ipv6_v6only(&fd, true)?;
        }
        rustix::net::bind(&fd, &addr).map_err(|e| {
            crate::linux::listen::bind_error(e, format_args!("bind UDP {addr} for HTTP/3"))
        })?;
        Udp::adopt(fd)
    }

    /// A bound UDP socket made ready for QUIC (one bound here, or handed
    /// by a parent).
    pub(crate) fn adopt(fd: OwnedFd) -> io::Result<Udp> {
        let socket = UdpSocket::from(fd);
        let state = UdpSocketState::new(UdpSockRef::from(&socket))?;
        let _ = state.set_recv_buffer_size(UdpSockRef::from(&socket), BUFFER);
        let _ = state.set_send_buffer_size(UdpSockRef::from(&socket), BUFFER);
        let address = socket.local_addr()?;
        Ok(Udp {
            socket,
            state,
            address,
        })
    }

    /// The receive buffer the kernel gave, when below what was asked (its
    /// `rmem_max` is lower): for a warning at start.
    pub(crate) fn short_buffer(&self) -> Option<usize> {
        let got = (self.state)
            .recv_buffer_size(UdpSockRef::from(&self.socket))
            .ok()?;
        // Linux reports twice the size it was given (its bookkeeping).
        (got < BUFFER).then_some(got / 2)
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }

    /// Reads what waits, at most one batch: how many entries of `batch`
    /// hold datagrams (0: nothing waits).
    pub(crate) fn recv(&self, batch: &mut Batch) -> io::Result<usize> {
        let mut slices: Vec<IoSliceMut<'_>> = batch
            .buffers
            .iter_mut()
            .map(|b| IoSliceMut::new(b))
            .collect();
        match (self.state).recv(UdpSockRef::from(&self.socket), &mut slices, &mut batch.meta) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// The most datagrams one send may carry (GSO), 1 without it: the
    /// kernel's segment count, and no more than one UDP payload (65 507
    /// bytes) holds at the largest datagram quinn sends (1 452 bytes, its
    /// path MTU discovery's bound). A larger batch is refused whole
    /// (EMSGSIZE), which would lose every datagram in it.
    pub(crate) fn max_segments(&self) -> usize {
        self.state
            .max_gso_segments()
            .min(MAX_UDP_PAYLOAD / LARGEST_DATAGRAM)
    }

    /// Sends `contents` (one datagram, or several of `segment` bytes each)
    /// to `to`. `Ok(false)`: the socket's buffer is full; the datagrams
    /// are dropped, as a full router would, and QUIC's loss recovery
    /// sends them again.
    pub(crate) fn send(&self, t: &quinn_proto::Transmit, contents: &[u8]) -> io::Result<bool> {
        let transmit = Transmit {
            destination: t.destination,
            ecn: t
                .ecn
                .and_then(|e| quinn_udp::EcnCodepoint::from_bits(e as u8)),
            contents,
            segment_size: t.segment_size,
            src_ip: t.src_ip,
        };
        match (self.state).try_send(UdpSockRef::from(&self.socket), &transmit) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            // A probe past the path's MTU, or a peer gone (ICMP): QUIC
            // copes with a datagram lost.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(
                        libc::EMSGSIZE
                            | libc::ECONNREFUSED
                            | libc::EHOSTUNREACH
                            | libc::ENETUNREACH
                    )
                ) =>
            {
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }
}
