//! The portable entry for opening a name under a root: one function, one
//! implementation per platform behind it (`linux.rs`: openat2; `walk.rs`: the
//! per-component fallback).

use std::fs::File;

/// What identifies a file's contents at one moment: used to validate a kept
/// mapping (D8) and to build validators (ETag, Last-Modified).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Status-change time, nanoseconds since the Unix epoch.
    pub ctime_ns: i64,
}

/// A regular file opened under a root: the one descriptor every later step
/// (stat, map, read, send) uses, and its identity taken from that descriptor.
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    pub id: Identity,
}
