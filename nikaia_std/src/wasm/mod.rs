//! The wasm32 backend: no sockets and no threads. Where the Linux build
//! starts its event loop, [`Server::run`] registers the routes; a JS host
//! (Node's `node:http`, `nikaia_std/wasm/`) hands each request to
//! [`handle`] and writes the [`Answer`] back. What the answer is — routing,
//! handlers, `http::File` with its statuses, headers, ranges and
//! conditionals — is decided by the same pipeline as on Linux
//! (`http::answer`); this side is only the host's entry and the body: a
//! file's descriptor and range for the host to stream, or parts it pulls
//! (`spec/targets.md`).

use crate::fs::{self, Identity, Opened, Root};
use crate::http::answer::{self, Before, Payload, Progress};
use crate::http::file::Meta;
use crate::http::h1::parse::parse_head;
use crate::http::port::{Challenges, Codings, Reads, Rules, Writes};
use crate::http::response::{each_field, reason};
use crate::http::router::Router;
use crate::http::{Peer, Request, Response, Server};
use crate::rt::Vehicle;
use crate::text::date::imf_fixdate;
use bytes::Bytes;
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use wasm_bindgen::prelude::*;

thread_local! {
    /// The routes [`Server::run`] registered.
    static APP: RefCell<Option<Rc<Router>>> = const { RefCell::new(None) };
    /// The host's clock at the request being answered, in seconds.
    static NOW: Cell<u64> = const { Cell::new(0) };
}

/// Bytes of a file body handed to the host per [`Answer::next_chunk`].
const CHUNK: usize = 64 << 10;

impl Server {
    /// On wasm32 there is no socket loop: this registers the routes, and
    /// the JS host passes each request to [`handle`]. Returns at once.
    pub fn run(self) -> std::io::Result<()> {
        APP.with(|app| *app.borrow_mut() = Some(Rc::new(self.router)));
        Ok(())
    }
}

/// Now, as the host said with the request being answered (`SystemTime`
/// panics on wasm32-unknown-unknown).
pub(crate) fn host_now_seconds() -> u64 {
    NOW.with(Cell::get)
}

#[wasm_bindgen]
extern "C" {
    /// The host's error log.
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(line: &str);
}

/// The wasm32 side of resolving a file: no kept table (nothing is mapped
/// here), opens that simply run (the host's reads are synchronous), and the
/// file read in parts as the host asks for them.
struct HostFiles;

impl Reads for HostFiles {
    fn kept(&self, _: &Root, _: &Path) -> Option<(Bytes, Identity, Meta)> {
        None
    }

    fn offer(&self, _: &Root, _: &Path, _: &Opened, _: &Meta) -> Option<Bytes> {
        None
    }

    fn open_now(&self, root: &Root, name: &Path) -> Result<Opened, fs::Error> {
        root.open(name)
    }

    fn vehicle(&self, _: u64) -> Vehicle {
        Vehicle::Read
    }
}

/// The sidecars of every coding, and no kept variants.
impl Codings for HostFiles {
    /// The default (the host has no runtime file).
    fn precompressed(&self) -> &[crate::rt::Coding] {
        &crate::rt::Coding::ALL
    }
}

/// Read-only, without ACME, a runtime file or TLS: the defaults (a write
/// is a logged 500, no validation is ours, no site rules).
impl Writes for HostFiles {}
impl Challenges for HostFiles {}
impl Rules for HostFiles {}

/// What the host writes back: a status, header pairs, and a body: a file's
/// descriptor and range it streams itself ([`Answer::fd`]), or parts it
/// pulls ([`Answer::next_chunk`]), so a large file is never read whole.
#[wasm_bindgen]
pub struct Answer {
    status: u16,
    headers: Vec<String>,
    body: Source,
}

enum Source {
    Bytes(Bytes),
    File {
        file: Arc<fs::OpenFile>,
        offset: u64,
        end: u64,
        /// The host streams it from [`Answer::fd`] (std chose so).
        by_host: bool,
    },
}

#[wasm_bindgen]
impl Answer {
    /// The status code.
    #[wasm_bindgen(getter)]
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The reason phrase of the status.
    #[wasm_bindgen(getter)]
    pub fn reason(&self) -> String {
        reason(self.status).to_owned()
    }

    /// The header fields as a flat list: name, value, name, value, …
    #[wasm_bindgen(getter)]
    pub fn headers(&self) -> Vec<String> {
        self.headers.clone()
    }

    /// The descriptor to stream the body from, when std chose that the
    /// host moves it itself: the file std opened and checked under the
    /// root, the range `bodyStart`, `bodyLength` of it. The host reads
    /// exactly that range, never past it, ends the response short (closing
    /// the connection) if the file ends first, never closes the descriptor
    /// itself, and frees the answer once it needs it no more (which closes
    /// it). `undefined` for every other body: then the host pulls
    /// `nextChunk`.
    #[wasm_bindgen(getter)]
    pub fn fd(&self) -> Option<u32> {
        match &self.body {
            Source::File {
                file,
                by_host: true,
                ..
            } => file.descriptor(),
            _ => None,
        }
    }

    /// Where in the file the body starts (with `fd`; 0 otherwise).
    #[wasm_bindgen(getter, js_name = bodyStart)]
    pub fn body_start(&self) -> f64 {
        match &self.body {
            Source::File { offset, .. } => *offset as f64,
            Source::Bytes(_) => 0.0,
        }
    }

    /// How many bytes of the body are still to go: the declared length of
    /// the range before any `nextChunk`.
    #[wasm_bindgen(getter, js_name = bodyLength)]
    pub fn body_length(&self) -> f64 {
        match &self.body {
            Source::File { offset, end, .. } => (*end - *offset) as f64,
            Source::Bytes(b) => b.len() as f64,
        }
    }

    /// The next part of the body (at most 64 KiB); empty once it is all
    /// out. Throws when the file cannot be read or ended early (the host
    /// then closes the connection short, as the Linux server does).
    #[wasm_bindgen(js_name = nextChunk)]
    pub fn next_chunk(&mut self) -> Result<Vec<u8>, JsError> {
        match &mut self.body {
            Source::Bytes(b) => {
                let n = b.len().min(CHUNK);
                Ok(b.split_to(n).to_vec())
            }
            Source::File {
                file, offset, end, ..
            } => {
                let n = ((*end - *offset) as usize).min(CHUNK);
                let mut buf = vec![0u8; n];
                match fs::read_full_at(file, &mut buf, *offset) {
                    Ok(got) if got < n => {
                        let why = format!(
                            "the file ended {} bytes early (truncated?)",
                            *end - *offset - got as u64
                        );
                        console_error(&why);
                        Err(JsError::new(&why))
                    }
                    Ok(_) => {
                        *offset += n as u64;
                        Ok(buf)
                    }
                    Err(e) => {
                        console_error(&format!("reading a file body: {e}"));
                        Err(JsError::new(&e.to_string()))
                    }
                }
            }
        }
    }
}

/// Answers one request with the routes [`Server::run`] registered. The host
/// gives the method, the request target as sent, the header fields as a
/// flat list (name, value, …), the body (already de-chunked), and its clock
/// (milliseconds since the Unix epoch: `Date.now()`).
#[wasm_bindgen]
pub fn handle(
    method: &str,
    target: &str,
    headers: Vec<String>,
    body: Vec<u8>,
    now_ms: f64,
) -> Answer {
    NOW.with(|now| now.set((now_ms.max(0.0) / 1000.0) as u64));
    let Some(router) = APP.with(|app| app.borrow().clone()) else {
        let mut r = Response::status_page(503);
        r.log_error = Some("no routes: the program did not call Server::run".into());
        return status_answer(r);
    };
    // The host speaks HTTP/1.1: its request is checked by the same rules as
    // one off a socket, from the head it would have been. The host has
    // already taken the body's framing.
    let mut head = format!("{method} {target} HTTP/1.1\r\n").into_bytes();
    for pair in headers.chunks(2) {
        let [name, value] = pair else { break };
        if name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("transfer-encoding")
        {
            continue;
        }
        head.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    if !body.is_empty() {
        head.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    let head = Bytes::from(head);
    let parsed = match parse_head(
        &head,
        crate::rt::Runtime::default().max_header_bytes,
        &mut crate::http::request::Spare::default(),
    ) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => return status_answer(Response::status_page(400)),
        Err(reject) => return status_answer(Response::status_page(reject.status)),
    };
    let may_keep = parsed.keep_alive;
    let len = parsed.len;
    // The host gives no peer address.
    let mut req = parsed.request(head.slice(..len), Bytes::from(body), Peer::UNKNOWN);
    let mut log =
        |req: &Request, e: &str| console_error(&format!("{} {}: {e}", req.method(), req.target()));
    let mut progress = begin(&router, &mut req, may_keep, &mut log);
    // Opens are synchronous here: the pipeline never has to wait long.
    let decided = loop {
        match progress {
            Progress::Ready(decided) => break decided,
            // The same job the io pool runs on Linux (an open or a
            // listing), run in place.
            Progress::Open(job, waiting) => {
                let done = answer::Done::Opened(job.run());
                progress = waiting.resume(&HostFiles, &req, done, &mut log);
            }
            // The host has no runtime file, so no `[[auth]]` rule asks for
            // a check; were one to, no credentials could be checked here.
            Progress::Verify(check, waiting) => {
                progress = waiting.verified(
                    &HostFiles,
                    &req,
                    *check,
                    crate::http::site::Verdict::Invalid,
                    &mut log,
                );
            }
        }
    };
    to_host(decided)
}

/// The first step of a request's answer. With a body, its head decides
/// first, as on Linux (`answer::before_body`: 413, 415, the handler of a
/// streamed route answering instead); the host read the body whole, so a
/// sink is given it as one piece.
fn begin(
    router: &Router,
    req: &mut Request,
    may_keep: bool,
    log: &mut impl FnMut(&Request, &str),
) -> Progress {
    if req.body.is_empty() {
        return answer::answer(&HostFiles, router, None, req, may_keep, log);
    }
    let declared = answer::declared(req, true, Some(req.body.len() as u64));
    match answer::before_body(&HostFiles, router, None, req, declared) {
        Before::AnswerNow | Before::Whole { .. } => {
            answer::answer(&HostFiles, router, None, req, may_keep, log)
        }
        Before::Refuse(resp) => Progress::Ready(answer::refused(req, resp, !may_keep, log)),
        Before::Stream { sink, .. } => {
            let fed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::http::body::feed_whole(sink, req)
            }));
            let resp = fed.unwrap_or_else(|_| {
                Response::internal_error(format!(
                    "handler panicked on {} {}",
                    req.method(),
                    req.target()
                ))
            });
            answer::answer_with(&HostFiles, req, resp, may_keep, log)
        }
    }
}

/// A status page answered before a request could reach the pipeline; the
/// connection closes after it.
fn status_answer(resp: Response) -> Answer {
    if let Some(e) = &resp.log_error {
        console_error(e);
    }
    let (length, body) = resp.memory_body();
    host_answer(&resp, length, true, Source::Bytes(body))
}

/// The most of a produced body the host is handed (`spec/targets.md`).
const PRODUCED_MAX: usize = 64 << 20;

/// A produced body, pulled to its end in place: the host takes an answer
/// whole. One that waits (`Later`), fails, or grows past
/// [`PRODUCED_MAX`] is a logged 500 instead (`spec/targets.md`).
fn produce_whole(sending: &mut crate::http::produce::Sending) -> Result<Bytes, String> {
    use crate::http::produce::Next;
    let mut whole = Vec::new();
    let mut make = || crate::http::body::Resume::new(|| {});
    loop {
        match sending.next(PRODUCED_MAX, &mut make) {
            Next::Bytes(b) if whole.len() + b.len() <= PRODUCED_MAX => whole.extend_from_slice(&b),
            Next::Bytes(_) => {
                return Err(format!(
                    "a produced body past {PRODUCED_MAX} bytes: this target hands the host whole answers"
                ))
            }
            Next::End => return Ok(Bytes::from(whole)),
            Next::Wait => {
                return Err("a produced body that waits (Pulled::Later) needs a backend that \
                            sends as it goes: this target hands the host whole answers"
                    .to_owned())
            }
            Next::Fail(why) => return Err(format!("a produced body failed: {why}")),
        }
    }
}

/// The host's view of a decided answer: head fields and the body.
fn to_host(decided: answer::Answer) -> Answer {
    let mut length = decided.length;
    let body = match decided.payload {
        Payload::Produced(mut sending) => match produce_whole(&mut sending) {
            Ok(b) => {
                length = b.len() as u64;
                Source::Bytes(b)
            }
            Err(why) => return status_answer(Response::internal_error(why)),
        },
        Payload::None => Source::Bytes(Bytes::new()),
        Payload::Memory(b) | Payload::Mapped(b) | Payload::Kept(b) => Source::Bytes(b),
        Payload::File {
            file, start, end, ..
        } => Source::File {
            // Every file body whose host can read the descriptor: there is no
            // size below which pulling it through the module was cheaper (4 KiB
            // and 1 MiB measured, docs/performance.md), so no threshold.
            by_host: file.descriptor().is_some(),
            file,
            offset: start,
            end,
        },
    };
    // HEAD of a produced body without a length: none is said.
    host_answer(&decided.resp, length, decided.close, body)
}

fn host_answer(resp: &Response, length: u64, close: bool, body: Source) -> Answer {
    let mut headers = vec![
        "Date".to_owned(),
        String::from_utf8_lossy(&imf_fixdate(host_now_seconds())).into_owned(),
    ];
    each_field(resp, length, |name, value| {
        headers.push(String::from_utf8_lossy(name).into_owned());
        headers.push(String::from_utf8_lossy(value).into_owned());
    });
    if close {
        headers.push("Connection".to_owned());
        headers.push("close".to_owned());
    }
    Answer {
        status: resp.status(),
        headers,
        body,
    }
}

impl crate::rt::Runtime {
    /// What `nikaia check` finds on the machine beyond the file's text: on
    /// wasm32, nothing (the host owns the sockets, certificates and paths).
    pub fn preflight(&self) -> Vec<crate::rt::Finding> {
        Vec::new()
    }
}
