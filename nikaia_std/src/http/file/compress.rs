//! Which file answers std compresses itself when no sidecar is there, and
//! how the kept variant is chosen (`spec/files.md`, "Compression kept like
//! files"). The compressing and keeping is the backend's (`Codings::compressed`);
//! what may be compressed, and which variant answers, is decided here, the
//! same on every target.

use super::resolve::Ask;
use crate::fs::{Identity, Root};
use crate::http::coding::Wanted;
use crate::http::conditional::Validators;
use crate::http::port::Codings;
use crate::rt::Coding;
use bytes::Bytes;
use std::path::Path;

/// Smaller files are sent as they are: the coding's framing (18 bytes of
/// gzip, a header per frame) and the extra header eat most of the gain.
pub(crate) const FLOOR: u64 = 256;

/// Larger files are sent as they are: brotli at quality 11 makes about
/// 1 MiB/s on this machine's cores, so one file holds the compressor for
/// seconds, and its variants would hold that much memory.
pub(crate) const CEILING: u64 = 4 << 20;

/// Whether a file of this type and size is one std compresses.
pub(crate) fn compressible(content_type: &str, size: u64) -> bool {
    if !(FLOOR..=CEILING).contains(&size) {
        return false;
    }
    let essence = content_type.split(';').next().unwrap_or("").trim();
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    let is = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let ends = |s: &str, end: &str| {
        s.len() >= end.len()
            && s.is_char_boundary(s.len() - end.len())
            && is(&s[s.len() - end.len()..], end)
    };
    is(kind, "text")
        || ends(sub, "+json")
        || ends(sub, "+xml")
        || (is(kind, "application")
            && [
                "javascript",
                "json",
                "xml",
                "wasm",
                "x-javascript",
                "ecmascript",
            ]
            .iter()
            .any(|t| is(sub, t)))
        || (is(kind, "image") && is(sub, "svg+xml"))
}

/// What a backend's table has for a file and a coding
/// ([`Codings::compressed`]).
///
/// [`Codings::compressed`]: crate::http::port::Codings::compressed
pub(crate) enum Variant {
    /// Kept, made from exactly this identity.
    Kept(Bytes, Validators),
    /// Noted as not worth keeping (no gain, too big for the bound): the
    /// file goes out as it is, and no compression is queued for it.
    Noted,
    /// Not there (queued, when the caller asked and the backend could).
    Missing,
}

/// The variant that answers for the file `id` (`name` under `root`): the
/// best accepted coding that has one kept. When the best accepted coding
/// has none, the backend is asked to make it, off the workers; this
/// answer goes on with the next best, or with none (the identity body).
pub(super) fn kept_variant(
    ask: &Ask<'_, impl Codings>,
    root: &Root,
    name: &Path,
    id: &Identity,
    content_type: &str,
    mut wanted: Wanted,
) -> Option<(Coding, Bytes, Validators)> {
    let files = ask.files;
    let typed = ask.user.get_header("content-type").unwrap_or(content_type);
    if !files.compresses() || !compressible(typed, id.size) {
        return None;
    }
    // Only the best coding without a variant is queued (one miss per
    // request); a coding noted as not worth it passes the turn on.
    let mut queue = true;
    while let Some(coding) = wanted.next() {
        match files.compressed(root, name, id, coding, queue) {
            Variant::Kept(bytes, validators) => return Some((coding, bytes, validators)),
            Variant::Noted => {}
            Variant::Missing => queue = false,
        }
    }
    None
}

impl Validators {
    /// The validators of the variant of file `id` that std made by
    /// `method` (the coding, its settings and the compressors' generation,
    /// as `br-11-n1`): the file's Last-Modified, and an ETag naming the
    /// file's identity and the method, so it names exactly these bytes.
    pub(crate) fn compressed(id: &Identity, method: &str) -> Validators {
        let mut v = Validators::of(id);
        v.etag = Bytes::from(format!("\"{:x}-{:x}-{method}\"", id.mtime_ns, id.size));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_types_and_sizes() {
        for t in [
            "text/html; charset=utf-8",
            "text/css",
            "application/javascript; charset=utf-8",
            "text/javascript",
            "application/json",
            "application/ld+json",
            "image/svg+xml",
            "application/wasm",
            "application/manifest+json",
            "application/atom+xml",
            "Text/Plain",
        ] {
            assert!(compressible(t, 1000), "{t}");
        }
        for t in [
            "image/png",
            "application/octet-stream",
            "application/gzip",
            "video/mp4",
            "font/woff2",
            "nonsense",
        ] {
            assert!(!compressible(t, 1000), "{t}");
        }
        assert!(!compressible("text/html", FLOOR - 1));
        assert!(compressible("text/html", FLOOR));
        assert!(compressible("text/html", CEILING));
        assert!(!compressible("text/html", CEILING + 1));
    }

    #[test]
    fn a_variants_etag_names_coding_level_and_generation() {
        let id = Identity {
            dev: 1,
            ino: 2,
            size: 0x4000,
            mtime_ns: 0xabc,
            ctime_ns: 0,
        };
        let gz = Validators::compressed(&id, "gzip-zopfli-n1");
        assert_eq!(gz.etag(), "\"abc-4000-gzip-zopfli-n1\"");
        let br = Validators::compressed(&id, "br-11-n1");
        assert_ne!(br.etag, gz.etag);
        assert_ne!(gz.etag, Validators::coded(&id, Coding::Gzip).etag);
        assert_ne!(gz.etag, Validators::of(&id).etag);
        assert_eq!(gz.last_modified, Validators::of(&id).last_modified);
    }
}
