//! Resumable uploads (`spec/site.md`, "Resumable uploads"): tus 1.0.0 with
//! its creation, expiration, termination and checksum extensions, as the
//! endpoint of `nikaia serve` speaks it. What a request asks for, decided
//! from its head; an upload's identifier; the answers and their headers.
//! Target- and protocol-independent: a backend keeps the uploads, checks
//! the final name through the write rules (`write.rs`) and moves bytes.

use super::cors;
use super::path::normalise;
use crate::http::request::Request;
use crate::http::response::Response;
use crate::rt::Runtime;
use bytes::Bytes;

/// The protocol version spoken, the only one.
pub(crate) const VERSION: &str = "1.0.0";
/// The extensions offered (`Tus-Extension`).
pub(crate) const EXTENSIONS: &str = "creation,expiration,termination,checksum";
/// The checksum algorithms offered (`Tus-Checksum-Algorithm`): sha1, which
/// tus requires, and the SHA-2 sums.
pub(crate) const ALGORITHMS: &str = "sha1,sha256,sha512";
/// The media type of a `PATCH` body.
const OFFSET_STREAM: &str = "application/offset+octet-stream";
/// The most `Upload-Metadata` may hold: it is kept with the upload and
/// sent back on every `HEAD`.
pub(crate) const METADATA_MAX: usize = 4 << 10;
/// The request headers a browser's tus client sends beside the write
/// headers, allowed by a preflight of the endpoint.
const REQUEST_HEADERS: [&str; 6] = [
    "Tus-Resumable",
    "Upload-Length",
    "Upload-Metadata",
    "Upload-Offset",
    "Upload-Checksum",
    "X-Requested-With",
];
/// The answer headers a browser's tus client reads, exposed to it.
const ANSWER_HEADERS: &str = "Location, Upload-Offset, Upload-Length, Upload-Metadata, \
                              Upload-Expires, Tus-Resumable, Tus-Version, Tus-Extension, \
                              Tus-Max-Size, Tus-Checksum-Algorithm";

/// An upload's identifier: 128 bits from the kernel's generator, written
/// as 32 lowercase hexadecimal digits. It names an upload in a table and a
/// file the server makes from those digits; never a path a client wrote.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Id(pub [u8; 16]);

impl Id {
    /// The identifier a request's tail spells, if it spells one exactly:
    /// 32 lowercase hexadecimal digits, nothing before or after.
    pub(crate) fn parse(text: &[u8]) -> Option<Id> {
        if text.len() != 32 {
            return None;
        }
        let mut id = [0u8; 16];
        for (i, pair) in text.chunks(2).enumerate() {
            let digit = |c: u8| match c {
                b'0'..=b'9' => Some(c - b'0'),
                b'a'..=b'f' => Some(c - b'a' + 10),
                _ => None,
            };
            id[i] = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        Some(Id(id))
    }

    pub(crate) fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A checksum algorithm of the checksum extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algorithm {
    Sha1,
    Sha256,
    Sha512,
}

/// `Upload-Checksum`: the algorithm and the digest the chunk must have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Checksum {
    pub algorithm: Algorithm,
    pub digest: Vec<u8>,
}

/// What a request of the endpoint asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ask {
    /// `POST` of the endpoint: a new upload of `length` bytes that becomes
    /// `name` under the served directory (`refused`: the name normaliser
    /// refused it, as a `PUT` of it would be); `metadata` as sent.
    Create {
        length: u64,
        name: String,
        refused: bool,
        metadata: String,
    },
    /// `HEAD` of an upload: how much arrived.
    Offset(Id),
    /// `PATCH` of an upload: bytes from `offset` on; `body`, their number
    /// as the head says it (`Some(0)`: none), `None` where it does not
    /// (chunked, or HTTP/2 without `Content-Length`).
    Append {
        id: Id,
        offset: u64,
        body: Option<u64>,
        checksum: Option<Checksum>,
    },
    /// `DELETE` of an upload (termination).
    Terminate(Id),
}

impl Ask {
    /// The upload the request is about (all but a creation).
    pub(crate) fn id(&self) -> Option<Id> {
        match self {
            Ask::Create { .. } => None,
            Ask::Offset(id) | Ask::Terminate(id) | Ask::Append { id, .. } => Some(*id),
        }
    }
}

/// What `req` (its tail after the endpoint in `tail`) asks for, or the
/// answer from its head alone: `OPTIONS` (with a preflight's CORS headers
/// where `[cors]` allows), 412 for another protocol version, 404 for a
/// tail that is no identifier, 400 for a header that does not parse, 415
/// for a `PATCH` of another type, 405 for a method the path does not take.
/// `body`: the request body's length as its head says it (`Some(0)`:
/// none), `None` where it does not say.
pub(crate) fn ask(
    rt: &Runtime,
    req: &Request,
    tail: &[u8],
    hidden: bool,
    body: Option<u64>,
) -> Result<Ask, Response> {
    let collection = tail.is_empty();
    if req.method() == "OPTIONS" {
        return Err(options(rt, req, collection));
    }
    if !allow(collection).split(", ").any(|m| m == req.method()) {
        return Err(not_allowed(collection));
    }
    if req.header("tus-resumable").map(str::trim) != Some(VERSION) {
        return Err(tus(Response::status_page(412)).header("Tus-Version", VERSION));
    }
    match (req.method(), collection) {
        ("POST", true) => create(req, hidden),
        (_, true) | ("POST", false) => Err(not_allowed(collection)),
        (method, false) => {
            let id = Id::parse(tail).ok_or_else(|| tus(Response::status_page(404)))?;
            match method {
                "HEAD" => Ok(Ask::Offset(id)),
                "DELETE" => Ok(Ask::Terminate(id)),
                "PATCH" => append(req, id, body),
                _ => Err(not_allowed(false)),
            }
        }
    }
}

/// A creation: `Upload-Length` (a deferred length is not offered), and
/// `Upload-Metadata` with the final name as `filename`, a name under the
/// served directory (`incoming/report.pdf`). The body must be empty: the
/// creation-with-upload extension is not offered.
fn create(req: &Request, hidden: bool) -> Result<Ask, Response> {
    let bad = |why: &str| Err(bad_request(why));
    if req.header_bytes("upload-defer-length").is_some() {
        return bad("a deferred length is not offered: send Upload-Length");
    }
    if req.header_bytes("upload-concat").is_some() {
        return bad("the concatenation extension is not offered");
    }
    let Some(length) = req.header("upload-length").and_then(number) else {
        return bad("Upload-Length must be a decimal number of bytes");
    };
    let carries_body = req.header("transfer-encoding").is_some()
        || req
            .header("content-length")
            .is_some_and(|n| n.trim() != "0");
    if carries_body {
        return bad("creation with upload is not offered: send the bytes with PATCH");
    }
    let metadata = req.header("upload-metadata").unwrap_or("").trim();
    if metadata.len() > METADATA_MAX || !metadata.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
    {
        return bad("Upload-Metadata is too long or holds bytes it may not");
    }
    let Some(filename) = metadata_value(metadata, "filename") else {
        return bad("Upload-Metadata needs `filename`: the name under the served directory");
    };
    let (name, refused) = final_name(&filename, hidden)?;
    Ok(Ask::Create {
        length,
        name,
        refused,
        metadata: metadata.to_owned(),
    })
}

/// An append: `Content-Type: application/offset+octet-stream` (else 415),
/// `Upload-Offset`, and an optional `Upload-Checksum`.
fn append(req: &Request, id: Id, body: Option<u64>) -> Result<Ask, Response> {
    let kind = req.header("content-type").unwrap_or("");
    let kind = kind.split(';').next().unwrap_or("").trim();
    if !kind.eq_ignore_ascii_case(OFFSET_STREAM) {
        return Err(tus(Response::status_page(415)));
    }
    let Some(offset) = req.header("upload-offset").and_then(number) else {
        return Err(bad_request(
            "Upload-Offset must be a decimal number of bytes",
        ));
    };
    let checksum = match req.header("upload-checksum") {
        None => None,
        Some(value) => Some(checksum(value)?),
    };
    Ok(Ask::Append {
        id,
        offset,
        body,
        checksum,
    })
}

/// `Upload-Checksum: ALGORITHM BASE64`: 400 for an algorithm not offered
/// or a digest of the wrong length.
fn checksum(value: &str) -> Result<Checksum, Response> {
    let (name, digest) = value.trim().split_once(' ').unwrap_or((value, ""));
    let (algorithm, len) = match name.to_ascii_lowercase().as_str() {
        "sha1" => (Algorithm::Sha1, 20),
        "sha256" => (Algorithm::Sha256, 32),
        "sha512" => (Algorithm::Sha512, 64),
        _ => return Err(bad_request("the checksum algorithm is not offered")),
    };
    match crate::text::base64::decode(digest.trim()) {
        Some(digest) if digest.len() == len => Ok(Checksum { algorithm, digest }),
        _ => Err(bad_request("the checksum's digest does not decode")),
    }
}

/// A decimal number of bytes, digits only.
fn number(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = !text.is_empty() && text.len() <= 19 && text.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| text.parse().ok()).flatten()
}

/// The value of `key` in `Upload-Metadata` (`key base64,key base64`),
/// decoded, if it is there and UTF-8.
fn metadata_value(metadata: &str, key: &str) -> Option<String> {
    metadata.split(',').find_map(|pair| {
        let (k, v) = pair.trim().split_once(' ').unwrap_or((pair.trim(), ""));
        if k != key {
            return None;
        }
        String::from_utf8(crate::text::base64::decode(v.trim())?).ok()
    })
}

/// The final name a creation asks for, as the directory writer would take
/// it from a request's path: a leading `/` and empty segments merged, and
/// refused (`true`) where the path would be — a `.` or `..` segment, a
/// hidden name. A name that can never be a file's (empty, ending in `/`,
/// with a NUL or a backslash) is 400, and so is one no write may make, as
/// for a `PUT` of it (`write::unmakeable`: too long, a control character).
pub(crate) fn final_name(filename: &str, hidden: bool) -> Result<(String, bool), Response> {
    let bytes = filename.as_bytes();
    if filename.is_empty() || filename.ends_with('/') || bytes.iter().any(|&b| b == 0 || b == b'\\')
    {
        return Err(bad_request("`filename` does not name a file"));
    }
    let Some(normal) = normalise(bytes) else {
        return Ok((filename.to_owned(), true));
    };
    if let Some(why) = super::write::unmakeable(&normal) {
        return Err(tus(super::write::unmakeable_answer(why)));
    }
    let name = String::from_utf8_lossy(&normal).into_owned();
    let refused = name.is_empty() || (!hidden && !crate::http::serve::visible(&name));
    Ok((name, refused))
}

/// The `[[auth]]` rules (their places in the runtime's list, in file
/// order, each once) that protect names a write rule naming its writers
/// covers: what a request about an identifier that names no upload is
/// checked against, so that without valid credentials it is 401 as one
/// about a live upload is, and the identifier tells nothing. Found by
/// trying a name made from each pattern on the other rules, both ways.
/// Empty where no write needs credentials.
pub(crate) fn writers_auth(rt: &Runtime) -> Vec<usize> {
    use super::findings::sample;
    use super::path::Candidates;
    use crate::rt::any_matches;
    let covers = |patterns: &[crate::rt::Glob], name: &str| {
        Candidates::of(name, &[])
            .iter()
            .any(|n| any_matches(patterns, n))
    };
    let writers = rt.site.write.iter().filter(|w| !w.anyone);
    let mut out = Vec::new();
    for (i, auth) in rt.site.auth.iter().enumerate() {
        let protects = writers.clone().any(|w| {
            let written = w.patterns.iter().filter_map(sample);
            let guarded = auth.patterns.iter().filter_map(sample);
            // The first auth rule that matches a name decides for it.
            let first = |name: &str| rt.site.auth.iter().position(|a| covers(&a.patterns, name));
            written.chain(guarded).any(|name| {
                covers(&w.patterns, &name)
                    && covers(&auth.patterns, &name)
                    && first(&name) == Some(i)
            })
        });
        if protects {
            out.push(i);
        }
    }
    out
}

/// Every answer of the endpoint says which version it speaks (once).
pub(crate) fn tus(resp: Response) -> Response {
    match resp.get_header("tus-resumable") {
        Some(_) => resp,
        None => resp.header("Tus-Resumable", VERSION),
    }
}

fn bad_request(why: &str) -> Response {
    let mut resp = tus(Response::new(400)).header("Content-Type", "text/plain; charset=utf-8");
    resp.body =
        crate::http::response::Body::Bytes(Bytes::from(format!("400 Bad Request: {why}\n")));
    resp
}

/// What a path of the endpoint takes: the endpoint itself creates, an
/// upload's path reports, appends and terminates. Every 405 and `OPTIONS`
/// answer of the endpoint says it, from here.
fn allow(collection: bool) -> &'static str {
    match collection {
        true => "OPTIONS, POST",
        false => "DELETE, HEAD, OPTIONS, PATCH",
    }
}

/// 405 with what the path takes.
fn not_allowed(collection: bool) -> Response {
    tus(Response::status_page(405)).header("Allow", allow(collection))
}

/// `OPTIONS` of the endpoint: what it offers (tus 1.0 §5.1) and what the
/// path takes, with the CORS headers of a preflight where `[cors]` allows
/// the origin.
fn options(rt: &Runtime, req: &Request, collection: bool) -> Response {
    let mut resp = match &rt.site.cors {
        Some(c) if cors::is_preflight(req) => {
            let methods = ["POST", "HEAD", "PATCH", "DELETE"];
            cors::preflight_with(c, req, &methods, &REQUEST_HEADERS)
        }
        _ => Response::new(204),
    };
    resp.push_header("Allow", Bytes::from_static(allow(collection).as_bytes()));
    resp.push_header("Tus-Resumable", Bytes::from_static(VERSION.as_bytes()));
    resp.push_header("Tus-Version", Bytes::from_static(VERSION.as_bytes()));
    resp.push_header("Tus-Extension", Bytes::from_static(EXTENSIONS.as_bytes()));
    resp.push_header(
        "Tus-Checksum-Algorithm",
        Bytes::from_static(ALGORITHMS.as_bytes()),
    );
    if let Some(max) = max_size(rt) {
        resp.push_header("Tus-Max-Size", Bytes::from(max.to_string()));
    }
    resp
}

/// The largest upload any write rule takes (`Tus-Max-Size`).
fn max_size(rt: &Runtime) -> Option<u64> {
    let rules = rt.site.write.iter().filter(|r| r.create || r.replace);
    rules.map(|r| r.max_size.unwrap_or(rt.stream_limit)).max()
}

/// The answer to a creation: 201 with the upload's path.
pub(crate) fn created(endpoint: &str, id: Id, expires: u64) -> Response {
    tus(Response::new(201))
        .header("Location", format!("{endpoint}{}", id.hex()))
        .header("Upload-Offset", 0)
        .header("Upload-Expires", date(expires))
}

/// What is known of an upload, for the answers about it.
pub(crate) struct Seen<'a> {
    pub offset: u64,
    pub length: u64,
    pub metadata: &'a str,
    /// When it expires (seconds since the epoch); `None` once complete.
    pub expires: Option<u64>,
}

/// The answer to a `HEAD`: 200 with the offset, never cached.
pub(crate) fn offset(seen: &Seen<'_>) -> Response {
    let mut resp = tus(Response::new(200))
        .header("Upload-Offset", seen.offset)
        .header("Upload-Length", seen.length)
        .header("Cache-Control", "no-store");
    if !seen.metadata.is_empty() {
        resp = resp.header("Upload-Metadata", seen.metadata);
    }
    if let Some(at) = seen.expires {
        resp = resp.header("Upload-Expires", date(at));
    }
    resp
}

/// The answer to a `PATCH` whose bytes were taken: 204 with the new offset.
pub(crate) fn appended(offset: u64, expires: Option<u64>) -> Response {
    let resp = tus(Response::new(204)).header("Upload-Offset", offset);
    match expires {
        Some(at) => resp.header("Upload-Expires", date(at)),
        None => resp,
    }
}

/// A date as HTTP writes it.
fn date(secs: u64) -> String {
    String::from_utf8_lossy(&crate::text::date::imf_fixdate(secs)).into_owned()
}

/// The site's headers on an answer of the endpoint, and the tus headers a
/// browser's client must read exposed to an allowed origin.
pub(crate) fn dress(
    rt: &Runtime,
    req: &Request,
    name: &str,
    grant: &super::Grant,
    tls: bool,
    resp: &mut Response,
) {
    super::write::dress_refusal(rt, req, name, grant, tls, resp);
    if resp.get_header("access-control-allow-origin").is_some() {
        let mut expose = String::from(ANSWER_HEADERS);
        if let Some(c) = &rt.site.cors {
            for h in &c.expose {
                expose.push_str(", ");
                expose.push_str(h);
            }
        }
        resp.headers
            .retain(|(n, _)| !n.eq_ignore_ascii_case("access-control-expose-headers"));
        resp.push_header("Access-Control-Expose-Headers", Bytes::from(expose));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_exactly_32_lowercase_hex_digits() {
        let id = Id([0xab; 16]);
        assert_eq!(Id::parse(id.hex().as_bytes()), Some(id));
        for bad in [
            &b""[..],
            b"../../../../etc/passwd",
            b"ABABABABABABABABABABABABABABABAB",
            b"abababababababababababababababa",
            b"abababababababababababababababab/",
            b"ababababababababababababababab..",
            b"%2e%2e%2fababababababababababab",
            b"abababababababababababababababa\0",
        ] {
            assert_eq!(Id::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn metadata_and_names() {
        let m = "relativePath bnVsbA==,filename aW4vcmVwb3J0LnBkZg==,filetype";
        assert_eq!(
            metadata_value(m, "filename").as_deref(),
            Some("in/report.pdf")
        );
        assert_eq!(metadata_value(m, "filetype").as_deref(), Some(""));
        assert_eq!(metadata_value(m, "name"), None);
        assert_eq!(
            final_name("/in//a.txt", false).unwrap(),
            ("in/a.txt".into(), false)
        );
        assert!(final_name("../a.txt", false).unwrap().1);
        assert!(final_name("in/.env", false).unwrap().1);
        assert!(!final_name("in/.env", true).unwrap().1);
        for bad in ["", "in/", "a\0b", "a\\b", "in/a\nb", "a\u{85}", "a\u{7f}"] {
            assert!(final_name(bad, false).is_err(), "{bad:?}");
        }
        let long = format!("in/{}", "x".repeat(256));
        assert_eq!(final_name(&long, false).unwrap_err().status(), 400);
        let longest = format!("in/{}", "x".repeat(255));
        assert_eq!(
            final_name(&longest, false).unwrap(),
            (longest.clone(), false)
        );
    }

    #[test]
    fn checksums_parse_or_are_400() {
        let sha1 = checksum("sha1 Kq5sNclPz7QV2+lfQIuc6R7oRu0=").unwrap();
        assert_eq!((sha1.algorithm, sha1.digest.len()), (Algorithm::Sha1, 20));
        assert_eq!(
            checksum("md5 1B2M2Y8AsgTpgAmY7PhCfg==")
                .unwrap_err()
                .status(),
            400
        );
        assert_eq!(checksum("sha1 AAAA").unwrap_err().status(), 400);
        assert_eq!(number("12"), Some(12));
        assert_eq!(number("-1"), None);
        assert_eq!(number("1e3"), None);
    }
}
