//! Percent-coding (RFC 3986 §2.1): decoding a request's path, encoding names
//! into the links and redirects std writes.

/// Decodes `%XX` escapes exactly once, to bytes. `None` for a bad escape or
/// a NUL. Bytes that are not UTF-8 are kept as they are: they name a file
/// whose name is not UTF-8 (`spec/http.md`).
///
/// Kept rather than `percent_encoding::percent_decode_str`: that one passes
/// a bad escape through (`%zz` and `%2` stay as they are) and decodes `%00`
/// to a NUL, so refusing them with 400 would need a scan of its own before
/// it, which is most of this function. Same speed: 224 ns against 228 ns
/// (with `decode_utf8`) for a 40-byte path with 3 escapes, release build.
pub(crate) fn percent_decode(s: &str) -> Option<Vec<u8>> {
    percent_decode_into(s, Vec::new())
}

/// [`percent_decode`] into `out` (emptied first), whose capacity a
/// connection reuses from one request to the next.
pub(crate) fn percent_decode_into(s: &str, mut out: Vec<u8>) -> Option<Vec<u8>> {
    out.clear();
    if !s.contains('%') {
        if s.contains('\0') {
            return None;
        }
        out.extend_from_slice(s.as_bytes());
        return Some(out);
    }
    let b = s.as_bytes();
    out.reserve(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hi = hex(*b.get(i + 1)?)?;
            let lo = hex(*b.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    (!out.contains(&0)).then_some(out)
}

/// The value of one hex digit.
pub(crate) fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Percent-encodes every byte but ASCII letters, digits and `keep`.
///
/// Kept rather than `percent_encoding::utf8_percent_encode`, which would
/// need an `AsciiSet` per `keep` list and a dependency for ten lines that
/// run only for a directory listing's links and a slash redirect.
/// Takes bytes, so a name that is not UTF-8 is linked byte-exact.
pub(crate) fn percent_encode(s: impl AsRef<[u8]>, keep: &[u8]) -> String {
    let s = s.as_ref();
    let mut out = String::with_capacity(s.len());
    for &b in s {
        if b.is_ascii_alphanumeric() || keep.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_once_and_refuses_what_it_cannot_decode() {
        let decode = |s| percent_decode(s).map(|b| String::from_utf8(b).unwrap());
        assert_eq!(decode("/a%20b").as_deref(), Some("/a b"));
        assert_eq!(decode("/%2541").as_deref(), Some("/%41"));
        assert_eq!(decode("/%c3%A9").as_deref(), Some("/é"));
        assert_eq!(decode("/plain").as_deref(), Some("/plain"));
        for bad in ["/%zz", "/%2", "/%", "/%00", "/a\0", "/%e9%00", "/%%41"] {
            assert_eq!(percent_decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_decode_as_they_are() {
        assert_eq!(
            percent_decode("/caf%E9.txt").as_deref(),
            Some(&b"/caf\xe9.txt"[..])
        );
        assert_eq!(percent_decode("/d%ff/").as_deref(), Some(&b"/d\xff/"[..]));
        // An overlong `/` is two bytes, not a separator.
        assert_eq!(
            percent_decode("/%c0%af").as_deref(),
            Some(&b"/\xc0\xaf"[..])
        );
    }

    #[test]
    fn hex_digits() {
        assert_eq!(hex(b'0'), Some(0));
        assert_eq!(hex(b'9'), Some(9));
        assert_eq!(hex(b'a'), Some(10));
        assert_eq!(hex(b'F'), Some(15));
        assert_eq!(hex(b'g'), None);
        assert_eq!(hex(b'/'), None);
    }

    #[test]
    fn encodes_all_but_letters_digits_and_keep() {
        assert_eq!(percent_encode("a b/c", b"/"), "a%20b/c");
        assert_eq!(percent_encode("a b/c", b""), "a%20b%2Fc");
        assert_eq!(percent_encode("é", b""), "%C3%A9");
        assert_eq!(percent_encode("100%", b"-._~"), "100%25");
    }

    #[test]
    fn encode_then_decode_round_trips() {
        let keeps: [&[u8]; 3] = [b"", b"-._~/", b"-._~/!$&'()*+,;=:@"];
        for s in [
            "",
            "index.html",
            "a b/c d",
            "100% <sure> & \"quoted\" 'x'?#",
            "é/ü/✓/日本",
            "%41%zz",
            "\u{7f}\t\r\n",
        ] {
            for keep in keeps {
                let encoded = percent_encode(s, keep);
                assert!(encoded.is_ascii(), "{encoded:?}");
                assert_eq!(
                    percent_decode(&encoded).as_deref(),
                    Some(s.as_bytes()),
                    "{s:?}"
                );
            }
        }
        for name in [&b"caf\xe9.txt"[..], b"d\xff/x", b"\x80\xc0\xaf"] {
            let encoded = percent_encode(name, b"-._~/");
            assert_eq!(percent_decode(&encoded).as_deref(), Some(name), "{name:?}");
        }
    }
}
