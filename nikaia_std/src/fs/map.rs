//! `fs::map`: a file under a root as shared, read-only bytes, without a copy.

use super::{Error, Identity, Root};
use bytes::Bytes;
use memmap2::MmapOptions;
use std::ops::Deref;
use std::path::Path;

/// A file's contents mapped into memory, as [`Bytes`]: cloning is a
/// reference count, never a copy. Dereferences to `Bytes`.
#[derive(Clone, Debug)]
pub struct Mapped {
    bytes: Bytes,
    id: Identity,
}

impl Mapped {
    /// The identity of the file when it was opened and mapped.
    pub fn identity(&self) -> Identity {
        self.id
    }
}

impl Deref for Mapped {
    type Target = Bytes;
    fn deref(&self) -> &Bytes {
        &self.bytes
    }
}

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl From<Mapped> for Bytes {
    fn from(m: Mapped) -> Bytes {
        m.bytes
    }
}

/// Opens `name` under `root` and maps the whole file read-only, with the
/// size the open's `fstat` saw. An empty file is not mapped (a mapping of
/// length 0 is refused by the kernel): it gives empty bytes.
pub fn map(name: impl AsRef<Path>, root: &Root) -> Result<Mapped, Error> {
    map_opened(&root.open(name)?)
}

/// Maps a file already opened under a root, by that same descriptor (the
/// kept-mapping table uses this: it never opens a name twice).
pub(crate) fn map_opened(opened: &super::Opened) -> Result<Mapped, Error> {
    let id = opened.id;
    if id.size == 0 {
        return Ok(Mapped {
            bytes: Bytes::new(),
            id,
        });
    }
    let len = usize::try_from(id.size).map_err(|_| {
        Error::Io(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            "file larger than the address space",
        ))
    })?;
    // SAFETY: the mapping is read-only (shared with the page cache, never
    // written through) of a descriptor that fstat showed to be a regular
    // file, reached under an operator-named root, for its fstat size. The
    // one risk `memmap2` cannot rule out is another process truncating the
    // file while it is mapped: reading past the new end raises SIGBUS. That
    // is documented in spec/fs-root.md; files under a served root are the
    // operator's, and writers are expected to replace them by rename.
    let mmap = unsafe { MmapOptions::new().len(len).map(&opened.file) }.map_err(Error::Io)?;
    Ok(Mapped {
        bytes: Bytes::from_owner(mmap),
        id,
    })
}
