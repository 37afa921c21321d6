//! `std::fs`: names confined under a root, mappings, whole-file reads and writes.
//!
//! Every function that takes a name also takes the [`Root`] it may not leave.
//! A name that would leave it is refused with [`Outside`]; it is never
//! rewritten into a different name. See `spec/fs-root.md`.

mod error;
mod map;
mod open;
mod root;
mod rw;
mod walk;

#[cfg(target_os = "linux")]
mod linux;

pub use error::{Error, Outside};
pub(crate) use map::map_opened;
pub use map::{map, Mapped};
pub(crate) use open::identity as identity_of;
#[doc(hidden)]
pub use open::{force_fallback_walk, resolver};
pub use open::{Identity, Opened};
/// The open file an [`Opened`] holds: a descriptor on Linux.
pub(crate) type OpenFile = std::fs::File;
#[doc(hidden)]
pub use root::force_uncached_opens;
pub use root::{anywhere_sites, AnywhereSite, DirEntry, Root};
pub use rw::{read, read_string, write};
