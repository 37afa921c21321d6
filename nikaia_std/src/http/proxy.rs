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
mod tests {
    use super::*;

    const HTTP: &[u8] = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    /// The start of a TLS ClientHello record.
    const TLS: &[u8] = &[0x16, 0x03, 0x01, 0x00, 0xf8, 0x01];

    fn addr(text: &str) -> Source {
        Source::Addr(text.parse().expect("a socket address"))
    }

    fn done(source: Source, len: usize) -> Result<Parse, Malformed> {
        Ok(Parse::Done { source, len })
    }

    fn bad(why: &'static str) -> Result<Parse, Malformed> {
        Err(Malformed(why))
    }

    /// A v2 header as HAProxy and the cloud balancers lay it out: the
    /// signature, version and command, family, length, then `body`.
    fn v2(ver_cmd: u8, family: u8, body: &[u8]) -> Vec<u8> {
        let mut out = V2_SIG.to_vec();
        out.extend_from_slice(&[ver_cmd, family]);
        let len = u16::try_from(body.len()).expect("a 16-bit length");
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn tlv(kind: u8, value: &[u8]) -> Vec<u8> {
        let mut out = vec![kind];
        let len = u16::try_from(value.len()).expect("a 16-bit length");
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(value);
        out
    }

    /// 203.0.113.7:51234 to 10.0.0.5:443, TCP over IPv4.
    fn tcp4_block() -> Vec<u8> {
        let mut out = vec![203, 0, 113, 7, 10, 0, 0, 5];
        out.extend_from_slice(&51234u16.to_be_bytes());
        out.extend_from_slice(&443u16.to_be_bytes());
        out
    }

    /// [2001:db8::1]:40000 to [2001:db8::2]:8443, TCP over IPv6.
    fn tcp6_block() -> Vec<u8> {
        let src: Ipv6Addr = "2001:db8::1".parse().expect("an IPv6 address");
        let dst: Ipv6Addr = "2001:db8::2".parse().expect("an IPv6 address");
        let mut out = src.octets().to_vec();
        out.extend_from_slice(&dst.octets());
        out.extend_from_slice(&40000u16.to_be_bytes());
        out.extend_from_slice(&8443u16.to_be_bytes());
        out
    }

    /// TLVs HAProxy and AWS NLB send: ALPN, authority (SNI), NOOP padding,
    /// AWS's VPC endpoint ID (0xEA, subtype 0x01).
    fn some_tlvs() -> Vec<u8> {
        let mut out = tlv(0x01, b"h2");
        out.extend(tlv(0x02, b"example.com"));
        out.extend(tlv(0x04, b""));
        out.extend(tlv(0xEA, b"\x01vpce-08d2bf15fac5001c9"));
        out
    }

    /// Every good header of the tests, with the source it gives.
    fn good() -> Vec<(Vec<u8>, Source)> {
        let mut tcp4_tlvs = tcp4_block();
        tcp4_tlvs.extend(some_tlvs());
        let mut tcp6_tlvs = tcp6_block();
        tcp6_tlvs.extend(some_tlvs());
        let mut unix = vec![0; 216];
        unix[..9].copy_from_slice(b"/run/a.sk");
        let mut longest_v1 = b"PROXY UNKNOWN ".to_vec();
        let ffff = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff";
        longest_v1.extend(format!("{ffff} {ffff} 65535 65535\r\n").bytes());
        vec![
            (
                b"PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n".to_vec(),
                addr("192.168.0.1:56324"),
            ),
            (
                b"PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n".to_vec(),
                addr("255.255.255.255:65535"),
            ),
            (
                b"PROXY TCP4 0.0.0.0 10.0.0.1 0 80\r\n".to_vec(),
                addr("0.0.0.0:0"),
            ),
            (
                b"PROXY TCP6 2001:db8::1 2001:db8::2 40000 8443\r\n".to_vec(),
                addr("[2001:db8::1]:40000"),
            ),
            (
                b"PROXY TCP6 ::ffff:192.0.2.1 ::1 1 2\r\n".to_vec(),
                addr("[::ffff:192.0.2.1]:1"),
            ),
            (b"PROXY UNKNOWN\r\n".to_vec(), Source::Own),
            (longest_v1, Source::Own),
            (v2(0x21, 0x11, &tcp4_block()), addr("203.0.113.7:51234")),
            (v2(0x21, 0x12, &tcp4_block()), addr("203.0.113.7:51234")),
            (v2(0x21, 0x11, &tcp4_tlvs), addr("203.0.113.7:51234")),
            (v2(0x21, 0x21, &tcp6_block()), addr("[2001:db8::1]:40000")),
            (v2(0x21, 0x22, &tcp6_block()), addr("[2001:db8::1]:40000")),
            (v2(0x21, 0x21, &tcp6_tlvs), addr("[2001:db8::1]:40000")),
            // HAProxy's health checks: LOCAL, AF_UNSPEC, no addresses.
            (v2(0x20, 0x00, &[]), Source::Own),
            // LOCAL ignores the family and whatever follows it.
            (v2(0x20, 0x11, &tcp4_block()), Source::Own),
            (v2(0x20, 0x77, &[1, 2]), Source::Own),
            (v2(0x21, 0x00, &[]), Source::Own),
            (v2(0x21, 0x00, &tcp4_block()), Source::Own),
            (v2(0x21, 0x31, &unix), Source::Own),
            (v2(0x21, 0x32, &unix), Source::Own),
        ]
    }

    #[test]
    fn good_headers_stop_where_they_end() {
        for (header, source) in good() {
            for after in [&b""[..], HTTP, TLS] {
                let mut buf = header.clone();
                buf.extend_from_slice(after);
                assert_eq!(parse(&buf), done(source, header.len()), "{buf:?}");
            }
        }
    }

    #[test]
    fn every_proper_prefix_needs_more() {
        for (header, _) in good() {
            for n in 0..header.len() {
                assert_eq!(parse(&header[..n]), Ok(Parse::Need), "{:?}", &header[..n]);
            }
        }
    }

    #[test]
    fn the_longest_v1_line_is_107_bytes() {
        let (header, _) = good().swap_remove(6);
        assert_eq!(header.len(), MAX_V1);
    }

    #[test]
    fn other_protocols_are_refused_at_their_first_byte() {
        for buf in [
            &b"G"[..],
            b"GET / HTTP/1.1\r\n",
            TLS,
            &TLS[..1],
            b"\r\n\r\n\0\r\nQUIX",
        ] {
            assert_eq!(parse(buf), bad("not a PROXY protocol header"), "{buf:?}");
        }
        assert_eq!(parse(b"PROXY"), Ok(Parse::Need));
        assert_eq!(parse(b"PROXYX"), bad("not a PROXY protocol header"));
        assert_eq!(parse(b"\r\n\r\n"), Ok(Parse::Need));
    }

    #[test]
    fn v1_malformed() {
        let cases: &[(&[u8], &str)] = &[
            (
                b"PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n",
                "v1: the protocol is not TCP4, TCP6 or UNKNOWN",
            ),
            (
                b"PROXY tcp4",
                "v1: the protocol is not TCP4, TCP6 or UNKNOWN",
            ),
            (
                b"PROXY UNKNOWNX\r\n",
                "v1: the protocol is not TCP4, TCP6 or UNKNOWN",
            ),
            (
                b"PROXY  TCP4",
                "v1: the protocol is not TCP4, TCP6 or UNKNOWN",
            ),
            (
                b"PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n",
                "v1: not exactly one space between fields",
            ),
            (
                b"PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n",
                "v1: not exactly one space between fields",
            ),
            (
                b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n",
                "v1: not exactly one space between fields",
            ),
            (b"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", "v1: missing fields"),
            (
                b"PROXY TCP4 \r\n",
                "v1: not exactly one space between fields",
            ),
            (
                b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",
                "v1: too many fields",
            ),
            (
                b"PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n",
                "v1: an address not of the family",
            ),
            (
                b"PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n",
                "v1: an address not of the family",
            ),
            (
                b"PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n",
                "v1: an address not of the family",
            ),
            (
                b"PROXY TCP4 1.2.3.4 localhost 1 2\r\n",
                "v1: an address not of the family",
            ),
            (
                b"PROXY TCP4 ::1 ::2 1 2\r\n",
                "v1: an address not of the family",
            ),
            (
                b"PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n",
                "v1: an address not of the family",
            ),
            (
                b"PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n",
                "v1: an address not of the family",
            ),
            (
                b"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n",
                "v1: a port that is not 0..=65535 without leading zeros",
            ),
            (
                b"PROXY TCP4 1.2.3.4 5.6.7.8 1 99999\r\n",
                "v1: a port that is not 0..=65535 without leading zeros",
            ),
            (
                b"PROXY TCP4 1.2.3.4 5.6.7.8 080 2\r\n",
                "v1: a port that is not 0..=65535 without leading zeros",
            ),
            (
                b"PROXY TCP4 1.2.3.4 5.6.7.8 +80 2\r\n",
                "v1: a port that is not 0..=65535 without leading zeros",
            ),
            (
                b"PROXY TCP4 1.2.3.4 5.6.7.8 1 -2\r\n",
                "v1: a port that is not 0..=65535 without leading zeros",
            ),
            (b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", "v1: a bare LF"),
            (b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\nGET", "v1: a bare LF"),
            (b"PROXY UNKNOWN\n", "v1: a bare LF"),
            (
                b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\r\n",
                "v1: CR not followed by LF",
            ),
            (
                b"PROXY TCP4 1.2.3.4\0",
                "v1: a byte that is not printable ASCII",
            ),
            (
                b"PROXY UNKNOWN \t\r\n",
                "v1: a byte that is not printable ASCII",
            ),
            (
                b"PROXY UNKNOWN \xc3\xa9\r\n",
                "v1: a byte that is not printable ASCII",
            ),
        ];
        for &(buf, why) in cases {
            assert_eq!(parse(buf), bad(why), "{:?}", String::from_utf8_lossy(buf));
        }
    }

    #[test]
    fn v1_wants_its_crlf_within_107_bytes() {
        let mut line = b"PROXY UNKNOWN ".to_vec();
        line.resize(MAX_V1 - 2, b'a');
        assert_eq!(parse(&line), Ok(Parse::Need));
        line.push(b'a');
        assert_eq!(parse(&line), bad("v1: no CRLF within 107 bytes"));
        line.extend_from_slice(b"\r\n");
        assert_eq!(parse(&line), bad("v1: no CRLF within 107 bytes"));
        // A CR as the 106th byte may still be the end.
        line.truncate(MAX_V1 - 2);
        line.push(b'\r');
        assert_eq!(parse(&line), Ok(Parse::Need));
        line.push(b'\n');
        assert_eq!(parse(&line), done(Source::Own, MAX_V1));
    }

    #[test]
    fn v2_malformed() {
        let mut over = tcp4_block();
        over.extend(tlv(0x01, b"h2"));
        over.pop();
        let mut two_left = tcp4_block();
        two_left.extend_from_slice(&[0x04, 0x00]);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (v2(0x11, 0x11, &tcp4_block()), "v2: the version is not 2"),
            (v2(0x31, 0x11, &tcp4_block()), "v2: the version is not 2"),
            (v2(0x22, 0x11, &tcp4_block()), "v2: an unknown command"),
            (v2(0x2F, 0x00, &[]), "v2: an unknown command"),
            (
                v2(0x21, 0x13, &tcp4_block()),
                "v2: an unknown family or transport",
            ),
            (
                v2(0x21, 0x10, &tcp4_block()),
                "v2: an unknown family or transport",
            ),
            (
                v2(0x21, 0x41, &tcp4_block()),
                "v2: an unknown family or transport",
            ),
            (
                v2(0x21, 0x11, &tcp4_block()[..11]),
                "v2: the length is shorter than the addresses",
            ),
            (
                v2(0x21, 0x21, &tcp4_block()),
                "v2: the length is shorter than the addresses",
            ),
            (
                v2(0x21, 0x31, &[0; 215]),
                "v2: the length is shorter than the addresses",
            ),
            (v2(0x21, 0x11, &over), "v2: a TLV overruns the header"),
            (v2(0x21, 0x11, &two_left), "v2: a TLV overruns the header"),
            (v2(0x21, 0x11, &vec![0; MAX_V2_BODY + 1]), "v2: too long"),
            (v2(0x20, 0x00, &vec![0; 0xFFFF]), "v2: too long"),
        ];
        for (buf, why) in cases {
            assert_eq!(parse(&buf), bad(why), "{buf:?}");
        }
    }

    #[test]
    fn v2_is_refused_at_the_first_wrong_byte() {
        // The preamble alone decides, before any address arrives.
        assert_eq!(
            parse(&v2(0x11, 0x11, &[])[..13]),
            bad("v2: the version is not 2")
        );
        assert_eq!(
            parse(&v2(0x23, 0x11, &[])[..13]),
            bad("v2: an unknown command")
        );
        assert_eq!(
            parse(&v2(0x21, 0x14, &[])[..14]),
            bad("v2: an unknown family or transport")
        );
        assert_eq!(
            parse(&v2(0x21, 0x11, &[0; 4])),
            bad("v2: the length is shorter than the addresses")
        );
        let mut long = v2(0x21, 0x11, &[]);
        long[14..16].copy_from_slice(&[0x04, 0x01]);
        assert_eq!(parse(&long), bad("v2: too long"));
    }

    #[test]
    fn max_header_is_always_enough() {
        let mut body = tcp4_block();
        let pad = MAX_V2_BODY - body.len() - 3;
        body.extend(tlv(0x04, &vec![0; pad]));
        let header = v2(0x21, 0x11, &body);
        assert_eq!(header.len(), MAX_HEADER);
        assert_eq!(parse(&header), done(addr("203.0.113.7:51234"), MAX_HEADER));
        assert_eq!(parse(&header[..MAX_HEADER - 1]), Ok(Parse::Need));
    }
}
