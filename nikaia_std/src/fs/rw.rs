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

/// Writes `data` as the regular file `name` under `root` (mode 0o644
/// before the umask), created or replaced whole: the bytes go to an
/// unnamed file first, synced ([`Durability::Data`]), and then take the
/// name, so the name never holds anything but its old bytes or `data`.
/// The name is confined exactly like a read; nothing is created outside
/// the root. See [`Root::begin_write`] for the other modes.
///
/// Files under a host root are read-only, and so is every root on wasm32:
/// there this is [`Error::Io`] of kind [`io::ErrorKind::ReadOnlyFilesystem`].
pub fn write(name: impl AsRef<Path>, root: &Root, data: impl AsRef<[u8]>) -> Result<(), Error> {
    #[cfg(target_os = "linux")]
    {
        let mut writing = root.begin_write(name, Mode::Replace)?;
        writing.write(data.as_ref())?;
        writing.commit(Durability::Data).map(|_| ())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (name, root, data);
        Err(super::host::read_only())
    }
}

/// How the written file takes its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Only if the name does not exist ([`Error::Exists`] otherwise).
    Create,
    /// Whether or not it exists (a regular file it names is replaced).
    Replace,
    /// Only if it names the version whose ETag is this one (as sent in
    /// `If-Match`, quotes included; `*`: any version), else
    /// [`Error::Precondition`].
    ReplaceIf(String),
}

/// What is on the disk before the name appears (and the answer goes out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Nothing is waited for: a crash may leave the name on an empty or
    /// partial file's blocks, as the file system orders it.
    None,
    /// The file's data (`fdatasync`) before its name appears.
    #[default]
    Data,
    /// The data, and the directory (`fsync`) after the name appears: the
    /// name survives a crash too.
    Full,
}

/// What became of a written file's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// The new file, as it is under its name now.
    pub id: super::Identity,
    /// The name did not exist before (a create).
    pub created: bool,
}
