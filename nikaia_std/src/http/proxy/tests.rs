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
