//! Listening sockets: one per address, bound by the process itself or
//! passed to it (socket activation, an upgrade), shared by every worker
//! (`spec/listeners.md`; `spec/http.md`, "A listening address is ours
//! alone").

use super::activation::{Activation, Passed, DEFAULT_NAME};
use super::unix_path::Claim;
use crate::rt::{HttpsRedirect, Listen, ListenAddr, Runtime};
use rustix::event::epoll;
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;

/// The epoll token of listener `i` is `LISTENERS + i` in every worker.
pub(crate) const LISTENERS: u64 = 1 << 62;
const BACKLOG: i32 = 1024;

/// One listening socket and how its connections are served.
pub(crate) struct Listener {
    pub fd: OwnedFd,
    /// Where it listens (the real port when 0 was asked).
    pub address: ListenAddr,
    pub tls: bool,
    /// `https-redirect`, resolved to a port.
    pub redirect: Option<u16>,
    /// The name it is handed over under (`LISTEN_FDNAMES`).
    pub name: String,
    /// A Unix path this process (or the one it replaced) bound.
    pub claim: Option<Claim>,
    /// The socket was passed to this process, as this `LISTEN_FDS` index.
    pub passed: Option<usize>,
    /// Connections begin with a PROXY protocol header (`proxy-protocol`).
    pub proxy: bool,
}

impl Listener {
    /// The IP a request without a host is redirected with.
    pub(crate) fn ip(&self) -> Option<IpAddr> {
        match self.address {
            ListenAddr::Tcp(addr) => Some(addr.ip()),
            ListenAddr::Unix(_) => None,
        }
    }
}

/// The listeners a server starts with, and notices about how they were
/// found, for the error log once it is open.
pub(crate) struct Opened {
    pub listeners: Vec<Listener>,
    pub notices: Vec<String>,
}

/// Binds every entry of `rt.listen`, or adopts the sockets `passed` (see
/// `spec/listeners.md`, "Socket activation"). Nothing stays bound when
/// any fails.
pub(crate) fn open(rt: &Runtime, passed: Option<&mut Activation>) -> io::Result<Opened> {
    let mut notices = Vec::new();
    let assigned = match passed {
        None => rt.listen.iter().map(|e| (e.clone(), None)).collect(),
        Some(activation) => assign(rt, activation, &mut notices)?,
    };
    let mut opened = Vec::with_capacity(assigned.len());
    for (entry, socket) in assigned {
        let passed = socket.as_ref().map(|s| s.index);
        let (fd, address, claim) = match socket {
            Some(socket) => {
                let address = socket_address(&socket.fd)?;
                let claim = match (&address, socket.own) {
                    (ListenAddr::Unix(path), Some(bound)) => Some(Claim::adopted(path, bound)),
                    _ => None,
                };
                (socket.fd, address, claim)
            }
            None => bind(&entry)?,
        };
        let listener = Listener {
            fd,
            address,
            tls: rt.speaks_tls(&entry),
            redirect: None,
            name: (entry.name).unwrap_or_else(|| DEFAULT_NAME.to_owned()),
            claim,
            passed,
            proxy: entry.proxy_protocol,
        };
        opened.push((listener, entry.https_redirect));
    }
    if opened.is_empty() {
        return Err(io::Error::other(
            "no listener: socket activation passed no socket that `listen` keeps",
        ));
    }
    // `true`: the port of the first TCP listener that speaks TLS.
    let tls_port = opened.iter().find_map(|(l, _)| match (&l.address, l.tls) {
        (ListenAddr::Tcp(addr), true) => Some(addr.port()),
        _ => None,
    });
    let mut listeners = Vec::with_capacity(opened.len());
    for (mut l, redirect) in opened {
        l.redirect = match redirect {
            None => None,
            Some(HttpsRedirect::Port(port)) => Some(port),
            Some(HttpsRedirect::TlsListener) => Some(tls_port.ok_or_else(|| {
                io::Error::other(format!(
                    "listener {}: `https-redirect = true`, but no TCP listener speaks TLS",
                    l.address
                ))
            })?),
        };
        listeners.push(l);
    }
    Ok(Opened { listeners, notices })
}

/// Which entry of `rt.listen` each passed socket serves, by the rules of
/// `spec/listeners.md`, "Socket activation" (and "Upgrade", which binds
/// the entries nothing was passed for).
fn assign(
    rt: &Runtime,
    activation: &mut Activation,
    notices: &mut Vec<String>,
) -> io::Result<Vec<(Listen, Option<Passed>)>> {
    let upgrade = activation.is_upgrade();
    // A file that says nothing of `listen` takes what it is given without
    // a word.
    let quiet = rt.listen == Runtime::default().listen;
    let mut taken = vec![false; rt.listen.len()];
    let mut assigned = Vec::new();
    for socket in std::mem::take(&mut activation.sockets) {
        let address = socket_address(&socket.fd)?;
        match matching(rt, &taken, &socket.name, &address) {
            Some(i) => {
                taken[i] = true;
                assigned.push((rt.listen[i].clone(), Some(socket)));
            }
            None if upgrade => notices.push(format!(
                "{address} (name {:?}) is no longer in `listen`: not served by this process",
                socket.name
            )),
            None => {
                let mut entry = Listen::at(address.clone());
                if !quiet {
                    let how = if rt.speaks_tls(&entry) {
                        "TLS"
                    } else {
                        "plain"
                    };
                    notices.push(format!(
                        "socket activation passed {address} (name {:?}), which no `listen` \
                         entry names or matches: served with the defaults ({how})",
                        socket.name
                    ));
                }
                entry.name = Some(socket.name.clone()).filter(|n| n != "unknown");
                assigned.push((entry, Some(socket)));
            }
        }
    }
    for (entry, _) in rt.listen.iter().zip(&taken).filter(|(_, taken)| !**taken) {
        if upgrade {
            assigned.push((entry.clone(), None));
        } else if !quiet {
            notices.push(format!(
                "`listen` entry {} was not passed by socket activation: not bound",
                entry.address
            ));
        }
    }
    Ok(assigned)
}

/// The entry not yet `taken` that a passed socket named `name` at
/// `address` serves: the one of that name, else the one of that address,
/// else a port-0 entry of its IP (port 0 asks for any port: the one given
/// is one).
fn matching(rt: &Runtime, taken: &[bool], name: &str, address: &ListenAddr) -> Option<usize> {
    let free = |i: &usize| !taken[*i];
    let by = |f: &dyn Fn(&Listen) -> bool| {
        (0..rt.listen.len())
            .filter(free)
            .find(|&i| f(&rt.listen[i]))
    };
    by(&|e| e.name.as_deref() == Some(name))
        .or_else(|| by(&|e| e.address == *address))
        .or_else(|| {
            by(&|e| match (&e.address, address) {
                (ListenAddr::Tcp(a), ListenAddr::Tcp(b)) => a.port() == 0 && a.ip() == b.ip(),
                _ => false,
            })
        })
}

/// Binds and listens on one entry.
fn bind(entry: &Listen) -> io::Result<(OwnedFd, ListenAddr, Option<Claim>)> {
    match &entry.address {
        ListenAddr::Tcp(addr) => {
            let fd = bind_tcp(*addr)?;
            rustix::net::listen(&fd, BACKLOG)?;
            let address = socket_address(&fd)?;
            Ok((fd, address, None))
        }
        ListenAddr::Unix(path) => {
            let what = format!("listener {}", entry.address);
            let (fd, claim) = Claim::bind(path, &what, entry.mode, BACKLOG, SocketFlags::NONBLOCK)?;
            Ok((fd, entry.address.clone(), Some(claim)))
        }
    }
}

/// A nonblocking TCP socket bound to `addr` and not yet listening; an
/// address someone holds is [`io::ErrorKind::AddrInUse`], with a message
/// that names it.
///
/// It is bound without `SO_REUSEPORT`, so the bind itself is the check that
/// nobody holds the address: a socket of any process bound there (with the
/// option or without it) makes it fail, and no socket bound later can join
/// ours, whatever options it sets (`spec/http.md`, "Threads").
/// `SO_REUSEADDR` only lets a restart bind past connections in TIME_WAIT.
/// An IPv6 socket is IPv6 only (`IPV6_V6ONLY`), whatever the sysctl says.
pub(crate) fn bind_tcp(addr: SocketAddr) -> io::Result<OwnedFd> {
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
    if addr.is_ipv6() {
        rustix::net::sockopt::set_ipv6_v6only(&fd, true)?;
    }
    rustix::net::bind(&fd, &addr).map_err(|e| bind_error(e, format_args!("listen on {addr}")))?;
    Ok(fd)
}

/// A refused bind as the operator reads it: what could not be done
/// (`cannot WHAT: why`), of the errno's kind (`AddrInUse` for an address
/// someone holds).
pub(crate) fn bind_error(e: Errno, what: std::fmt::Arguments<'_>) -> io::Error {
    let why = match e {
        Errno::ADDRINUSE => "address already in use".to_owned(),
        e => io::Error::from(e).to_string(),
    };
    io::Error::new(io::Error::from(e).kind(), format!("cannot {what}: {why}"))
}

/// Where a listening socket listens: its IP address and port, or its path.
pub(crate) fn socket_address(fd: &OwnedFd) -> io::Result<ListenAddr> {
    let addr = rustix::net::getsockname(fd)?;
    if let Ok(ip) = SocketAddr::try_from(addr.clone()) {
        return Ok(ListenAddr::Tcp(ip));
    }
    match rustix::net::SocketAddrUnix::try_from(addr) {
        Ok(unix) => match unix.path_bytes() {
            Some(path) if !path.is_empty() => Ok(ListenAddr::Unix(std::path::PathBuf::from(
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path),
            ))),
            _ => Err(io::Error::other(
                "a Unix socket without a path (abstract or unnamed)",
            )),
        },
        Err(_) => Err(io::Error::other("a socket that is neither TCP nor Unix")),
    }
}

/// Waits on a shared listener level-triggered with `EPOLLEXCLUSIVE`: a new
/// connection wakes one idle worker, not all of them (a worker that is busy
/// finds it at its next wait, and its `accept` may find nothing: `EAGAIN`).
pub(crate) fn watch_listener(epoll: &OwnedFd, listener: &OwnedFd, i: usize) -> io::Result<()> {
    epoll::add(
        epoll,
        listener,
        epoll::EventData::new_u64(LISTENERS + i as u64),
        epoll::EventFlags::IN | epoll::EventFlags::EXCLUSIVE,
    )?;
    Ok(())
}
