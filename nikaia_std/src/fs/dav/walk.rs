//! A collection's members walked (`spec/site.md`, "WebDAV class 1"):
//! each level opened `O_NOFOLLOW | O_DIRECTORY` relative to the one
//! before, each member looked at, ruled (`Members`) and acted on relative
//! to its own directory — removed by `unlinkat`, copied into an unnamed
//! file linked whole, or only checked before a `MOVE`'s one rename.

use super::{copy_bytes, denied, io_error, look, make_dir, open_dir, open_source, read_dead, DEAD};
use crate::fs::{Durability, Error};
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{AtFlags, FileType, XattrFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What a walk of a collection may do with each member, by its name
/// under the served directory (`spec/site.md`, "WebDAV class 1"): a
/// member a rule refuses stays and is reported.
pub(crate) trait Members {
    /// Whether the member may be taken (read for a copy, removed for a
    /// removal); `dir`: it is a collection.
    fn may(&mut self, name: &str, dir: bool) -> bool;
    /// A member that stays: refused by a rule (403), or by the file
    /// system (its status).
    fn refused(&mut self, name: &str, status: u16);
    /// Takes one more member from the walk's budget; `false` once spent.
    fn count(&mut self) -> bool;
    /// Goes one level deeper; `false` past the deepest a walk goes (its
    /// descriptors and its stack are bounded). Each `true` is followed by
    /// a [`Members::leave`].
    fn enter(&mut self) -> bool;
    fn leave(&mut self);
    /// The free space a copy keeps on the file system (`write-free-floor`).
    fn floor(&self) -> u64;
    /// Whether the (device, inode) is one of the runtime file's own files,
    /// never read, moved or removed by a walk.
    fn own(&self, id: (u64, u64)) -> bool;
}

/// The members of the open directory `dir`, but a write's temporaries.
fn members(dir: BorrowedFd<'_>) -> Result<Vec<Vec<u8>>, Errno> {
    let mut read = rustix::fs::Dir::read_from(dir)?;
    let mut out = Vec::new();
    while let Some(entry) = read.read() {
        let entry = entry?;
        let raw = entry.file_name().to_bytes();
        if raw == b"." || raw == b".." || crate::fs::open::is_temporary(raw) {
            continue;
        }
        out.push(raw.to_vec());
    }
    out.sort();
    Ok(out)
}

/// A member's name as a 207 names it: a collection's with its trailing
/// `/` (RFC 4918 §8.3).
fn shown(name: &str, dir: bool) -> String {
    match dir {
        true => format!("{}/", name.trim_end_matches('/')),
        false => name.to_owned(),
    }
}

/// The name of `entry` inside the collection named `name`.
fn inside(name: &str, entry: &[u8]) -> String {
    let entry = String::from_utf8_lossy(entry);
    match name {
        "" => entry.into_owned(),
        name => format!("{}/{entry}", name.trim_end_matches('/')),
    }
}

/// Removes the collection `entry` of `dir` (named `name`) with its
/// members, each as `rules` lets it: `true` when it is gone, `false` when
/// something under it stays (reported through `rules`, with its parents
/// kept).
pub(crate) fn remove_tree(
    dir: BorrowedFd<'_>,
    entry: &[u8],
    name: &str,
    rules: &mut dyn Members,
) -> Result<bool, Error> {
    let path = Path::new(name);
    let sub = match open_dir(dir, entry) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(true),
        Err(Errno::NOTDIR | Errno::LOOP) => return Err(Error::NotAFile { directory: false }),
        Err(e) => return Err(io_error(e, path)),
    };
    let mut whole = true;
    for member in members(sub.as_fd()).map_err(|e| io_error(e, path))? {
        let member_name = inside(name, &member);
        if !rules.count() {
            rules.refused(&member_name, 507);
            whole = false;
            continue;
        }
        let Some((kind, stat)) = look(sub.as_fd(), &member, path)? else {
            continue;
        };
        let is_dir = kind == FileType::Directory;
        // A file is asked of and removed with its name held, as a DELETE
        // of it would be: a LOCK of it (which takes its lock so) comes
        // before the ask, or finds it gone.
        let _held = (!is_dir).then(|| crate::fs::temp::serialize(sub.as_fd(), &member));
        if rules.own(stat.id) || !rules.may(&member_name, is_dir) {
            rules.refused(&shown(&member_name, is_dir), 403);
            whole = false;
            continue;
        }
        if is_dir {
            if !rules.enter() {
                rules.refused(&shown(&member_name, is_dir), 403);
                whole = false;
                continue;
            }
            let done = remove_tree(sub.as_fd(), &member, &member_name, rules);
            rules.leave();
            whole &= done?;
            continue;
        }
        match rustix::fs::unlinkat(&sub, OsStr::from_bytes(&member), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => {
                rules.refused(&member_name, status_of(e));
                whole = false;
            }
        }
    }
    if !whole {
        return Ok(false);
    }
    match rustix::fs::unlinkat(dir, OsStr::from_bytes(entry), AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(true),
        // Something came meanwhile: it stays, and so does its collection.
        Err(Errno::NOTEMPTY | Errno::EXIST) => {
            rules.refused(&shown(name, true), 409);
            Ok(false)
        }
        Err(e) => Err(io_error(e, path)),
    }
}

/// Asks `rules` of every member of the collection `entry` of `dir`
/// (named `name`) without acting: what a `MOVE` checks before its one
/// rename.
pub(crate) fn check_tree(
    dir: BorrowedFd<'_>,
    entry: &[u8],
    name: &str,
    rules: &mut dyn Members,
) -> Result<(), Error> {
    let path = Path::new(name);
    let sub = match open_dir(dir, entry) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Err(Error::NotFound),
        Err(Errno::NOTDIR | Errno::LOOP) => return Err(Error::NotAFile { directory: false }),
        Err(e) => return Err(io_error(e, path)),
    };
    for member in members(sub.as_fd()).map_err(|e| io_error(e, path))? {
        let member_name = inside(name, &member);
        if !rules.count() {
            rules.refused(&member_name, 507);
            return Ok(());
        }
        let Some((kind, stat)) = look(sub.as_fd(), &member, path)? else {
            continue;
        };
        let is_dir = kind == FileType::Directory;
        if rules.own(stat.id) || !rules.may(&member_name, is_dir) {
            rules.refused(&shown(&member_name, is_dir), 403);
            continue;
        }
        if is_dir {
            if !rules.enter() {
                rules.refused(&shown(&member_name, is_dir), 403);
                continue;
            }
            let done = check_tree(sub.as_fd(), &member, &member_name, rules);
            rules.leave();
            done?;
        }
    }
    Ok(())
}

/// Copies the collection `from_entry` of `from` (named `name`) to the new
/// collection `to_entry` of `to`, member by member as `rules` lets each
/// be read: each file through an unnamed file named only whole, no link
/// followed or copied. `depth_zero`: the collection alone.
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_tree(
    from: BorrowedFd<'_>,
    from_entry: &[u8],
    to: BorrowedFd<'_>,
    to_entry: &[u8],
    name: &str,
    depth_zero: bool,
    durability: Durability,
    rules: &mut dyn Members,
) -> Result<(), Error> {
    let path = Path::new(name);
    let src = match open_dir(from, from_entry) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Err(Error::NotFound),
        Err(Errno::LOOP | Errno::NOTDIR) => return Err(denied("a link is not copied")),
        Err(e) => return Err(io_error(e, path)),
    };
    make_dir(to, to_entry, path, durability)?;
    if let Some(record) = read_dead(src.as_fd()) {
        if let Ok(made) = open_dir(to, to_entry) {
            let _ = rustix::fs::fsetxattr(&made, DEAD, &record, XattrFlags::empty());
        }
    }
    if depth_zero {
        return Ok(());
    }
    let dst = open_dir(to, to_entry).map_err(|e| io_error(e, path))?;
    for member in members(src.as_fd()).map_err(|e| io_error(e, path))? {
        let member_name = inside(name, &member);
        if !rules.count() {
            rules.refused(&member_name, 507);
            continue;
        }
        let Some((kind, stat)) = look(src.as_fd(), &member, path)? else {
            continue;
        };
        let is_dir = kind == FileType::Directory;
        let copied = matches!(kind, FileType::Directory | FileType::RegularFile);
        if !copied || rules.own(stat.id) || !rules.may(&member_name, is_dir) {
            rules.refused(&shown(&member_name, is_dir), 403);
            continue;
        }
        if is_dir && !rules.enter() {
            rules.refused(&shown(&member_name, is_dir), 403);
            continue;
        }
        let done = match is_dir {
            true => {
                let done = copy_tree(
                    src.as_fd(),
                    &member,
                    dst.as_fd(),
                    &member,
                    &member_name,
                    false,
                    durability,
                    rules,
                );
                rules.leave();
                done
            }
            false => copy_file(
                src.as_fd(),
                &member,
                dst.as_fd(),
                &member,
                Path::new(&member_name),
                durability,
                rules.floor(),
            ),
        };
        if let Err(e) = done {
            let status = match e {
                Error::NoSpace => 507,
                Error::Denied(_) => 403,
                _ => 500,
            };
            rules.refused(&shown(&member_name, is_dir), status);
            if status == 507 {
                return Err(Error::NoSpace);
            }
        }
    }
    if durability == Durability::Full {
        rustix::fs::fsync(&dst).map_err(|e| io_error(e, path))?;
    }
    Ok(())
}

/// Copies the file `from_entry` of `from` to the new name `to_entry` of
/// `to`: an unnamed file filled, synced as `durability` says, then
/// linked (never over an existing name); [`Error::NoSpace`] where it
/// would leave less than `floor` free.
pub(crate) fn copy_file(
    from: BorrowedFd<'_>,
    from_entry: &[u8],
    to: BorrowedFd<'_>,
    to_entry: &[u8],
    name: &Path,
    durability: Durability,
    floor: u64,
) -> Result<(), Error> {
    let (src, stat) = open_source(from, from_entry, name)?;
    if crate::fs::temp::free_space(to) < floor.saturating_add(stat.size) {
        return Err(Error::NoSpace);
    }
    let (file, temp) = crate::fs::temp::temporary(to).map_err(|e| io_error(e, name))?;
    let cleanup = |temp: &Option<Vec<u8>>| {
        if let Some(t) = temp {
            let _ = rustix::fs::unlinkat(to, OsStr::from_bytes(t), AtFlags::empty());
        }
    };
    let filled = copy_bytes(&src, &file, name).and_then(|_| {
        if durability != Durability::None {
            rustix::fs::fdatasync(&file).map_err(|e| io_error(e, name))?;
        }
        Ok(())
    });
    if let Err(e) = filled {
        cleanup(&temp);
        return Err(e);
    }
    let linked = match &temp {
        None => crate::fs::put::link_unnamed(&file, to, to_entry),
        Some(t) => rustix::fs::linkat(
            to,
            OsStr::from_bytes(t),
            to,
            OsStr::from_bytes(to_entry),
            AtFlags::empty(),
        ),
    };
    cleanup(&temp);
    match linked {
        Ok(()) => Ok(()),
        Err(Errno::EXIST) => Err(Error::Exists),
        Err(e) => Err(io_error(e, name)),
    }
}

/// The status a member's failure is reported with.
fn status_of(e: Errno) -> u16 {
    match e {
        Errno::ACCESS | Errno::PERM => 403,
        Errno::NOSPC | Errno::DQUOT => 507,
        Errno::NOTEMPTY | Errno::EXIST => 409,
        _ => 500,
    }
}
