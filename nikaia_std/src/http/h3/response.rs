//! A response's frames on a request stream: its HEADERS, encoded by QPACK
//! with the static table only, and the heads of its DATA frames (the body
//! travels as the unit's own slices after each head).

use super::frame::{self, kind};
use super::qpack;
use crate::http::response::{each_field, Response};

/// A response's HEADERS frame as every backend heads it (`date`, then
/// [`each_field`]), names lowercased and the fields HTTP/3 forbids
/// (connection-specific ones, RFC 9114 §4.2) left out.
pub(crate) fn head(resp: &Response, length: u64, date: &[u8]) -> Vec<u8> {
    let mut names: Vec<Vec<u8>> = vec![b"date".to_vec()];
    let mut values: Vec<Vec<u8>> = vec![date.to_vec()];
    each_field(resp, length, |name, value| {
        let lower = name.to_ascii_lowercase();
        if !matches!(
            lower.as_slice(),
            b"keep-alive" | b"transfer-encoding" | b"upgrade" | b"proxy-connection"
        ) {
            names.push(lower);
            values.push(value.to_vec());
        }
    });
    let fields: Vec<(&[u8], &[u8])> = names
        .iter()
        .zip(&values)
        .map(|(n, v)| (&n[..], &v[..]))
        .collect();
    headers_frame(resp.status(), &fields)
}

/// A response's HEADERS frame: `:status` then `fields` (lowercase names),
/// encoded by QPACK with the static table only.
pub(crate) fn headers_frame(status: u16, fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut section = Vec::with_capacity(64 + fields.len() * 32);
    qpack::encode::begin(&mut section);
    qpack::encode::status(&mut section, status);
    for (n, v) in fields {
        qpack::encode::field(&mut section, n, v);
    }
    let mut out = Vec::with_capacity(section.len() + 8);
    frame::write_frame(&mut out, kind::HEADERS, &section);
    out
}

/// The head of a DATA frame of `len` octets: the octets and how many.
pub(crate) fn data_head(len: u64) -> ([u8; 16], usize) {
    let mut v = Vec::with_capacity(16);
    frame::write_head(&mut v, kind::DATA, len);
    let mut out = [0u8; 16];
    out[..v.len()].copy_from_slice(&v);
    (out, v.len())
}
