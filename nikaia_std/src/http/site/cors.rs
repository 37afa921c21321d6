//! CORS for the directory handler (`spec/site.md`, "CORS"): whether an
//! origin is allowed, the preflight's answer, and the headers an answer to
//! an allowed origin carries.

use crate::http::request::Request;
use crate::http::response::Response;
use crate::rt::{Cors, Origins};
use bytes::Bytes;

/// The request's `Origin`, if it is one `cors` allows.
fn allowed<'r>(cors: &Cors, req: &'r Request) -> Option<&'r str> {
    let origin = req.header("origin")?;
    match &cors.origins {
        Origins::Any => Some(origin),
        Origins::List(list) => list.iter().any(|o| o == origin).then_some(origin),
    }
}

/// Whether `req` is a CORS preflight: `OPTIONS` with `Origin` and
/// `Access-Control-Request-Method`.
pub(super) fn is_preflight(req: &Request) -> bool {
    req.method() == "OPTIONS"
        && req.header_bytes("origin").is_some()
        && req.header_bytes("access-control-request-method").is_some()
}

/// The request headers a write needs beside the safelisted ones: its
/// preconditions, its type and its credentials.
const WRITE_HEADERS: [&str; 5] = [
    "If-Match",
    "If-None-Match",
    "If-Unmodified-Since",
    "Content-Type",
    "Authorization",
];

/// The 204 a preflight gets: with the CORS headers when the origin, the
/// method and every requested header are allowed, without them otherwise.
/// `writes`: the write methods a rule allows for the name (`PUT`,
/// `DELETE`), which are allowed with the headers a write needs.
pub(super) fn preflight(cors: &Cors, req: &Request, writes: &[&str]) -> Response {
    preflight_with(cors, req, writes, &[])
}

/// [`preflight`] where the write methods go with headers of their own
/// too (`extra`: the tus endpoint's).
pub(super) fn preflight_with(
    cors: &Cors,
    req: &Request,
    writes: &[&str],
    extra: &[&'static str],
) -> Response {
    let mut resp = Response::new(204);
    let method = req.header("access-control-request-method").unwrap_or("");
    let asked = req.header("access-control-request-headers").unwrap_or("");
    let mut methods: Vec<&str> = cors.methods.iter().map(String::as_str).collect();
    let mut headers: Vec<&str> = cors.headers.iter().map(String::as_str).collect();
    if !writes.is_empty() {
        methods.extend(
            writes
                .iter()
                .filter(|w| !methods.contains(w))
                .collect::<Vec<_>>(),
        );
        for h in WRITE_HEADERS.iter().chain(extra) {
            if !headers.iter().any(|a| a.eq_ignore_ascii_case(h)) {
                headers.push(h);
            }
        }
    }
    let headers_ok = asked
        .split(',')
        .map(|h| h.trim())
        .filter(|h| !h.is_empty())
        .all(|h| headers.iter().any(|a| a.eq_ignore_ascii_case(h)));
    let method_ok = methods.contains(&method);
    if let (Some(origin), true, true) = (allowed(cors, req), method_ok, headers_ok) {
        allow_origin(cors, origin, &mut resp);
        resp.push_header(
            "Access-Control-Allow-Methods",
            Bytes::from(methods.join(", ")),
        );
        if !headers.is_empty() {
            resp.push_header(
                "Access-Control-Allow-Headers",
                Bytes::from(headers.join(", ")),
            );
        }
        let age = cors.max_age.as_secs().to_string();
        resp.push_header("Access-Control-Max-Age", Bytes::from(age));
    }
    resp
}

/// `Access-Control-Allow-Origin` and `-Allow-Credentials`.
fn allow_origin(cors: &Cors, origin: &str, resp: &mut Response) {
    let value = match cors.origins {
        Origins::Any => Bytes::from_static(b"*"),
        Origins::List(_) => Bytes::copy_from_slice(origin.as_bytes()),
    };
    resp.push_header("Access-Control-Allow-Origin", value);
    if cors.credentials {
        resp.push_header(
            "Access-Control-Allow-Credentials",
            Bytes::from_static(b"true"),
        );
    }
}

/// The CORS headers of an answer (a preflight has its own already):
/// `Vary: Origin` under a list of origins, whatever the origin, and the
/// allow and expose headers for an allowed one; with `*`, those on every
/// answer.
pub(super) fn dress(cors: &Cors, req: &Request, resp: &mut Response) {
    if matches!(cors.origins, Origins::List(_)) {
        super::dress::vary(resp, "Origin");
    }
    if is_preflight(req) {
        return;
    }
    // `*` goes on every answer, asked for or not: were it only on answers
    // to a request with `Origin`, a shared cache could keep one without it
    // and hand that to every page (and `*` never goes with credentials).
    let origin = match &cors.origins {
        Origins::Any => "*",
        Origins::List(_) => match allowed(cors, req) {
            Some(origin) => origin,
            None => return,
        },
    };
    allow_origin(cors, origin, resp);
    if !cors.expose.is_empty() {
        resp.push_header(
            "Access-Control-Expose-Headers",
            Bytes::from(cors.expose.join(", ")),
        );
    }
}
