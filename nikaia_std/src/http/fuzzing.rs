//! Entry points for the fuzz targets (`nikaia_std/fuzz/`) and for the
//! stable test that replays their corpora and every crash they found
//! (`nikaia_std/tests/fuzz_replay.rs`). Each takes arbitrary bytes and
//! panics only when an invariant of ours breaks; an error answer is not a
//! failure. Not part of the language surface.

use super::chunked::Chunked;
use super::conditional::{preconditions, span, Span, Validators};
use super::parse::{parse_head, percent_decode, Framing};
use super::request::Request;
use crate::fs::Identity;
use bytes::Bytes;

const MAX_HEAD: usize = 32 << 10;

/// The request-head parser with our validation: an accepted head's offsets
/// lie inside it, and parsing exactly the head again gives the same head.
pub fn request_head(data: &[u8]) {
    let Ok(Some(head)) = parse_head(data, MAX_HEAD) else {
        return;
    };
    assert!(head.len <= data.len() && head.len <= MAX_HEAD);
    for r in [&head.method, &head.target]
        .into_iter()
        .chain(head.query.iter())
        .chain(head.headers.iter().flat_map(|(n, v)| [n, v]))
    {
        assert!(
            r.start <= r.end && r.end <= head.len,
            "{r:?} outside the head"
        );
    }
    let again = parse_head(&data[..head.len], MAX_HEAD)
        .expect("the same head parses again")
        .expect("and is complete");
    assert_eq!(again.len, head.len);
    assert_eq!(again.path, head.path);
    assert_eq!(again.framing, head.framing);
    if let Framing::Length(n) = head.framing {
        assert!(n < u64::MAX);
    }
}

/// The chunked decoder: fed in the pieces the first byte chooses, it
/// decides exactly as when fed at once, and never holds more than its limit.
pub fn chunked(data: &[u8]) {
    const LIMIT: usize = 1 << 16;
    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let mut whole = Chunked::new(LIMIT, 4096);
    let at_once = whole.feed(input);
    let mut pieces = Chunked::new(LIMIT, 4096);
    let step = usize::from(step).max(1);
    let mut result = Ok(false);
    let mut from = 0;
    while from < input.len() {
        let to = (from + step).min(input.len());
        // The connection hands over everything not consumed yet.
        let start = pieces.consumed;
        result = pieces.feed(&input[start..to]);
        match result {
            Ok(true) | Err(_) => break,
            Ok(false) => from = to,
        }
    }
    assert_eq!(result, at_once, "pieces of {step} decide differently");
    if at_once == Ok(true) {
        assert_eq!(pieces.body, whole.body);
        assert_eq!(pieces.consumed, whole.consumed);
    }
    assert!(whole.body.len() <= LIMIT && pieces.body.len() <= LIMIT);
}

/// Range and the conditional headers over a file of a size the input
/// chooses: a 206 span lies inside the file and is not empty.
pub fn ranges_and_conditionals(data: &[u8]) {
    if data.len() < 8 {
        return;
    }
    let size = u64::from_le_bytes(data[..8].try_into().unwrap_or_default()) % (1 << 40);
    let text = String::from_utf8_lossy(&data[8..]);
    let names = [
        "Range",
        "If-Range",
        "If-Match",
        "If-None-Match",
        "If-Modified-Since",
        "If-Unmodified-Since",
    ];
    let mut head = String::from("GET /f HTTP/1.1\r\nHost: t\r\n");
    for (name, value) in names.iter().zip(text.split('\n')) {
        let value: String = value.chars().filter(|c| !c.is_control()).collect();
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let Ok(Some(parsed)) = parse_head(head.as_bytes(), MAX_HEAD) else {
        return;
    };
    let req = Request::new(
        Bytes::from(head),
        parsed,
        Bytes::new(),
        "127.0.0.1:1".parse().unwrap_or_else(|_| unreachable!()),
    );
    let v = Validators::of(&Identity {
        dev: 1,
        ino: 2,
        size,
        mtime_ns: 1_700_000_000_000_000_000,
        ctime_ns: 1_700_000_000_000_000_000,
    });
    let _ = preconditions(&req, &v);
    if let Span::Part { start, end } = span(&req, size, &v) {
        assert!(start < end && end <= size, "{start}..{end} of {size}");
    }
}

/// Percent-decoding of a request path and the router's tail match: what a
/// route's wildcard receives is the decoded path's suffix, and a decoded
/// path never holds a NUL.
pub fn decode_and_route(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some(path) = percent_decode(text) else {
        return;
    };
    assert!(!path.contains('\0'), "a decoded NUL");
    let mut router = super::router::Router::default();
    router.add("GET", "/f/*name", Box::new(|_| super::Response::new(200)));
    router.add("GET", "/", Box::new(|_| super::Response::new(200)));
    if let super::router::Found::Handler(_, Some(param)) = router.find("GET", &path) {
        assert!(path.ends_with(&param) && path.starts_with("/f/"));
    }
}

/// The runtime file's parser: every error points inside the text, and an
/// accepted file written back (`to_toml`) reads back the same.
pub fn runtime_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = std::path::Path::new("/fuzz/runtime.toml");
    match crate::rt::Runtime::parse(text, file) {
        Ok(rt) => {
            let again = crate::rt::Runtime::parse(&rt.to_toml(), file)
                .unwrap_or_else(|e| panic!("to_toml does not read back: {e:?}"));
            assert_eq!(again, rt);
        }
        Err(errors) => {
            assert!(!errors.is_empty());
            let lines = text.lines().count().max(1) + 1;
            for e in errors {
                assert!(e.line <= lines, "{e}: past the end ({lines} lines)");
            }
        }
    }
}

/// One server for the connection target, started once per process.
fn server() -> std::net::SocketAddr {
    static SERVER: std::sync::OnceLock<super::Running> = std::sync::OnceLock::new();
    SERVER
        .get_or_init(|| {
            let rt = crate::rt::Runtime {
                listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                workers: 1,
                access_log: crate::rt::LogTarget::Off,
                ..crate::rt::Runtime::default()
            };
            super::Server::with_runtime(rt)
                .route("/a", |_| "A")
                .route("/b", |_| "BB".repeat(3000))
                .method("POST", "/echo", |req| Bytes::clone(req.body()))
                .start()
                .expect("the fuzz server starts")
        })
        .local_addr()
}

/// The connection state machine: pipelined requests chosen by the input,
/// written in pieces of the sizes it chooses; every response arrives whole,
/// in order, none with another's bytes, and the server keeps serving.
pub fn connection(data: &[u8]) {
    use std::io::{Read, Write};
    let Some((&pieces, choices)) = data.split_first() else {
        return;
    };
    let mut wire = Vec::new();
    // (status, body, a HEAD: no body sent)
    let mut want: Vec<(&str, Vec<u8>, bool)> = Vec::new();
    for &c in choices.iter().take(64) {
        let (req, body): (String, &[u8]) = match c % 5 {
            0 => ("GET /a HTTP/1.1\r\nHost: t\r\n\r\n".into(), b"A"),
            1 => ("GET /b HTTP/1.1\r\nHost: t\r\n\r\n".into(), b""),
            2 => ("HEAD /a HTTP/1.1\r\nHost: t\r\n\r\n".into(), b""),
            3 => (
                "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n"
                    .into(),
                b"xyz",
            ),
            _ => ("GET /missing HTTP/1.1\r\nHost: t\r\n\r\n".into(), b"404 Not Found\n"),
        };
        let status = match c % 5 {
            4 => "404",
            _ => "200",
        };
        wire.extend_from_slice(req.as_bytes());
        let body = if c % 5 == 1 {
            "BB".repeat(3000).into_bytes()
        } else {
            body.to_vec()
        };
        want.push((status, body, c % 5 == 2));
    }
    if want.is_empty() {
        return;
    }
    wire.extend_from_slice(b"GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    want.push(("200", b"A".to_vec(), false));
    let mut sock = std::net::TcpStream::connect(server()).expect("connect");
    sock.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    let step = usize::from(pieces).max(1);
    for piece in wire.chunks(step) {
        sock.write_all(piece).expect("write");
    }
    let mut got = Vec::new();
    sock.read_to_end(&mut got).expect("read");
    let mut rest = &got[..];
    for (i, (status, body, is_head)) in want.iter().enumerate() {
        let end = rest
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("response {i} has no head"));
        let head = std::str::from_utf8(&rest[..end]).expect("an ASCII head");
        assert!(
            head.starts_with(&format!("HTTP/1.1 {status} ")),
            "response {i}: {head}"
        );
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .and_then(|v| v.parse().ok())
            .expect("a Content-Length");
        let sent = if *is_head { 0 } else { length };
        let bytes = &rest[end + 4..end + 4 + sent];
        if !is_head {
            assert_eq!(bytes, &body[..], "response {i}'s body");
        }
        rest = &rest[end + 4 + sent..];
    }
    assert!(
        rest.is_empty(),
        "{} bytes after the last response",
        rest.len()
    );
}
