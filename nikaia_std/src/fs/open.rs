//! What every target shares about opening a name under a root: the
//! identity, the purpose, the lexical checks, and the switch that forces the
//! walk. The opens themselves are in `fd.rs` (Linux: openat2, else the walk
//! over descriptors) and `host.rs` (the walk over a host adapter).

use super::Outside;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};

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

impl Identity {
    /// The strong ETag of this version, as std sends it and as
    /// [`Mode::ReplaceIf`](super::Mode::ReplaceIf) compares it: quoted,
    /// from the modification time (ns) and the size.
    pub fn etag(&self) -> String {
        etag_of(self.mtime_ns, self.size)
    }
}

/// The strong ETag of a version: its modification time (ns) and size.
/// One format for a `GET` and for WebDAV's `getetag`.
pub(crate) fn etag_of(mtime_ns: i64, size: u64) -> String {
    format!("\"{mtime_ns:x}-{size:x}\"")
}

/// A regular file opened under a root: the one descriptor every later step
/// (stat, map, read, send) uses, and its identity taken from that descriptor.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct Opened {
    pub file: std::fs::File,
    pub id: Identity,
}

/// A regular file opened under a root: the one host handle every later step
/// reads through ([`HostFile::read_at`](super::HostFile::read_at); closed
/// on drop), and its identity taken from that handle.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
pub struct Opened {
    pub file: super::HostFile,
    pub id: Identity,
}

/// Why a name is opened: it decides the open flags and whether the
/// resolution may only use the kernel's dentry cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Read a regular file.
    Read,
    /// Read, but fail with [`super::Error::WouldBlock`] rather than wait for the
    /// disk during the lookup (openat2 `RESOLVE_CACHED`; Linux only).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    ReadCached,
    /// Read a directory's entries.
    List,
}

/// Names longer than this (in bytes) are refused the way the kernel refuses
/// them (`ENAMETOOLONG`, counted with the terminating NUL as `PATH_MAX`).
pub(crate) const PATH_MAX: usize = 4096;

/// The lexical checks, made on the name as given and never rewriting it:
/// empty, a NUL byte, absolute (a leading `/`), or a component that is a
/// write's temporary (`.nikaia-tmp-…`, never anyone's to open) is
/// [`Outside`].
pub(crate) fn check_name(name: &Path) -> Result<(), Outside> {
    let bytes = name.as_os_str().as_encoded_bytes();
    if bytes.is_empty()
        || bytes.contains(&0)
        || bytes[0] == b'/'
        || bytes.split(|&b| b == b'/').any(is_temporary)
    {
        return Err(Outside::new(name));
    }
    Ok(())
}

/// Whether a name's component is a write's temporary.
pub(crate) fn is_temporary(component: &[u8]) -> bool {
    component.starts_with(TEMPORARY_PREFIX.as_bytes())
}

/// What every temporary name of a write begins with (`put.rs`).
pub const TEMPORARY_PREFIX: &str = ".nikaia-tmp-";

/// 0: not read yet; 1: resolve with openat2 where possible; 2: always walk.
static FORCE_WALK: AtomicU8 = AtomicU8::new(0);

/// Test switch: `true` makes every `Dir` open use the per-component walk
/// (process-wide), `false` goes back to openat2. Overrides the environment
/// variable `NIKAIA_FS_FORCE_WALK=1`, which sets the initial value.
#[doc(hidden)]
pub fn force_fallback_walk(on: bool) {
    FORCE_WALK.store(if on { 2 } else { 1 }, Ordering::SeqCst);
}

/// The implementation a `Dir` open would use now: `"openat2"` or `"walk"`
/// (for tests and `nikaia explain`; a filtered openat2 is only noticed at
/// the first open that meets the filter). Without Linux, every root is on a
/// host adapter, resolved by the walk: `"walk"`.
#[doc(hidden)]
pub fn resolver() -> &'static str {
    #[cfg(target_os = "linux")]
    if !walk_forced() && super::linux::available() {
        return "openat2";
    }
    "walk"
}

/// Whether the walk is forced (by the switch, else by the environment).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn walk_forced() -> bool {
    match FORCE_WALK.load(Ordering::SeqCst) {
        0 => {
            let env = std::env::var_os("NIKAIA_FS_FORCE_WALK").is_some_and(|v| v == "1");
            let state = if env { 2 } else { 1 };
            // A concurrent `force_fallback_walk` wins over the environment.
            let _ = FORCE_WALK.compare_exchange(0, state, Ordering::SeqCst, Ordering::SeqCst);
            FORCE_WALK.load(Ordering::SeqCst) == 2
        }
        state => state == 2,
    }
}
