//! The parent walker of writes, beside the read walker (`walk.rs`): it
//! opens the directory a name is in, under the root, and runs the write's
//! last step there with that directory's descriptor and the last component
//! alone — as Go's `os.Root` (`doInRoot`) and cap-std (`via_parent`) do.
//! Every write goes through it: `Root::begin_write`, the guarded writes,
//! their removals and adoptions, and the look at what a name is now.
//!
//! The name is split at its last `/` ([`split`]); the last component is
//! never `.`, `..`, empty or a temporary's, so the step always acts on one
//! entry of the directory it is given, never on the directory itself. The
//! directory part is reached as [`Reach`] says:
//!
//! - [`Reach::AsRead`] (`spec/fs-root.md`, "Writing"): exactly as a read
//!   resolves a name (openat2 with `RESOLVE_BENEATH`, or the walk: `..` that
//!   stays inside and symlinks that stay inside are followed), and a last
//!   component that is a symlink is read and its target found the same way
//!   from the root, at most 40 links: the step gets the entry the links end
//!   at (the link stays a link).
//! - [`Reach::NoLinks`] ("Guarded writes"): one component at a time, each
//!   opened `O_NOFOLLOW` relative to the one before; `..` is `Outside`, a
//!   link on the way refused, a missing level made when the guard says so
//!   (`mkdirat`, then opened by the same step, so a link put there
//!   meanwhile is refused; removed again, if still empty, when the write
//!   that made it ends without its name: [`Made`]), each level checked
//!   against the guard's
//!   protected files. The step gets the last component as it is: a link
//!   there is an entry like any other, replaced or removed, never followed.
//!
//! Races: every step is relative to a descriptor the walk holds, never to
//! a path resolved again, so a directory renamed, or swapped for a link
//! out of the root, after the walk entered it changes nothing outside: the
//! step acts in the directory that was beneath the root when it was
//! opened.
//!
//! A write with no body and one with two names (WebDAV's `MKCOL`, `MOVE`,
//! `COPY`, after HTTP/3) need no other walk: `MKCOL` is a step that makes
//! the last component (`mkdirat`), and a write with two names walks to the
//! second inside the first one's step, then acts on both directories at
//! once (`renameat2`, `linkat`), as Go's `os.Root` renames.

use super::host;
use super::open::{check_name, is_temporary, Purpose};
use super::put::{denied, io_error};
use super::root::{Kind, Root};
use super::{Error, Guard, Outside};
use crate::sync::lock;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode as Perm, OFlags};
use rustix::io::Errno;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Mutex, RwLock};

/// How a write reaches the directory its name is in.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reach<'a> {
    /// As a read resolves a name, and a last component that is a symlink
    /// followed to its target (any root that can be written).
    AsRead,
    /// No link followed in any component, missing levels made and
    /// protected files refused as the guard says (a `Dir` root only).
    NoLinks(&'a Guard),
}

/// Opens the directory `name` is in under `root`, as `reach` says, and
/// runs `step` once with that directory (open `O_RDONLY | O_DIRECTORY`)
/// and the last component. A root on a host, and any root but a `Dir`
/// root for [`Reach::NoLinks`], is read-only here.
pub(crate) fn in_parent<T>(
    root: &Root,
    name: &Path,
    reach: Reach<'_>,
    step: impl FnOnce(OwnedFd, &[u8]) -> Result<T, Error>,
) -> Result<T, Error> {
    match reach {
        Reach::AsRead => match root.kind {
            Kind::Host(_) => Err(host::read_only()),
            _ => as_read(root, name, step),
        },
        // What the walk made stays if the step did its work, and is removed
        // again (if still empty) if it failed: a step that keeps a file for
        // later uses [`in_parent_making`].
        Reach::NoLinks(guard) => in_parent_making(root, name, guard, |dir, entry, made| {
            let done = step(dir, entry);
            if done.is_ok() {
                made.keep();
            }
            done
        }),
    }
}

/// [`in_parent`] with [`Reach::NoLinks`], the step also given the levels
/// the walk made ([`Made`]), to keep with what it makes there: a write
/// whose file takes its name later holds them until then.
pub(crate) fn in_parent_making<T>(
    root: &Root,
    name: &Path,
    guard: &Guard,
    step: impl FnOnce(OwnedFd, &[u8], Made) -> Result<T, Error>,
) -> Result<T, Error> {
    match &root.kind {
        Kind::Dir(d) => {
            let (dir, entry) = split(name, true)?;
            let mut made = Made::default();
            let walked = {
                let _walking = WALKS.read().unwrap_or_else(|e| e.into_inner());
                no_links(d.fd.as_fd(), dir, guard, &mut made)
            };
            // A failed walk's levels go now, the walk's share of the lock
            // given back first.
            step(walked?, entry, made)
        }
        Kind::Host(_) | Kind::Anywhere(_) => Err(host::read_only()),
    }
}

/// Guarded walks hold this shared while they walk and mark the directory
/// their write stays in; removing the levels a write made holds it
/// exclusive. So a removal never takes a level from under a walk under way
/// or a write whose file is in it: a client that retries a cut PUT at
/// once, into the levels the cut one made, keeps them.
static WALKS: RwLock<()> = RwLock::new(());

/// The directories (device, inode) open writes have their file in, with
/// how many writes each.
static IN_USE: Mutex<BTreeMap<(u64, u64), u32>> = Mutex::new(BTreeMap::new());

/// A directory marked in use while its write lives.
#[derive(Debug)]
struct InUse((u64, u64));

impl InUse {
    /// Marks `st`'s directory; called with [`WALKS`] held shared.
    #[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
    fn mark(st: &rustix::fs::Stat) -> InUse {
        let id = (st.st_dev as u64, st.st_ino as u64);
        *lock(&IN_USE).entry(id).or_default() += 1;
        InUse(id)
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        let mut in_use = lock(&IN_USE);
        if let Some(n) = in_use.get_mut(&self.0) {
            *n -= 1;
            if *n == 0 {
                in_use.remove(&self.0);
            }
        }
    }
}

/// What a guarded walk leaves its write: the directories it made
/// (`make-dirs`), each as the directory it is in and its name, and the
/// mark on the directory the write is in. Dropped, the mark goes, then the
/// levels are removed again, the deepest first, each only while it is
/// empty and no open write is in it: a write that ends without its name —
/// refused after its preconditions, cut short, failed at the name — leaves
/// no level behind, one that took its name keeps them all (its file is in
/// the deepest), and a level another write filled, or is writing in,
/// stays.
#[derive(Debug, Default)]
pub(crate) struct Made {
    dirs: Vec<(OwnedFd, Vec<u8>)>,
    in_use: Option<InUse>,
}

impl Made {
    /// The levels stay, whatever comes.
    pub(crate) fn keep(mut self) {
        self.dirs.clear();
    }
}

impl Drop for Made {
    #[allow(clippy::unnecessary_cast)] // the stat field types differ between targets
    fn drop(&mut self) {
        self.in_use = None;
        if self.dirs.is_empty() {
            return;
        }
        let _removing = WALKS.write().unwrap_or_else(|e| e.into_inner());
        for (at, name) in self.dirs.drain(..).rev() {
            let Ok(st) = rustix::fs::statat(&at, &*name, AtFlags::SYMLINK_NOFOLLOW) else {
                break;
            };
            if lock(&IN_USE).contains_key(&(st.st_dev as u64, st.st_ino as u64)) {
                break;
            }
            if rustix::fs::unlinkat(&at, &*name, AtFlags::REMOVEDIR).is_err() {
                break;
            }
        }
    }
}

/// [`Reach::AsRead`]: the directory opened as a read opens it (so an
/// `Anywhere` root's is counted as one of its opens), the last component
/// read as a link and, while it is one, its target resolved from the root.
fn as_read<T>(
    root: &Root,
    asked: &Path,
    step: impl FnOnce(OwnedFd, &[u8]) -> Result<T, Error>,
) -> Result<T, Error> {
    let confined = root.is_dir();
    let outside = || Error::Outside(Outside::new(asked));
    let mut name = asked.to_path_buf();
    for _ in 0..=super::walk::MAX_LINKS {
        let (dir, entry) = split(&name, confined)?;
        let parent = root.open_fd(dir, Purpose::List)?;
        let target = match rustix::fs::readlinkat(&parent, entry, Vec::new()) {
            Ok(target) => target.into_bytes(),
            Err(_) => return step(parent, entry),
        };
        let target = Path::new(OsStr::from_bytes(&target));
        if confined && target.is_absolute() {
            return Err(outside());
        }
        name = match dir == Path::new(".") {
            true => target.to_path_buf(),
            false => dir.join(target),
        };
    }
    Err(outside())
}

/// Splits a name into its directory (`.` for the root) and last component,
/// refusing what cannot name a file to write: `.`/`..` last (the root or a
/// directory itself), a trailing `/`, a temporary's name. `confined`: the
/// name gets the lexical checks of every name under a `Dir` root.
pub(crate) fn split(name: &Path, confined: bool) -> Result<(&Path, &[u8]), Error> {
    if confined {
        check_name(name)?;
    }
    let bytes = name.as_os_str().as_bytes();
    if bytes.ends_with(b"/") {
        return Err(Error::NotAFile { directory: true });
    }
    let (parent, last) = match bytes.iter().rposition(|&b| b == b'/') {
        Some(i) => (&bytes[..i], &bytes[i + 1..]),
        None => (&b"."[..], bytes),
    };
    if last == b"." || last == b".." {
        return Err(Error::NotAFile { directory: true });
    }
    if last.is_empty() || is_temporary(last) {
        return Err(Error::Outside(Outside::new(name)));
    }
    // "/x" (only where names are not confined): the root directory.
    let parent = if parent.is_empty() { b"/" } else { parent };
    Ok((Path::new(OsStr::from_bytes(parent)), last))
}

/// How a directory on the way is opened under [`Reach::NoLinks`]: to
/// write in, sync and list.
const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// [`Reach::NoLinks`]: opens the directory `dir` (a name under `root`, `.`
/// for the root itself) component by component, following no link; makes
/// what is missing when the guard says so.
fn no_links(
    root: BorrowedFd<'_>,
    dir: &Path,
    guard: &Guard,
    made: &mut Made,
) -> Result<OwnedFd, Error> {
    let mut at = rustix::fs::openat(root, ".", DIR, Perm::empty()).map_err(|e| io_error(e, dir))?;
    // The last level's stat, for the mark (the root's is taken only when
    // there is no level below it).
    let mut last = None;
    for component in dir.as_os_str().as_bytes().split(|&b| b == b'/') {
        match component {
            b"" | b"." => continue,
            b".." => return Err(Error::Outside(Outside::new(dir))),
            _ => {}
        }
        let next = match rustix::fs::openat(&at, component, DIR, Perm::empty()) {
            Err(Errno::NOENT) if guard.make_dirs => {
                match rustix::fs::mkdirat(&at, component, Perm::from_raw_mode(0o755)) {
                    Ok(()) => {
                        let parent = at.try_clone().map_err(Error::Io)?;
                        made.dirs.push((parent, component.to_vec()));
                    }
                    // Another write made it meanwhile: it is not ours.
                    Err(Errno::EXIST) => {}
                    Err(e) => return Err(io_error(e, dir)),
                }
                rustix::fs::openat(&at, component, DIR, Perm::empty())
            }
            opened => opened,
        };
        at = match next {
            Ok(fd) => fd,
            // O_NOFOLLOW met a link (ELOOP), or O_DIRECTORY a link or a file.
            Err(Errno::LOOP | Errno::NOTDIR) => return Err(on_the_way(&at, component, dir)),
            Err(e) => return Err(io_error(e, dir)),
        };
        let st = rustix::fs::fstat(&at).map_err(|e| io_error(e, dir))?;
        guard.check(&st, dir)?;
        last = Some(st);
    }
    let st = match last {
        Some(st) => st,
        None => rustix::fs::fstat(&at).map_err(|e| io_error(e, dir))?,
    };
    made.in_use = Some(InUse::mark(&st));
    Ok(at)
}

/// Why a component could not be entered: a link (never followed: 403), or
/// a file where a directory should be (409).
fn on_the_way(at: &OwnedFd, component: &[u8], dir: &Path) -> Error {
    match rustix::fs::statat(at, component, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode as _) == FileType::Symlink => denied(
            &format!("{}: writes follow no symbolic link", dir.display()),
        ),
        _ => Error::NotFound,
    }
}

#[cfg(test)]
#[path = "parent_tests.rs"]
mod tests;
