//! Validators, preconditions and ranges for file responses (RFC 9110 §8.8,
//! §13, §14), in one place and tested here.

use super::request::Request;
use crate::fs::Identity;
use crate::text::date::{imf_fixdate, parse_http_date};
use bytes::Bytes;

/// A file's validators, from the `fstat` of the descriptor being sent
/// (made once per kept file, and reused by every hit).
#[derive(Clone, Debug)]
pub(crate) struct Validators {
    /// Strong: changes whenever the modification time (ns) or size does.
    pub etag: Bytes,
    /// `Last-Modified`, as sent.
    pub last_modified: Bytes,
    /// Seconds since the epoch (HTTP dates have one-second resolution).
    pub modified: u64,
}

impl Validators {
    pub(crate) fn of(id: &Identity) -> Validators {
        let modified = u64::try_from(id.mtime_ns.div_euclid(1_000_000_000)).unwrap_or(0);
        Validators {
            etag: Bytes::from(id.etag()),
            last_modified: Bytes::copy_from_slice(&imf_fixdate(modified)),
            modified,
        }
    }

    /// The validators of a precompressed sidecar `id` sent with `coding`:
    /// its own mtime and size, and the coding in the ETag, so no two
    /// representations of one file share an ETag.
    pub(crate) fn coded(id: &Identity, coding: crate::rt::Coding) -> Validators {
        let mut v = Validators::of(id);
        v.etag = Bytes::from(format!(
            "\"{:x}-{:x}-{}\"",
            id.mtime_ns,
            id.size,
            coding.token()
        ));
        v
    }

    /// The ETag as text (it is ASCII by construction).
    pub(crate) fn etag(&self) -> &str {
        std::str::from_utf8(&self.etag).unwrap_or("")
    }
}

/// What the conditional headers decide before the body is considered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Precondition {
    Proceed,
    /// 304: the client's copy is current.
    NotModified,
    /// 412: a precondition the client set is false.
    Failed,
}

/// Evaluates If-Match, If-Unmodified-Since, If-None-Match and
/// If-Modified-Since in the order RFC 9110 §13.2.2 gives.
pub(crate) fn preconditions(req: &Request, v: &Validators) -> Precondition {
    let get_or_head = matches!(req.method(), "GET" | "HEAD");
    if let Some(im) = req.header("if-match") {
        if !list_matches(im, v.etag(), true) {
            return Precondition::Failed;
        }
    } else if let Some(t) = req.header("if-unmodified-since").and_then(parse_http_date) {
        if v.modified > t {
            return Precondition::Failed;
        }
    }
    if let Some(inm) = req.header("if-none-match") {
        if list_matches(inm, v.etag(), false) {
            return if get_or_head {
                Precondition::NotModified
            } else {
                Precondition::Failed
            };
        }
    } else if get_or_head {
        if let Some(t) = req.header("if-modified-since").and_then(parse_http_date) {
            if v.modified <= t {
                return Precondition::NotModified;
            }
        }
    }
    Precondition::Proceed
}

/// Whether an `If-Match`/`If-None-Match` list names `etag`: `*` matches any
/// current file; `strong` refuses weak tags (`W/"…"`), weak comparison
/// ignores the prefix.
pub(crate) fn list_matches(list: &str, etag: &str, strong: bool) -> bool {
    if list.trim() == "*" {
        return true;
    }
    list.split(',')
        .map(str::trim)
        .any(|tag| match tag.strip_prefix("W/") {
            Some(weak) => !strong && weak == etag,
            None => tag == etag,
        })
}

/// The part of the file a GET asked for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Span {
    /// The whole file, 200.
    Full,
    /// Bytes `start..end` (end exclusive), 206.
    Part { start: u64, end: u64 },
    /// 416, with `Content-Range: bytes */size`.
    Unsatisfiable,
}

/// Decides the span from `Range` and `If-Range`. One range is served as 206;
/// a list of several is answered with the whole file (200), which RFC 9110
/// §14.2 allows and which keeps the work linear in the header's length
/// whatever the list holds. A Range that does not parse is ignored (200).
///
/// Hand-written: the crates that parse `Range` (`http-range-header`,
/// `headers`) build the list of ranges, where this needs only to know
/// whether there is exactly one; `If-Range` needs the validators anyway.
/// `negotiated`: the answer is one of several representations of the file
/// (it varies by `Accept-Encoding`), which share its Last-Modified: an
/// `If-Range` date cannot tell them apart, so it is not strong enough and
/// the whole representation is sent (RFC 9110 §13.1.5). An ETag can.
pub(crate) fn span(req: &Request, size: u64, v: &Validators, negotiated: bool) -> Span {
    if req.method() != "GET" {
        return Span::Full;
    }
    let Some(range) = req.header("range") else {
        return Span::Full;
    };
    if let Some(if_range) = req.header("if-range") {
        let if_range = if_range.trim();
        let current = if if_range.starts_with('"') {
            if_range == v.etag()
        } else if if_range.starts_with("W/") || negotiated {
            false
        } else {
            parse_http_date(if_range) == Some(v.modified)
        };
        if !current {
            return Span::Full;
        }
    }
    let Some((unit, set)) = range.split_once('=') else {
        return Span::Full;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return Span::Full;
    }
    let mut specs = set.split(',').map(str::trim).filter(|s| !s.is_empty());
    let (Some(spec), None) = (specs.next(), specs.next()) else {
        return Span::Full;
    };
    let Some((first, last)) = spec.split_once('-') else {
        return Span::Full;
    };
    let num = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    match (first.trim(), last.trim()) {
        ("", suffix) => match num(suffix) {
            Some(0) => Span::Unsatisfiable,
            Some(n) if size > 0 => Span::Part {
                start: size.saturating_sub(n),
                end: size,
            },
            Some(_) => Span::Unsatisfiable,
            None => Span::Full,
        },
        (a, "") => match num(a) {
            Some(a) if a < size => Span::Part {
                start: a,
                end: size,
            },
            Some(_) => Span::Unsatisfiable,
            None => Span::Full,
        },
        (a, b) => match (num(a), num(b)) {
            (Some(a), Some(b)) if a <= b => {
                if a >= size {
                    Span::Unsatisfiable
                } else {
                    Span::Part {
                        start: a,
                        end: b.saturating_add(1).min(size),
                    }
                }
            }
            _ => Span::Full,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, headers: &[(&str, &str)]) -> Request {
        let mut head = format!("{method} /f HTTP/1.1\r\nHost: t\r\n");
        for (n, v) in headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str("\r\n");
        crate::http::h1::parse::test_request(&head)
    }

    fn v() -> Validators {
        Validators::of(&Identity {
            dev: 1,
            ino: 2,
            size: 1000,
            mtime_ns: 784_111_777_000_000_123,
            ctime_ns: 0,
        })
    }

    const LM: &str = "Sun, 06 Nov 1994 08:49:37 GMT";

    #[test]
    fn etag_and_last_modified() {
        let v = v();
        assert_eq!(v.etag(), "\"ae1b981bc490a7b-3e8\"");
        assert_eq!(&v.last_modified[..], LM.as_bytes());
    }

    #[test]
    fn if_none_match_and_if_modified_since() {
        let v = v();
        let etag = v.etag().to_owned();
        let weak = format!("W/{etag}");
        let check = |h: &[(&str, &str)]| preconditions(&req("GET", h), &v);
        assert_eq!(check(&[]), Precondition::Proceed);
        assert_eq!(
            check(&[("If-None-Match", &etag)]),
            Precondition::NotModified
        );
        assert_eq!(
            check(&[("If-None-Match", &weak)]),
            Precondition::NotModified
        );
        assert_eq!(
            check(&[("If-None-Match", "\"x\", *")]),
            Precondition::Proceed
        );
        assert_eq!(check(&[("If-None-Match", "*")]), Precondition::NotModified);
        assert_eq!(
            check(&[("If-None-Match", "\"other\"")]),
            Precondition::Proceed
        );
        assert_eq!(
            check(&[("If-Modified-Since", LM)]),
            Precondition::NotModified
        );
        assert_eq!(
            check(&[("If-Modified-Since", "Sun, 06 Nov 1994 08:49:36 GMT")]),
            Precondition::Proceed
        );
        // If-None-Match wins over If-Modified-Since.
        assert_eq!(
            check(&[("If-None-Match", "\"other\""), ("If-Modified-Since", LM)]),
            Precondition::Proceed
        );
        assert_eq!(check(&[("If-Match", "\"other\"")]), Precondition::Failed);
        assert_eq!(check(&[("If-Match", &weak)]), Precondition::Failed);
        assert_eq!(check(&[("If-Match", &etag)]), Precondition::Proceed);
        assert_eq!(
            check(&[("If-Unmodified-Since", "Sun, 06 Nov 1994 08:49:36 GMT")]),
            Precondition::Failed
        );
    }

    #[test]
    fn ranges() {
        let v = v();
        let s = |h: &str| span(&req("GET", &[("Range", h)]), 1000, &v, false);
        assert_eq!(s("bytes=0-99"), Span::Part { start: 0, end: 100 });
        assert_eq!(
            s("bytes=990-"),
            Span::Part {
                start: 990,
                end: 1000
            }
        );
        assert_eq!(
            s("bytes=-10"),
            Span::Part {
                start: 990,
                end: 1000
            }
        );
        assert_eq!(
            s("bytes=-5000"),
            Span::Part {
                start: 0,
                end: 1000
            }
        );
        assert_eq!(
            s("bytes=500-99999"),
            Span::Part {
                start: 500,
                end: 1000
            }
        );
        assert_eq!(s("bytes=1000-"), Span::Unsatisfiable);
        assert_eq!(s("bytes=-0"), Span::Unsatisfiable);
        assert_eq!(s("bytes=5-1"), Span::Full);
        assert_eq!(s("bytes=0-1,5-6"), Span::Full);
        assert_eq!(s("items=0-1"), Span::Full);
        assert_eq!(s("bytes=x-1"), Span::Full);
        assert_eq!(s("bytes=99999999999999999999999-"), Span::Full);
        let hostile = format!("bytes={}", "0-1,".repeat(5000));
        assert_eq!(s(&hostile), Span::Full);
        assert_eq!(
            span(&req("GET", &[("Range", "bytes=0-")]), 0, &v, false),
            Span::Unsatisfiable
        );
        assert_eq!(
            span(&req("HEAD", &[("Range", "bytes=0-1")]), 1000, &v, false),
            Span::Full
        );
    }

    #[test]
    fn if_range_compares_strongly() {
        let v = v();
        let with_negotiated = |ir: &str, negotiated| {
            span(
                &req("GET", &[("Range", "bytes=0-0"), ("If-Range", ir)]),
                1000,
                &v,
                negotiated,
            )
        };
        let with = |ir: &str| with_negotiated(ir, false);
        let part = Span::Part { start: 0, end: 1 };
        assert_eq!(with(v.etag()), part);
        assert_eq!(with(&format!("W/{}", v.etag())), Span::Full);
        assert_eq!(with("\"stale\""), Span::Full);
        assert_eq!(with(LM), part);
        assert_eq!(with("Sun, 06 Nov 1994 08:49:38 GMT"), Span::Full);
        // Several representations share the date: only the ETag tells
        // which one the client holds part of.
        assert_eq!(with_negotiated(LM, true), Span::Full);
        assert_eq!(with_negotiated(v.etag(), true), part);
    }
}
