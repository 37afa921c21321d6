//! The ACME client's HTTP: HTTP/1.1 over rustls to the CA, blocking, on
//! the ACME thread (never a worker), one kept-alive connection at a time,
//! a deadline on every request.

use crate::http::h1::chunked::Chunked;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest one request may take, connect to last byte.
pub(super) const DEADLINE: Duration = Duration::from_secs(30);
/// The longest a connect may take, per address.
const CONNECT: Duration = Duration::from_secs(10);
/// The most a CA's answer may hold (a certificate chain is a few KiB).
const MAX_BODY: usize = 1 << 20;

/// An answer from the CA.
#[derive(Debug)]
pub(super) struct Response {
    pub status: u16,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// A header's value (the first of that name).
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Where a request goes: `https://HOST[:PORT]/PATH`.
struct Url<'a> {
    host: &'a str,
    port: u16,
    /// `HOST` or `HOST:PORT` as the `Host` header writes it.
    authority: &'a str,
    path: &'a str,
}

fn parse_url(url: &str) -> io::Result<Url<'_>> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not an https:// URL: {url}"),
        )
    };
    let rest = url.strip_prefix("https://").ok_or_else(bad)?;
    let (authority, path) = rest
        .find('/')
        .map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().map_err(|_| bad())?),
        _ => (authority, 443),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(bad());
    }
    Ok(Url {
        host,
        port,
        authority,
        path,
    })
}

/// A client for one CA.
pub(super) struct Http {
    tls: Arc<ClientConfig>,
    /// The connection kept alive from the last request, with its authority.
    kept: Option<(String, StreamOwned<ClientConnection, TcpStream>)>,
}

impl Http {
    pub(super) fn new(tls: Arc<ClientConfig>) -> Http {
        Http { tls, kept: None }
    }

    /// Sends one request and reads its answer. A kept connection that
    /// fails before any byte of the answer came is replaced once (the CA
    /// closed it while idle; the request never reached it).
    pub(super) fn request(
        &mut self,
        method: &str,
        url: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> io::Result<Response> {
        let target = parse_url(url)?;
        let started = Instant::now();
        let reused = self
            .kept
            .as_ref()
            .is_some_and(|(authority, _)| authority == target.authority);
        if reused {
            let (_, stream) = self.kept.take().expect("kept");
            match exchange(stream, &target, method, content_type, body, started) {
                Ok((response, stream)) => return Ok(self.keep(&target, response, stream)),
                Err(Exchange::Before(_)) => {}
                Err(Exchange::After(e)) => return Err(e),
            }
        }
        let stream = self.connect(&target, started)?;
        match exchange(stream, &target, method, content_type, body, started) {
            Ok((response, stream)) => Ok(self.keep(&target, response, stream)),
            Err(Exchange::Before(e) | Exchange::After(e)) => Err(e),
        }
    }

    fn keep(
        &mut self,
        target: &Url<'_>,
        response: Response,
        stream: Option<StreamOwned<ClientConnection, TcpStream>>,
    ) -> Response {
        self.kept = stream.map(|s| (target.authority.to_owned(), s));
        response
    }

    fn connect(
        &self,
        target: &Url<'_>,
        started: Instant,
    ) -> io::Result<StreamOwned<ClientConnection, TcpStream>> {
        let mut last = io::Error::new(
            io::ErrorKind::NotFound,
            format!("{}: no address", target.host),
        );
        for addr in (target.host, target.port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, CONNECT) {
                Ok(tcp) => {
                    tcp.set_nodelay(true)?;
                    set_deadline(&tcp, started)?;
                    let name = ServerName::try_from(target.host.to_owned())
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                    let conn =
                        ClientConnection::new(self.tls.clone(), name).map_err(io::Error::other)?;
                    return Ok(StreamOwned::new(conn, tcp));
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// The time left of a request's deadline, as the socket's timeouts.
fn set_deadline(tcp: &TcpStream, started: Instant) -> io::Result<()> {
    let left = DEADLINE
        .checked_sub(started.elapsed())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "the CA took too long"))?;
    tcp.set_read_timeout(Some(left))?;
    tcp.set_write_timeout(Some(left))
}

/// Where an exchange failed: before any byte of the answer (a stale kept
/// connection: safe to send again), or after.
enum Exchange {
    Before(io::Error),
    After(io::Error),
}

type Kept = Option<StreamOwned<ClientConnection, TcpStream>>;

fn exchange(
    mut stream: StreamOwned<ClientConnection, TcpStream>,
    target: &Url<'_>,
    method: &str,
    content_type: Option<&str>,
    body: &[u8],
    started: Instant,
) -> Result<(Response, Kept), Exchange> {
    set_deadline(&stream.sock, started).map_err(Exchange::Before)?;
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: nikaia-acme/{}\r\nAccept: */*\r\n",
        target.path,
        target.authority,
        env!("CARGO_PKG_VERSION")
    );
    if let Some(ct) = content_type {
        head.push_str(&format!("Content-Type: {ct}\r\n"));
    }
    if method == "POST" || !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let sent = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .and_then(|()| stream.flush());
    sent.map_err(Exchange::Before)?;
    // The head: read until its blank line.
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let (status, headers, head_len) = loop {
        let n = match stream.read(&mut chunk) {
            Ok(0) if buf.is_empty() => {
                return Err(Exchange::Before(io::ErrorKind::UnexpectedEof.into()))
            }
            Ok(0) => return Err(Exchange::After(io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => n,
            Err(e)
                if buf.is_empty()
                    && e.kind() != io::ErrorKind::TimedOut
                    && e.kind() != io::ErrorKind::WouldBlock =>
            {
                return Err(Exchange::Before(e))
            }
            Err(e) => return Err(Exchange::After(e)),
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Response::new(&mut fields);
        match parsed.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let headers = parsed
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_owned(),
                            String::from_utf8_lossy(h.value).trim().to_owned(),
                        )
                    })
                    .collect::<Vec<_>>();
                break (parsed.code.unwrap_or(0), headers, len);
            }
            Ok(httparse::Status::Partial) if buf.len() < 64 << 10 => {}
            Ok(httparse::Status::Partial) => {
                return Err(Exchange::After(invalid("an answer head over 64 KiB")))
            }
            Err(e) => {
                return Err(Exchange::After(invalid(&format!(
                    "a malformed answer: {e}"
                ))))
            }
        }
    };
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    let rest = buf.split_off(head_len);
    let header = |name: &str| response.header(name).map(str::to_ascii_lowercase);
    let close = header("connection").is_some_and(|v| v.contains("close"));
    let bodiless =
        method == "HEAD" || status == 204 || status == 304 || (100..200).contains(&status);
    let body = if bodiless {
        Ok((Vec::new(), true))
    } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        read_chunked(&mut stream, rest)
    } else if let Some(len) = response.header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| Exchange::After(invalid("a bad Content-Length")))?;
        read_length(&mut stream, rest, len)
    } else {
        read_to_end(&mut stream, rest).map(|b| (b, false))
    };
    let (body, framed) = body.map_err(Exchange::After)?;
    response.body = body;
    let kept = (framed && !close).then_some(stream);
    Ok((response, kept))
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_owned())
}

fn read_length(
    stream: &mut impl Read,
    mut body: Vec<u8>,
    len: usize,
) -> io::Result<(Vec<u8>, bool)> {
    if len > MAX_BODY {
        return Err(invalid("an answer body over 1 MiB"));
    }
    if body.len() > len {
        return Err(invalid("more bytes than the Content-Length"));
    }
    let have = body.len();
    body.resize(len, 0);
    stream.read_exact(&mut body[have..])?;
    Ok((body, true))
}

fn read_chunked(stream: &mut impl Read, rest: Vec<u8>) -> io::Result<(Vec<u8>, bool)> {
    let mut decoder = Chunked::new(MAX_BODY as u64, 8 << 10);
    let mut input = rest;
    let mut body = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let done = decoder
            .feed(&input[decoder.consumed.min(input.len())..], &mut body)
            .map_err(|r| invalid(r.why))?;
        if done {
            return Ok((body, true));
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        input.extend_from_slice(&chunk[..n]);
    }
}

fn read_to_end(stream: &mut impl Read, mut body: Vec<u8>) -> io::Result<Vec<u8>> {
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(body),
            Ok(n) if body.len() + n <= MAX_BODY => body.extend_from_slice(&chunk[..n]),
            Ok(_) => return Err(invalid("an answer body over 1 MiB")),
            // A CA that closes without close_notify ends the body too.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(body),
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_port_and_path() {
        let u = parse_url("https://acme-v02.api.letsencrypt.org/directory").unwrap();
        assert_eq!(
            (u.host, u.port, u.authority, u.path),
            (
                "acme-v02.api.letsencrypt.org",
                443,
                "acme-v02.api.letsencrypt.org",
                "/directory"
            )
        );
        let u = parse_url("https://127.0.0.1:14000/dir").unwrap();
        assert_eq!((u.host, u.port, u.path), ("127.0.0.1", 14000, "/dir"));
        let u = parse_url("https://[::1]:8443").unwrap();
        assert_eq!((u.host, u.port, u.path), ("::1", 8443, "/"));
        assert!(parse_url("http://ca/dir").is_err());
        assert!(parse_url("https://:80/").is_err());
    }
}
