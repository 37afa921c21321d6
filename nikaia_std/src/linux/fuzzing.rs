//! Entry points for the fuzz targets (`nikaia_std/fuzz/`) and for the
//! stable test that replays their corpora and every crash they found
//! (`nikaia_std/tests/fuzz_replay.rs`, and `nikaia_cli`'s through
//! [`replay`]). Each takes arbitrary bytes and
//! panics only when an invariant of ours breaks; an error answer is not a
//! failure. Not part of the language surface.

use crate::fs::Identity;
use crate::http::conditional::{preconditions, span, Span, Validators};
use crate::http::h1::chunked::Chunked;
use crate::http::h1::parse::{parse_head, Framing};
pub use crate::http::h2::fuzzing::h2_frames;
pub use crate::http::h2::hpack::fuzzing::hpack;
pub use crate::http::h3::fuzzing::{h3_frames, qpack};
use crate::http::proxy::{self, Parse, MAX_HEADER};
use crate::http::request::Spare;
use crate::http::router::Entry;
use crate::text::percent::percent_decode;

use bytes::Bytes;

mod connection;

pub use connection::{connection, h2_connection, tls_connection};

const MAX_HEAD: usize = 32 << 10;

/// Runs every input a fuzz target kept (`FUZZ/corpus/TARGET/`) and every
/// crash it found (`FUZZ/regressions/TARGET/`) through `run`, in name
/// order; panics naming the first input `run` panics on, or when there is
/// none at all. The stable replay of both crates' fuzz directories.
pub fn replay(fuzz: &std::path::Path, target: &str, run: fn(&[u8])) {
    let mut inputs = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) else {
            continue;
        };
        let mut paths: Vec<_> = entries
            .map(|e| e.expect("a fuzz directory entry").path())
            .collect();
        paths.sort();
        for path in paths {
            let data = std::fs::read(&path).expect("a fuzz input");
            let caught = std::panic::catch_unwind(|| run(&data));
            assert!(caught.is_ok(), "{}: {target} failed on it", path.display());
            inputs += 1;
        }
    }
    assert!(inputs > 0, "no corpus for {target}");
}

/// The request-head parser with our validation: an accepted head's offsets
/// lie inside it, and parsing exactly the head again gives the same head.
pub fn request_head(data: &[u8]) {
    let Ok(Some(head)) = parse_head(data, MAX_HEAD, &mut Spare::default()) else {
        return;
    };
    assert!(head.len <= data.len() && head.len <= MAX_HEAD);
    for r in [&head.text.method, &head.text.target]
        .into_iter()
        .chain(head.text.query.iter())
        .chain(head.text.headers.iter().flat_map(|(n, v)| [n, v]))
    {
        assert!(
            r.start <= r.end && r.end <= head.len,
            "{r:?} outside the head"
        );
    }
    let again = parse_head(&data[..head.len], MAX_HEAD, &mut Spare::default())
        .expect("the same head parses again")
        .expect("and is complete");
    assert_eq!(again.len, head.len);
    assert_eq!(again.text.path, head.text.path);
    assert_eq!(again.framing, head.framing);
    if let Framing::Length(n) = head.framing {
        assert!(n < u64::MAX);
    }
}

/// A request head as our parser reads it, for the check against an
/// independent parser (`tests/fuzz_replay.rs`): one line of JSON-like
/// text, each byte string in hex — `{"len":N,"method":"..","target":"..",
/// "version":"1.1","fields":[["name","value"],..],"framing":"none"|
/// "chunked"|"length N"}` — or `{"refused":STATUS}`, or `{"incomplete":1}`.
pub fn request_head_seen(data: &[u8]) -> String {
    let head = match parse_head(data, MAX_HEAD, &mut Spare::default()) {
        Ok(Some(head)) => head,
        Ok(None) => return "{\"incomplete\":1}".to_owned(),
        Err(r) => return format!("{{\"refused\":{}}}", r.status),
    };
    let hex = |r: &std::ops::Range<usize>| -> String {
        data[r.clone()].iter().map(|b| format!("{b:02x}")).collect()
    };
    let fields: Vec<String> = (head.text.headers.iter())
        .map(|(n, v)| format!("[\"{}\",\"{}\"]", hex(n), hex(v)))
        .collect();
    let framing = match head.framing {
        Framing::None => "none".to_owned(),
        Framing::Chunked => "chunked".to_owned(),
        Framing::Length(n) => format!("length {n}"),
    };
    let version = match head.text.version {
        crate::http::request::Version::Http10 => "1.0",
        _ => "1.1",
    };
    format!(
        "{{\"len\":{},\"method\":\"{}\",\"target\":\"{}\",\"version\":\"{version}\",\"fields\":[{}],\"framing\":\"{framing}\"}}",
        head.len,
        hex(&head.text.method),
        hex(&head.text.target),
        fields.join(",")
    )
}

/// The chunked decoder: fed in the pieces the first byte chooses, and
/// stopped after every n-th run of body (as a sink that pauses stops it,
/// the second byte choosing n), it decides exactly as when fed at once,
/// hands on the same body, and never past its limit.
pub fn chunked(data: &[u8]) {
    const LIMIT: u64 = 1 << 16;
    let [step, every, input @ ..] = data else {
        return;
    };
    let (mut whole, mut at_once_body) = (Chunked::new(LIMIT, 4096), Vec::new());
    let at_once = whole.feed(input, &mut at_once_body);
    let mut pieces = Chunked::new(LIMIT, 4096);
    let (step, every) = (usize::from(*step).max(1), usize::from(*every).max(1));
    let (mut body, mut runs) = (Vec::new(), 0usize);
    let mut result = Ok(false);
    let mut to = 0;
    loop {
        // The connection hands over everything not consumed yet, up to
        // what has arrived.
        let start = pieces.consumed;
        if start == to {
            if to == input.len() {
                break;
            }
            to = (to + step).min(input.len());
        }
        result = pieces.feed_pieces(&input[start..to], &mut |piece| {
            assert!(!piece.is_empty(), "an empty piece handed on");
            body.extend_from_slice(piece);
            runs += 1;
            runs % every != 0
        });
        if !matches!(result, Ok(false)) {
            break;
        }
    }
    assert_eq!(result, at_once, "pieces of {step} decide differently");
    if at_once == Ok(true) {
        assert_eq!(body, at_once_body);
        assert_eq!(pieces.consumed, whole.consumed);
    }
    assert_eq!(pieces.decoded, body.len() as u64);
    assert!(body.len() as u64 <= LIMIT && at_once_body.len() as u64 <= LIMIT);
    chunk_size_line_against_httparse(input);
}

/// The size line, against httparse's `parse_chunk_size`, which allows
/// more (any byte in an extension, whitespace before the CRLF): a line
/// we take, httparse takes with the same size and the same end; a line
/// we still read, httparse still reads.
fn chunk_size_line_against_httparse(input: &[u8]) {
    let theirs = httparse::parse_chunk_size(input);
    match Chunked::size_line(input) {
        Ok(Some(line)) => assert_eq!(
            theirs,
            Ok(httparse::Status::Complete(line)),
            "a size line read otherwise"
        ),
        Ok(None) => assert_eq!(theirs, Ok(httparse::Status::Partial)),
        Err(_) => {}
    }
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
    let Ok(Some(parsed)) = parse_head(head.as_bytes(), MAX_HEAD, &mut Spare::default()) else {
        return;
    };
    let req = parsed.request(Bytes::from(head), Bytes::new(), crate::http::Peer::Unix);
    let v = Validators::of(&Identity {
        dev: 1,
        ino: 2,
        size,
        mtime_ns: 1_700_000_000_000_000_000,
        ctime_ns: 1_700_000_000_000_000_000,
    });
    let _ = preconditions(&req, &v);
    for negotiated in [false, true] {
        if let Span::Part { start, end } = span(&req, size, &v, negotiated) {
            assert!(start < end && end <= size, "{start}..{end} of {size}");
        }
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
    assert!(!path.contains(&0), "a decoded NUL");
    let mut router = crate::http::router::Router::default();
    router.add(
        "GET",
        "/f/*name",
        Entry::plain(Box::new(|_| crate::http::Response::new(200))),
    );
    router.add(
        "GET",
        "/",
        Entry::plain(Box::new(|_| crate::http::Response::new(200))),
    );
    if let crate::http::router::Found::Handler(_, Some(start)) = router.find("GET", &path) {
        assert!(path.starts_with(b"/f/") && start == b"/f/".len());
        // The wildcard's value starts at the same place in the lossy text.
        let text = crate::http::request::DecodedPath::new(path);
        assert!(text.as_str().starts_with("/f/"));
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

/// The PROXY protocol header, read as a listener peeks at it: every prefix
/// of the input, up to MAX_HEADER bytes, is parsed. Until the first answer
/// that is not `Need`, all are `Need`, and MAX_HEADER bytes always decide; a
/// `Done` comes exactly when its last byte does, so its header parses alone;
/// every longer prefix, and the whole input, answers the same.
pub fn proxy_header(data: &[u8]) {
    let whole = proxy::parse(data);
    if let Ok(Parse::Done { len, .. }) = whole {
        assert!(len <= data.len(), "a header longer than the input");
    }
    let mut decided = None;
    for n in 0..=data.len().min(MAX_HEADER) {
        let got = proxy::parse(&data[..n]);
        match decided {
            None if got == Ok(Parse::Need) => {
                assert!(n < MAX_HEADER, "MAX_HEADER bytes are not enough");
            }
            None => {
                if let Ok(Parse::Done { len, .. }) = got {
                    assert_eq!(len, n, "a header of {len} bytes is whole only at {n}");
                }
                decided = Some((n, got));
            }
            Some((at, was)) => assert_eq!(got, was, "{n} bytes answer otherwise than {at}"),
        }
    }
    match decided {
        Some((at, was)) => assert_eq!(whole, was, "the input answers otherwise than {at} bytes"),
        None => assert_eq!(
            whole,
            Ok(Parse::Need),
            "the input decides, none of its prefixes"
        ),
    }
}
