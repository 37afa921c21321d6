//! An incremental decoder for chunked request bodies (RFC 9112 §7.1).
//!
//! It keeps its place between reads, so a body that arrives one byte at a
//! time costs linear work, and it bounds everything a client controls: the
//! decoded size, the size line, extensions and trailers.

use crate::http::request::Reject;
use crate::text::percent::hex;
use crate::text::token::tchar;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Reading hex digits of a chunk size.
    Size {
        digits: usize,
        value: u64,
    },
    /// In the size line's extensions, `seen` bytes into them.
    Ext {
        value: u64,
        at: Ext,
        seen: usize,
    },
    /// After the size line's CR: only LF may follow.
    SizeLf {
        value: u64,
    },
    /// Copying this many data bytes.
    Data(u64),
    /// Expecting the CRLF after a chunk's data (`cr` once CR was seen).
    DataEnd {
        cr: bool,
    },
    /// Reading trailer field lines, `total` bytes into them.
    Trailer {
        at: Field,
        total: usize,
    },
    Done,
}

/// Where a size line's extensions are (RFC 9112 §7.1.1):
/// `*( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ext {
    /// Whitespace that only a `;` may end (after the size, or a value).
    Space,
    /// After `;`: whitespace, then a name.
    NameStart,
    Name,
    /// Whitespace after a name: `=` or `;` next.
    AfterName,
    /// After `=`: whitespace, then a token or a quoted string.
    ValueStart,
    Token,
    Quoted,
    /// After a backslash in a quoted string.
    Escape,
    /// After a quoted string's closing quote.
    Closed,
}

/// Where a trailer field line is (RFC 9112 §7.1.2, §5): `token ":" OWS
/// value OWS CRLF`, no whitespace before the colon, no obs-fold, no
/// control byte but HTAB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    LineStart,
    Name,
    Value,
    /// After a field line's CR.
    Cr,
    /// After the CR of the empty line that ends the trailers.
    EndCr,
}

#[derive(Debug)]
pub(crate) struct Chunked {
    step: Step,
    /// Bytes of input consumed so far.
    pub(crate) consumed: usize,
    /// Bytes of body decoded so far.
    pub(crate) decoded: u64,
    limit: u64,
    trailer_limit: usize,
}

fn bad(why: &'static str) -> Reject {
    Reject { status: 400, why }
}

impl Chunked {
    /// A decoder refusing (413) a body past `limit` decoded bytes
    /// (`u64::MAX`: none), and trailers past `trailer_limit` bytes.
    pub(crate) fn new(limit: u64, trailer_limit: usize) -> Chunked {
        Chunked {
            step: Step::Size {
                digits: 0,
                value: 0,
            },
            consumed: 0,
            decoded: 0,
            limit,
            trailer_limit,
        }
    }

    /// Consumes what it can of `input` (the bytes after those consumed
    /// before), adding the body to `body`. `Ok(true)` once the body and
    /// its trailers are complete.
    #[cfg(any(test, feature = "fuzzing", feature = "acme"))]
    pub(crate) fn feed(&mut self, input: &[u8], body: &mut Vec<u8>) -> Result<bool, Reject> {
        self.feed_pieces(input, &mut |piece| {
            body.extend_from_slice(piece);
            true
        })
    }

    /// Consumes what it can of `input`, handing each run of body bytes to
    /// `piece` as it is decoded (nothing kept); it stops after a piece
    /// when `piece` says `false` (the rest of `input` is left unconsumed).
    /// `Ok(true)` once the body and its trailers are complete.
    pub(crate) fn feed_pieces(
        &mut self,
        input: &[u8],
        piece: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<bool, Reject> {
        let mut i = 0;
        while i < input.len() && self.step != Step::Done {
            let b = input[i];
            self.step = match self.step {
                Step::Size { digits, value } => match hex(b) {
                    Some(d) if digits < 15 => Step::Size {
                        digits: digits + 1,
                        value: value << 4 | u64::from(d),
                    },
                    Some(_) => return Err(bad("chunk size too long")),
                    None if digits == 0 => return Err(bad("chunk size missing")),
                    None => match b {
                        b';' => ext(value, Ext::NameStart, 0),
                        b' ' | b'\t' => ext(value, Ext::Space, 0),
                        b'\r' => Step::SizeLf { value },
                        _ => return Err(bad("bad chunk size line")),
                    },
                },
                Step::Ext { value, at, seen } => {
                    if seen >= EXT_MAX {
                        return Err(bad("chunk extension too long"));
                    }
                    match extension(at, b) {
                        Some(Some(at)) => ext(value, at, seen + 1),
                        Some(None) => Step::SizeLf { value },
                        None => return Err(bad("bad chunk extension")),
                    }
                }
                // Framing lines end in CRLF exactly: a bare LF or CR is
                // refused, so no peer that splits lines differently can
                // read a different body out of the same bytes.
                Step::SizeLf { value } => match b {
                    b'\n' => self.after_size(value)?,
                    _ => return Err(bad("chunk size line not ended by CRLF")),
                },
                Step::Data(left) => {
                    let take = (left as usize).min(input.len() - i);
                    let go_on = piece(&input[i..i + take]);
                    self.decoded += take as u64;
                    i += take;
                    self.consumed += take;
                    let left = left - take as u64;
                    self.step = if left == 0 {
                        Step::DataEnd { cr: false }
                    } else {
                        Step::Data(left)
                    };
                    if !go_on {
                        return Ok(false);
                    }
                    continue;
                }
                Step::DataEnd { cr } => match b {
                    b'\r' if !cr => Step::DataEnd { cr: true },
                    b'\n' if cr => Step::Size {
                        digits: 0,
                        value: 0,
                    },
                    _ => return Err(bad("chunk data not followed by CRLF")),
                },
                Step::Trailer { at, total } => {
                    if total >= self.trailer_limit {
                        return Err(Reject {
                            status: 431,
                            why: "chunked trailers too large",
                        });
                    }
                    match trailer(at, b) {
                        Some(Some(at)) => Step::Trailer {
                            at,
                            total: total + 1,
                        },
                        Some(None) => Step::Done,
                        None => return Err(bad("bad trailer field line")),
                    }
                }
                Step::Done => Step::Done,
            };
            i += 1;
            self.consumed += 1;
        }
        Ok(self.step == Step::Done)
    }

    /// The first size line of `input` as this decoder reads it: the
    /// bytes it takes up to its LF and the size it says; `Ok(None)` when
    /// the line is not whole yet. For the differential fuzz target.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn size_line(input: &[u8]) -> Result<Option<(usize, u64)>, Reject> {
        let mut dec = Chunked::new(u64::MAX, usize::MAX);
        for (i, b) in input.iter().enumerate() {
            let value = match dec.step {
                Step::Size { value, .. } | Step::Ext { value, .. } | Step::SizeLf { value } => {
                    value
                }
                _ => unreachable!("still on the first line"),
            };
            dec.feed_pieces(std::slice::from_ref(b), &mut |_| true)?;
            if !matches!(
                dec.step,
                Step::Size { .. } | Step::Ext { .. } | Step::SizeLf { .. }
            ) {
                return Ok(Some((i + 1, value)));
            }
        }
        Ok(None)
    }

    fn after_size(&mut self, size: u64) -> Result<Step, Reject> {
        if size == 0 {
            return Ok(Step::Trailer {
                at: Field::LineStart,
                total: 0,
            });
        }
        if self.decoded.saturating_add(size) > self.limit {
            return Err(Reject {
                status: 413,
                why: "chunked body larger than allowed",
            });
        }
        Ok(Step::Data(size))
    }
}

/// The most bytes of extensions one size line may carry.
const EXT_MAX: usize = 4096;

fn ext(value: u64, at: Ext, seen: usize) -> Step {
    Step::Ext { value, at, seen }
}

fn space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// A quoted string's own bytes: qdtext, or what a backslash may escape
/// (with `escaped`).
fn quoted(b: u8, escaped: bool) -> bool {
    match b {
        b'\t' | b' ' | 0x21..=0x7e | 0x80..=0xff => escaped || (b != b'"' && b != b'\\'),
        _ => false,
    }
}

/// The next place in a size line's extensions after `b`: `Some(None)` at
/// the line's CR, `None` for a byte the grammar does not allow there.
fn extension(at: Ext, b: u8) -> Option<Option<Ext>> {
    use Ext::*;
    let next = match (at, b) {
        (Name | Token | Closed, b'\r') => return Some(None),
        (Space | NameStart | AfterName | ValueStart, _) if space(b) => at,
        (Name, _) if space(b) => AfterName,
        (Token | Closed, _) if space(b) => Space,
        (Space | Name | AfterName | Token | Closed, b';') => NameStart,
        (Name | AfterName, b'=') => ValueStart,
        (NameStart | Name, _) if tchar(b) => Name,
        (ValueStart | Token, _) if tchar(b) => Token,
        (ValueStart, b'"') => Quoted,
        (Quoted, b'"') => Closed,
        (Quoted, b'\\') => Escape,
        (Quoted, _) if quoted(b, false) => Quoted,
        (Escape, _) if quoted(b, true) => Quoted,
        _ => return None,
    };
    Some(Some(next))
}

/// The next place in the trailer section after `b`: `Some(None)` once
/// the empty line that ends it is whole, `None` for a byte a field line
/// may not have there.
fn trailer(at: Field, b: u8) -> Option<Option<Field>> {
    use Field::*;
    let next = match (at, b) {
        (LineStart, b'\r') => EndCr,
        (EndCr, b'\n') => return Some(None),
        (LineStart | Name, _) if tchar(b) => Name,
        (Name, b':') => Value,
        (Value, b'\r') => Cr,
        (Value, b'\t' | b' ' | 0x21..=0x7e | 0x80..=0xff) => Value,
        (Cr, b'\n') => LineStart,
        _ => return None,
    };
    Some(Some(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_in_one_piece_and_byte_by_byte() {
        let wire = b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        let (mut whole, mut body) = (Chunked::new(1 << 20, 1024), Vec::new());
        assert!(whole.feed(wire, &mut body).unwrap());
        assert_eq!(body, b"hello world");
        assert_eq!(&wire[whole.consumed..], b"NEXT");

        let (mut drip, mut body) = (Chunked::new(1 << 20, 1024), Vec::new());
        let mut done = false;
        for i in 0..wire.len() {
            if drip.feed(&wire[i..=i], &mut body).unwrap() {
                done = true;
                break;
            }
        }
        assert!(done);
        assert_eq!(body, b"hello world");
        assert_eq!(drip.consumed, whole.consumed);
    }

    #[test]
    fn a_piece_that_says_stop_leaves_the_rest_unconsumed() {
        let wire = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        let mut dec = Chunked::new(u64::MAX, 1024);
        let mut pieces = Vec::new();
        // Stop after each piece, then go on from what was consumed.
        loop {
            let from = dec.consumed;
            let done = dec
                .feed_pieces(&wire[from..], &mut |p| {
                    pieces.push(p.to_vec());
                    false
                })
                .unwrap();
            if done {
                break;
            }
        }
        assert_eq!(pieces, [b"hello".to_vec(), b" world".to_vec()]);
        assert_eq!((dec.consumed, dec.decoded), (wire.len(), 11));
    }

    #[test]
    fn refuses_bad_and_oversized_bodies() {
        assert_eq!(
            Chunked::new(10, 64)
                .feed(b"zz\r\n", &mut Vec::new())
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            Chunked::new(10, 64)
                .feed(b"b\r\n", &mut Vec::new())
                .unwrap_err()
                .status,
            413
        );
        assert_eq!(
            Chunked::new(10, 64)
                .feed(b"1\r\naXY", &mut Vec::new())
                .unwrap_err()
                .status,
            400
        );
        let long = "f".repeat(16) + "\r\n";
        assert_eq!(
            Chunked::new(10, 64)
                .feed(long.as_bytes(), &mut Vec::new())
                .unwrap_err()
                .status,
            400
        );
    }

    /// The body of `wire` if it decodes whole, else the refusal's status.
    fn decode(wire: &[u8]) -> Result<Vec<u8>, u16> {
        let mut body = Vec::new();
        match Chunked::new(1 << 20, 256).feed(wire, &mut body) {
            Ok(true) => Ok(body),
            Ok(false) => panic!("{:?}: incomplete", String::from_utf8_lossy(wire)),
            Err(r) => Err(r.status),
        }
    }

    #[test]
    fn size_lines_follow_the_grammar_exactly() {
        for line in [
            "5",
            "5;a",
            "5;a=b",
            "5 ;a",
            "5\t; a = b",
            "5;a;b=c ;d",
            "5;a=\"q\\\"t; x\"",
            "5;a=\"\"",
            "5;a=\"é\"",
            "0005;a=b;c",
        ] {
            let wire = format!("{line}\r\nhello\r\n0\r\n\r\n");
            assert_eq!(decode(wire.as_bytes()), Ok(b"hello".to_vec()), "{line:?}");
        }
        for line in [
            "5 5",
            "5\t5",
            "5 ",
            "5\t",
            "5;",
            "5; ",
            "5;a ",
            "5;a=",
            "5;a= ",
            "5;a=b ",
            "5 a",
            "5;=b",
            "5;a=b=c",
            "5;a==b",
            "5;a=\"b",
            "5;a=\"b\"c",
            "5;a=\"\x01\"",
            "5;a\x00",
            "5;a=b\x7f",
            "5;a=\"\\\x01\"",
            "5;a@",
            "5,a",
            "5\n",
            "-5",
            "+5",
            "0x5",
            " 5",
        ] {
            let wire = format!("{line}\r\nhello\r\n0\r\n\r\n");
            assert_eq!(decode(wire.as_bytes()), Err(400), "{line:?}");
        }
    }

    #[test]
    fn a_size_line_is_read_to_its_lf() {
        assert_eq!(
            Chunked::size_line(b"1f;a=\"b\"\r\nxx").unwrap(),
            Some((10, 31))
        );
        assert_eq!(Chunked::size_line(b"1f;a").unwrap(), None);
        assert_eq!(Chunked::size_line(b"1f x\r\n").unwrap_err().status, 400);
    }

    #[test]
    fn trailer_lines_are_field_lines() {
        for trailers in [
            "",
            "X-T: 1\r\n",
            "X-T:1\r\n",
            "X-T:\r\n",
            "a:\tb c é\r\nb: 2\r\n",
        ] {
            let wire = format!("1\r\nx\r\n0\r\n{trailers}\r\n");
            assert_eq!(decode(wire.as_bytes()), Ok(b"x".to_vec()), "{trailers:?}");
        }
        for trailers in [
            "X-T 1\r\n",
            "X-T : 1\r\n",
            ": 1\r\n",
            " X-T: 1\r\n",
            "X-T: 1\r\n folded\r\n",
            "X-T: 1\r\n\tfolded\r\n",
            "X-T: a\x01b\r\n",
            "X-T: a\x7fb\r\n",
            "X-T: a\x00\r\n",
            "X-T: 1\n",
            "X-T: 1\rX\r\n",
            "X(T): 1\r\n",
        ] {
            let wire = format!("1\r\nx\r\n0\r\n{trailers}\r\n");
            assert_eq!(decode(wire.as_bytes()), Err(400), "{trailers:?}");
        }
        let long = format!("1\r\nx\r\n0\r\nX-T: {}\r\n\r\n", "a".repeat(300));
        assert_eq!(decode(long.as_bytes()), Err(431));
    }
}
