//! The compressors: one function, at the levels of [`Coding::level`], for
//! the sidecars `nikaia compress` writes and the variants the server keeps
//! (`spec/files.md`). Linux only: the zstd crate is C, and the wasm32 build
//! compresses nothing.

use crate::rt::Coding;
use std::io::{self, Read, Write};

/// Names the compressors' output: changed whenever a crate or a level
/// changes the bytes they write for the same input, so a kept variant's
/// ETag never names two different byte strings.
pub const GENERATION: &str = "n1";

/// The brotli window: 4 MiB, enough for the largest file std compresses.
const BROTLI_WINDOW: i32 = 22;

/// Encodes all of `input` into `out` with `coding` at its level.
pub fn encode(coding: Coding, mut input: impl Read, mut out: impl Write) -> io::Result<()> {
    match coding {
        Coding::Br => {
            // Not `CompressorWriter`, whose end drops write errors.
            let params = brotli::enc::BrotliEncoderParams {
                quality: coding.level() as i32,
                lgwin: BROTLI_WINDOW,
                ..Default::default()
            };
            let mut buffered = io::BufWriter::new(&mut out);
            brotli::BrotliCompress(&mut input, &mut buffered, &params)?;
            buffered.flush()
        }
        Coding::Zstd => {
            let mut w = zstd::Encoder::new(out, coding.level() as i32)?;
            io::copy(&mut input, &mut w)?;
            w.finish()?.flush()
        }
        Coding::Gzip => {
            let level = flate2::Compression::new(coding.level());
            let mut w = flate2::write::GzEncoder::new(out, level);
            io::copy(&mut input, &mut w)?;
            w.finish()?.flush()
        }
    }
}

/// `data` encoded with `coding`, in memory.
pub fn encode_bytes(coding: Coding, data: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len() / 3 + 64);
    encode(coding, data, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_coding_round_trips() {
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
}
