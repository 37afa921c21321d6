//! Who a request is from (`spec/site.md`, "The client's address"): the
//! connection's client (its peer, or what a trusted proxy's PROXY header
//! said), moved left along `X-Forwarded-For` while the hop that wrote it
//! is a proxy the operator trusts.

use super::request::{Peer, Request};
use crate::rt::{canonical, TrustedProxies};
use std::net::{IpAddr, SocketAddr};

/// Whether the operator trusts `peer` to speak for others.
pub(crate) fn trusted(proxies: &TrustedProxies, peer: &Peer) -> bool {
    match peer {
        Peer::Tcp(addr) | Peer::Quic(addr) => proxies.trusts(addr.ip()),
        Peer::Unix => proxies.unix,
    }
}

/// The client of `req`, whose connection's client is `req.client` when
/// this is called: the rightmost `X-Forwarded-For` address that is not
/// trusted, when the connection's client is.
pub(crate) fn resolve(proxies: &TrustedProxies, req: &Request) -> Peer {
    let from = req.client().clone();
    if proxies.is_empty() || !trusted(proxies, &from) {
        return from;
    }
    let mut client = from;
    let mut hops: Vec<&[u8]> = Vec::new();
    for (name, value) in req.headers() {
        if name.eq_ignore_ascii_case("x-forwarded-for") {
            hops.extend(value.split(|&b| b == b','));
        }
    }
    for hop in hops.iter().rev() {
        let Some(ip) = address(hop) else {
            break;
        };
        client = Peer::Tcp(SocketAddr::new(ip, 0));
        if !proxies.trusts(ip) {
            break;
        }
    }
    client
}

/// One entry of `X-Forwarded-For`: an address, perhaps with a port
/// (`1.2.3.4:5678`, `[2001:db8::1]:443`), in IPv4 form when mapped.
fn address(hop: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(hop).ok()?.trim_matches([' ', '\t']);
    let ip = match text.parse::<IpAddr>() {
        Ok(ip) => ip,
        Err(_) => text.parse::<SocketAddr>().ok()?.ip(),
    };
    Some(canonical(ip))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::h1::parse::test_request;
    use crate::rt::Net;

    fn proxies() -> TrustedProxies {
        let net = |a: &str, prefix| Net {
            addr: a.parse().unwrap(),
            prefix,
        };
        TrustedProxies {
            nets: vec![net("10.0.0.0", 8), net("::1", 128)],
            unix: true,
        }
    }

    fn client(peer: Peer, xff: &[&str]) -> String {
        let fields: String = xff
            .iter()
            .map(|v| format!("X-Forwarded-For: {v}\r\n"))
            .collect();
        let mut req = test_request(&format!("GET / HTTP/1.1\r\nHost: t\r\n{fields}\r\n"));
        req.peer = peer.clone();
        req.client = peer;
        match resolve(&proxies(), &req) {
            Peer::Tcp(a) | Peer::Quic(a) => a.ip().to_string(),
            Peer::Unix => "unix".into(),
        }
    }

    fn tcp(ip: &str) -> Peer {
        Peer::Tcp(SocketAddr::new(ip.parse().unwrap(), 5000))
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_says() {
        assert_eq!(client(tcp("203.0.113.9"), &["1.1.1.1"]), "203.0.113.9");
    }

    #[test]
    fn the_rightmost_untrusted_address_is_the_client() {
        assert_eq!(client(tcp("10.0.0.2"), &["198.51.100.7"]), "198.51.100.7");
        // A spoofed entry on the left, then what our proxies saw.
        assert_eq!(
            client(tcp("10.0.0.2"), &["6.6.6.6, 198.51.100.7, 10.1.1.1"]),
            "198.51.100.7"
        );
        // Several fields are one list, in order.
        assert_eq!(
            client(tcp("10.0.0.2"), &["6.6.6.6", "198.51.100.7"]),
            "198.51.100.7"
        );
        // Every hop trusted: the leftmost.
        assert_eq!(client(tcp("10.0.0.2"), &["10.9.9.9, 10.1.1.1"]), "10.9.9.9");
        assert_eq!(client(Peer::Unix, &["198.51.100.7"]), "198.51.100.7");
        assert_eq!(client(tcp("::1"), &["[2001:db8::5]:443"]), "2001:db8::5");
        assert_eq!(
            client(tcp("10.0.0.2"), &["198.51.100.7:5678"]),
            "198.51.100.7"
        );
        assert_eq!(
            client(tcp("10.0.0.2"), &["::ffff:198.51.100.7"]),
            "198.51.100.7"
        );
    }

    #[test]
    fn a_hop_that_is_not_an_address_stops_the_walk() {
        assert_eq!(
            client(tcp("10.0.0.2"), &["198.51.100.7, unknown"]),
            "10.0.0.2"
        );
        assert_eq!(client(tcp("10.0.0.2"), &["unknown, 10.3.3.3"]), "10.3.3.3");
        assert_eq!(client(tcp("10.0.0.2"), &[""]), "10.0.0.2");
        assert_eq!(client(tcp("10.0.0.2"), &[]), "10.0.0.2");
    }
}
