//! The QPACK encoder for a dynamic table of capacity 0: a response's
//! fields in, an encoded field section out (RFC 9204 §4.5). Each line is
//! the static entry when one has the name and value, else a literal with
//! the static name when one has the name, else a literal with a literal
//! name; strings are Huffman-coded when that is shorter.

use super::table::{static_field, static_name};
use crate::http::fields::prefix::{write_int, write_string};

/// Appends the section prefix: Required Insert Count 0, Base 0.
pub(crate) fn begin(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0x00, 0x00]);
}

/// Appends one field line. `name` is lowercase.
pub(crate) fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    if let Some(i) = static_field(name, value) {
        // Indexed field line, T=1 (static): `11` + 6-bit index.
        write_int(out, 0xc0, 6, i);
    } else if let Some(i) = static_name(name) {
        // Literal with name reference, N=0, T=1: `0101` + 4-bit index.
        write_int(out, 0x50, 4, i);
        write_string(out, 0, 7, value);
    } else {
        // Literal with literal name, N=0: `0010` + H + 3-bit length.
        write_string(out, 0x20, 3, name);
        write_string(out, 0, 7, value);
    }
}

/// Appends `:status` for `status`.
pub(crate) fn status(out: &mut Vec<u8>, status: u16) {
    let mut digits = [0u8; 3];
    let s = status.min(999);
    digits[0] = b'0' + (s / 100) as u8;
    digits[1] = b'0' + (s / 10 % 10) as u8;
    digits[2] = b'0' + (s % 10) as u8;
    field(out, b":status", &digits);
}
