//! The program the request-body tests run (`tests/bodies*.rs`): a route of
//! each way to take a body, and what its sinks saw, for the tests to read.

use nikaia_std::http::{Aborted, Flow, Limit, Request, Response, Resume, Server, Sink};
use nikaia_std::rt::Runtime;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

/// FNV-1a, 64 bits: what `/hash` answers for a body, computed by the
/// client too.
pub fn fnv(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// FNV-1a's starting value.
pub const FNV0: u64 = 0xcbf2_9ce4_8422_2325;

/// What `/hash` answers for `body`.
pub fn hash_answer(body: &[u8]) -> String {
    format!("{} {:016x}", body.len(), fnv(FNV0, body))
}

/// What the sinks of one server saw.
#[derive(Default)]
pub struct Probe {
    /// Bytes `/hold`'s sinks took.
    pub held: AtomicU64,
    /// The handles of `/hold`'s paused bodies, for the test to resume.
    pub paused: Mutex<Vec<Resume>>,
    /// Why sinks were told their body would not arrive whole.
    pub aborted: Mutex<Vec<Aborted>>,
}

impl Probe {
    /// Resumes every paused `/hold` body; how many there were.
    pub fn resume_all(&self) -> usize {
        let handles: Vec<Resume> = std::mem::take(&mut *self.paused.lock().unwrap());
        let n = handles.len();
        for h in handles {
            h.resume();
        }
        n
    }
}

/// Hashes a body as it arrives.
struct Hash {
    len: u64,
    h: u64,
    probe: Arc<Probe>,
}

impl Sink for Hash {
    type Answer = String;

    fn piece(&mut self, piece: &[u8], _flow: &mut Flow<'_>) {
        self.len += piece.len() as u64;
        self.h = fnv(self.h, piece);
    }

    fn end(self, _req: &Request) -> String {
        format!("{} {:016x}", self.len, self.h)
    }

    fn abort(self, why: Aborted) {
        self.probe.aborted.lock().unwrap().push(why);
    }
}

/// Pauses its body after every piece, leaving the handle with the test.
struct Hold {
    hash: Hash,
}

impl Sink for Hold {
    type Answer = String;

    fn piece(&mut self, piece: &[u8], flow: &mut Flow<'_>) {
        self.hash.piece(piece, flow);
        self.hash.probe.held.fetch_add(piece.len() as u64, SeqCst);
        let handle = flow.pause();
        self.hash.probe.paused.lock().unwrap().push(handle);
    }

    fn end(self, req: &Request) -> String {
        self.hash.end(req)
    }

    fn abort(self, why: Aborted) {
        self.hash.abort(why)
    }
}

/// Counts a body's bytes as it arrives (what a load test needs of a sink).
struct Count(u64);

impl Sink for Count {
    type Answer = String;

    fn piece(&mut self, piece: &[u8], _flow: &mut Flow<'_>) {
        self.0 += piece.len() as u64;
    }

    fn end(self, _req: &Request) -> String {
        self.0.to_string()
    }
}

/// The program: `runtime` with these routes.
///
/// - `GET /`: "hi" (takes no body).
/// - `POST /echo`: the whole body back (the runtime's `body-limit`).
/// - `POST /small`: the whole body's length, at most 1 000 bytes.
/// - `POST /hash`, `PUT /hash`: a streamed body's length and FNV-1a.
/// - `POST /hash-small`: the same, at most 100 000 bytes.
/// - `POST /count`, `PUT /count`: a streamed body's length, with no
///   limit.
/// - `POST /hold`: the same as `/hash`, pausing after each piece until the test
///   resumes it ([`Probe::resume_all`]).
/// - `PUT /guarded`: streamed, only with `Authorization: Bearer
///   open-sesame` (401 from the head otherwise).
/// - `POST /coded`: the whole body, `Content-Encoding` and all.
pub fn body_server(runtime: Runtime) -> (Server, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let hash = {
        let probe = probe.clone();
        move |_: &Request| Hash {
            len: 0,
            h: FNV0,
            probe: probe.clone(),
        }
    };
    let (h1, h2, h3, h4) = (hash.clone(), hash.clone(), hash.clone(), hash.clone());
    let server = Server::with_runtime(runtime)
        .route("/", |_| "hi")
        .method("POST", "/echo", |req| req.body().clone())
        .method("POST", "/small", |req| req.body().len().to_string())
        .max_body(Limit::Bytes(1000))
        .stream("POST", "/hash", h1)
        .stream("PUT", "/hash", h2)
        .stream("POST", "/hash-small", h3)
        .max_body(Limit::Bytes(100_000))
        .stream("POST", "/hold", move |req| Hold { hash: h4(req) })
        .stream("POST", "/count", |_| Count(0))
        .max_body(Limit::None)
        .stream("PUT", "/count", |_| Count(0))
        .max_body(Limit::None)
        .stream("PUT", "/guarded", move |req| {
            match req.header("authorization") {
                Some("Bearer open-sesame") => Ok(hash(req)),
                _ => Err(Response::new(401)
                    .header("www-authenticate", "Bearer")
                    .body("who are you?")),
            }
        })
        .method("POST", "/coded", |req| {
            format!("{} coded bytes", req.body().len())
        })
        .coded_body();
    (server, probe)
}
