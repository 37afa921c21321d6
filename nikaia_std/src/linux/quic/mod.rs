//! QUIC for HTTP/3 (`spec/http3.md`), on quinn-proto's sans-IO state
//! machine driven by the worker's loop:
//!
//! - `config.rs`: what a server endpoint answers with — the TLS set's
//!   pairs by SNI, ALPN `h3` only, 0-RTT off, the transport's bounds;
//! - `socket.rs`: a UDP socket through quinn-udp (GSO, GRO, `recvmmsg`,
//!   ECN, the address a datagram came to);
//! - `endpoint.rs`: the endpoint and its connections on one worker, each
//!   running the HTTP/3 unit (`linux/conn/h3`).

pub(crate) mod config;
pub(crate) mod endpoint;
pub(crate) mod socket;
#[cfg(test)]
mod tests;

use crate::linux::activation::Activation;
use crate::linux::listen::Listener;
use crate::rt::{ListenAddr, Runtime};
use socket::Udp;
use std::io;

/// HTTP/3's UDP sockets: with `http3 = true`, one on the address and port
/// of each TCP listener that speaks TLS (never a Unix, PROXY-protocol or
/// redirecting one). An address someone holds refuses the start, as a
/// TCP one does. Under socket activation or an upgrade, where the
/// listeners were handed over, HTTP/3 is off with a notice: no datagram
/// socket is handed yet.
pub(crate) fn open(
    rt: &Runtime,
    listeners: &[Listener],
    passed: Option<&Activation>,
    notices: &mut Vec<String>,
) -> io::Result<Vec<Udp>> {
    if !rt.http3 {
        return Ok(Vec::new());
    }
    if passed.is_some() {
        notices.push(
            "http3: the listening sockets were handed to this process and no UDP socket was; \
             HTTP/3 is off until a restart"
                .to_owned(),
        );
        return Ok(Vec::new());
    }
    let mut sockets = Vec::new();
    for l in serves_h3(listeners) {
        if let ListenAddr::Tcp(addr) = &l.address {
            let udp = Udp::bind(*addr)?;
            if let Some(got) = udp.short_buffer() {
                notices.push(format!(
                    "http3: the UDP receive buffer of {addr} is {got} bytes, below the {} asked \
                     (raise net.core.rmem_max): a fast download may lose datagrams",
                    socket::BUFFER
                ));
            }
            sockets.push(udp);
        }
    }
    Ok(sockets)
}

/// The listeners whose address HTTP/3 is served on.
pub(crate) fn serves_h3(listeners: &[Listener]) -> impl Iterator<Item = &Listener> {
    listeners.iter().filter(|l| {
        l.tls && !l.proxy && l.redirect.is_none() && matches!(l.address, ListenAddr::Tcp(_))
    })
}
