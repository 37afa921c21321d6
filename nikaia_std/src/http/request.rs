//! A parsed request as a handler sees it.

use bytes::Bytes;
use std::net::SocketAddr;
use std::ops::Range;

/// The HTTP version of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

/// One request: its head (kept as the bytes that arrived, with offsets into
/// them), the decoded path, the route's wildcard value, and the body.
#[derive(Clone, Debug)]
pub struct Request {
    pub(crate) head: Bytes,
    pub(crate) method: Range<usize>,
    pub(crate) target: Range<usize>,
    pub(crate) version: Version,
    pub(crate) headers: Vec<(Range<usize>, Range<usize>)>,
    pub(crate) path: String,
    pub(crate) query: Option<Range<usize>>,
    pub(crate) param: Option<String>,
    pub(crate) body: Bytes,
    pub(crate) peer: SocketAddr,
}

impl Request {
    /// A request from its head's bytes and what the parser found in them.
    pub(crate) fn new(
        head: Bytes,
        parsed: super::parse::Head,
        body: Bytes,
        peer: SocketAddr,
    ) -> Request {
        Request {
            head,
            method: parsed.method,
            target: parsed.target,
            version: parsed.version,
            headers: parsed.headers,
            path: parsed.path,
            query: parsed.query,
            param: None,
            body,
            peer,
        }
    }

    fn slice(&self, r: &Range<usize>) -> &[u8] {
        &self.head[r.clone()]
    }

    fn text(&self, r: &Range<usize>) -> &str {
        // The parser accepted only ASCII tokens for the ranges read this way.
        std::str::from_utf8(self.slice(r)).unwrap_or("")
    }

    /// The method, as sent (`GET`, `HEAD`, ...).
    pub fn method(&self) -> &str {
        self.text(&self.method)
    }

    /// The request target exactly as sent (still percent-encoded).
    pub fn target(&self) -> &str {
        self.text(&self.target)
    }

    /// The path, percent-decoded exactly once, without the query.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The query string after `?`, still encoded.
    pub fn query(&self) -> Option<&str> {
        self.query.as_ref().map(|r| self.text(r))
    }

    /// The value the route's tail wildcard (`/files/*name`) matched, decoded.
    pub fn param(&self) -> Option<&str> {
        self.param.as_deref()
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

    /// Where the first header with this name has its value in the head
    /// (for the access line, which keeps the head, not the request).
    #[cfg(target_os = "linux")]
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

    /// The request body (empty when none was sent).
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The client's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    pub(crate) fn is_head(&self) -> bool {
        self.method() == "HEAD"
    }
}
