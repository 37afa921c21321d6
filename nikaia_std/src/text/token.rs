//! RFC 9110's `token` (§5.6.2): what a method or a header field name is.

/// A token's characters besides letters and digits.
const TCHAR: &[u8] = b"!#$%&'*+-.^_`|~";

/// Whether `b` may be in a token.
pub(crate) fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || TCHAR.contains(&b)
}

/// Whether `s` is a token: not empty, every byte a [`tchar`].
pub(crate) fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(tchar)
}
