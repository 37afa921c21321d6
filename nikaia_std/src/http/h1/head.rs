//! HTTP/1.1 head writing: the status line, `Date`, the fields every
//! backend sends (`response::each_field`), and the connection's own field.

use crate::http::request::Version;
use crate::http::response::{
    bodiless, each_field, fmt_u64, itoa_buf, reason, Response, UNKNOWN_LENGTH,
};
use bytes::{BufMut, BytesMut};

/// Writes the status line and headers. `length` is the body's length (also
/// for HEAD, which sends no body); `close` adds `Connection: close`, and a
/// kept-alive HTTP/1.0 request is answered `Connection: keep-alive`.
pub(crate) fn write_head(
    out: &mut BytesMut,
    resp: &Response,
    length: u64,
    date: &[u8],
    close: bool,
    version: Version,
) {
    let keep_alive_10 = version == Version::Http10 && !close;
    let mut itoa = itoa_buf();
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(fmt_u64(&mut itoa, u64::from(resp.status)));
    out.put_u8(b' ');
    out.extend_from_slice(reason(resp.status).as_bytes());
    out.extend_from_slice(b"\r\nDate: ");
    out.extend_from_slice(date);
    out.extend_from_slice(b"\r\n");
    each_field(resp, length, |name, value| {
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    });
    if length == UNKNOWN_LENGTH && !bodiless(resp.status) && version != Version::Http10 {
        out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
    }
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if keep_alive_10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}
