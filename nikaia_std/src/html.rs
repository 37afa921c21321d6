//! `html::Raw`: bytes the program says are already markup.

use bytes::Bytes;

/// A body that is already HTML. Answers with `200 text/html; charset=utf-8`.
///
/// Nothing is escaped: `Raw` is the program's statement that these bytes are
/// markup it produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raw(pub Bytes);

impl Raw {
    /// Wraps anything that can become `Bytes` (a `String`, a `&'static str`,
    /// `Bytes` itself, a `Mapped` via `Bytes::from`).
    pub fn new(body: impl Into<Bytes>) -> Raw {
        Raw(body.into())
    }
}

impl From<&'static str> for Raw {
    fn from(s: &'static str) -> Raw {
        Raw(Bytes::from_static(s.as_bytes()))
    }
}

impl From<String> for Raw {
    fn from(s: String) -> Raw {
        Raw(Bytes::from(s))
    }
}
