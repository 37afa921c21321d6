//! The Unix pair between an upgrade's two processes (`spec/http3.md`,
//! "Lifecycle"): both hold the same UDP sockets, the kernel gives each
//! datagram to whichever reads it, so a datagram for the other process's
//! connection is carried to it here, one datagram per message.
//!
//! A message is a 59-octet head and the datagram: the format version (1),
//! the ECN mark (0–3, or 255 for none), then three addresses of 19 octets
//! each — the UDP socket's own (how the other process finds its socket),
//! the client's, and the address the datagram came to (port 0) — each a
//! family octet (4, 6, or 0 for none), 16 octets of address and 2 of port.

use bytes::BytesMut;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

const VERSION: u8 = 1;
const ADDRESS: usize = 19;
const HEAD: usize = 2 + 3 * ADDRESS;
/// The largest message: a head and the largest UDP payload.
pub(crate) const ROOM: usize = HEAD + 65_535;
/// What each end may hold queued: bursts of a fast download's
/// acknowledgements while the other process is busy.
const BUFFER: usize = 4 << 20;

/// One datagram carried across.
pub(crate) struct Carried {
    /// The address of the UDP socket it came to.
    pub socket: SocketAddr,
    pub from: SocketAddr,
    pub to: Option<IpAddr>,
    pub ecn: Option<u8>,
    pub data: BytesMut,
}

/// Our end of the pair.
pub(crate) struct Pair {
    fd: OwnedFd,
}

/// What a read of the pair found.
pub(crate) enum Read {
    Datagram(Carried),
    /// Nothing waits.
    Empty,
    /// The other process closed its end: it is gone.
    Closed,
}

impl Pair {
    /// A new pair: our end, and the one to hand to the new process.
    pub(crate) fn new() -> io::Result<(Pair, OwnedFd)> {
        let (ours, theirs) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            None,
        )?;
        for fd in [&ours, &theirs] {
            let _ = rustix::net::sockopt::set_socket_send_buffer_size(fd, BUFFER);
            let _ = rustix::net::sockopt::set_socket_recv_buffer_size(fd, BUFFER);
        }
        Ok((Pair { fd: ours }, theirs))
    }

    /// The end an upgrade handed to this process.
    pub(crate) fn adopt(fd: OwnedFd) -> io::Result<Pair> {
        if rustix::net::sockopt::socket_type(&fd)? != SocketType::SEQPACKET {
            return Err(io::Error::other("not a SOCK_SEQPACKET socket"));
        }
        Ok(Pair { fd })
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Carries one datagram across. `Ok(false)`: the pair is full (the
    /// datagram is lost, and QUIC sends it again) or the other process is
    /// gone.
    pub(crate) fn send(
        &self,
        socket: SocketAddr,
        from: SocketAddr,
        to: Option<IpAddr>,
        ecn: Option<u8>,
        data: &[u8],
    ) -> io::Result<bool> {
        let mut head = [0u8; HEAD];
        head[0] = VERSION;
        head[1] = ecn.unwrap_or(255);
        put(&mut head[2..], Some(socket));
        put(&mut head[2 + ADDRESS..], Some(from));
        put(
            &mut head[2 + 2 * ADDRESS..],
            to.map(|ip| SocketAddr::new(ip, 0)),
        );
        let parts = [io::IoSlice::new(&head), io::IoSlice::new(data)];
        match rustix::net::sendmsg(
            &self.fd,
            &parts,
            &mut Default::default(),
            SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
        ) {
            Ok(_) => Ok(true),
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::PIPE) => Ok(false),
            Err(rustix::io::Errno::CONNRESET | rustix::io::Errno::NOTCONN) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads one message into `buf` (at least [`ROOM`] octets).
    pub(crate) fn recv(&self, buf: &mut [u8]) -> io::Result<Read> {
        let n = match rustix::net::recv(&self.fd, &mut *buf, RecvFlags::DONTWAIT) {
            Ok((0, _)) => return Ok(Read::Closed),
            Ok((n, _)) => n,
            Err(rustix::io::Errno::AGAIN) => return Ok(Read::Empty),
            Err(rustix::io::Errno::CONNRESET) => return Ok(Read::Closed),
            Err(e) => return Err(e.into()),
        };
        let got = &buf[..n.min(buf.len())];
        if got.len() < HEAD || got[0] != VERSION {
            return Err(io::Error::other("a message of another format on the pair"));
        }
        let (Some(socket), Some(from)) = (take(&got[2..]), take(&got[2 + ADDRESS..])) else {
            return Err(io::Error::other(
                "a message without its addresses on the pair",
            ));
        };
        Ok(Read::Datagram(Carried {
            socket,
            from,
            to: take(&got[2 + 2 * ADDRESS..]).map(|a| a.ip()),
            ecn: (got[1] < 4).then_some(got[1]),
            data: BytesMut::from(&got[HEAD..]),
        }))
    }
}

fn put(out: &mut [u8], addr: Option<SocketAddr>) {
    let Some(addr) = addr else {
        out[0] = 0;
        return;
    };
    let (family, ip) = match addr.ip() {
        IpAddr::V4(v4) => (4, v4.to_ipv6_mapped().octets()),
        IpAddr::V6(v6) => (6, v6.octets()),
    };
    out[0] = family;
    out[1..17].copy_from_slice(&ip);
    out[17..19].copy_from_slice(&addr.port().to_be_bytes());
}

fn take(at: &[u8]) -> Option<SocketAddr> {
    let octets: [u8; 16] = at.get(1..17)?.try_into().ok()?;
    let port = u16::from_be_bytes(at.get(17..19)?.try_into().ok()?);
    let ip = match at[0] {
        4 => IpAddr::V4(Ipv6Addr::from(octets).to_ipv4_mapped()?),
        6 => IpAddr::V6(Ipv6Addr::from(octets)),
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn a_datagram_crosses_with_its_addresses_and_mark() {
        let (a, b) = Pair::new().unwrap();
        let b = Pair::adopt(b).unwrap();
        let socket: SocketAddr = "127.0.0.1:4433".parse().unwrap();
        let from: SocketAddr = "[::1]:50000".parse().unwrap();
        let to = Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert!(a.send(socket, from, to, Some(2), b"quic").unwrap());
        assert!(a.send(socket, from, None, None, &[7; 1500]).unwrap());
        let mut buf = vec![0; ROOM];
        let Read::Datagram(c) = b.recv(&mut buf).unwrap() else {
            panic!("a datagram waits");
        };
        assert_eq!((c.socket, c.from, c.to, c.ecn), (socket, from, to, Some(2)));
        assert_eq!(&c.data[..], b"quic");
        let Read::Datagram(c) = b.recv(&mut buf).unwrap() else {
            panic!("a second datagram waits");
        };
        assert_eq!((c.to, c.ecn, c.data.len()), (None, None, 1500));
        assert!(matches!(b.recv(&mut buf).unwrap(), Read::Empty));
        drop(a);
        assert!(matches!(b.recv(&mut buf).unwrap(), Read::Closed));
        assert!(!b.send(socket, from, None, None, b"x").unwrap());
    }
}
