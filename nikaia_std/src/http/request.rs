//! A request as a handler sees it, whichever protocol carried it.

use bytes::Bytes;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;

/// The HTTP version of a request.
///
/// Non-exhaustive: a `match` on it needs an arm for the versions to come
/// (`spec/http.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Version {
    Http10,
    Http11,
    Http2,
    /// HTTP/3 over QUIC (`spec/http3.md`).
    Http3,
}

impl Version {
    /// The version as an access log writes it.
    pub(crate) fn log_name(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
            Version::Http2 => "HTTP/2.0",
            Version::Http3 => "HTTP/3.0",
        }
    }
}

/// Who is at the other end of a connection: an address and port for TCP,
/// the UDP address and port of a QUIC client (HTTP/3), or a peer on a
/// Unix socket (which has no address worth naming).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Peer {
    Tcp(SocketAddr),
    Unix,
    /// A QUIC client: its address when the request arrived (a connection
    /// may move to another address; `spec/http3.md`, "Transport").
    Quic(SocketAddr),
}

impl Peer {
    /// Where the backend cannot name the peer (a JS host that gives none):
    /// the unspecified address, `0.0.0.0:0`.
    pub(crate) const UNKNOWN: Peer = Peer::Tcp(SocketAddr::V4(std::net::SocketAddrV4::new(
        std::net::Ipv4Addr::UNSPECIFIED,
        0,
    )));

    /// The peer's IP address, for TCP and QUIC.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Peer::Tcp(a) | Peer::Quic(a) => Some(a.ip()),
            Peer::Unix => None,
        }
    }
}

impl From<SocketAddr> for Peer {
    fn from(a: SocketAddr) -> Peer {
        Peer::Tcp(a)
    }
}

/// `203.0.113.7:52814`, `[2001:db8::1]:443`; `unix:` for a Unix socket's
/// peer, as nginx logs it.
impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Tcp(a) | Peer::Quic(a) => a.fmt(f),
            Peer::Unix => f.write_str("unix:"),
        }
    }
}

/// The text of a request, as ranges of one buffer of fields: the bytes of
/// an HTTP/1 head as they arrived, or fields a protocol decoded into a
/// buffer of its own. What each protocol fills in before a [`Request`] is
/// made.
#[derive(Debug)]
pub(crate) struct Text {
    pub method: Range<usize>,
    pub target: Range<usize>,
    pub version: Version,
    pub headers: Vec<(Range<usize>, Range<usize>)>,
    /// The target's path, percent-decoded once.
    pub path: DecodedPath,
    pub query: Option<Range<usize>>,
}

/// A request's path, percent-decoded once: its exact bytes, and the text a
/// handler reads (`spec/http.md`). A path that is UTF-8, nearly every one,
/// is held once, in a `String`; one that is not holds its bytes and a lossy
/// copy (each sequence that is not UTF-8 there as U+FFFD), boxed, so the
/// path is no larger than a `String` in every request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DecodedPath {
    Text(String),
    Bytes(Box<Lossy>),
}

/// A decoded path that is not UTF-8: its bytes, and its lossy text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Lossy {
    exact: Vec<u8>,
    text: String,
}

impl DecodedPath {
    pub(crate) fn new(bytes: Vec<u8>) -> DecodedPath {
        match String::from_utf8(bytes) {
            Ok(text) => DecodedPath::Text(text),
            Err(e) => {
                let exact = e.into_bytes();
                let text = String::from_utf8_lossy(&exact).into_owned();
                DecodedPath::Bytes(Box::new(Lossy { exact, text }))
            }
        }
    }

    /// The path as text: lossy where the bytes are not UTF-8.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            DecodedPath::Text(t) => t,
            DecodedPath::Bytes(l) => &l.text,
        }
    }

    /// The exact bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            DecodedPath::Text(t) => t.as_bytes(),
            DecodedPath::Bytes(l) => &l.exact,
        }
    }
}

/// What an answered request leaves for its connection's next one: the
/// capacity of its header index and of its decoded path, so a request
/// read on a kept-alive connection allocates neither. Small capacities
/// only: a connection that once read a large head does not keep its
/// buffers while it idles.
#[derive(Debug, Default)]
pub(crate) struct Spare {
    pub(crate) headers: Vec<(Range<usize>, Range<usize>)>,
    pub(crate) path: Vec<u8>,
}

/// The most header fields, and path bytes, a [`Spare`] keeps room for.
const SPARE_HEADERS: usize = 32;
const SPARE_PATH: usize = 512;

impl Spare {
    /// Takes back what `req` allocated.
    pub(crate) fn keep(&mut self, req: Request) {
        let Request { headers, path, .. } = req;
        if headers.capacity() <= SPARE_HEADERS {
            self.headers = headers;
            self.headers.clear();
        }
        if let DecodedPath::Text(text) = path {
            if text.capacity() <= SPARE_PATH {
                self.path = text.into_bytes();
                self.path.clear();
            }
        }
    }
}

/// The methods whose text a request keeps as it parses (the rest is read
/// from its fields each time it is asked for).
const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"];

/// One request: its text ([`Text`] and the fields it points into), the
/// route's wildcard value, the body,
/// the peer and the client.
#[derive(Clone, Debug)]
pub struct Request {
    pub(crate) fields: Bytes,
    pub(crate) method: Range<usize>,
    /// The method's text when it is one of [`METHODS`], found once: the
    /// pipeline asks for the method several times per request.
    known_method: Option<&'static str>,
    pub(crate) target: Range<usize>,
    pub(crate) version: Version,
    pub(crate) headers: Vec<(Range<usize>, Range<usize>)>,
    pub(crate) path: DecodedPath,
    pub(crate) query: Option<Range<usize>>,
    /// Where the route's wildcard value starts in the path. The same in its
    /// bytes and its text: the route's prefix is UTF-8 and matched the bytes
    /// before it, so the lossy text has those bytes unchanged.
    pub(crate) param: Option<usize>,
    pub(crate) body: Bytes,
    pub(crate) peer: Peer,
    pub(crate) client: Peer,
    /// Bytes of a streamed body handed to its sink (the access log's
    /// `received`; a whole body's is `body`'s length).
    pub(crate) received: u64,
}

impl Request {
    /// A request from what its protocol parsed (`text`, ranges of
    /// `fields`), its body and its peer.
    pub(crate) fn new(fields: Bytes, text: Text, body: Bytes, peer: Peer) -> Request {
        let sent = &fields[text.method.clone()];
        let known_method = METHODS.iter().copied().find(|m| m.as_bytes() == sent);
        Request {
            known_method,
            fields,
            method: text.method,
            target: text.target,
            version: text.version,
            headers: text.headers,
            path: text.path,
            query: text.query,
            param: None,
            body,
            client: peer.clone(),
            peer,
            received: 0,
        }
    }

    /// Bytes of body this request brought: its sink's, or its whole body's.
    pub(crate) fn received(&self) -> u64 {
        self.received.max(self.body.len() as u64)
    }

    fn slice(&self, r: &Range<usize>) -> &[u8] {
        &self.fields[r.clone()]
    }

    fn text(&self, r: &Range<usize>) -> &str {
        // The parser accepted only ASCII tokens for the ranges read this way.
        std::str::from_utf8(self.slice(r)).unwrap_or("")
    }

    /// The method, as sent (`GET`, `HEAD`, ...).
    pub fn method(&self) -> &str {
        match self.known_method {
            Some(method) => method,
            None => self.text(&self.method),
        }
    }

    /// The request target exactly as sent (still percent-encoded).
    pub fn target(&self) -> &str {
        self.text(&self.target)
    }

    /// The path, percent-decoded exactly once, without the query. Where the
    /// decoded bytes are not UTF-8, each sequence that is not is U+FFFD:
    /// [`path_bytes`](Request::path_bytes) has them exactly.
    pub fn path(&self) -> &str {
        self.path.as_str()
    }

    /// The path's bytes, percent-decoded exactly once, without the query:
    /// a name that is not UTF-8 (`caf%E9.txt`, Latin-1) exactly as sent.
    pub fn path_bytes(&self) -> &[u8] {
        self.path.as_bytes()
    }

    /// The query string after `?`, still encoded.
    pub fn query(&self) -> Option<&str> {
        self.query.as_ref().map(|r| self.text(r))
    }

    /// The value the route's tail wildcard (`/files/*name`) matched, decoded.
    /// Lossy as [`path`](Request::path) is: a name that is not UTF-8 has
    /// U+FFFD in it here, so a file opened by it is another name (usually
    /// missing, 404); [`param_bytes`](Request::param_bytes) has it exactly.
    pub fn param(&self) -> Option<&str> {
        self.param.and_then(|i| self.path.as_str().get(i..))
    }

    /// The value the route's tail wildcard matched, decoded, as its exact
    /// bytes: the name to open for a file whose name is not UTF-8.
    pub fn param_bytes(&self) -> Option<&[u8]> {
        self.param.and_then(|i| self.path.as_bytes().get(i..))
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// The first header with this name (case-insensitive), if its value is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.header_bytes(name)
            .and_then(|v| std::str::from_utf8(v).ok())
    }

    /// The first header with this name (case-insensitive), as bytes.
    pub fn header_bytes(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| self.slice(n).eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| self.slice(v))
    }

    /// Where the first header with this name has its value in the request's
    /// text (for the access line, which keeps the text, not the request).
    pub(crate) fn header_range(&self, name: &str) -> Option<Range<usize>> {
        self.headers
            .iter()
            .find(|(n, _)| self.slice(n).eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| v.clone())
    }

    /// Every header, in the order sent.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.headers
            .iter()
            .map(move |(n, v)| (self.text(n), self.slice(v)))
    }

    /// Who is at the other end of the connection.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The client the request is from: the peer, unless the peer is one of
    /// the runtime's `trusted-proxies` and names the client in a PROXY
    /// protocol header or `X-Forwarded-For` (`spec/site.md`). An address
    /// from `X-Forwarded-For` has port 0.
    pub fn client(&self) -> &Peer {
        &self.client
    }

    pub(crate) fn is_head(&self) -> bool {
        self.method() == "HEAD"
    }
}

/// Why a request was refused before it reached a route: the status to
/// answer with (then close), and the reason for the log.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Reject {
    pub status: u16,
    pub why: &'static str,
}

pub(crate) fn reject(status: u16, why: &'static str) -> Reject {
    Reject { status, why }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decoded_path_is_no_larger_than_a_string() {
        assert_eq!(
            std::mem::size_of::<DecodedPath>(),
            std::mem::size_of::<String>()
        );
        let utf8 = DecodedPath::new(b"/caf\xc3\xa9".to_vec());
        assert!(matches!(utf8, DecodedPath::Text(_)));
        assert_eq!(
            (utf8.as_str(), utf8.as_bytes()),
            ("/café", "/café".as_bytes())
        );
        let latin1 = DecodedPath::new(b"/caf\xe9".to_vec());
        assert_eq!(
            (latin1.as_str(), latin1.as_bytes()),
            ("/caf\u{FFFD}", &b"/caf\xe9"[..])
        );
    }
}
