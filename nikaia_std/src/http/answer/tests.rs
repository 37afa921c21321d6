//! The pipeline's decisions, driven by hand-made requests and files.

use super::*;
use crate::fs::{self, Identity, Opened, Root};
use crate::http::h1::parse::test_request;
use crate::http::port::{Challenges, Writes};
use crate::http::IntoResponse;
use crate::rt::{Coding, Vehicle};
use bytes::Bytes;
use std::path::Path;

/// A backend with one kept file, `kept.txt`, and opens that would wait
/// for the disk (nothing else is there).
struct Kept;

const BYTES: &[u8] = b"kept bytes";

fn id() -> Identity {
    Identity {
        dev: 1,
        ino: 2,
        size: BYTES.len() as u64,
        mtime_ns: 1_700_000_000_000_000_000,
        ctime_ns: 0,
    }
}

impl Reads for Kept {
    fn kept(&self, _: &Root, name: &Path) -> Option<(Bytes, Identity, file::Meta)> {
        assert!(name != Path::new("bug.txt"), "a bug in a backend");
        (name == Path::new("kept.txt"))
            .then(|| (Bytes::from_static(BYTES), id(), file::Meta::of(name, &id())))
    }
    fn offer(&self, _: &Root, _: &Path, _: &Opened, _: &file::Meta) -> Option<Bytes> {
        None
    }
    fn open_now(&self, _: &Root, _: &Path) -> Result<Opened, fs::Error> {
        Err(fs::Error::WouldBlock)
    }
    fn vehicle(&self, _: u64) -> Vehicle {
        Vehicle::Read
    }
}

impl Codings for Kept {
    fn precompressed(&self) -> &[Coding] {
        &[]
    }
}

/// It writes nothing, answers no validation, and has no runtime: the
/// defaults.
impl Writes for Kept {}
impl Challenges for Kept {}
impl Rules for Kept {}

fn router() -> Router {
    let mut r = Router::default();
    let route = |r: &mut Router, path: &str, h: fn(&Request) -> Response| {
        r.add("GET", path, crate::http::router::Entry::plain(Box::new(h)))
    };
    route(&mut r, "/text", |_| "plain".into_response());
    route(&mut r, "/panic", |_| panic!("on purpose"));
    route(&mut r, "/err", |_| {
        Err::<&str, _>("the disk is on fire").into_response()
    });
    route(&mut r, "/bye", |_| {
        Response::new(200).header("Connection", "close").body("bye")
    });
    route(&mut r, "/files/*name", |req| {
        crate::http::File::new(req.param().unwrap_or(""), &Root::anywhere()).into_response()
    });
    route(&mut r, "/echo/*name", |req| {
        let mut body = req.param_bytes().unwrap_or_default().to_vec();
        body.push(b'|');
        body.extend_from_slice(req.param().unwrap_or_default().as_bytes());
        Bytes::from(body).into_response()
    });
    r
}

/// The answer to `head` (a request line and fields), with the errors
/// the pipeline logged; an open it asks for finds nothing.
fn ask(head: &str, may_keep: bool) -> (Answer, Vec<String>) {
    let mut req = test_request(&format!("{head}\r\nHost: t\r\n\r\n"));
    let mut logged = Vec::new();
    let mut log = |_: &Request, e: &str| logged.push(e.to_owned());
    let mut progress = answer(&Kept, &router(), None, &mut req, may_keep, &mut log);
    let answer = loop {
        match progress {
            Progress::Ready(a) => break a,
            Progress::Open(Job::Open(_, target), waiting) => {
                let fetched = Fetched::Opened(target, Err(fs::Error::NotFound));
                progress = waiting.resume(&Kept, &req, Done::Opened(fetched), &mut log)
            }
            Progress::Open(Job::List(_), _) => panic!("nothing is listed here"),
            Progress::Verify(..) => panic!("no credentials are checked here"),
        }
    };
    (answer, logged)
}

fn memory(a: &Answer) -> &[u8] {
    match &a.payload {
        Payload::Memory(b) | Payload::Kept(b) => b,
        Payload::None => b"",
        _ => panic!("not in memory"),
    }
}

#[test]
fn a_row_is_its_body_and_head_sends_none_of_it() {
    let (a, logged) = ask("GET /text HTTP/1.1", true);
    assert_eq!(
        (a.resp.status(), a.length, memory(&a)),
        (200, 5, &b"plain"[..])
    );
    assert!(!a.close && logged.is_empty());
    let (a, _) = ask("HEAD /text HTTP/1.1", true);
    assert_eq!(a.length, 5, "HEAD has the GET's Content-Length");
    assert!(matches!(a.payload, Payload::None));
}

#[test]
fn a_panic_in_std_is_this_requests_500_and_closes() {
    let (a, logged) = ask("GET /files/bug.txt HTTP/1.1", true);
    assert_eq!(a.resp.status, 500);
    assert!(a.close, "the connection's state may be anything");
    assert_eq!(logged, ["std panicked answering GET /files/bug.txt"]);
    // The next request on the same pipeline is answered as ever.
    assert_eq!(ask("GET /text HTTP/1.1", true).0.resp.status, 200);
}

#[test]
fn errors_and_panics_are_a_plain_500_and_logged() {
    let (a, logged) = ask("GET /panic HTTP/1.1", true);
    assert_eq!(a.resp.status(), 500);
    assert_eq!(logged, ["handler panicked on GET /panic"]);
    let (a, logged) = ask("GET /err HTTP/1.1", true);
    assert_eq!(a.resp.status(), 500);
    assert!(!String::from_utf8_lossy(memory(&a)).contains("fire"));
    assert_eq!(logged, ["handler failed: the disk is on fire"]);
}

#[test]
fn the_wildcard_is_exact_in_bytes_and_lossy_in_text() {
    let (a, _) = ask("GET /echo/d%FF/caf%E9.txt HTTP/1.1", true);
    let want = [
        &b"d\xff/caf\xe9.txt|"[..],
        "d\u{FFFD}/caf\u{FFFD}.txt".as_bytes(),
    ]
    .concat();
    assert_eq!(memory(&a), want);
    let (a, _) = ask("GET /echo/caf%C3%A9 HTTP/1.1", true);
    assert_eq!(memory(&a), "café|café".as_bytes());
}

#[test]
fn keep_alive_is_the_protocols_and_the_handlers() {
    assert!(!ask("GET /text HTTP/1.1", true).0.close);
    assert!(ask("GET /text HTTP/1.1", false).0.close);
    assert!(ask("GET /bye HTTP/1.1", true).0.close);
}

#[test]
fn no_route_is_404_and_another_method_405_with_allow() {
    assert_eq!(ask("GET /nothing HTTP/1.1", true).0.resp.status(), 404);
    let (a, _) = ask("POST /text HTTP/1.1", true);
    assert_eq!(a.resp.status(), 405);
    assert_eq!(a.resp.get_header("allow"), Some("GET, HEAD"));
}

#[test]
fn options_is_204_with_allow() {
    let (a, _) = ask("OPTIONS /text HTTP/1.1", true);
    assert_eq!(a.resp.status(), 204);
    assert_eq!(a.resp.get_header("allow"), Some("GET, HEAD, OPTIONS"));
    assert!(matches!(a.payload, Payload::None));
    assert_eq!(ask("OPTIONS /nothing HTTP/1.1", true).0.resp.status(), 404);
}

#[test]
fn a_file_is_resolved_through_the_port_and_its_open_may_wait() {
    let (a, _) = ask("GET /files/kept.txt HTTP/1.1", true);
    assert_eq!((a.resp.status(), memory(&a)), (200, BYTES));
    assert!(matches!(a.payload, Payload::Kept(_)));
    assert_eq!(a.payload.vehicle(), Vehicle::Kept);
    let (a, _) = ask("GET /files/kept.txt HTTP/1.1\r\nRange: bytes=5-", true);
    assert_eq!((a.resp.status(), memory(&a)), (206, &b"bytes"[..]));
    // Not kept: the open goes to the backend (Progress::Open), which
    // finds nothing there.
    let (a, _) = ask("GET /files/absent.txt HTTP/1.1", true);
    assert_eq!(a.resp.status(), 404);
}
