//! base64url without padding (RFC 4648 §5), as JWS and ACME write it: a
//! certificate's renewal identifier (`linux/tls/der.rs`) and the ACME
//! client's requests (`linux/acme/jws.rs`); standard base64, padded, for
//! the hashes a listing's policy names.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `bytes` in base64url, no padding.
pub(crate) fn url(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (chunk.iter().enumerate()).fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// `bytes` in standard base64, padded (RFC 4648 §4), as a
/// `Content-Security-Policy` hash source writes a digest.
pub(crate) fn standard(bytes: &[u8]) -> String {
    let mut out: String = (url(bytes).chars())
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

/// Decodes base64url or standard base64, padded or not. `None`: neither.
#[cfg_attr(not(feature = "acme"), allow(dead_code))]
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim().trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = acc << 6 | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_round_trips_without_padding() {
        assert_eq!(url(b""), "");
        assert_eq!(url(b"f"), "Zg");
        assert_eq!(url(b"fo"), "Zm8");
        assert_eq!(url(b"foo"), "Zm9v");
        assert_eq!(url(&[0xfb, 0xff]), "-_8");
        for n in 0..70u8 {
            let bytes: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(decode(&url(&bytes)).unwrap(), bytes);
        }
        assert_eq!(decode("Zm9v=").unwrap(), b"foo");
        assert_eq!(decode("a b"), None);
    }

    #[test]
    fn standard_base64_is_padded_with_its_own_alphabet() {
        assert_eq!(standard(b""), "");
        assert_eq!(standard(b"f"), "Zg==");
        assert_eq!(standard(b"fo"), "Zm8=");
        assert_eq!(standard(b"foo"), "Zm9v");
        assert_eq!(standard(&[0xfb, 0xff]), "+/8=");
    }
}
