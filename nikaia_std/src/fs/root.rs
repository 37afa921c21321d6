//! `Root`: the directory a name may not leave (`Dir`), or the audited
//! `Anywhere`, whose every call site is recorded for `nikaia --trust`.

#[cfg(not(target_os = "linux"))]
use super::host;
use super::host::{Host, HostFile, HostHit, HostRoot};
use super::open::{check_name, Purpose};
#[cfg(target_os = "linux")]
use super::parent::{in_parent, in_parent_making, Reach};
use super::{Error, Identity, Opened};
#[cfg(target_os = "linux")]
use rustix::{
    fd::{AsFd, OwnedFd},
    fs::{Mode, OFlags, CWD},
};
use std::fmt;
use std::io;
use std::panic::Location;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Test switch: every [`Root::open_cached`] says `WouldBlock`, so the
/// callers' slow path (the io pool) runs.
static FORCE_UNCACHED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every cached open report that it would wait for the disk (tests of
/// the io-pool path only).
#[doc(hidden)]
pub fn force_uncached_opens(on: bool) {
    FORCE_UNCACHED.store(on, Ordering::Relaxed);
}

/// Where a program called [`Root::anywhere`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AnywhereSite {
    pub file: &'static str,
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for AnywhereSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// One recorded call site and the files opened through roots made there.
#[derive(Debug)]
pub(super) struct Site {
    site: AnywhereSite,
    opens: AtomicU64,
}

/// Every `anywhere()` call site seen by this process. Entries are leaked:
/// there are as many as there are call sites in the program, no more.
static SITES: Mutex<Vec<&'static Site>> = Mutex::new(Vec::new());

/// Each site where [`Root::anywhere`] was called in this process, and how many
/// files were opened (for reading or writing) through roots made there.
pub fn anywhere_sites() -> Vec<(AnywhereSite, u64)> {
    let sites = SITES.lock().unwrap_or_else(|e| e.into_inner());
    sites
        .iter()
        .map(|s| (s.site, s.opens.load(Ordering::Relaxed)))
        .collect()
}

fn register(site: AnywhereSite) -> &'static Site {
    let mut sites = SITES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = sites.iter().find(|s| s.site == site) {
        return known;
    }
    let new: &'static Site = Box::leak(Box::new(Site {
        site,
        opens: AtomicU64::new(0),
    }));
    sites.push(new);
    new
}

/// Where names may be opened from.
///
/// A `Dir` root holds a directory descriptor opened once; every name is
/// resolved beneath it and a name that would leave it is
/// [`Outside`](super::Outside). An `Anywhere` root opens names as ordinary
/// paths, without containment, and records where it was made.
///
/// Cloning is cheap (a reference count).
#[derive(Clone)]
pub struct Root {
    pub(super) kind: Kind,
}

#[derive(Clone)]
pub(super) enum Kind {
    /// A directory descriptor (Linux).
    #[cfg(target_os = "linux")]
    Dir(Arc<DirRoot>),
    /// A directory on a host adapter, by path (wasm32; tests everywhere).
    Host(Arc<HostDirRoot>),
    Anywhere(&'static Site),
}

#[cfg(target_os = "linux")]
pub(super) struct DirRoot {
    pub(super) fd: OwnedFd,
    path: PathBuf,
    /// (dev, ino) of the directory: names kept in a cache are keyed under it.
    key: (u64, u64),
}

pub(super) struct HostDirRoot {
    pub(super) root: HostRoot,
    /// As given, for logs.
    path: PathBuf,
}

impl fmt::Debug for Root {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            #[cfg(target_os = "linux")]
            Kind::Dir(d) => f.debug_tuple("Root::Dir").field(&d.path).finish(),
            Kind::Host(d) => f.debug_tuple("Root::Dir").field(&d.path).finish(),
            Kind::Anywhere(s) => f
                .debug_tuple("Root::Anywhere")
                .field(&format_args!("{}", s.site))
                .finish(),
        }
    }
}

/// How the root directory itself is held: only as a place to look up names.
#[cfg(target_os = "linux")]
const ROOT_FLAGS: OFlags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);

/// The error of an operation that a root of the other kind has.
#[cfg(target_os = "linux")]
fn unsupported(what: &str) -> Error {
    Error::Io(io::Error::new(io::ErrorKind::Unsupported, what.to_string()))
}

/// The lexical checks of `Root::stat`: those of every name, and no `..`.
fn check_stat_name(name: &Path) -> Result<(), Error> {
    check_name(name)?;
    if name.components().any(|c| c == Component::ParentDir) {
        return Err(super::Outside::new(name).into());
    }
    Ok(())
}

impl Root {
    /// Opens the directory `path` once and keeps it: later renaming or
    /// replacing `path` does not change the root. A path that cannot be opened
    /// as a directory is an error here (there is no fallback to the current
    /// directory).
    ///
    /// On wasm32 the root is a path on the process's host adapter
    /// ([`set_host`](super::set_host); Node's `fs` by default), resolved once
    /// here (final symlinks followed) and then by path: see `spec/fs-root.md`.
    pub fn dir(path: impl AsRef<Path>) -> io::Result<Root> {
        #[cfg(not(target_os = "linux"))]
        {
            Root::on_host(path, host::host()?)
        }
        #[cfg(target_os = "linux")]
        Root::dir_fd(path.as_ref())
    }

    /// A `Dir` root on `host`: `path` is resolved once (final symlinks
    /// followed) and must be a directory; every name is then resolved below
    /// it by the walk over the host, as on wasm32. For tests of that path on
    /// every target (with a `MemHost`); on Linux, its files are opened with
    /// [`Root::open_host`] (`Root::open` gives `std::fs::File`s).
    #[doc(hidden)]
    pub fn on_host(path: impl AsRef<Path>, host: Arc<dyn Host>) -> io::Result<Root> {
        let path = path.as_ref();
        Ok(Root {
            kind: Kind::Host(Arc::new(HostDirRoot {
                root: HostRoot::new(path, host)?,
                path: path.to_path_buf(),
            })),
        })
    }

    #[cfg(target_os = "linux")]
    fn dir_fd(path: &Path) -> io::Result<Root> {
        let fd = rustix::fs::openat(CWD, path, ROOT_FLAGS, Mode::empty())?;
        let st = rustix::fs::fstat(&fd)?;
        Ok(Root {
            kind: Kind::Dir(Arc::new(DirRoot {
                fd,
                path: path.to_path_buf(),
                key: (st.st_dev as u64, st.st_ino as u64),
            })),
        })
    }

    /// A root without containment: names are ordinary paths (relative to the
    /// current directory, or absolute). The call site is recorded and listed
    /// by [`anywhere_sites`], with the number of files opened through it.
    ///
    /// Audited: `nikaia --trust` lists every call. The alias is the audit
    /// marker `nikaia stubtest` checks against the stubs' `@audit`.
    #[doc(alias = "nikaia-audit")]
    #[track_caller]
    pub fn anywhere() -> Root {
        let at = Location::caller();
        let site = register(AnywhereSite {
            file: at.file(),
            line: at.line(),
            column: at.column(),
        });
        Root {
            kind: Kind::Anywhere(site),
        }
    }

    /// True for a root on a host adapter (every root on wasm32).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn on_a_host(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            matches!(self.kind, Kind::Host(_))
        }
        #[cfg(not(target_os = "linux"))]
        {
            true
        }
    }

    /// True for a `Dir` root (only those may be kept in a cache).
    pub fn is_dir(&self) -> bool {
        !matches!(self.kind, Kind::Anywhere(_))
    }

    /// (dev, ino) of a `Dir` root's directory; `None` for `Anywhere`, whose
    /// files are never kept.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the cache is Linux's
    pub(crate) fn cache_key(&self) -> Option<(u64, u64)> {
        match &self.kind {
            #[cfg(target_os = "linux")]
            Kind::Dir(d) => Some(d.key),
            Kind::Host(d) => Some(d.root.dir.id),
            Kind::Anywhere(_) => None,
        }
    }

    /// The path a `Dir` root was opened from, as given (for display and
    /// logs; it is never opened again). `None` for `Anywhere`.
    pub fn path(&self) -> Option<&Path> {
        match &self.kind {
            #[cfg(target_os = "linux")]
            Kind::Dir(d) => Some(&d.path),
            Kind::Host(d) => Some(&d.path),
            Kind::Anywhere(_) => None,
        }
    }

    /// Where an `Anywhere` root was made; `None` for `Dir`.
    pub fn anywhere_site(&self) -> Option<AnywhereSite> {
        match &self.kind {
            Kind::Anywhere(s) => Some(s.site),
            _ => None,
        }
    }

    /// Opens a regular file for reading and takes its identity from the same
    /// descriptor. See `spec/fs-root.md` for every outcome.
    pub fn open(&self, name: impl AsRef<Path>) -> Result<Opened, Error> {
        #[cfg(target_os = "linux")]
        {
            super::fd::regular(self.open_fd(name.as_ref(), Purpose::Read)?)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let (file, id) = self.open_host(name)?;
            Ok(Opened { file, id })
        }
    }

    /// Opens a regular file under a root on a host adapter (any root on
    /// wasm32; [`Root::on_host`] elsewhere): the handle, checked to be the
    /// file the walk's last `lstat` saw, and its identity from that handle.
    #[doc(hidden)]
    pub fn open_host(&self, name: impl AsRef<Path>) -> Result<(HostFile, Identity), Error> {
        match self.open_on_host(name.as_ref(), Purpose::Read)? {
            HostHit::File(file, id) => Ok((file, id)),
            HostHit::Dir(_) => Err(Error::NotAFile { directory: true }),
        }
    }

    /// Like [`Root::open`], but the lookup may only use what the kernel
    /// already has cached: [`Error::WouldBlock`] when it would have to read the
    /// disk (retry it on an io thread). Where the kernel cannot do this, it is
    /// [`Root::open`].
    pub fn open_cached(&self, name: impl AsRef<Path>) -> Result<Opened, Error> {
        if FORCE_UNCACHED.load(Ordering::Relaxed) {
            return Err(Error::WouldBlock);
        }
        #[cfg(target_os = "linux")]
        {
            super::fd::regular(self.open_fd(name.as_ref(), Purpose::ReadCached)?)
        }
        #[cfg(not(target_os = "linux"))]
        {
            self.open(name)
        }
    }

    /// The identity `name` has now, from one `statx` relative to the root,
    /// to revalidate something opened earlier: it is meaningful only when
    /// compared with an [`Identity`] reached by a confined open. The name is
    /// checked lexically, and a `..` component is refused too, but symlinks
    /// are followed unconfined: a name that now leads elsewhere gives a
    /// different identity, never the stored one.
    pub fn stat(&self, name: impl AsRef<Path>) -> Result<Identity, Error> {
        let name = name.as_ref();
        match &self.kind {
            #[cfg(target_os = "linux")]
            Kind::Dir(d) => {
                check_stat_name(name)?;
                stat_at(d.fd.as_fd(), name).map_err(|e| super::fd::from_errno(e, name))?
            }
            Kind::Host(d) => {
                check_stat_name(name)?;
                d.root.stat(name)
            }
            #[cfg(target_os = "linux")]
            Kind::Anywhere(_) => stat_at(CWD, name).map_err(|e| super::fd::from_errno(e, name))?,
            #[cfg(not(target_os = "linux"))]
            Kind::Anywhere(_) => {
                let host = host::host().map_err(Error::Io)?;
                host::stat_path(&*host, name.as_os_str().as_encoded_bytes(), name)
            }
        }
    }

    /// Begins writing the file `name` (`spec/fs-root.md`, "Writing"):
    /// its directory is opened confined like a read, what `mode` asks of
    /// the name is checked, and an unnamed file is opened there; the name
    /// appears at [`Writing::commit`], never before. Files under a host
    /// root are read-only.
    #[cfg(target_os = "linux")]
    pub fn begin_write(
        &self,
        name: impl AsRef<Path>,
        mode: super::Mode,
    ) -> Result<super::Writing, Error> {
        let name = name.as_ref();
        // A name that is a symlink writes its target, found under the root
        // like any name (an absolute target leaves it); the link stays.
        in_parent(self, name, Reach::AsRead, |dir, entry| {
            super::Writing::begin(dir, entry, name, mode, None)
        })
    }

    /// Begins a write of `name` under a site's write rules: as
    /// [`Root::begin_write`], but no symbolic link is followed in any
    /// component (a link the name itself is gets replaced), missing
    /// directories are made when `guard` says so, and the files `guard`
    /// protects are refused (`spec/fs-root.md`, "Guarded writes"). A `Dir`
    /// root only.
    #[cfg(target_os = "linux")]
    pub fn begin_write_guarded(
        &self,
        name: impl AsRef<Path>,
        mode: super::Mode,
        guard: &super::Guard,
    ) -> Result<super::Writing, Error> {
        let name = name.as_ref();
        in_parent_making(self, name, guard, |dir, entry, made| {
            let writing = super::Writing::begin(dir, entry, name, mode, Some(guard.clone()))?;
            Ok(writing.holding(made))
        })
    }

    /// The (device, inode) at `name`, reached as a guarded write reaches
    /// it (no link followed, nothing made); `None` where nothing is.
    #[cfg(target_os = "linux")]
    #[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
    pub(crate) fn identity_guarded(&self, name: impl AsRef<Path>) -> Option<(u64, u64)> {
        let look = super::Guard::default();
        in_parent(self, name.as_ref(), Reach::NoLinks(&look), |dir, entry| {
            rustix::fs::statat(&dir, entry, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| (st.st_dev as u64, st.st_ino as u64))
                .map_err(|e| super::fd::from_errno(e, name.as_ref()))
        })
        .ok()
    }

    /// The device of the directory it is (`st_dev`).
    #[cfg(target_os = "linux")]
    #[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
    pub(crate) fn dev(&self) -> Option<u64> {
        match &self.kind {
            Kind::Dir(d) => rustix::fs::fstat(&d.fd).ok().map(|st| st.st_dev as u64),
            _ => None,
        }
    }

    /// Takes a file written elsewhere, complete, to become its name under
    /// its guard as [`Root::begin_write_guarded`] would make it; given the
    /// name by [`super::Writing::commit`]. Not named, it stays where it
    /// is.
    #[cfg(target_os = "linux")]
    pub(crate) fn adopt_guarded(
        &self,
        adoption: super::Adoption<'_>,
    ) -> Result<super::Writing, Error> {
        let (name, guard) = (adoption.name, adoption.guard);
        in_parent_making(self, name, guard, |dir, entry, made| {
            Ok(super::Writing::adopt(dir, entry, adoption)?.holding(made))
        })
    }

    /// Removes `name` (a file or link, or an empty directory, as `what`
    /// allows) under the same guard, if `conditions` hold for it.
    #[cfg(target_os = "linux")]
    pub fn remove_guarded(
        &self,
        name: impl AsRef<Path>,
        conditions: &super::Conditions,
        what: super::Removable,
        guard: &super::Guard,
        durability: super::Durability,
    ) -> Result<(), Error> {
        super::guard::remove(self, name.as_ref(), conditions, what, guard, durability)
    }

    /// The one place a name becomes a host file or directory.
    pub(super) fn open_on_host(&self, name: &Path, purpose: Purpose) -> Result<HostHit, Error> {
        match &self.kind {
            Kind::Host(d) => {
                check_name(name)?;
                d.root.open(name, purpose)
            }
            #[cfg(not(target_os = "linux"))]
            Kind::Anywhere(site) => {
                let host = host::host().map_err(Error::Io)?;
                let hit = host::open_anywhere(&host, name, purpose)?;
                site.opens.fetch_add(1, Ordering::Relaxed);
                Ok(hit)
            }
            #[cfg(target_os = "linux")]
            _ => Err(unsupported(
                "a root on descriptors has no host: open it with Root::open",
            )),
        }
    }

    /// The one place a name becomes a descriptor.
    #[cfg(target_os = "linux")]
    pub(super) fn open_fd(&self, name: &Path, purpose: Purpose) -> Result<OwnedFd, Error> {
        match &self.kind {
            Kind::Dir(d) => super::fd::open_beneath(d.fd.as_fd(), name, purpose),
            Kind::Host(_) => Err(unsupported(
                "a root on a host adapter has no descriptors: open it with Root::open_host",
            )),
            Kind::Anywhere(site) => {
                let fd = rustix::fs::openat(CWD, name, purpose.flags(), purpose.mode())
                    .map_err(|e| super::fd::from_errno(e, name))?;
                site.opens.fetch_add(1, Ordering::Relaxed);
                Ok(fd)
            }
        }
    }
}

/// One `statx` (Linux) of `name` relative to `dir`.
#[cfg(target_os = "linux")]
fn stat_at(
    dir: rustix::fd::BorrowedFd<'_>,
    name: &Path,
) -> rustix::io::Result<Result<Identity, Error>> {
    use rustix::fs::{AtFlags, FileType, StatxFlags};
    let mask = StatxFlags::TYPE
        | StatxFlags::INO
        | StatxFlags::SIZE
        | StatxFlags::MTIME
        | StatxFlags::CTIME;
    let st = rustix::fs::statx(dir, name, AtFlags::empty(), mask)?;
    let ns = |t: rustix::fs::StatxTimestamp| t.tv_sec * 1_000_000_000 + i64::from(t.tv_nsec);
    Ok(match FileType::from_raw_mode(st.stx_mode.into()) {
        FileType::RegularFile => Ok(Identity {
            dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            size: st.stx_size,
            mtime_ns: ns(st.stx_mtime),
            ctime_ns: ns(st.stx_ctime),
        }),
        FileType::Directory => Err(Error::NotAFile { directory: true }),
        _ => Err(Error::NotAFile { directory: false }),
    })
}
