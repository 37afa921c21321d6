//! `std::fs`: names confined under a root, mappings, whole-file reads and writes.
//!
//! Every function that takes a name also takes the [`Root`] it may not leave.
//! A name that would leave it is refused with [`Outside`]; it is never
//! rewritten into a different name. See `spec/fs-root.md`.
//!
//! On Linux a root is a directory descriptor; on wasm32 it is a path on a
//! read-only [`Host`] (Node's `fs` by default), resolved by the same walk.

mod error;
#[cfg(all(target_os = "linux", feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod host;
mod list;
mod mem_host;
mod open;
mod root;
mod rw;
mod walk;

#[cfg(target_os = "linux")]
pub(crate) mod dav;
#[cfg(target_os = "linux")]
mod fd;
#[cfg(target_os = "linux")]
mod guard;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod map;
#[cfg(target_os = "linux")]
mod parent;
#[cfg(target_os = "linux")]
mod put;
#[cfg(target_os = "linux")]
mod temp;
#[cfg(target_os = "linux")]
pub(crate) mod whole;

#[cfg(target_arch = "wasm32")]
mod host_node;
#[cfg(not(target_os = "linux"))]
mod no_map;

pub use error::{Error, Outside};
#[cfg(target_os = "linux")]
pub(crate) use fd::identity as identity_of;
pub use host::{set_host, Host, HostError, HostFile, HostKind, HostStat};
#[cfg(target_os = "linux")]
pub(crate) use map::map_opened;
#[cfg(target_os = "linux")]
pub use map::{map, Mapped};
#[doc(hidden)]
pub use mem_host::MemHost;
#[cfg(not(target_os = "linux"))]
pub use no_map::{map, MapOnWasm32, Mapped};
#[cfg(target_os = "linux")]
pub(crate) use open::is_temporary as is_temporary_name;
#[doc(hidden)]
pub use open::{force_fallback_walk, resolver};
pub use open::{Identity, Opened, TEMPORARY_PREFIX};
#[doc(hidden)]
#[cfg(target_os = "linux")]
pub use put::delay_syncs;
#[cfg(target_os = "linux")]
pub(crate) use put::io_error;
#[cfg(target_os = "linux")]
pub use put::Writing;
#[cfg(target_os = "linux")]
pub(crate) use put::{write_at, Adoption};
#[doc(hidden)]
#[cfg(target_os = "linux")]
pub use temp::force_named_temporaries;
#[cfg(target_os = "linux")]
pub(crate) use temp::{free_space, random};
/// The open file an [`Opened`] holds: a descriptor on Linux.
#[cfg(target_os = "linux")]
pub(crate) type OpenFile = std::fs::File;
/// The open file an [`Opened`] holds: the host's handle elsewhere.
#[cfg(not(target_os = "linux"))]
pub(crate) type OpenFile = HostFile;
/// Reads into `buf` from `offset` until it is full or the file ends;
/// returns how many bytes were read (fewer than `buf.len()` only at the
/// end of the file). The one whole-read loop every backend uses: the io
/// pool's cold pages, the kept table's copies, the wasm32 host's chunks.
pub(crate) fn read_full_at(file: &OpenFile, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match read_at(file, &mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(target_os = "linux")]
fn read_at(file: &OpenFile, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(not(target_os = "linux"))]
fn read_at(file: &OpenFile, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    file.read_at(buf, offset)
}

/// The name a request's decoded bytes give, as a path this target can
/// open: any bytes on Unix, where a name is bytes; elsewhere (wasm32, whose
/// host names files by JS strings) only UTF-8, `None` for other bytes,
/// which no file there can have (`spec/targets.md`).
#[cfg(unix)]
pub(crate) fn name_from_bytes(name: &[u8]) -> Option<&std::path::Path> {
    use std::os::unix::ffi::OsStrExt;
    Some(std::path::Path::new(std::ffi::OsStr::from_bytes(name)))
}

/// The name a request's decoded bytes give: UTF-8 only on this target.
#[cfg(not(unix))]
pub(crate) fn name_from_bytes(name: &[u8]) -> Option<&std::path::Path> {
    std::str::from_utf8(name).ok().map(std::path::Path::new)
}

pub use list::{DirEntry, Reached, ReachedKind};
#[doc(hidden)]
pub use root::force_uncached_opens;
pub use root::{anywhere_sites, AnywhereSite, Root};
#[cfg(target_os = "linux")]
pub(crate) use rw::{etag_listed, Compare};
pub use rw::{read, read_string, write, Conditions, Durability, Guard, Mode, Removable, Written};
#[cfg(target_os = "linux")]
pub(crate) use rw::{Held, HeldCheck};
