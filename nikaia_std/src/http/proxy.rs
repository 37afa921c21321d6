//! The PROXY protocol header (HAProxy's `proxy-protocol.txt`, versions 1
//! and 2), sans-IO: the bytes a load balancer puts before the connection's
//! own, in; the original source and the header's length, out.
//!
//! A listener that expects the header must get one, valid, before anything
//! else (the spec forbids guessing): bytes that cannot become a header are
//! [`Malformed`] as soon as that is certain. The caller peeks at the socket
//! and calls [`parse`] again with the longer buffer after each [`Parse::Need`]:
//! once a buffer is `Done` or `Malformed`, every longer one that starts with
//! it gets the same answer.
//!
//! What we choose where the spec leaves room:
//! - v1 ports, like addresses, take no leading zero ("0" alone is port 0);
//!   addresses are what std parses for the family (IPv6 as text, an embedded
//!   IPv4 tail allowed, no zone). The line is printable ASCII.
//! - `PROXY UNKNOWN` is followed by CRLF or by a space and any printable
//!   ASCII up to CRLF.
//! - v2 LOCAL ignores the family and the address block, as the spec says; a
//!   PROXY command's TLVs (after the family's addresses) must frame the rest
//!   of the header exactly, their contents are not read (nor a CRC32C
//!   checked). AF_UNSPEC's addresses and TLVs, if any, are skipped.
//! - v2 families are the seven the spec lists (`0x00`, `0x11`, `0x12`,
//!   `0x21`, `0x22`, `0x31`, `0x32`); any other, even AF_INET with an UNSPEC
//!   transport, is malformed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The most bytes of addresses and TLVs a v2 header may carry. The spec sets
/// no bound below the 16-bit length; ours keeps the bytes a connection may
/// hold before it is known small. It is several times what senders write:
/// AWS NLB and GCP add one TLV of tens of bytes, and HAProxy's fullest header
/// (IPv6 or unix addresses, ALPN, a 255-byte authority, a 128-byte unique ID,
/// the SSL TLV with its subtypes, CRC32C, a namespace) stays under 900.
pub(crate) const MAX_V2_BODY: usize = 1024;

/// The most bytes a header may take: v1's 107, or v2's 16-byte preamble plus
/// at most [`MAX_V2_BODY`]. A buffer this long always parses to `Done` or
/// `Malformed`, so a caller that peeks this much never waits in vain.
pub(crate) const MAX_HEADER: usize = V2_PREAMBLE + MAX_V2_BODY;

/// v1's longest line, CRLF included (`PROXY UNKNOWN` with two full IPv6
/// addresses and ports).
const MAX_V1: usize = 107;

const V1_SIG: &[u8] = b"PROXY ";
const V2_SIG: &[u8] = b"\r\n\r\n\0\r\nQUIT\n";
const V2_PREAMBLE: usize = 16;

/// Whom the connection speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// PROXY command with a TCP or UDP over IPv4/IPv6 address: the original
    /// source.
    Addr(SocketAddr),
    /// The proxy speaks for itself (v2 LOCAL, health checks), or the family
    /// is UNKNOWN (v1) / AF_UNSPEC / AF_UNIX (v2): the connection's own peer
    /// stands.
    Own,
}

/// What the bytes so far are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parse {
    /// The bytes so far are a proper prefix of a header: read more (the
    /// caller bounds time and [`MAX_HEADER`]).
    Need,
    /// A whole header of `len` bytes (the bytes after it are the protocol's:
    /// TLS or HTTP).
    Done { source: Source, len: usize },
}

/// Why the bytes are not a header, for the error log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed(pub &'static str);

/// Reads the header at the start of `buf`. `Done`'s `len` is at most
/// `buf.len()`; bytes past it are never looked at.
pub(crate) fn parse(buf: &[u8]) -> Result<Parse, Malformed> {
    if starts(buf, V2_SIG) {
        v2(buf)
    } else if starts(buf, V1_SIG) {
        v1(buf)
    } else {
        Err(Malformed("not a PROXY protocol header"))
    }
}

/// Whether `buf` and `sig` agree on their common length: `buf` starts with
/// `sig`, or is a prefix of it.
fn starts(buf: &[u8], sig: &[u8]) -> bool {
    let n = buf.len().min(sig.len());
    buf.get(..n) == sig.get(..n)
}

/// The words v1 may go on with after `PROXY `, with the byte after them.
const V1_PROTOCOLS: [&[u8]; 4] = [b"TCP4 ", b"TCP6 ", b"UNKNOWN ", b"UNKNOWN\r"];

/// A v1 line is refused for its first wrong byte, so a longer buffer never
/// changes the reason.
fn v1(buf: &[u8]) -> Result<Parse, Malformed> {
    // The line before CR: printable ASCII, at most MAX_V1 - 2 bytes.
    let window = buf.get(..buf.len().min(MAX_V1 - 1)).unwrap_or_default();
    let cr = window.iter().position(|&b| b == b'\r');
    let line = window.get(..cr.unwrap_or(window.len())).unwrap_or_default();
    let text = line.iter().position(|b| !(b' '..=b'~').contains(b));
    let protocol = protocol_mismatch(buf.get(V1_SIG.len()..).unwrap_or_default());
    match (text, protocol) {
        (Some(at), protocol) if protocol.is_none_or(|p| at <= p) => {
            return Err(match line.get(at) {
                Some(b'\n') => Malformed("v1: a bare LF"),
                _ => Malformed("v1: a byte that is not printable ASCII"),
            })
        }
        (_, Some(_)) => return Err(Malformed("v1: the protocol is not TCP4, TCP6 or UNKNOWN")),
        _ => {}
    }
    let Some(cr) = cr else {
        return if window.len() == MAX_V1 - 1 {
            Err(Malformed("v1: no CRLF within 107 bytes"))
        } else {
            Ok(Parse::Need)
        };
    };
    match buf.get(cr + 1) {
        None => Ok(Parse::Need),
        Some(b'\n') => Ok(Parse::Done {
            source: v1_line(line.get(V1_SIG.len()..).unwrap_or_default())?,
            len: cr + 2,
        }),
        Some(_) => Err(Malformed("v1: CR not followed by LF")),
    }
}

/// Where (from the start of the buffer) the bytes after `PROXY ` stop being
/// the start of any of [`V1_PROTOCOLS`], if they do.
fn protocol_mismatch(rest: &[u8]) -> Option<usize> {
    if V1_PROTOCOLS.iter().any(|p| starts(rest, p)) {
        return None;
    }
    let common = |p: &[u8]| rest.iter().zip(p).take_while(|(a, b)| a == b).count();
    V1_PROTOCOLS.iter().map(|p| V1_SIG.len() + common(p)).max()
}

/// The v1 line after `PROXY `, without its CRLF, known printable ASCII.
fn v1_line(line: &[u8]) -> Result<Source, Malformed> {
    let Ok(line) = std::str::from_utf8(line) else {
        return Err(Malformed("v1: a byte that is not printable ASCII"));
    };
    if line == "UNKNOWN" || line.starts_with("UNKNOWN ") {
        return Ok(Source::Own);
    }
    let mut fields = line.split(' ');
    let family = fields.next().unwrap_or_default();
    let mut next = || match fields.next() {
        None => Err(Malformed("v1: missing fields")),
        Some("") => Err(Malformed("v1: not exactly one space between fields")),
        Some(field) => Ok(field),
    };
    let (src, dst) = (next()?, next()?);
    let (sport, dport) = (next()?, next()?);
    match fields.next() {
        None => {}
        Some("") => return Err(Malformed("v1: not exactly one space between fields")),
        Some(_) => return Err(Malformed("v1: too many fields")),
    }
    let ip = |text: &str| -> Result<IpAddr, Malformed> {
        let ip = match family {
            "TCP4" => text.parse::<Ipv4Addr>().map(IpAddr::V4).ok(),
            "TCP6" => text.parse::<Ipv6Addr>().map(IpAddr::V6).ok(),
            _ => None,
        };
        ip.ok_or(Malformed("v1: an address not of the family"))
    };
    let src = ip(src)?;
    ip(dst)?;
    let sport = port(sport)?;
    port(dport)?;
    Ok(Source::Addr(SocketAddr::new(src, sport)))
}

/// A v1 port: decimal, 0..=65535, no sign, no leading zero.
fn port(text: &str) -> Result<u16, Malformed> {
    let bad = Malformed("v1: a port that is not 0..=65535 without leading zeros");
    let digits = text.as_bytes();
    if !digits.iter().all(u8::is_ascii_digit) || (digits.len() > 1 && digits.first() == Some(&b'0'))
    {
        return Err(bad);
    }
    text.parse().map_err(|_| bad)
}

/// v2's address block for a PROXY command's family byte, or why the byte is
/// not one: 0 for AF_UNSPEC.
fn v2_addresses(family: u8) -> Result<usize, Malformed> {
    match family {
        0x00 => Ok(0),
        0x11 | 0x12 => Ok(12),
        0x21 | 0x22 => Ok(36),
        0x31 | 0x32 => Ok(216),
        _ => Err(Malformed("v2: an unknown family or transport")),
    }
}

fn v2(buf: &[u8]) -> Result<Parse, Malformed> {
    // Each byte of the preamble is checked as soon as it is there.
    let local = match buf.get(12).copied() {
        None => return Ok(Parse::Need),
        Some(b) if b >> 4 != 2 => return Err(Malformed("v2: the version is not 2")),
        Some(0x20) => true,
        Some(0x21) => false,
        Some(_) => return Err(Malformed("v2: an unknown command")),
    };
    let Some(&family) = buf.get(13) else {
        return Ok(Parse::Need);
    };
    let addresses = if local { 0 } else { v2_addresses(family)? };
    let (Some(&hi), Some(&lo)) = (buf.get(14), buf.get(15)) else {
        return Ok(Parse::Need);
    };
    let body_len = usize::from(u16::from_be_bytes([hi, lo]));
    if body_len > MAX_V2_BODY {
        return Err(Malformed("v2: too long"));
    }
    if body_len < addresses {
        return Err(Malformed("v2: the length is shorter than the addresses"));
    }
    let len = V2_PREAMBLE + body_len;
    let Some(body) = buf.get(V2_PREAMBLE..len) else {
        return Ok(Parse::Need);
    };
    if local || family == 0x00 {
        return Ok(Parse::Done {
            source: Source::Own,
            len,
        });
    }
    let Some((block, tlvs)) = body.split_at_checked(addresses) else {
        return Err(Malformed("v2: the length is shorter than the addresses"));
    };
    check_tlvs(tlvs)?;
    let source = match family >> 4 {
        1 => inet::<4>(block),
        2 => inet::<16>(block),
        _ => {
            return Ok(Parse::Done {
                source: Source::Own,
                len,
            })
        } // AF_UNIX
    };
    let source = source.ok_or(Malformed("v2: the length is shorter than the addresses"))?;
    Ok(Parse::Done {
        source: Source::Addr(source),
        len,
    })
}

/// The source of an IPv4 (`N` = 4) or IPv6 (16) address block: source and
/// destination addresses, then their ports.
fn inet<const N: usize>(block: &[u8]) -> Option<SocketAddr>
where
    IpAddr: From<[u8; N]>,
{
    let (src, rest) = block.split_first_chunk::<N>()?;
    let (_dst, rest) = rest.split_first_chunk::<N>()?;
    let (port, _) = rest.split_first_chunk::<2>()?;
    Some(SocketAddr::new(
        IpAddr::from(*src),
        u16::from_be_bytes(*port),
    ))
}

/// TLVs (a type byte, a 16-bit big-endian length, the value) that fill
/// `tlvs` exactly.
fn check_tlvs(mut tlvs: &[u8]) -> Result<(), Malformed> {
    while !tlvs.is_empty() {
        let &[_, hi, lo, ..] = tlvs else {
            return Err(Malformed("v2: a TLV overruns the header"));
        };
        let end = 3 + usize::from(u16::from_be_bytes([hi, lo]));
        let Some(rest) = tlvs.get(end..) else {
            return Err(Malformed("v2: a TLV overruns the header"));
        };
        tlvs = rest;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
