//! The client's address under a site's rules (`spec/site.md`, "The
//! client's address"), on real sockets: `X-Forwarded-For` believed only
//! from a trusted peer, the access log's client and user, PROXY headers
//! (v1 and v2) required, taken from trusted peers only, bounded, and read
//! before the TLS handshake.

use nikaia_std::http::Running;
use nikaia_tests::curl::curl;
use nikaia_tests::site::{runtime, serve, site, url, Site};
use nikaia_tests::{TestPki, TlsClient};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

// ---------------------------------------------------------------------------
// The client's address.

fn read_log(path: &Path, lines: usize) -> Vec<String> {
    for _ in 0..200 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let got: Vec<String> = text.lines().map(str::to_owned).collect();
        if got.len() >= lines {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the access log has fewer than {lines} lines");
}

#[test]
fn x_forwarded_for_is_believed_only_from_a_trusted_peer() {
    let s = site();
    let who = |trusted: &str, xff: &[&str]| {
        let text = format!("trusted-proxies = [{trusted}]\n");
        let running = serve(&s, runtime(&s, &text, None));
        let mut args = Vec::new();
        for v in xff {
            args.push("-H".to_owned());
            args.push(format!("X-Forwarded-For: {v}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        String::from_utf8(curl(&url(&running, "/who"), &args).body).unwrap()
    };
    // Untrusted: the header is ignored, whatever it says.
    let seen = who("\"10.0.0.0/8\"", &["198.51.100.7"]);
    assert!(seen.starts_with("127.0.0.1:"), "{seen}");
    // Trusted: the rightmost address that is not trusted.
    let seen = who(
        "\"127.0.0.1\", \"10.0.0.0/8\"",
        &["6.6.6.6, 198.51.100.7, 10.2.3.4"],
    );
    assert!(seen.starts_with("198.51.100.7:0 127.0.0.1:"), "{seen}");
    let seen = who("\"127.0.0.0/8\"", &["6.6.6.6", "[2001:db8::5]:443"]);
    assert!(seen.starts_with("[2001:db8::5]:0 "), "{seen}");
}

#[test]
fn the_access_log_names_the_client_and_the_user() {
    let s = site();
    let log = s.tmp.path().join("access.log");
    let text = format!(
        "access-log = {:?}\ntrusted-proxies = [\"127.0.0.1\"]\n\
         [[auth]]\nmatch = \"staging/**\"\nhtpasswd = \"users.htpasswd\"\nplain-http = true\n",
        log.to_str().unwrap()
    );
    let running = serve(&s, runtime(&s, &text, None));
    let ok = curl(
        &url(&running, "/staging/secret.txt"),
        &[
            "-u",
            "alice:open sesame",
            "-H",
            "X-Forwarded-For: 203.0.113.5",
        ],
    );
    assert_eq!((ok.status, &ok.body[..]), (200, &b"the secret"[..]));
    let lines = read_log(&log, 1);
    assert!(lines[0].starts_with("203.0.113.5 - alice ["), "{lines:?}");
}

/// A v1 PROXY header for a client at `src`.
fn proxy_v1(src: &str) -> String {
    format!("PROXY TCP4 {src} 127.0.0.1 51000 8080\r\n")
}

/// A v2 PROXY header, TCP over IPv6, from `[2001:db8::9]:40000`.
fn proxy_v2() -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    h.extend_from_slice(&[0x21, 0x21, 0, 36]);
    let src: std::net::Ipv6Addr = "2001:db8::9".parse().unwrap();
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
    h.extend_from_slice(&40000u16.to_be_bytes());
    h.extend_from_slice(&443u16.to_be_bytes());
    h
}

/// Sends `bytes` on a new connection and reads until the server closes.
fn exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    out
}

fn proxied_site(s: &Site, trusted: &str, pki: Option<&TestPki>) -> Running {
    let text = format!(
        "trusted-proxies = [{trusted}]\nlisten = {{ address = \"127.0.0.1:0\", proxy-protocol = true }}\n"
    );
    serve(s, runtime(s, &text, pki))
}

#[test]
fn proxy_headers_are_required_taken_from_trusted_peers_and_bounded() {
    let s = site();
    let running = proxied_site(&s, "\"127.0.0.1\"", None);
    let addr = running.local_addr();
    let get = b"GET /who HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";

    let v1 = exchange(addr, &[proxy_v1("192.0.2.44").as_bytes(), get].concat());
    let v1 = String::from_utf8_lossy(&v1);
    assert!(v1.starts_with("HTTP/1.1 200"), "{v1}");
    assert!(v1.contains("192.0.2.44:51000 127.0.0.1:"), "{v1}");

    let v2 = exchange(addr, &[&proxy_v2()[..], get].concat());
    let v2 = String::from_utf8_lossy(&v2);
    assert!(v2.contains("[2001:db8::9]:40000 127.0.0.1:"), "{v2}");

    // curl's own PROXY v1, and h2c's preface after the header.
    let seen = curl(&url(&running, "/who"), &["--haproxy-protocol"]);
    assert_eq!(seen.status, 200);
    let seen = curl(
        &url(&running, "/a.txt"),
        &["--haproxy-protocol", "--http2-prior-knowledge"],
    );
    assert_eq!(
        (seen.status, &seen.body[..]),
        (200, &b"0123456789abcdef"[..])
    );

    // Without a header, with a malformed one, or one past the bound: closed
    // without an answer.
    for bad in [
        get.to_vec(),
        b"PROXY TCP4 192.0.2.1 127.0.0.1 1 2\n".to_vec(),
        b"PROXY TCP4 999.0.2.1 127.0.0.1 1 2\r\n".to_vec(),
        b"PROXY TCP4 192.0.2.1  127.0.0.1 1 2\r\n".to_vec(),
        [b"PROXY UNKNOWN ".to_vec(), vec![b'x'; 200]].concat(),
        {
            let mut h = proxy_v2();
            h[15] = 0xff; // a length past the bound
            h[14] = 0xff;
            h
        },
    ] {
        assert_eq!(
            exchange(addr, &bad),
            b"",
            "{:?}",
            String::from_utf8_lossy(&bad)
        );
    }
    // Everyone else is still served.
    let seen = curl(&url(&running, "/a.txt"), &["--haproxy-protocol"]);
    assert_eq!(seen.status, 200);

    // From a peer that is not trusted, even a good header is refused.
    let untrusted = proxied_site(&s, "\"10.0.0.0/8\"", None);
    let closed = exchange(
        untrusted.local_addr(),
        &[proxy_v1("192.0.2.44").as_bytes(), get].concat(),
    );
    assert_eq!(closed, b"");
}

#[test]
fn a_proxy_header_comes_before_the_tls_handshake() {
    let s = site();
    let pki = TestPki::new();
    let running = proxied_site(&s, "\"127.0.0.1\"", Some(&pki));
    let mut tcp = TcpStream::connect(running.local_addr()).unwrap();
    tcp.write_all(proxy_v1("192.0.2.80").as_bytes()).unwrap();
    let mut tls = TlsClient::over(tcp, pki.client_config());
    let reply = tls.get("/who");
    assert_eq!(reply.status, 200);
    assert!(
        reply.text().starts_with("192.0.2.80:51000 "),
        "{}",
        reply.text()
    );
}
