//! An incremental decoder for chunked request bodies (RFC 9112 §7.1).
//!
//! It keeps its place between reads, so a body that arrives one byte at a
//! time costs linear work, and it bounds everything a client controls: the
//! decoded size, the size line, extensions and trailers.

use crate::http::request::Reject;
use crate::text::percent::hex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Reading hex digits of a chunk size.
    Size {
        digits: usize,
        value: u64,
    },
    /// After the size: skipping an extension up to CR.
    Ext {
        value: u64,
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
    /// Reading trailer lines; `line` bytes into the current one, `cr` once
    /// its CR was seen.
    Trailer {
        line: usize,
        total: usize,
        cr: bool,
    },
    Done,
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
                    None if b == b';' || b == b' ' || b == b'\t' => Step::Ext { value, seen: 1 },
                    None if b == b'\r' => Step::SizeLf { value },
                    None => return Err(bad("bad chunk size line")),
                },
                Step::Ext { value, seen } => match b {
                    b'\r' => Step::SizeLf { value },
                    b'\n' | 0 => return Err(bad("bad chunk extension")),
                    _ if seen > 4096 => return Err(bad("chunk extension too long")),
                    _ => Step::Ext {
                        value,
                        seen: seen + 1,
                    },
                },
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
                Step::Trailer { line, total, cr } => {
                    if total > self.trailer_limit {
                        return Err(Reject {
                            status: 431,
                            why: "chunked trailers too large",
                        });
                    }
                    match (b, cr) {
                        (b'\n', true) if line == 0 => Step::Done,
                        (b'\n', true) => Step::Trailer {
                            line: 0,
                            total: total + 1,
                            cr: false,
                        },
                        (b'\r', false) => Step::Trailer {
                            line,
                            total: total + 1,
                            cr: true,
                        },
                        (b'\r' | b'\n', _) | (_, true) => {
                            return Err(bad("trailer line not ended by CRLF"))
                        }
                        _ => Step::Trailer {
                            line: line + 1,
                            total: total + 1,
                            cr: false,
                        },
                    }
                }
                Step::Done => Step::Done,
            };
            i += 1;
            self.consumed += 1;
        }
        Ok(self.step == Step::Done)
    }

    fn after_size(&mut self, size: u64) -> Result<Step, Reject> {
        if size == 0 {
            return Ok(Step::Trailer {
                line: 0,
                total: 0,
                cr: false,
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
}
