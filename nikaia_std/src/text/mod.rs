//! Small text helpers every part of the crate shares, once each, with no
//! target or transport in them: percent-coding, HTML escaping, civil dates,
//! RFC 9110 tokens, base64, SHA-256 at compile time.

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) mod base64;
pub(crate) mod date;
pub(crate) mod html;
pub(crate) mod percent;
pub(crate) mod sha256;
pub(crate) mod token;
