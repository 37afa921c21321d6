//! `Response` and the body table (D1): what a handler's return value becomes.

use crate::html::Raw;
use bytes::Bytes;
use std::borrow::Cow;
use std::fmt::Display;

/// What a response carries after its head.
#[derive(Clone, Debug)]
pub(crate) enum Body {
    Empty,
    Bytes(Bytes),
    /// Bytes of a program's `fs::Mapped`: a mapping of a file someone may
    /// truncate, so never read in user mode (under TLS the backend has the
    /// kernel copy them first). Only where `fs::map` exists.
    Mapped(Bytes),
    /// Resolved after the handler returns (`http::File`).
    File(Box<super::file::File>),
    /// Pulled piece by piece as the connection takes it (`http::Produced`).
    Produced(super::produce::Held),
}

impl Body {
    /// The length of a body held in memory (a file's is known only once it
    /// is opened).
    pub(crate) fn len(&self) -> u64 {
        match self {
            Body::Empty | Body::File(_) | Body::Produced(_) => 0,
            Body::Bytes(b) | Body::Mapped(b) => b.len() as u64,
        }
    }
}

/// A status, headers and a body. As a handler's return value it is itself;
/// headers set on it override what its body's row would say.
#[derive(Clone, Debug)]
pub struct Response {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(Cow<'static, str>, Bytes)>,
    pub(crate) body: Body,
    /// The Content-Type the body's row gives, unless a header overrides it.
    pub(crate) default_type: Option<&'static str>,
    /// An error to write to the error log when this response is sent.
    pub(crate) log_error: Option<Box<str>>,
    /// The user std verified for this answer (the access log's), where std
    /// made the answer itself after a body (the directory writer's).
    pub(crate) user: Option<Box<str>>,
}

impl Response {
    /// An empty response with this status.
    pub fn new(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Body::Empty,
            default_type: None,
            log_error: None,
            user: None,
        }
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Adds a header. Framing headers (`Content-Length`, `Transfer-Encoding`,
    /// `Date`) are the server's and are ignored here; a name or value that
    /// could split the response (CR, LF, NUL, or a name that is not a token)
    /// turns the response into a 500 and is logged.
    pub fn header(mut self, name: impl Into<Cow<'static, str>>, value: impl Display) -> Response {
        let name = name.into();
        let value = value.to_string();
        if !valid_name(&name) || value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            self.log_error = Some(format!("handler set an invalid header {name:?}").into());
            return self;
        }
        if ["content-length", "transfer-encoding", "date"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
        {
            return self;
        }
        self.headers.push((name, Bytes::from(value)));
        self
    }

    /// Adds a header the server computed (already valid, no copy).
    pub(crate) fn push_header(&mut self, name: &'static str, value: Bytes) {
        self.headers.push((Cow::Borrowed(name), value));
    }

    /// Replaces the body with `row`'s body (and its default Content-Type),
    /// keeping this response's status and headers.
    pub fn body(mut self, row: impl IntoResponse) -> Response {
        let inner = row.into_response();
        self.body = inner.body;
        self.default_type = inner.default_type;
        for (n, v) in inner.headers {
            if self.get_header(&n).is_none() {
                self.headers.push((n, v));
            }
        }
        self.log_error = self.log_error.or(inner.log_error);
        self
    }

    /// The value of a header set on this response (case-insensitive).
    pub fn get_header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// The row of a program's `fs::Mapped`: its bytes are a mapping, which
    /// the backend never reads in user mode.
    pub(crate) fn mapped(bytes: Bytes, content_type: &'static str) -> Response {
        let mut r = row(Bytes::new(), content_type);
        r.body = Body::Mapped(bytes);
        r
    }

    /// The length and bytes of a body held in memory (none for a file).
    pub(crate) fn memory_body(&self) -> (u64, Bytes) {
        match &self.body {
            Body::Bytes(b) | Body::Mapped(b) => (b.len() as u64, b.clone()),
            Body::Empty | Body::File(_) | Body::Produced(_) => (0, Bytes::new()),
        }
    }

    /// A short text page for a status (`404 Not Found`), as the server's
    /// own answers carry.
    pub fn status_page_for(status: u16) -> Response {
        Response::status_page(status)
    }

    /// A short text page for a status the server answers by itself.
    pub(crate) fn status_page(status: u16) -> Response {
        let text = format!("{} {}\n", status, reason(status));
        let mut r = Response::new(status);
        r.body = Body::Bytes(Bytes::from(text));
        r.default_type = Some(TEXT);
        r
    }

    /// The answer to a plain HTTP request on the TLS port, in plain HTTP,
    /// with nginx's words so clients and people recognise it.
    pub(crate) fn plain_http_on_tls_port() -> Response {
        let mut r = Response::new(400);
        r.body = Body::Bytes(Bytes::from_static(
            b"<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>\r\n\
              <body>\r\n<center><h1>400 Bad Request</h1></center>\r\n\
              <center>The plain HTTP request was sent to HTTPS port</center>\r\n</body>\r\n</html>\r\n",
        ));
        r.default_type = Some("text/html; charset=utf-8");
        r
    }

    /// The 500 that hides an error from the client and logs it.
    pub(crate) fn internal_error(logged: String) -> Response {
        let mut r = Response::status_page(500);
        r.log_error = Some(logged.into());
        r
    }

    pub(crate) fn content_type(&self) -> Option<&str> {
        self.get_header("content-type").or(self.default_type)
    }
}

fn valid_name(name: &str) -> bool {
    crate::text::token::is_token(name)
}

const TEXT: &str = "text/plain; charset=utf-8";
const HTML: &str = "text/html; charset=utf-8";
pub(crate) const OCTETS: &str = "application/octet-stream";

fn row(body: Bytes, content_type: &'static str) -> Response {
    let mut r = Response::new(200);
    r.body = Body::Bytes(body);
    r.default_type = Some(content_type);
    r
}

/// What a handler may return. Each type is one row of D1's table.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a body row: a handler must return one of the rows of the body table",
    label = "a handler returning `{Self}` cannot answer a request",
    note = "the body rows are: String, &'static str, html::Raw, Bytes, fs::Mapped, http::Response, http::File, Result<T, E> of a row"
)]
pub trait IntoResponse {
    fn into_response(self) -> Response;
}

impl IntoResponse for Response {
    fn into_response(self) -> Response {
        self
    }
}

impl IntoResponse for String {
    fn into_response(self) -> Response {
        row(Bytes::from(self), TEXT)
    }
}

impl IntoResponse for &'static str {
    fn into_response(self) -> Response {
        row(Bytes::from_static(self.as_bytes()), TEXT)
    }
}

impl IntoResponse for Raw {
    fn into_response(self) -> Response {
        row(self.0, HTML)
    }
}

impl IntoResponse for Bytes {
    fn into_response(self) -> Response {
        row(self, OCTETS)
    }
}

impl<T: IntoResponse, E: Display> IntoResponse for Result<T, E> {
    fn into_response(self) -> Response {
        match self {
            Ok(v) => v.into_response(),
            Err(e) => Response::internal_error(format!("handler failed: {e}")),
        }
    }
}

/// The reason phrase for a status this server sends.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        423 => "Locked",
        431 => "Request Header Fields Too Large",
        // tus 1.0's checksum extension: the chunk did not match its sum.
        460 => "Checksum Mismatch",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        507 => "Insufficient Storage",
        _ => "",
    }
}

/// Whether a response with this status carries no body by definition.
pub(crate) fn bodiless(status: u16) -> bool {
    (100..200).contains(&status) || status == 204 || status == 304
}

/// The header fields every backend sends after `Date`, in order: `Server`,
/// the row's `Content-Type` unless a header overrides it, the response's
/// own headers (but `Connection`, which is the connection's), and
/// `Content-Length` for a status that has a body.
pub(crate) fn each_field(resp: &Response, length: u64, mut field: impl FnMut(&[u8], &[u8])) {
    field(b"Server", b"nikaia");
    if let Some(ct) = resp.content_type() {
        if resp.get_header("content-type").is_none() {
            field(b"Content-Type", ct.as_bytes());
        }
    }
    for (n, v) in &resp.headers {
        if !n.eq_ignore_ascii_case("connection") {
            field(n.as_bytes(), v);
        }
    }
    if !bodiless(resp.status) && length != UNKNOWN_LENGTH {
        let mut itoa = itoa_buf();
        field(b"Content-Length", fmt_u64(&mut itoa, length));
    }
}

/// The length of a produced body that did not say one: the protocol frames
/// it (chunked on HTTP/1.1, the end of the connection on HTTP/1.0, the
/// end of the stream on HTTP/2), and no `Content-Length` is sent.
pub(crate) const UNKNOWN_LENGTH: u64 = u64::MAX;

pub(crate) fn itoa_buf() -> [u8; 20] {
    [0; 20]
}

pub(crate) fn fmt_u64(buf: &mut [u8; 20], mut v: u64) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &buf[i..];
        }
    }
}
