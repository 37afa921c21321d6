//! The credentials of HTTP Basic authentication (RFC 7617): reading an
//! `Authorization: Basic ...` value. Checking them is the backend's.

/// The most bytes the decoded `user:password` may have. bcrypt reads at most
/// 72 bytes of a password and an htpasswd name is a short line's start, so
/// 1024 leaves room for any real pair while a value past it (1368 base64
/// characters) is refused before it is decoded.
pub(crate) const MAX_CREDENTIALS: usize = 1024;

/// The user and password of an `Authorization: Basic ...` value (RFC 7617):
/// the scheme case-insensitive, one or more spaces, standard base64 with
/// padding (anything else is refused: other alphabets, missing padding,
/// trailing garbage, unused bits that are not zero, over [`MAX_CREDENTIALS`]
/// bytes decoded), the decoded text split at its first `:`. Spaces and tabs
/// around the whole value are not part of it (RFC 9110's OWS).
///
/// The user must be UTF-8 (RFC 7617's `charset="UTF-8"`), not empty and
/// free of control characters (RFC 7617 section 2; an htpasswd name has
/// none either, and so a user never holds the NUL that separates it from the
/// password where the two are hashed together); the password is bytes and
/// may be empty.
pub(crate) fn credentials(value: &[u8]) -> Option<(String, Vec<u8>)> {
    let value = trim_ows(value);
    let (scheme, rest) = value.split_at_checked(5)?;
    if !scheme.eq_ignore_ascii_case(b"basic") || !rest.starts_with(b" ") {
        return None;
    }
    let token = &rest[rest.iter().position(|&b| b != b' ')?..];
    if token.len() > MAX_CREDENTIALS.div_ceil(3) * 4 {
        return None;
    }
    let decoded = base64(token)?;
    if decoded.len() > MAX_CREDENTIALS {
        return None;
    }
    let colon = decoded.iter().position(|&b| b == b':')?;
    let user = std::str::from_utf8(&decoded[..colon]).ok()?;
    if user.is_empty() || user.chars().any(char::is_control) {
        return None;
    }
    Some((user.to_string(), decoded[colon + 1..].to_vec()))
}

/// `value` without the spaces and tabs at its ends.
fn trim_ows(value: &[u8]) -> &[u8] {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !ows(b)).unwrap_or(value.len());
    let end = value.iter().rposition(|b| !ows(b)).map_or(start, |i| i + 1);
    &value[start..end]
}

/// Decodes standard base64 with padding (RFC 4648 section 4), strictly: a
/// whole number of 4-character groups, `=` only as the last one or two
/// characters, and the bits the padding leaves over zero, so each text has
/// one encoding. `None` for anything else.
fn base64(text: &[u8]) -> Option<Vec<u8>> {
    if text.is_empty() || !text.len().is_multiple_of(4) {
        return None;
    }
    let padding = text.iter().rev().take_while(|&&b| b == b'=').count();
    if padding > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut bits, mut held) = (0u32, 0u32);
    for &c in &text[..text.len() - padding] {
        bits = bits << 6 | sextet(c)?;
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push((bits >> held) as u8);
            bits &= (1 << held) - 1;
        }
    }
    (bits == 0).then_some(out)
}

/// The value of a character of the standard base64 alphabet.
fn sextet(c: u8) -> Option<u32> {
    let value = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(user: &str, password: &[u8]) -> Option<(String, Vec<u8>)> {
        Some((user.to_string(), password.to_vec()))
    }

    /// Standard base64 with padding, to build values in tests.
    fn encode(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn real_values() {
        assert_eq!(
            credentials(b"Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
            pair("Aladdin", b"open sesame")
        );
        // RFC 7617 section 2.1's example of UTF-8 credentials.
        assert_eq!(
            credentials(b"Basic dGVzdDoxMjPCow=="),
            pair("test", "123£".as_bytes())
        );
        assert_eq!(
            credentials(b"Basic w4lsb2RpZTptb3QgZGUgcGFzc2U="),
            pair("Élodie", b"mot de passe")
        );
        assert_eq!(credentials(b"Basic YWI6Yw=="), pair("ab", b"c"));
    }

    #[test]
    fn the_scheme_is_case_insensitive_and_spaces_may_repeat() {
        for value in [
            "basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "BASIC QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "bAsIc   QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            " \tBasic QWxhZGRpbjpvcGVuIHNlc2FtZQ== \t",
        ] {
            assert_eq!(
                credentials(value.as_bytes()),
                pair("Aladdin", b"open sesame"),
                "{value}"
            );
        }
    }

    #[test]
    fn the_password_is_split_at_the_first_colon_and_may_be_empty() {
        assert_eq!(credentials(b"Basic YWxpY2U6cDp3"), pair("alice", b"p:w"));
        assert_eq!(credentials(b"Basic YWxpY2U6"), pair("alice", b""));
        // Bytes, not text.
        assert_eq!(credentials(b"Basic YToA/w=="), pair("a", b"\0\xff"));
    }

    #[test]
    fn the_user_is_utf8_not_empty_and_without_control_characters() {
        assert_eq!(credentials(b"Basic //46cHc="), None); // "\xff\xfe:pw"
        assert_eq!(credentials(b"Basic YQBiOmM="), None); // "a\0b:c"
        assert_eq!(credentials(b"Basic YQliOmM="), None); // "a\tb:c"
        assert_eq!(credentials(b"Basic OnB3"), None); // ":pw"
        assert_eq!(credentials(b"Basic bm9jb2xvbg=="), None); // "nocolon"
    }

    #[test]
    fn other_schemes_and_shapes_are_refused() {
        for value in [
            "",
            "Bearer x",
            "Bearer QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "Basic",
            "Basic ",
            "Basic    ",
            "BasicQWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "Basic\tQWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "Basics QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
            "Digest username=\"Aladdin\"",
        ] {
            assert_eq!(credentials(value.as_bytes()), None, "{value:?}");
        }
    }

    #[test]
    fn base64_is_strict() {
        for value in [
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ",    // missing padding
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=",   // half the padding
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ===", // too much
            "Basic YWxpY2U6cDp3====",
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==QQ==", // padding inside
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==x",    // trailing garbage
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ== x",
            "Basic QWxhZGRp bjpvcGVuIHNlc2FtZQ==",
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n",
            "Basic __46cHc=", // the URL-safe alphabet
            "Basic --46cHc=",
            "Basic YWI6Yx==", // unused bits not zero
            "Basic YWI6cDr=",
            "Basic ====",
            "Basic YQ",
        ] {
            assert_eq!(credentials(value.as_bytes()), None, "{value:?}");
        }
    }

    #[test]
    fn over_long_values_are_refused() {
        let at_most = format!("u:{}", "p".repeat(MAX_CREDENTIALS - 2));
        let value = format!("Basic {}", encode(at_most.as_bytes()));
        assert_eq!(
            credentials(value.as_bytes()),
            pair("u", &at_most.as_bytes()[2..])
        );
        let over = format!("u:{}", "p".repeat(MAX_CREDENTIALS - 1));
        let value = format!("Basic {}", encode(over.as_bytes()));
        assert_eq!(credentials(value.as_bytes()), None);
        let huge = format!("Basic {}", "QUFB".repeat(100_000));
        assert_eq!(credentials(huge.as_bytes()), None);
    }

    #[test]
    fn the_decoder_round_trips() {
        assert_eq!(
            encode(b"Aladdin:open sesame"),
            "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        let bytes: Vec<u8> = (0..=255).collect();
        for len in 0..bytes.len() {
            let text = encode(&bytes[..len]);
            if len == 0 {
                assert_eq!(base64(text.as_bytes()), None);
            } else {
                assert_eq!(base64(text.as_bytes()).as_deref(), Some(&bytes[..len]));
            }
        }
    }
}
