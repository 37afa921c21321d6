//! Request heads: parsing (httparse on a bounded buffer) and the framing
//! checks of RFC 9112 that keep a connection in sync (no smuggling).

use crate::http::request::{reject, DecodedPath, Peer, Reject, Request, Spare, Text, Version};
use crate::http::target::{split_target, valid_host};
use crate::text::percent::percent_decode_into;
use bytes::Bytes;

/// The most header fields one request may carry; past it, 431.
pub(crate) const MAX_HEADERS: usize = 100;

/// How the request's body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    None,
    Length(u64),
    Chunked,
}

/// A complete, accepted request head.
#[derive(Debug)]
pub(crate) struct Head {
    pub len: usize,
    pub text: Text,
    pub framing: Framing,
    pub keep_alive: bool,
    pub expect_continue: bool,
}

impl Head {
    /// The request this head carries: `bytes` are the head's (its text's
    /// ranges point into them), with its `body` and `peer`.
    pub(crate) fn request(self, bytes: Bytes, body: Bytes, peer: Peer) -> Request {
        Request::new(bytes, self.text, body, peer)
    }
}

/// A request line whose version httparse refused: 505 only for a line of
/// three words (`method SP target SP version`, RFC 9112 §3) whose last is
/// a well-formed `HTTP/x.y` other than 1.0 and 1.1 (§2.3, as nginx
/// answers); anything else in its place (`HTTQ/1.1`, `HTTP/1`,
/// `HTTP/1.1x`), or a target with a space in it, is a malformed request
/// line, 400.
fn version_reject(buf: &[u8]) -> Reject {
    let line_end = buf
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .unwrap_or(buf.len());
    let line = &buf[..line_end];
    let words = line.split(|&b| b == b' ').count();
    let token = line.rsplit(|&b| b == b' ').next().unwrap_or_default();
    let well_formed = words == 3
        && token.len() == 8
        && token.starts_with(b"HTTP/")
        && token[5].is_ascii_digit()
        && token[6] == b'.'
        && token[7].is_ascii_digit();
    if well_formed && line_end < buf.len() {
        reject(505, "unsupported HTTP version")
    } else {
        reject(400, "malformed HTTP version")
    }
}

/// Parses the head at the start of `buf`. `Ok(None)`: incomplete (the caller
/// answers 431 once `buf` holds `max_bytes` without a complete head). The
/// header index and the decoded path are filled into the buffers `spare`
/// holds (a connection's, kept from its last request; taken only when the
/// head is complete).
pub(crate) fn parse_head(
    buf: &[u8],
    max_bytes: usize,
    spare: &mut Spare,
) -> Result<Option<Head>, Reject> {
    let window = &buf[..buf.len().min(max_bytes)];
    // Left uninitialised: httparse writes the fields it finds, and a
    // request with few of them does not pay for clearing all MAX_HEADERS.
    let mut storage = [std::mem::MaybeUninit::<httparse::Header<'_>>::uninit(); MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(window, &mut storage) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if window.len() >= max_bytes => {
            return Err(reject(431, "request head larger than max-header-bytes"))
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(reject(431, "more header fields than allowed"))
        }
        Err(httparse::Error::Version) => return Err(version_reject(window)),
        Err(_) => return Err(reject(400, "malformed request head")),
    };
    let base = buf.as_ptr() as usize;
    let range_of = |s: &[u8]| {
        let start = s.as_ptr() as usize - base;
        start..start + s.len()
    };
    let method_str = req.method.unwrap_or("");
    let target_str = req.path.unwrap_or("");
    let method = range_of(method_str.as_bytes());
    let target = range_of(target_str.as_bytes());
    let version = match req.version {
        Some(0) => Version::Http10,
        _ => Version::Http11,
    };

    let mut headers = std::mem::take(&mut spare.headers);
    headers.clear();
    headers.reserve(req.headers.len());
    let mut hosts = 0usize;
    let mut content_length: Option<u64> = None;
    let mut transfer_encoding = false;
    let mut chunked = false;
    let mut conn_close = false;
    let mut conn_keep_alive = false;
    let mut expect_continue = false;
    for h in req.headers.iter() {
        headers.push((range_of(h.name.as_bytes()), range_of(h.value)));
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"host") {
            hosts += 1;
            if !valid_host(h.value) {
                return Err(reject(400, "invalid Host"));
            }
        } else if name.eq_ignore_ascii_case(b"content-length") {
            if content_length.is_some() {
                return Err(reject(400, "more than one Content-Length"));
            }
            content_length = Some(parse_content_length(h.value)?);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            if transfer_encoding {
                return Err(reject(400, "more than one Transfer-Encoding"));
            }
            transfer_encoding = true;
            if !h.value.eq_ignore_ascii_case(b"chunked") {
                return Err(reject(501, "transfer coding other than chunked"));
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                conn_close |= token.eq_ignore_ascii_case(b"close");
                conn_keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case(b"expect") {
            if h.value.eq_ignore_ascii_case(b"100-continue") {
                expect_continue = true;
            } else {
                return Err(reject(417, "unsupported expectation"));
            }
        }
    }

    if version == Version::Http11 && hosts == 0 {
        return Err(reject(400, "HTTP/1.1 request without Host"));
    }
    if hosts > 1 {
        return Err(reject(400, "more than one Host"));
    }
    if transfer_encoding && content_length.is_some() {
        return Err(reject(400, "both Content-Length and Transfer-Encoding"));
    }
    if transfer_encoding && version == Version::Http10 {
        return Err(reject(400, "Transfer-Encoding in an HTTP/1.0 request"));
    }
    let framing = match (chunked, content_length) {
        (true, _) => Framing::Chunked,
        (false, Some(0) | None) => Framing::None,
        (false, Some(n)) => Framing::Length(n),
    };

    let (path_raw, query) = split_target(method_str, target_str)?;
    let path = percent_decode_into(path_raw, std::mem::take(&mut spare.path))
        .ok_or(reject(400, "bad percent-encoding in path"))?;
    let path = DecodedPath::new(path);
    let query = query.map(|q| range_of(q.as_bytes()));
    let keep_alive = match version {
        Version::Http11 => !conn_close,
        Version::Http10 => conn_keep_alive && !conn_close,
        Version::Http2 | Version::Http3 => true,
    };
    Ok(Some(Head {
        len,
        text: Text {
            method,
            target,
            version,
            headers,
            path,
            query,
        },
        framing,
        keep_alive,
        expect_continue,
    }))
}

/// `Content-Length = 1*DIGIT`: no sign, no spaces, no lists, no overflow.
fn parse_content_length(v: &[u8]) -> Result<u64, Reject> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return Err(reject(400, "invalid Content-Length"));
    }
    Ok(v.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

/// The request a complete head carries, for unit tests.
#[cfg(test)]
pub(crate) fn test_request(head: &str) -> Request {
    let parsed = parse_head(head.as_bytes(), 1 << 16, &mut Spare::default())
        .expect("a well-formed head")
        .expect("a complete head");
    parsed.request(Bytes::from(head.to_owned()), Bytes::new(), Peer::Unix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Option<Head>, Reject> {
        parse_head(s.as_bytes(), 8192, &mut Spare::default())
    }

    fn status(s: &str) -> u16 {
        parse(s).expect_err(s).status
    }

    /// A connection's spare buffers carry capacity from one request to the
    /// next, never content: each request reads as if parsed afresh, after
    /// a longer one, an escaped one, a refused one and one not UTF-8.
    #[test]
    fn reused_buffers_hold_nothing_of_the_last_request() {
        let heads = [
            "GET /a/long/path/name.html HTTP/1.1\r\nHost: h\r\nAccept: x\r\nUser-Agent: u\r\nX-A: 1\r\n\r\n",
            "GET /b HTTP/1.1\r\nHost: h\r\n\r\n",
            "GET /caf%C3%A9%20x HTTP/1.1\r\nHost: h\r\nAccept: y\r\n\r\n",
            "GET /bad%zz HTTP/1.1\r\nHost: h\r\n\r\n",
            "GET /l%E9 HTTP/1.1\r\nHost: h\r\n\r\n",
            "GET /c?q=1 HTTP/1.1\r\nHost: h\r\nRange: bytes=0-1\r\n\r\n",
        ];
        let mut spare = Spare::default();
        for head in heads {
            let reused = parse_head(head.as_bytes(), 8192, &mut spare);
            let fresh = parse(head);
            match (reused, fresh) {
                (Ok(Some(reused)), Ok(Some(fresh))) => {
                    let bytes = Bytes::from(head.to_owned());
                    let a = reused.request(bytes.clone(), Bytes::new(), Peer::Unix);
                    let b = fresh.request(bytes, Bytes::new(), Peer::Unix);
                    assert_eq!(a.path_bytes(), b.path_bytes(), "{head}");
                    assert_eq!(a.path(), b.path(), "{head}");
                    let fields = |r: &Request| {
                        r.headers()
                            .map(|(n, v)| (n.to_owned(), v.to_vec()))
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(fields(&a), fields(&b), "{head}");
                    spare.keep(a);
                }
                (Err(a), Err(b)) => assert_eq!(a.status, b.status, "{head}"),
                other => panic!("{head}: {other:?}"),
            }
        }
    }

    #[test]
    fn accepts_a_plain_get() {
        let h = parse("GET /a%20b?x=1 HTTP/1.1\r\nHost: h\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.text.path.as_str(), "/a b");
        assert_eq!(h.framing, Framing::None);
        assert!(h.keep_alive);
    }

    #[test]
    fn refuses_smuggling_and_malformed_heads() {
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
        let cl_te =
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(status(cl_te), 400);
        let two_cl = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n";
        assert_eq!(status(two_cl), 400);
        for bad in ["-1", "+3", "3 4", "0x10", "", "99999999999999999999", "1,1"] {
            let req = format!("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: {bad}\r\n\r\n");
            assert_eq!(status(&req), 400, "{bad:?}");
        }
        assert_eq!(status("GET / HTTP/1.1\r\nHost : h\r\n\r\n"), 400);
        assert_eq!(status("GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n"), 400);
        assert_eq!(status("GET nopath HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
        assert_eq!(status("GET /%zz HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
        assert_eq!(status("GET /%00 HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
        assert_eq!(
            status("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n"),
            501
        );
    }

    #[test]
    fn too_large_head_is_431() {
        let long = format!("GET / HTTP/1.1\r\nHost: h\r\nX: {}\r\n", "a".repeat(9000));
        assert_eq!(status(&long), 431);
        assert!(parse("GET / HTTP/1.1\r\nHost: h\r\n").unwrap().is_none());
    }

    #[test]
    fn http10_keep_alive_only_when_asked() {
        let h = parse("GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!h.keep_alive);
        let h = parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.keep_alive);
    }

    #[test]
    fn a_path_that_is_not_utf8_keeps_its_bytes() {
        for (target, bytes, text) in [
            ("/caf%E9.txt", &b"/caf\xe9.txt"[..], "/caf\u{FFFD}.txt"),
            // An overlong `.` is two bytes that name no dot segment.
            ("/%c0%ae", b"/\xc0\xae", "/\u{FFFD}\u{FFFD}"),
            ("/caf%C3%A9.txt", "/café.txt".as_bytes(), "/café.txt"),
        ] {
            let head = format!("GET {target} HTTP/1.1\r\nHost: h\r\n\r\n");
            let h = parse(&head).unwrap().unwrap();
            assert_eq!(h.text.path.as_bytes(), bytes, "{target}");
            assert_eq!(h.text.path.as_str(), text, "{target}");
        }
        let req = test_request("GET /f/d%FF/x?q HTTP/1.1\r\nHost: h\r\n\r\n");
        assert_eq!(req.path_bytes(), b"/f/d\xff/x");
        assert_eq!(req.path(), "/f/d\u{FFFD}/x");
    }

    #[test]
    fn absolute_form_targets_give_their_path() {
        let h = parse("GET http://h/x?y HTTP/1.1\r\nHost: h\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.text.path.as_str(), "/x");
    }
}
