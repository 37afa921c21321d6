//! The host adapter: a read-only file system reached by path, for targets
//! without descriptors (wasm32, through Node's `fs`: `host_node.rs`), and an
//! in-memory one for tests (`mem_host.rs`).
//!
//! A root on a host is resolved by the same walk as the Linux fallback
//! (`walk.rs`), over [`HostLookup`]: a directory is the path the walk
//! reached plus its (dev, ino), and the final open compares the opened
//! handle's (dev, ino) with the `lstat` that chose it.

use super::open::{Identity, Purpose};
use super::walk::{self, Lookup, Miss, MAX_LINKS};
use super::{Error, Outside};
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// What a host path is, as `lstat` or `readdir` sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostKind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// The part of a `stat` the walk and [`Identity`] use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HostStat {
    pub kind: HostKind,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Status-change time, nanoseconds since the Unix epoch.
    pub ctime_ns: i64,
}

/// Why a host operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostError {
    /// `ENOENT` (and `ENAMETOOLONG`).
    NotFound,
    /// `ENOTDIR`: a component of the path is not a directory.
    NotDir,
    /// `ELOOP`: `open` met a final symlink, or too many symlinks.
    Loop,
    /// `EINVAL` from `readlink`: the path is not a symlink.
    NotSymlink,
    /// Anything else, described.
    Other(String),
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::NotFound => f.write_str("no such file or directory"),
            HostError::NotDir => f.write_str("not a directory"),
            HostError::Loop => f.write_str("symlink where none may be followed"),
            HostError::NotSymlink => f.write_str("not a symlink"),
            HostError::Other(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for HostError {}

/// A read-only file system reached by path: every operation the walk, the
/// final open, `Root::stat` and `Root::list` need, and no other.
///
/// Paths are bytes, as the walk builds them: the root's path, then `/` and
/// one component at a time. A relative path is relative to the host's
/// current directory.
pub trait Host: Send + Sync {
    /// The path itself, a final symlink not followed.
    fn lstat(&self, path: &[u8]) -> Result<HostStat, HostError>;
    /// The target of the symlink `path`; [`HostError::NotSymlink`] if it is
    /// not one.
    fn readlink(&self, path: &[u8]) -> Result<Vec<u8>, HostError>;
    /// Opens `path` for reading without following a final symlink
    /// ([`HostError::Loop`] if it is one): a handle for `fstat`, `pread`
    /// and `close`.
    fn open(&self, path: &[u8]) -> Result<u64, HostError>;
    /// The file a handle is open on.
    fn fstat(&self, handle: u64) -> Result<HostStat, HostError>;
    /// Reads at most `buf.len()` bytes at `offset`; 0 at the end.
    fn pread(&self, handle: u64, buf: &mut [u8], offset: u64) -> Result<usize, HostError>;
    /// Closes a handle (once; errors are not reported).
    fn close(&self, handle: u64);
    /// The descriptor number of the host's own process that `handle` is,
    /// if the host's code may read the opened file by it (Node's `fs.read`):
    /// then a JS host can move a file body without it passing through
    /// wasm memory. `None` (the default) keeps every read in [`Host::pread`].
    fn descriptor(&self, handle: u64) -> Option<u32> {
        let _ = handle;
        None
    }
    /// The entries of the directory `path` (symlinks followed), `.` and
    /// `..` left out, each with what it is (a symlink is `Symlink`).
    fn readdir(&self, path: &[u8]) -> Result<Vec<(Vec<u8>, HostKind)>, HostError>;
}

/// A file opened on a host: reads go through the one handle the final open
/// checked; it is closed on drop.
pub struct HostFile {
    host: Arc<dyn Host>,
    handle: u64,
}

impl HostFile {
    /// Reads at most `buf.len()` bytes at `offset` (0 at the end of the file).
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.host
            .pread(self.handle, buf, offset)
            .map_err(|e| io::Error::other(e.to_string()))
    }

    /// The host's descriptor for this file ([`Host::descriptor`]): valid
    /// while this `HostFile` lives, closed when it drops.
    pub fn descriptor(&self) -> Option<u32> {
        self.host.descriptor(self.handle)
    }

    /// Reads the whole file from its start.
    pub(crate) fn read_all(&self, size_hint: u64) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(usize::try_from(size_hint).unwrap_or(0));
        let mut chunk = vec![0; 64 * 1024];
        loop {
            let n = self.read_at(&mut chunk, out.len() as u64)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }
}

impl Drop for HostFile {
    fn drop(&mut self) {
        self.host.close(self.handle);
    }
}

impl fmt::Debug for HostFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("HostFile").field(&self.handle).finish()
    }
}

/// The process's host, registered once.
static HOST: OnceLock<Arc<dyn Host>> = OnceLock::new();

/// Registers the host every `Root::dir` and `Root::anywhere` of this process
/// uses where there are no descriptors (wasm32). Once only: `Err` gives the
/// host back if one is already registered, or was already used (on wasm32
/// the Node host is registered at the first use otherwise). On Linux, roots
/// are descriptors and this host is not used.
pub fn set_host(host: Arc<dyn Host>) -> Result<(), Arc<dyn Host>> {
    HOST.set(host)
}

/// The registered host (on wasm32, Node's `fs` unless another was set first).
#[cfg_attr(target_os = "linux", allow(dead_code))]
pub(crate) fn host() -> io::Result<Arc<dyn Host>> {
    #[cfg(target_arch = "wasm32")]
    {
        Ok(HOST
            .get_or_init(|| Arc::new(super::host_node::NodeHost))
            .clone())
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        HOST.get().cloned().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "no file system host registered (fs::set_host)",
            )
        })
    }
}

/// The error of every write on a host root.
pub(crate) fn read_only() -> Error {
    Error::Io(io::Error::new(
        io::ErrorKind::ReadOnlyFilesystem,
        "fs::write: files under a host root are read-only (the wasm32 target has a read-only file system)",
    ))
}

/// A directory the walk entered: its path (the root's, then the components
/// below it) and its (dev, ino) when `lstat` saw it.
#[derive(Clone, Debug)]
pub(crate) struct HostDir {
    pub(crate) path: Vec<u8>,
    pub(crate) id: (u64, u64),
}

/// What a final open on a host gives.
pub(crate) enum HostHit {
    /// A regular file, opened and checked.
    File(HostFile, Identity),
    /// A directory, for listing (its path).
    Dir(Vec<u8>),
}

/// The walk's lookup over a host.
pub(crate) struct HostLookup<'a> {
    pub(crate) host: &'a Arc<dyn Host>,
    pub(crate) root: &'a HostDir,
}

/// `dir/component`; `.` is `dir` itself.
fn join(dir: &[u8], component: &[u8]) -> Vec<u8> {
    if component == b"." {
        return dir.to_vec();
    }
    let mut path = dir.to_vec();
    if !path.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(component);
    path
}

/// A host error as the walk sees it.
fn miss(e: HostError) -> Miss {
    match e {
        HostError::NotFound => Miss::NotFound,
        HostError::NotDir => Miss::NotDir,
        HostError::Loop => Miss::Symlink,
        HostError::NotSymlink => Miss::NotALink,
        HostError::Other(s) => Miss::Other(Error::Io(io::Error::other(s))),
    }
}

fn identity(st: &HostStat) -> Identity {
    Identity {
        dev: st.dev,
        ino: st.ino,
        size: st.size,
        mtime_ns: st.mtime_ns,
        ctime_ns: st.ctime_ns,
    }
}

/// The final step on a host, after `lstat` of `path` gave `seen`: a regular
/// file is opened (a final symlink not followed) and kept only if the
/// handle's `fstat` shows the same (dev, ino) — else it was swapped between
/// the two looks, and that is `Outside`.
fn open_seen(
    host: &Arc<dyn Host>,
    path: Vec<u8>,
    seen: HostStat,
    purpose: Purpose,
) -> Result<HostHit, Miss> {
    let list = purpose == Purpose::List;
    match seen.kind {
        HostKind::Symlink => Err(Miss::Symlink),
        HostKind::Dir if list => Ok(HostHit::Dir(path)),
        HostKind::Dir => Err(Miss::Other(Error::NotAFile { directory: true })),
        _ if list => Err(Miss::NotFound),
        HostKind::Other => Err(Miss::Other(Error::NotAFile { directory: false })),
        HostKind::File => {
            let handle = host.open(&path).map_err(miss)?;
            let file = HostFile {
                host: Arc::clone(host),
                handle,
            };
            let now = host.fstat(handle).map_err(miss)?;
            if (now.dev, now.ino) != (seen.dev, seen.ino) || now.kind != HostKind::File {
                return Err(Miss::Outside);
            }
            Ok(HostHit::File(file, identity(&now)))
        }
    }
}

impl Lookup for HostLookup<'_> {
    type Dir = HostDir;
    type File = HostHit;

    fn root(&self) -> HostDir {
        self.root.clone()
    }

    fn open_dir(&self, at: &HostDir, component: &[u8]) -> Result<HostDir, Miss> {
        let path = join(&at.path, component);
        let st = self.host.lstat(&path).map_err(miss)?;
        match st.kind {
            HostKind::Dir => Ok(HostDir {
                path,
                id: (st.dev, st.ino),
            }),
            HostKind::Symlink => Err(Miss::Symlink),
            // lstat said what it is: not a symlink, no need to read it.
            HostKind::File | HostKind::Other => Err(Miss::NotFound),
        }
    }

    fn open_file(&self, at: &HostDir, component: &[u8], purpose: Purpose) -> Result<HostHit, Miss> {
        let path = join(&at.path, component);
        let seen = self.host.lstat(&path).map_err(miss)?;
        let hit = open_seen(self.host, path, seen, purpose)?;
        // The directory the walk reached is still the one it entered: a
        // path names it again at each step, and a swap there (a symlink out
        // put in its place) would have moved the open along with it.
        let now = self.host.lstat(&at.path).map_err(miss)?;
        if now.kind != HostKind::Dir || (now.dev, now.ino) != at.id {
            return Err(Miss::Outside);
        }
        Ok(hit)
    }

    fn readlink(&self, at: &HostDir, component: &[u8]) -> Result<Vec<u8>, Miss> {
        self.host.readlink(&join(&at.path, component)).map_err(miss)
    }
}

/// `path` with its final symlinks followed, unconfined (at most 40), and
/// its `lstat`: for the root's own path, `Root::stat` and `Anywhere`.
pub(crate) fn follow(host: &dyn Host, path: &[u8]) -> Result<(Vec<u8>, HostStat), HostError> {
    let mut path = path.to_vec();
    for _ in 0..=MAX_LINKS {
        let st = host.lstat(&path)?;
        if st.kind != HostKind::Symlink {
            return Ok((path, st));
        }
        let target = host.readlink(&path)?;
        if target.is_empty() {
            return Err(HostError::NotFound);
        }
        path = if target[0] == b'/' {
            target
        } else {
            let parent = match path.iter().rposition(|&b| b == b'/') {
                Some(0) => b"/".to_vec(),
                Some(i) => path[..i].to_vec(),
                None => b".".to_vec(),
            };
            join(&parent, &target)
        };
    }
    Err(HostError::Loop)
}

/// A host error of an unconfined step (`follow`) as an outcome.
fn outcome(e: HostError, name: &Path) -> Error {
    match e {
        HostError::NotFound | HostError::NotDir | HostError::NotSymlink => Error::NotFound,
        HostError::Loop => Error::Outside(Outside::new(name)),
        HostError::Other(s) => Error::Io(io::Error::other(s)),
    }
}

/// The walk's outcome for a `Miss` of the final step outside the walk.
#[cfg_attr(target_os = "linux", allow(dead_code))]
fn miss_outcome(m: Miss, name: &Path) -> Error {
    match m {
        Miss::Symlink | Miss::Outside => Error::Outside(Outside::new(name)),
        Miss::NotDir | Miss::NotALink | Miss::NotFound => Error::NotFound,
        Miss::Other(e) => e,
    }
}

/// A root on a host: the path as given (for logs), the path it resolved to
/// and the (dev, ino) of that directory then.
pub(crate) struct HostRoot {
    pub(crate) host: Arc<dyn Host>,
    pub(crate) dir: HostDir,
}

impl HostRoot {
    /// Resolves `path` (final symlinks followed, unconfined: the operator
    /// named it) to a directory.
    pub(crate) fn new(path: &Path, host: Arc<dyn Host>) -> io::Result<HostRoot> {
        let bytes = path.as_os_str().as_encoded_bytes();
        let (resolved, st) = follow(&*host, bytes).map_err(|e| match e {
            HostError::NotFound => io::Error::from(io::ErrorKind::NotFound),
            HostError::NotDir => io::Error::from(io::ErrorKind::NotADirectory),
            e => io::Error::other(e.to_string()),
        })?;
        if st.kind != HostKind::Dir {
            return Err(io::Error::from(io::ErrorKind::NotADirectory));
        }
        Ok(HostRoot {
            host,
            dir: HostDir {
                path: resolved,
                id: (st.dev, st.ino),
            },
        })
    }

    /// The confined open of `name` (checked lexically by the caller).
    pub(crate) fn open(&self, name: &Path, purpose: Purpose) -> Result<HostHit, Error> {
        let lookup = HostLookup {
            host: &self.host,
            root: &self.dir,
        };
        walk::open_beneath(&lookup, name, purpose)
    }

    /// `Root::stat`: the name (checked by the caller) below the root's
    /// path, final symlinks followed unconfined; only ever compared.
    pub(crate) fn stat(&self, name: &Path) -> Result<Identity, Error> {
        let path = join(&self.dir.path, name.as_os_str().as_encoded_bytes());
        stat_path(&*self.host, &path, name)
    }
}

/// The identity of the regular file `path` reaches (final symlinks followed).
pub(crate) fn stat_path(host: &dyn Host, path: &[u8], name: &Path) -> Result<Identity, Error> {
    let (_, st) = follow(host, path).map_err(|e| outcome(e, name))?;
    match st.kind {
        HostKind::File => Ok(identity(&st)),
        HostKind::Dir => Err(Error::NotAFile { directory: true }),
        _ => Err(Error::NotAFile { directory: false }),
    }
}

/// An `Anywhere` open on a host: `name` as a host path, final symlinks
/// followed, nothing confined; the final open is checked as under a root.
#[cfg_attr(target_os = "linux", allow(dead_code))]
pub(crate) fn open_anywhere(
    host: &Arc<dyn Host>,
    name: &Path,
    purpose: Purpose,
) -> Result<HostHit, Error> {
    let bytes = name.as_os_str().as_encoded_bytes();
    let (path, seen) = follow(&**host, bytes).map_err(|e| outcome(e, name))?;
    open_seen(host, path, seen, purpose).map_err(|m| miss_outcome(m, name))
}

/// A directory entry's name and its `lstat` (`None` if that failed: the
/// entry went away meanwhile).
pub(crate) type Listed = (Vec<u8>, Option<HostStat>);

/// The entries of a directory reached on a host, each with its `lstat`.
pub(crate) fn list(host: &dyn Host, path: &[u8]) -> Result<Vec<Listed>, Error> {
    let entries = host.readdir(path).map_err(|e| match e {
        HostError::NotFound | HostError::NotDir => Error::NotFound,
        e => Error::Io(io::Error::other(e.to_string())),
    })?;
    Ok(entries
        .into_iter()
        .filter(|(name, _)| name != b"." && name != b"..")
        .map(|(name, _)| {
            let st = host.lstat(&join(path, &name)).ok();
            (name, st)
        })
        .collect())
}

/// What a host `stat` says a listed entry is.
pub(crate) fn reached(st: &HostStat) -> super::Reached {
    use super::ReachedKind;
    let kind = match st.kind {
        HostKind::File => ReachedKind::File,
        HostKind::Dir => ReachedKind::Dir,
        HostKind::Symlink | HostKind::Other => ReachedKind::Other,
    };
    super::Reached {
        kind,
        size: st.size,
        mtime_ns: st.mtime_ns,
    }
}
