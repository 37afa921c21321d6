//! Listing a directory under a root: [`Root::list`], its entries, and
//! what each one leads to, on descriptors (Linux) or on a host.

use super::host::{self, Host, HostHit};
use super::open::{is_temporary, Purpose};
use super::root::Kind;
use super::{Error, Root};
#[cfg(target_os = "linux")]
use rustix::fd::OwnedFd;
use std::path::Path;

/// One entry of a directory listed with [`Root::list`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: std::ffi::OsString,
    /// A directory itself (a symlink to one is not).
    pub is_dir: bool,
    /// A symbolic link.
    pub is_link: bool,
    /// What the entry leads to, from one stat: the entry itself, or for a
    /// symbolic link what it reaches when opened under the root with the
    /// opens' confinement. `None` for a link that leads out of the root or
    /// nowhere (or whose stat failed).
    pub reached: Option<Reached>,
}

/// What a listed entry leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reached {
    /// A file, a directory, or another kind.
    pub kind: ReachedKind,
    /// In bytes (for a directory, what its file system says).
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
}

/// What kind of thing a listed entry leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReachedKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A FIFO, socket or device.
    Other,
}

impl Root {
    /// The entries of the directory `name` (`.` for the root itself), found
    /// like a file (the same confinement and outcomes), sorted by name;
    /// `.` and `..` are left out. Each is stat-ed from the directory (a
    /// symbolic link opened under the root, confined: see [`DirEntry`]).
    pub fn list(&self, name: impl AsRef<Path>) -> Result<Vec<DirEntry>, Error> {
        let (mut entries, _) = self.list_at_most(name.as_ref(), usize::MAX)?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// [`Root::list`] unsorted, reading at most `max` entries; `true` when
    /// the directory had more. May wait for the disk: run it off a worker.
    pub(crate) fn list_at_most(
        &self,
        name: &Path,
        max: usize,
    ) -> Result<(Vec<DirEntry>, bool), Error> {
        match &self.kind {
            Kind::Host(d) => self.list_host(&*d.root.host, name, max),
            #[cfg(not(target_os = "linux"))]
            Kind::Anywhere(_) => {
                let host = host::host().map_err(Error::Io)?;
                self.list_host(&*host, name, max)
            }
            #[cfg(target_os = "linux")]
            _ => self.list_fd(name, self.open_fd(name, Purpose::List)?, max),
        }
    }

    fn list_host(
        &self,
        host: &dyn Host,
        name: &Path,
        max: usize,
    ) -> Result<(Vec<DirEntry>, bool), Error> {
        let HostHit::Dir(path) = self.open_on_host(name, Purpose::List)? else {
            return Err(Error::NotFound);
        };
        let mut all = host::list(host, &path)?;
        all.retain(|(entry, _)| !is_temporary(entry));
        let more = all.len() > max;
        all.truncate(max);
        let entries = all
            .into_iter()
            .map(|(entry, st)| {
                let entry = os_string(entry);
                let is_link = st
                    .as_ref()
                    .is_some_and(|st| st.kind == host::HostKind::Symlink);
                let reached = match st {
                    Some(_) if is_link => self.reach_on_host(host, &name.join(&entry)),
                    Some(st) => Some(host::reached(&st)),
                    None => None,
                };
                DirEntry {
                    is_dir: reached.is_some_and(|r| r.kind == ReachedKind::Dir) && !is_link,
                    name: entry,
                    is_link,
                    reached,
                }
            })
            .collect();
        Ok((entries, more))
    }

    /// What the symbolic link `name` reaches under the root, opened as a
    /// request's name would be.
    fn reach_on_host(&self, host: &dyn Host, name: &Path) -> Option<Reached> {
        match self.open_on_host(name, Purpose::Read) {
            Ok(HostHit::File(_, id)) => Some(Reached {
                kind: ReachedKind::File,
                size: id.size,
                mtime_ns: id.mtime_ns,
            }),
            Err(Error::NotAFile { directory: true }) => {
                match self.open_on_host(name, Purpose::List) {
                    Ok(HostHit::Dir(path)) => host.lstat(&path).ok().map(|st| host::reached(&st)),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

#[cfg(target_os = "linux")]
impl Root {
    /// The entries of the directory `name`, open at `fd`, unsorted: each
    /// stat-ed with `fstatat(fd, entry, AT_SYMLINK_NOFOLLOW)`, never by
    /// walking a path again; a symbolic link is opened under the root
    /// (confined like any open) and its target stat-ed.
    fn list_fd(
        &self,
        name: &Path,
        fd: OwnedFd,
        max: usize,
    ) -> Result<(Vec<DirEntry>, bool), Error> {
        use rustix::fs::{AtFlags, FileType};
        use std::os::unix::ffi::OsStrExt;
        let mut dir = rustix::fs::Dir::read_from(&fd).map_err(|e| Error::Io(e.into()))?;
        let mut entries = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(|e| Error::Io(e.into()))?;
            let raw = entry.file_name().to_bytes();
            // A write's temporary is no one's to see.
            if raw == b"." || raw == b".." || is_temporary(raw) {
                continue;
            }
            if entries.len() == max {
                return Ok((entries, true));
            }
            let entry_name = std::ffi::OsStr::from_bytes(raw);
            let st = rustix::fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW).ok();
            let kind = st
                .as_ref()
                .map(|st| FileType::from_raw_mode(st.st_mode as _));
            let is_link = kind == Some(FileType::Symlink);
            let reached = match &st {
                Some(_) if is_link => {
                    let fd = self.open_fd(&name.join(entry_name), Purpose::Read).ok();
                    fd.and_then(|fd| rustix::fs::fstat(&fd).ok())
                        .map(|st| reached_of(&st))
                }
                Some(st) => Some(reached_of(st)),
                None => None,
            };
            entries.push(DirEntry {
                name: entry_name.to_os_string(),
                is_dir: kind == Some(FileType::Directory),
                is_link,
                reached,
            });
        }
        Ok((entries, false))
    }
}

/// What a `stat` says a listed entry is.
#[cfg(target_os = "linux")]
#[allow(clippy::unnecessary_cast)] // the field types differ between targets
fn reached_of(st: &rustix::fs::Stat) -> Reached {
    use rustix::fs::FileType;
    let kind = match FileType::from_raw_mode(st.st_mode as _) {
        FileType::RegularFile => ReachedKind::File,
        FileType::Directory => ReachedKind::Dir,
        _ => ReachedKind::Other,
    };
    Reached {
        kind,
        size: st.st_size as u64,
        mtime_ns: st.st_mtime as i64 * 1_000_000_000 + st.st_mtime_nsec as i64,
    }
}

/// A directory entry's name from its bytes.
fn os_string(name: Vec<u8>) -> std::ffi::OsString {
    #[cfg(unix)]
    {
        std::os::unix::ffi::OsStringExt::from_vec(name)
    }
    #[cfg(not(unix))]
    {
        String::from_utf8_lossy(&name).into_owned().into()
    }
}
