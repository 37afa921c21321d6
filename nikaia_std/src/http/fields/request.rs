//! A request's field section, as HPACK or QPACK decodes it, checked by the
//! rules of RFC 9113 §8.2–8.3 (RFC 9114 §4.2–4.3 are the same for HTTP/3)
//! and laid out as the [`Text`] every protocol fills in:
//! the pseudo-header fields become the method and target, `:authority`
//! becomes `Host` when the client sent none, cookie crumbs are joined.

use crate::http::request::{reject, DecodedPath, Reject, Text, Version};
use crate::http::target::{split_target, valid_host};
use crate::text::percent::percent_decode;
use bytes::Bytes;
use std::ops::{ControlFlow, Range};

/// What a header list that cannot be served gets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Malformed (§8.1.1): the stream is reset with PROTOCOL_ERROR
    /// (HTTP/3: H3_MESSAGE_ERROR, RFC 9114 §4.1.2).
    Malformed(&'static str),
    /// Well-formed HTTP/2 but not a request we serve: answered with this
    /// status, as HTTP/1.1 answers the same fault (a bad Host, a path that
    /// is not one, a list over `max-header-bytes`).
    Answer(Reject),
    /// Malformed, and answered as HTTP/1.1 answers it before the stream is
    /// reset with PROTOCOL_ERROR (§8.1.1 allows the response first): a
    /// `Host` that disagrees with `:authority` (§8.3.1).
    AnswerThenReset(Reject),
}

/// A request's fields as they arrive, then checked.
pub(crate) struct Fields {
    /// The protocol the request came by, for its [`Text`].
    version: Version,
    buf: Vec<u8>,
    method: Option<Range<usize>>,
    scheme: Option<Range<usize>>,
    authority: Option<Range<usize>>,
    path: Option<Range<usize>>,
    headers: Vec<(Range<usize>, Range<usize>)>,
    cookies: Vec<Range<usize>>,
    host: Option<Range<usize>>,
    priority: Option<Range<usize>>,
    content_length: Option<u64>,
    regular: bool,
    fault: Option<&'static str>,
    /// Trailers: only regular fields, and none is kept.
    trailers: bool,
}

/// A checked request: its text over `fields`, and what framing and
/// scheduling need from it.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub fields: Bytes,
    pub text: Text,
    pub content_length: Option<u64>,
    /// RFC 9218 urgency (0 most urgent .. 7), 3 when not given.
    pub urgency: u8,
}

const CONNECTION_SPECIFIC: [&[u8]; 5] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
];

impl Fields {
    /// The fields of a request's header section, by `version` (HTTP/2 or
    /// HTTP/3).
    pub(crate) fn request(version: Version) -> Fields {
        Fields {
            version,
            buf: Vec::new(),
            method: None,
            scheme: None,
            authority: None,
            path: None,
            headers: Vec::new(),
            cookies: Vec::new(),
            host: None,
            priority: None,
            content_length: None,
            regular: false,
            fault: None,
            trailers: false,
        }
    }

    /// The fields of a trailer section (§8.1): checked, then dropped.
    pub(crate) fn trailers(version: Version) -> Fields {
        Fields {
            trailers: true,
            ..Fields::request(version)
        }
    }

    /// One decoded field. Stops (and is then refused) at the first fault.
    pub(crate) fn field(&mut self, name: &[u8], value: &[u8]) -> ControlFlow<()> {
        match self.check(name, value) {
            Ok(()) => ControlFlow::Continue(()),
            Err(why) => {
                self.fault = Some(why);
                ControlFlow::Break(())
            }
        }
    }

    fn put(&mut self, bytes: &[u8]) -> Range<usize> {
        let start = self.buf.len();
        self.buf.extend_from_slice(bytes);
        start..self.buf.len()
    }

    fn check(&mut self, name: &[u8], value: &[u8]) -> Result<(), &'static str> {
        if !valid_value(value) {
            return Err("a field value with NUL, CR, LF or surrounding whitespace");
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            if self.regular || self.trailers {
                return Err("a pseudo-header field after a regular one, or in trailers");
            }
            let slot = match pseudo {
                b"method" => &mut self.method,
                b"scheme" => &mut self.scheme,
                b"authority" => &mut self.authority,
                b"path" => &mut self.path,
                _ => return Err("an unknown or response pseudo-header field"),
            };
            if slot.is_some() {
                return Err("a pseudo-header field twice");
            }
            let start = self.buf.len();
            self.buf.extend_from_slice(value);
            *slot = Some(start..self.buf.len());
            return Ok(());
        }
        self.regular = true;
        if name.is_empty() || !name.iter().all(|&b| valid_name_byte(b)) {
            return Err("a field name with uppercase, space or a control");
        }
        if CONNECTION_SPECIFIC.contains(&name) {
            return Err("a connection-specific field");
        }
        if name == b"te" && !value.eq_ignore_ascii_case(b"trailers") {
            return Err("TE other than trailers");
        }
        if self.trailers {
            return Ok(());
        }
        if name == b"content-length" {
            let n = parse_length(value).ok_or("an invalid content-length")?;
            if self.content_length.is_some_and(|m| m != n) {
                return Err("two different content-length values");
            }
            self.content_length = Some(n);
        }
        if name == b"cookie" {
            let crumb = self.put(value);
            self.cookies.push(crumb);
            return Ok(());
        }
        let n = self.put(name);
        let v = self.put(value);
        match name {
            b"host" if self.host.is_some() => return Err("two host fields"),
            b"host" => self.host = Some(v.clone()),
            b"priority" => self.priority = Some(v.clone()),
            _ => {}
        }
        self.headers.push((n, v));
        Ok(())
    }

    /// The request, once the whole list was seen. `too_large`: the decoder
    /// stopped at `max-header-bytes`.
    pub(crate) fn finish(mut self, too_large: bool) -> Result<Parsed, Refusal> {
        if let Some(why) = self.fault {
            return Err(Refusal::Malformed(why));
        }
        if too_large {
            return Err(Refusal::Answer(reject(
                431,
                "header list larger than max-header-bytes",
            )));
        }
        if self.method.as_ref().map(|m| &self.buf[m.clone()]) == Some(b"CONNECT") {
            // §8.5: only :method and :authority.
            if self.scheme.is_some() || self.path.is_some() || self.authority.is_none() {
                return Err(Refusal::Malformed(
                    "a CONNECT with :scheme or :path, or without :authority",
                ));
            }
            return Err(Refusal::Answer(reject(405, "CONNECT is not served")));
        }
        let (Some(method), Some(path)) = (self.method.clone(), self.path.clone()) else {
            return Err(Refusal::Malformed("no :method or :path"));
        };
        if self.scheme.is_none() {
            return Err(Refusal::Malformed("no :scheme"));
        }
        if path.is_empty() {
            return Err(Refusal::Malformed("an empty :path"));
        }
        // RFC 9114 §4.3.1 (and RFC 9113 §8.3.1 alike, not yet held to on
        // HTTP/2, whose clients and tests rely on the leniency): `:path` is
        // a path and query (or `*` for OPTIONS), never a URI's absolute
        // form; and an http or https request names its authority, never
        // empty.
        if self.version == Version::Http3 {
            self.strict_target(&method, &path)?;
        }

        if method.is_empty()
            || !self.buf[method.clone()]
                .iter()
                .all(|&b| valid_name_byte(b.to_ascii_lowercase()))
        {
            return Err(Refusal::Malformed("a :method that is not a token"));
        }
        if let Some(a) = &self.authority {
            let authority = &self.buf[a.clone()];
            if !valid_host(authority) {
                return Err(Refusal::Answer(reject(400, "invalid :authority")));
            }
            match &self.host {
                Some(h) if !self.buf[h.clone()].eq_ignore_ascii_case(authority) => {
                    let why = "Host disagrees with :authority";
                    return Err(Refusal::AnswerThenReset(reject(400, why)));
                }
                Some(_) => {}
                None => {
                    // Handlers read the host as `Host`, whichever protocol.
                    let (a, n) = (a.clone(), self.put(b"host"));
                    let start = self.buf.len();
                    self.buf.extend_from_within(a);
                    let v = start..self.buf.len();
                    self.headers.push((n, v));
                }
            }
        } else if let Some(h) = &self.host {
            if !valid_host(&self.buf[h.clone()]) {
                return Err(Refusal::Answer(reject(400, "invalid Host")));
            }
        }
        if !self.cookies.is_empty() {
            let crumbs: Vec<u8> = self
                .cookies
                .iter()
                .map(|c| &self.buf[c.clone()])
                .collect::<Vec<_>>()
                .join(&b"; "[..]);
            let n = self.put(b"cookie");
            let v = self.put(&crumbs);
            self.headers.push((n, v));
        }
        let urgency = self
            .priority
            .as_ref()
            .map_or(DEFAULT_URGENCY, |p| urgency(&self.buf[p.clone()]));
        let (path_decoded, query) = {
            let method_s = std::str::from_utf8(&self.buf[method.clone()]).unwrap_or("");
            let target = std::str::from_utf8(&self.buf[path.clone()])
                .map_err(|_| Refusal::Answer(reject(400, "request target is not a path")))?;
            let (raw, query) = split_target(method_s, target).map_err(Refusal::Answer)?;
            let decoded = percent_decode(raw)
                .ok_or(Refusal::Answer(reject(400, "bad percent-encoding in path")))?;
            let decoded = DecodedPath::new(decoded);
            let base = self.buf[path.clone()].as_ptr() as usize;
            let query = query.map(|q| {
                let start = path.start + (q.as_ptr() as usize - base);
                start..start + q.len()
            });
            (decoded, query)
        };
        Ok(Parsed {
            text: Text {
                method,
                target: path,
                version: self.version,
                headers: self.headers,
                path: path_decoded,
                query,
            },
            fields: Bytes::from(self.buf),
            content_length: self.content_length,
            urgency,
        })
    }

    /// The target and authority rules of RFC 9114 §4.3.1.
    fn strict_target(&self, method: &Range<usize>, path: &Range<usize>) -> Result<(), Refusal> {
        let target = &self.buf[path.clone()];
        let asterisk = target == b"*" && &self.buf[method.clone()] == b"OPTIONS";
        if !target.starts_with(b"/") && !asterisk {
            return Err(Refusal::Malformed("a :path that is not a path"));
        }
        let empty = |r: &Option<Range<usize>>| r.as_ref().is_some_and(|r| r.is_empty());
        if empty(&self.authority) || empty(&self.host) {
            return Err(Refusal::Malformed("an empty :authority or Host"));
        }
        let scheme = self.scheme.as_ref().map(|r| &self.buf[r.clone()]);
        let web = matches!(scheme, Some(b"http" | b"https"));
        if web && self.authority.is_none() && self.host.is_none() {
            return Err(Refusal::Malformed("neither :authority nor Host"));
        }
        Ok(())
    }

    /// Whether a trailer section was well-formed.
    pub(crate) fn trailers_fault(&self) -> Option<&'static str> {
        self.fault
    }
}

/// RFC 9218's default urgency.
pub(crate) const DEFAULT_URGENCY: u8 = 3;

/// The urgency in a `priority` field value (RFC 9218 §4: a structured
/// dictionary; `u` an integer 0..=7, anything else ignored).
pub(crate) fn urgency(value: &[u8]) -> u8 {
    value
        .split(|&b| b == b',')
        .rev()
        .find_map(|member| {
            let member = member.trim_ascii();
            let v = member.strip_prefix(b"u=")?;
            let v = v.split(|&b| b == b';').next()?.trim_ascii();
            match v {
                [d @ b'0'..=b'7'] => Some(d - b'0'),
                _ => None,
            }
        })
        .unwrap_or(DEFAULT_URGENCY)
}

/// A byte a field name may hold (§8.2.1: no controls, space, uppercase,
/// DEL or non-ASCII; and the token characters of RFC 9110 §5.6.2).
fn valid_name_byte(b: u8) -> bool {
    !b.is_ascii_uppercase() && crate::text::token::tchar(b)
}

/// §8.2.1: no NUL, CR or LF; no leading or trailing space or tab.
fn valid_value(v: &[u8]) -> bool {
    let edge = |b: Option<&u8>| !matches!(b, Some(b' ' | b'\t'));
    !v.iter().any(|&b| matches!(b, 0 | b'\r' | b'\n')) && edge(v.first()) && edge(v.last())
}

fn parse_length(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(list: &[(&str, &str)]) -> Result<Parsed, Refusal> {
        let mut f = Fields::request(Version::Http2);
        for (n, v) in list {
            if f.field(n.as_bytes(), v.as_bytes()).is_break() {
                break;
            }
        }
        f.finish(false)
    }

    const GET: [(&str, &str); 4] = [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "example.com"),
        (":path", "/a%20b?x=1"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        GET.iter().chain(extra).copied().collect()
    }

    fn header<'a>(p: &'a Parsed, name: &str) -> Option<&'a [u8]> {
        p.text
            .headers
            .iter()
            .find(|(n, _)| &p.fields[n.clone()] == name.as_bytes())
            .map(|(_, v)| &p.fields[v.clone()])
    }

    #[test]
    fn a_get_becomes_a_request_with_host_from_authority() {
        let p = parse(&GET).unwrap();
        assert_eq!(&p.fields[p.text.method.clone()], b"GET");
        assert_eq!(&p.fields[p.text.target.clone()], b"/a%20b?x=1");
        assert_eq!(p.text.path.as_str(), "/a b");
        assert_eq!(&p.fields[p.text.query.clone().unwrap()], b"x=1");
        assert_eq!(header(&p, "host"), Some(&b"example.com"[..]));
        assert_eq!(p.urgency, 3);
    }

    #[test]
    fn cookie_crumbs_are_joined() {
        let p = parse(&with(&[
            ("cookie", "a=1"),
            ("accept", "*/*"),
            ("cookie", "b=2"),
        ]))
        .unwrap();
        assert_eq!(header(&p, "cookie"), Some(&b"a=1; b=2"[..]));
    }

    #[test]
    fn malformed_lists_are_refused() {
        let malformed = |list: &[(&str, &str)]| {
            assert!(
                matches!(parse(list), Err(Refusal::Malformed(_))),
                "{list:?} accepted"
            )
        };
        malformed(&with(&[("Accept", "x")]));
        malformed(&with(&[("connection", "close")]));
        malformed(&with(&[("te", "gzip")]));
        malformed(&with(&[(":path", "/again")]));
        malformed(&with(&[(":status", "200")]));
        malformed(&with(&[("x", " padded")]));
        malformed(&with(&[("x", "a\0b")]));
        malformed(&with(&[("content-length", "1"), ("content-length", "2")]));
        malformed(&[("accept", "x"), (":method", "GET")]);
        malformed(&[(":method", "GET"), (":scheme", "http")]);
        malformed(&[(":method", "GET"), (":scheme", "http"), (":path", "")]);
        malformed(&[(":method", "GET"), (":path", "/")]);
        assert!(parse(&with(&[("te", "trailers")])).is_ok());
    }

    #[test]
    fn a_host_that_disagrees_is_answered_400_as_http1_answers_it() {
        let r = parse(&with(&[("host", "other.example")]));
        assert!(matches!(
            r,
            Err(Refusal::AnswerThenReset(Reject { status: 400, .. }))
        ));
        assert!(parse(&with(&[("host", "EXAMPLE.com")])).is_ok());
        let r = parse(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":authority", "a b"),
            (":path", "/"),
        ]);
        assert!(matches!(
            r,
            Err(Refusal::Answer(Reject { status: 400, .. }))
        ));
    }

    #[test]
    fn urgency_is_read_from_the_priority_field() {
        assert_eq!(urgency(b"u=0"), 0);
        assert_eq!(urgency(b"i, u=5"), 5);
        assert_eq!(urgency(b"u=9"), 3);
        assert_eq!(urgency(b"garbage"), 3);
        let p = parse(&with(&[("priority", "u=1, i")])).unwrap();
        assert_eq!(p.urgency, 1);
    }
}
