//! The wasm32 backend: no sockets and no threads. Where the Linux build
//! starts its event loop, [`Server::run`] registers the routes; a JS host
//! (Node's `node:http`, `nikaia_std/wasm/`) hands each request to
//! [`handle`] and writes the [`Answer`] back. What the answer is — routing,
//! handlers, `http::File` with its statuses, headers, ranges and
//! conditionals — is decided by the same code as on Linux; only how the
//! bytes move differs (`spec/targets.md`).

use super::app::{hide_error, route, Server};
use super::file::{self, Files, Meta, Plan, Prepared, Step};
use super::parse::parse_head;
use super::request::Request;
use super::response::{each_field, reason, Body, Response};
use super::router::Router;
use crate::fs::{self, Identity, Opened, Root};
use crate::send::Vehicle;
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

impl Files for HostFiles {
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

    /// The default (the host has no runtime file).
    fn precompressed(&self) -> &[crate::rt::Coding] {
        &crate::rt::Coding::ALL
    }
}

/// What the host writes back: a status, header pairs, and a body it pulls
/// in parts, so a large file is never read whole.
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
            Source::File { file, offset, end } => {
                let n = ((*end - *offset) as usize).min(CHUNK);
                let mut buf = vec![0u8; n];
                let mut got = 0;
                while got < n {
                    match file.read_at(&mut buf[got..], *offset + got as u64) {
                        Ok(0) => {
                            let why = format!(
                                "the file ended {} bytes early (truncated?)",
                                *end - *offset - got as u64
                            );
                            console_error(&why);
                            return Err(JsError::new(&why));
                        }
                        Ok(k) => got += k,
                        Err(e) => {
                            console_error(&format!("reading a file body: {e}"));
                            return Err(JsError::new(&e.to_string()));
                        }
                    }
                }
                *offset += n as u64;
                Ok(buf)
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
        return answer(r, None, true, false);
    };
    // The head as it would have come off a socket, so the same parser
    // validates it; the host has already taken the body's framing.
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
    let parsed = match parse_head(&head, crate::rt::Runtime::default().max_header_bytes) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => return answer(Response::status_page(400), None, true, false),
        Err(reject) => return answer(Response::status_page(reject.status), None, true, false),
    };
    let keep_alive = parsed.keep_alive;
    let close = |resp: &Response| {
        !keep_alive
            || resp
                .get_header("connection")
                .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    };
    let unknown_peer = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
    let mut req = Request::new(
        head.slice(..parsed.len),
        parsed,
        Bytes::from(body),
        unknown_peer,
    );
    let resp = route(&router, &mut req);
    log(&req, &resp);
    let mut resp = hide_error(resp);
    let head_only = req.is_head();
    match std::mem::replace(&mut resp.body, Body::Empty) {
        Body::File(f) => {
            let mut step = file::begin(&HostFiles, &req, &resp, &f);
            let prepared = loop {
                match step {
                    Step::Ready(prepared) => break prepared,
                    // Opens are synchronous here; this is not reached.
                    Step::Open(name, then) => {
                        let opened = f.root.open(&name);
                        step = file::opened(&HostFiles, &req, &resp, &f, name, then, opened)
                    }
                }
            };
            log(&req, &prepared.resp);
            let close = close(&resp);
            let Prepared { resp, length, plan } = prepared;
            answer(resp, Some((length, plan)), close, head_only)
        }
        body => {
            resp.body = body;
            let close = close(&resp);
            answer(resp, None, close, head_only)
        }
    }
}

fn log(req: &Request, resp: &Response) {
    if let Some(e) = &resp.log_error {
        console_error(&format!("{} {}: {e}", req.method(), req.target()));
    }
}

/// The head fields and the body source of a decided response.
fn answer(resp: Response, file: Option<(u64, Plan)>, close: bool, head_only: bool) -> Answer {
    let (length, plan) = file.unwrap_or((resp.body.len(), Plan::None));
    let mut headers = vec![
        "Date".to_owned(),
        String::from_utf8_lossy(&imf_fixdate(host_now_seconds())).into_owned(),
    ];
    each_field(&resp, length, |name, value| {
        headers.push(String::from_utf8_lossy(name).into_owned());
        headers.push(String::from_utf8_lossy(value).into_owned());
    });
    if close {
        headers.push("Connection".to_owned());
        headers.push("close".to_owned());
    }
    let send_body = !head_only && !super::response::bodiless(resp.status);
    let body = match (send_body, plan, resp.body) {
        (false, _, _) => Source::Bytes(Bytes::new()),
        (true, Plan::Kept(b), _) => Source::Bytes(b),
        (
            true,
            Plan::File {
                file, start, end, ..
            },
            _,
        ) => Source::File {
            file,
            offset: start,
            end,
        },
        (true, Plan::None, Body::Bytes(b) | Body::Mapped(b)) => Source::Bytes(b),
        (true, Plan::None, _) => Source::Bytes(Bytes::new()),
    };
    Answer {
        status: resp.status,
        headers,
        body,
    }
}
