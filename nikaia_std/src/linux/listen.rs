//! Listening sockets: one per address, bound by the process itself, shared
//! by every worker (`spec/http.md`, "A listening address is ours alone").

use rustix::event::epoll;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;

/// The epoll token of the listener in every worker.
pub(crate) const LISTENER: u64 = u64::MAX;

/// The one listening socket of `addr`, which every worker shares.
///
/// It is bound without `SO_REUSEPORT`, so the bind itself is the check that
/// nobody holds the address: a socket of any process bound there (with the
/// option or without it) makes it fail, and no socket bound later can join
/// ours, whatever options it sets (`spec/http.md`, "Threads").
/// `SO_REUSEADDR` only lets a restart bind past connections in TIME_WAIT.
pub(crate) fn listen(addr: SocketAddr) -> io::Result<OwnedFd> {
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

pub(crate) fn local_addr(fd: &OwnedFd) -> io::Result<SocketAddr> {
    SocketAddr::try_from(rustix::net::getsockname(fd)?)
        .map_err(|_| io::Error::other("listener has no IP address"))
}

/// Waits on the shared listener level-triggered with `EPOLLEXCLUSIVE`: a new
/// connection wakes one idle worker, not all of them (a worker that is busy
/// finds it at its next wait, and its `accept` may find nothing: `EAGAIN`).
pub(crate) fn watch_listener(epoll: &OwnedFd, listener: &OwnedFd) -> io::Result<()> {
    epoll::add(
        epoll,
        listener,
        epoll::EventData::new_u64(LISTENER),
        epoll::EventFlags::IN | epoll::EventFlags::EXCLUSIVE,
    )?;
    Ok(())
}
