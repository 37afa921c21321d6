//! QUIC for HTTP/3 (`spec/http3.md`), on quinn-proto's sans-IO state
//! machine driven by the worker's loop:
//!
//! - `config.rs`: what a server endpoint answers with — the TLS set's
//!   pairs by SNI, ALPN `h3` only, 0-RTT off, the transport's bounds;
//! - `socket.rs`: a UDP socket through quinn-udp (GSO, GRO, `recvmmsg`,
//!   ECN, the address a datagram came to);
//! - `route.rs`: the connection IDs we issue, and which worker and which
//!   process a datagram belongs to;
//! - `common.rs`: what every worker's endpoint shares (sockets, inboxes,
//!   keys, the server configuration, an upgrade's pair);
//! - `read.rs`: reading the shared sockets, each datagram handed to its
//!   owner; `pair.rs`: the Unix pair an upgrade's two processes carry
//!   each other's datagrams over;
//! - `endpoint.rs`: one worker's endpoint and the connections it owns,
//!   each running the HTTP/3 unit (`linux/conn/h3`).

pub(crate) mod common;
pub(crate) mod config;
pub(crate) mod endpoint;
pub(crate) mod pair;
mod read;
pub(crate) mod route;
pub(crate) mod socket;
#[cfg(test)]
mod tests;

use crate::linux::activation::Passed;
use crate::linux::listen::Listener;
use crate::rt::{ListenAddr, Runtime};
use socket::Udp;
use std::io;

/// HTTP/3's UDP sockets, and which of the passed sockets were taken.
pub(crate) struct Opened {
    pub sockets: Vec<Udp>,
    /// The passed sockets adopted (their places among the passed).
    pub adopted: Vec<usize>,
}

/// How this process came by its listeners.
#[derive(Clone)]
pub(crate) enum Came {
    /// It bound them itself.
    Bound,
    /// Socket activation passed them (systemd).
    Activated,
    /// The process it replaces passed them (SIGUSR2).
    Upgraded,
}

/// HTTP/3's UDP sockets: with `http3 = true`, one on the address and port
/// of each TCP listener that speaks TLS (never a Unix, PROXY-protocol or
/// redirecting one) — a UDP socket passed for that address (an upgrade
/// passes its own; socket activation may), else one bound here. An
/// address someone holds refuses the start, as a TCP one does. Under
/// socket activation, an address no UDP socket was passed for has no
/// HTTP/3, with a notice: the socket's owner did not ask for it.
pub(crate) fn open(
    rt: &Runtime,
    listeners: &[Listener],
    came: Came,
    passed: Vec<Passed>,
    notices: &mut Vec<String>,
) -> io::Result<Opened> {
    let mut opened = Opened {
        sockets: Vec::new(),
        adopted: Vec::new(),
    };
    if !rt.http3 {
        return Ok(opened);
    }
    let mut passed: Vec<Option<Passed>> = passed.into_iter().map(Some).collect();
    let mut wanted = 0;
    for l in serves_h3(listeners) {
        let ListenAddr::Tcp(addr) = &l.address else {
            continue;
        };
        wanted += 1;
        let given = passed.iter_mut().find(|p| {
            p.as_ref().is_some_and(|p| {
                matches!(crate::linux::listen::socket_address(&p.fd), Ok(ListenAddr::Tcp(a)) if a == *addr)
            })
        });
        let udp = match (given.and_then(Option::take), &came) {
            (Some(p), _) => {
                opened.adopted.push(p.index);
                Udp::adopt(p.fd)?
            }
            (None, Came::Activated) => {
                notices.push(format!(
                    "http3: socket activation passed no UDP socket for {addr}: no HTTP/3 there"
                ));
                continue;
            }
            (None, Came::Bound | Came::Upgraded) => Udp::bind(*addr)?,
        };
        if let Some(got) = udp.short_buffer() {
            notices.push(format!(
                "http3: the UDP receive buffer of {addr} is {got} bytes, below the {} asked \
                 (raise net.core.rmem_max): a fast download may lose datagrams",
                socket::BUFFER
            ));
        }
        opened.sockets.push(udp);
    }
    if wanted == 0 {
        return Err(io::Error::other(
            "http3 = true, but no TCP listener speaks TLS: HTTP/3 is always TLS",
        ));
    }
    for p in passed.into_iter().flatten() {
        notices.push(format!(
            "a UDP socket was passed (name {:?}) for an address no TLS listener has: not served",
            p.name
        ));
    }
    Ok(opened)
}
/// The listeners whose address HTTP/3 is served on.
pub(crate) fn serves_h3(listeners: &[Listener]) -> impl Iterator<Item = &Listener> {
    listeners.iter().filter(|l| {
        l.tls && !l.proxy && l.redirect.is_none() && matches!(l.address, ListenAddr::Tcp(_))
    })
}
