//! Whole-file reads and writes of a name under a root.

use super::{Error, Root};
use std::io;
use std::path::Path;

/// Reads the whole regular file `name` under `root`.
pub fn read(name: impl AsRef<Path>, root: &Root) -> Result<Vec<u8>, Error> {
    #[cfg(target_os = "linux")]
    if !root.on_a_host() {
        use std::io::Read;
        let mut opened = root.open(name)?;
        let mut out = Vec::with_capacity(usize::try_from(opened.id.size).unwrap_or(0));
        opened.file.read_to_end(&mut out).map_err(Error::Io)?;
        return Ok(out);
    }
    let (file, id) = root.open_host(name)?;
    file.read_all(id.size).map_err(Error::Io)
}

/// Reads the whole regular file `name` under `root` as UTF-8; invalid UTF-8
/// is [`Error::Io`] with [`io::ErrorKind::InvalidData`].
pub fn read_string(name: impl AsRef<Path>, root: &Root) -> Result<String, Error> {
    let bytes = read(name, root)?;
    String::from_utf8(bytes).map_err(|e| Error::Io(io::Error::new(io::ErrorKind::InvalidData, e)))
}

/// Creates or truncates the regular file `name` under `root` (mode 0o644
/// before the umask) and writes `data` to it. The name is confined exactly
/// like a read; nothing is created outside the root.
///
/// Files under a host root are read-only, and so is every root on wasm32:
/// there this is [`Error::Io`] of kind [`io::ErrorKind::ReadOnlyFilesystem`].
pub fn write(name: impl AsRef<Path>, root: &Root, data: impl AsRef<[u8]>) -> Result<(), Error> {
    #[cfg(target_os = "linux")]
    {
        use std::io::Write;
        let mut opened = root.open_write(name.as_ref())?;
        opened.file.write_all(data.as_ref()).map_err(Error::Io)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (name, root, data);
        Err(super::host::read_only())
    }
}
