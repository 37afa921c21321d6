//! WebDAV class 1 (RFC 4918), its protocol-independent parts: the XML of
//! its requests and answers (`xml`) and the record its dead properties are
//! kept in (`dead`); the headers of class 2, `If`, `Timeout` and
//! `Lock-Token` (`cond`). The methods themselves are the site's and the writes
//! wing's.
//!
//! Normative text: `spec/site.md`, "WebDAV class 1". The wasm32 host
//! answers no WebDAV method (405), so there only the tests use it.
#![cfg_attr(not(target_os = "linux"), allow(dead_code, unused_imports))]

pub(crate) mod cond;
pub(crate) mod dead;
pub(crate) mod xml;
