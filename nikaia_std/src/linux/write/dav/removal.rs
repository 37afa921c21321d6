//! What a WebDAV act removes (`spec/site.md`, "WebDAV class 1", "WebDAV
//! class 2: locks"): a collection's `DELETE` with its members, and the
//! Destination a `COPY` or `MOVE` clears for `Overwrite: T` — each member
//! under its own rules and its locks, what stays said in a 207.

use super::members::{Ruled, Source};
use super::names::{bare, look_guard, multistatus, text};
use super::Dav;
use crate::fs::dav as fsdav;
use crate::fs::{Error, Guard, Root};
use crate::http::site::dav::{on_collection, Depth};
use crate::http::site::write::Permit;
use crate::http::site::Grant;
use crate::http::Response;
use crate::linux::write::locks::{table::Reach, Gate};
use crate::rt::Runtime;
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What was at a Destination before the act: whether something was (it
/// is gone now, or is a file the act replaces), or the members of a
/// collection there that may not go (nothing was removed).
pub(super) enum Cleared {
    Was(bool),
    Refused(Vec<(String, u16)>),
}

/// Clears the Destination for `Overwrite: T` (a collection there is
/// removed as `DELETE` removes it; a file too where `whole`: a
/// collection takes its place), or refuses it for `Overwrite: F` (412).
/// A file left where `whole` is false is replaced by the act's own
/// rename or link.
pub(super) fn clear(
    d: &Dav,
    rt: &Runtime,
    permit: &Permit,
    dst: &Path,
    guard: &Guard,
    whole: bool,
) -> Result<Cleared, Error> {
    let look = look_guard(&guard.protected);
    let found = d.root.dav_at(dst, &look, |dir, entry| {
        fsdav::look(dir.as_fd(), entry, dst)
    });
    let (kind, stat) = match found {
        Ok(Some(found)) => found,
        Ok(None) => return Ok(Cleared::Was(false)),
        // A missing parent: the act's own walk says 409 (or makes it).
        Err(Error::NotFound) => return Ok(Cleared::Was(false)),
        Err(e) => return Err(e),
    };
    if !d.overwrite {
        return Err(Error::Exists);
    }
    fsdav::guarded(guard, &stat, dst)?;
    match kind {
        FileType::Directory => {
            if !permit.removable.dirs {
                return Err(fsdav::denied(
                    "the rule does not let this remove directories",
                ));
            }
            // Every member must be let go: checked before any is removed.
            let mut rules = Ruled::new(
                rt,
                &permit.grant,
                Source::Remove,
                &guard.protected,
                d.hidden,
            );
            let label = text(dst);
            d.root.dav_at(dst, &look, |dir, entry| {
                fsdav::check_tree(dir.as_fd(), entry, &label, &mut rules)
            })?;
            if !rules.refused.is_empty() {
                return Ok(Cleared::Refused(rules.refused));
            }
            let gate = d.gate(permit);
            let stayed = remove_at(&d.root, rt, &permit.grant, dst, &look, gate)?;
            match stayed.is_empty() {
                true => Ok(Cleared::Was(true)),
                // What stays of the Destination (a member locked while
                // the walk went, 423) is said in a 207.
                false => Ok(Cleared::Refused(stayed)),
            }
        }
        // A file the act's own rename or link replaces: only where the
        // rule replaces, said before anything is touched.
        _ if !whole && !permit.conditions.replace => {
            Err(fsdav::denied("the rule does not let this replace files"))
        }
        _ if !whole => Ok(Cleared::Was(true)),
        _ => {
            if !permit.removable.files && !permit.conditions.replace {
                return Err(fsdav::denied("the rule does not let this replace files"));
            }
            d.root.dav_at(dst, &look, |dir, entry| {
                match rustix::fs::unlinkat(&dir, OsStr::from_bytes(entry), AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => Ok(Cleared::Was(true)),
                    Err(e) => Err(fsdav::io_error(e, dst)),
                }
            })
        }
    }
}

/// A collection's removal with its members, each under its own rules.
/// What stayed, each with why: empty when the collection is gone. A
/// member locked while the walk goes stays (423), as in a `DELETE`.
pub(super) fn remove_at(
    root: &Root,
    rt: &Runtime,
    grant: &Grant,
    name: &Path,
    guard: &Guard,
    gate: Option<Gate>,
) -> Result<Vec<(String, u16)>, Error> {
    let mut rules = Ruled::new(rt, grant, Source::Remove, &guard.protected, false);
    rules.locks = gate;
    let label = text(name);
    let whole = root.dav_at(name, guard, |dir, entry| {
        fsdav::remove_tree(dir.as_fd(), entry, &label, &mut rules)
    })?;
    let mut stayed = rules.refused;
    if !whole && stayed.is_empty() {
        stayed.push((format!("{}/", label.trim_end_matches('/')), 409));
    }
    Ok(stayed)
}

/// A `DELETE` of a collection under a `webdav` rule (RFC 4918 §9.6.1):
/// its members go, each under its own rule; those refused stay, with
/// their parents, and are answered in a 207.
pub(in crate::linux::write) fn remove_collection(
    root: &Root,
    rt: &Runtime,
    permit: &Permit,
    name: &Path,
    guard: &Guard,
    depth: Depth,
    gate: Option<&Gate>,
) -> Option<Result<Response, Error>> {
    let at = bare(name);
    let look = look_guard(&guard.protected);
    let found = root.dav_at(&at, &look, |dir, entry| {
        fsdav::look(dir.as_fd(), entry, &at)
    });
    match found {
        Ok(Some((FileType::Directory, stat))) => {
            if let Err(e) = fsdav::guarded(guard, &stat, &at) {
                return Some(Err(e));
            }
        }
        // A file, a link, nothing: the usual removal.
        _ => return None,
    }
    if let Some(refused) = on_collection("DELETE", depth) {
        return Some(Ok(refused));
    }
    // Its locks, those of its members and of its parent (RFC 4918 §9.6.1).
    if let Some(Err(e)) = gate.map(|g| g.decide(Reach::Tree, Some(None))) {
        return Some(Err(e));
    }
    if !permit.removable.dirs {
        return Some(Err(fsdav::denied(
            "the rule does not let this remove directories",
        )));
    }
    let mut rules = Ruled::new(rt, &permit.grant, Source::Remove, &guard.protected, false);
    rules.locks = gate.cloned();
    let label = text(&at);
    let walked = root.dav_at(&at, guard, |dir, entry| {
        fsdav::remove_tree(dir.as_fd(), entry, &label, &mut rules)
    });
    Some(walked.map(|whole| match whole && rules.refused.is_empty() {
        true => Response::new(204),
        false => multistatus(&rules.refused),
    }))
}
