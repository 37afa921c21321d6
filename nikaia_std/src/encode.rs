//! The compressors: one function for the sidecars `nikaia compress` writes
//! and the variants the server keeps (`spec/files.md`). The work is done
//! once per file and the bytes are sent many times, so each coding runs at
//! its densest: brotli quality 11, zstd 19, and gzip by zopfli up to
//! [`ZOPFLI_MAX`] (about 5 % smaller than zlib's level 9, at some 200× its
//! time), zlib's level 9 above. Linux only: the zstd crate is C, and the
//! wasm32 build compresses nothing.

use crate::rt::Coding;
use std::io::{self, Read, Write};

/// Names the compressors' output together with [`method`]: changed
/// whenever a crate or a setting changes the bytes written for the same
/// input, so a kept variant's ETag never names two different byte strings.
pub const GENERATION: &str = "n1";

/// The largest input gzip is made by zopfli for; larger ones by zlib.
/// Zopfli (15 iterations) makes 150–300 KB/s of ordinary text on this
/// machine's cores and as little as 50 KB/s of very repetitive text, so
/// this bounds one file's work to a few seconds.
pub const ZOPFLI_MAX: u64 = 256 << 10;

/// The brotli window: 4 MiB, enough for the largest file std compresses.
const BROTLI_WINDOW: i32 = 22;

/// How `len` bytes are encoded with `coding`, as a token (the ETag of a
/// kept variant names it): `br-11`, `zstd-19`, `gzip-zopfli` or `gzip-9`.
pub fn method(coding: Coding, len: u64) -> &'static str {
    match coding {
        Coding::Br => "br-11",
        Coding::Zstd => "zstd-19",
        Coding::Gzip if len <= ZOPFLI_MAX => "gzip-zopfli",
        Coding::Gzip => "gzip-9",
    }
}

/// Encodes all of `input`, `len` bytes, into `out` with `coding`.
pub fn encode(
    coding: Coding,
    len: u64,
    mut input: impl Read,
    mut out: impl Write,
) -> io::Result<()> {
    match coding {
        Coding::Br => {
            // Not `CompressorWriter`, whose end drops write errors.
            let params = brotli::enc::BrotliEncoderParams {
                quality: 11,
                lgwin: BROTLI_WINDOW,
                size_hint: usize::try_from(len).unwrap_or(0),
                ..Default::default()
            };
            let mut buffered = io::BufWriter::new(&mut out);
            brotli::BrotliCompress(&mut input, &mut buffered, &params)?;
            buffered.flush()
        }
        Coding::Zstd => {
            let mut w = zstd::Encoder::new(out, 19)?;
            io::copy(&mut input, &mut w)?;
            w.finish()?.flush()
        }
        Coding::Gzip if len <= ZOPFLI_MAX => {
            let mut buffered = io::BufWriter::new(&mut out);
            zopfli::compress(
                zopfli::Options::default(),
                zopfli::Format::Gzip,
                input,
                &mut buffered,
            )?;
            buffered.flush()
        }
        Coding::Gzip => {
            let mut w = flate2::write::GzEncoder::new(out, flate2::Compression::new(9));
            io::copy(&mut input, &mut w)?;
            w.finish()?.flush()
        }
    }
}

/// `data` encoded with `coding`, in memory.
pub fn encode_bytes(coding: Coding, data: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len() / 3 + 64);
    encode(coding, data.len() as u64, data, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_coding_round_trips_and_is_deterministic() {
        let text = b"let a = 1;\n".repeat(500);
        for coding in Coding::ALL {
            let out = encode_bytes(coding, &text).unwrap();
            assert!(out.len() < text.len() / 4, "{coding:?}: {}", out.len());
            let mut back = Vec::new();
            match coding {
                Coding::Br => {
                    brotli::BrotliDecompress(&mut &out[..], &mut back).unwrap();
                }
                Coding::Zstd => back = zstd::decode_all(&out[..]).unwrap(),
                Coding::Gzip => {
                    flate2::read::GzDecoder::new(&out[..])
                        .read_to_end(&mut back)
                        .unwrap();
                }
            }
            assert_eq!(back, text, "{coding:?}");
            // The same input gives the same bytes: the ETag names them.
            assert_eq!(encode_bytes(coding, &text).unwrap(), out, "{coding:?}");
        }
    }

    #[test]
    fn gzip_past_the_zopfli_bound_is_zlibs() {
        let big = b"0123456789abcdef".repeat((ZOPFLI_MAX as usize) / 16 + 1);
        let mut out = Vec::new();
        encode(Coding::Gzip, big.len() as u64, &big[..], &mut out).unwrap();
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&out[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, big);
        assert_eq!(method(Coding::Gzip, big.len() as u64), "gzip-9");
        assert_eq!(method(Coding::Gzip, ZOPFLI_MAX), "gzip-zopfli");
    }
}
