//! WebDAV's acts on names, on a writer thread (`spec/site.md`, "WebDAV
//! class 1"): `MKCOL`, `COPY`, `MOVE`, and the `DELETE` of a collection
//! with its members. Every name is reached by the parent walker with no
//! link followed and the runtime file's own files refused; a file is
//! copied into an unnamed file and named whole; an `Overwrite: F` is kept
//! by the call that names (`linkat`, `renameat2(RENAME_NOREPLACE)`), never
//! by a look that could race.

use super::members::{Ruled, Source};
use super::removal::{clear, remove_at, Cleared};
use super::Dav;
use crate::fs::dav as fsdav;
use crate::fs::{Error, Guard, Mode};
use crate::http::dav::xml::Multistatus;
use crate::http::site::dav::on_collection;
use crate::http::site::write::Permit;
use crate::http::site::Grant;
use crate::http::to_file::{failed, Wrote};
use crate::http::Response;
use crate::linux::write::locks::table::Reach;
use crate::rt::Runtime;
use crate::text::percent::percent_encode;
use rustix::fd::AsFd;
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How an act on names ended.
pub(super) enum Outcome {
    /// Done: a name made (201) or one replaced (204).
    Done { created: bool },
    /// Members stayed, each with why (207).
    Partial(Vec<(String, u16)>),
}

/// The name without its trailing `/` (the entry the walker reaches).
pub(super) fn bare(path: &Path) -> PathBuf {
    let bytes = path.as_os_str().as_bytes();
    let end = bytes.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    PathBuf::from(OsStr::from_bytes(&bytes[..end]))
}

/// Whether the Destination was written with a trailing `/`.
pub(super) fn slashed(d: &Dav) -> bool {
    (d.dest_path.as_ref()).is_some_and(|p| p.as_os_str().as_bytes().ends_with(b"/"))
}

/// The name as the rules see it.
pub(super) fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The answer of an act on names.
fn answered(done: Result<Outcome, Error>, wrote: Wrote) -> Response {
    match done {
        Ok(Outcome::Done { created: true }) => Response::new(201),
        Ok(Outcome::Done { created: false }) => Response::new(204),
        Ok(Outcome::Partial(refused)) => multistatus(&refused),
        Err(Error::Locked(roots)) => crate::http::site::lock::locked(&roots),
        Err(e) => {
            let status = failed(wrote, &e);
            let mut resp = Response::status_page(status);
            if matches!(e, Error::Io(_)) && matches!(status, 403 | 500) {
                resp.log_error = Some(format!("WebDAV: {e}").into());
            }
            resp
        }
    }
}

/// A 207 naming each member that stayed, with its status.
pub(super) fn multistatus(refused: &[(String, u16)]) -> Response {
    let mut out = Multistatus::begin();
    for (name, status) in refused {
        out.status(&href(name, name.ends_with('/')), *status);
    }
    out.end();
    xml_answer(207, out.out)
}

/// An XML answer.
pub(super) fn xml_answer(status: u16, body: Vec<u8>) -> Response {
    crate::http::site::lock::xml(status, body)
}

/// The href of a name under the served directory (its exact bytes, UTF-8
/// or not): percent-encoded, a collection's with its trailing `/`.
pub(in crate::linux::write) fn href(name: impl AsRef<[u8]>, collection: bool) -> String {
    let name = name.as_ref();
    let end = name.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    let bare = &name[..end];
    let mut out = String::from("/");
    out.push_str(&percent_encode(bare, b"/-._~!$&'()*+,;=:@"));
    if collection && !bare.is_empty() {
        out.push('/');
    }
    out
}

/// The guard of a name the request reads or removes: nothing made, the
/// runtime file's own files refused.
pub(super) fn look_guard(protected: &[(u64, u64)]) -> Guard {
    Guard {
        make_dirs: false,
        protected: protected.to_vec(),
        held: Default::default(),
    }
}

/// What the request's own name is now, reached under `guard` (no link
/// followed on the way, the runtime file's own files refused), or the
/// answer: 404 where nothing is.
fn source(d: &Dav, src: &Path, guard: &Guard) -> Result<(FileType, fsdav::Stat), Response> {
    let found = (d.root).dav_at(src, guard, |dir, entry| {
        fsdav::look(dir.as_fd(), entry, src)
    });
    let (kind, stat) = match found {
        Ok(Some(found)) => found,
        Ok(None) | Err(Error::NotFound) => return Err(Response::status_page(404)),
        Err(e) => return Err(answered(Err(e), Wrote::Made)),
    };
    fsdav::guarded(guard, &stat, src).map_err(|e| answered(Err(e), Wrote::Made))?;
    Ok((kind, stat))
}

/// `MKCOL`: 201; 405 for a name that exists, 409 for a missing parent
/// (unless `make-dirs`).
pub(super) fn mkcol(d: &mut Dav) -> Response {
    let Some(permit) = d.source.as_deref() else {
        return Response::status_page(500);
    };
    let guard = permit.guard(d.own.identities(&d.root));
    let at = bare(&d.path);
    if let Err(locked) = d.locks_let(permit, &at, Reach::Member) {
        return locked;
    }
    let done = d.root.dav_at(&at, &guard, |dir, entry| {
        fsdav::make_dir(dir.as_fd(), entry, &at, permit.durability)
    });
    match done {
        Ok(()) => {
            d.wing
                .writes
                .created
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Response::new(201)
        }
        // RFC 4918 §9.3.1: a name that exists is 405.
        Err(Error::Exists) => Response::status_page(405),
        Err(e) => answered(Err(e), Wrote::Made),
    }
}

/// `COPY`: a file into an unnamed file named whole; a collection member
/// by member, each read under its own rules.
pub(super) fn copy(d: &mut Dav) -> Response {
    let (Some(src_permit), Some(dst_permit), Some(dst_path)) =
        (d.source.as_deref(), d.dest.as_deref(), d.dest_path.clone())
    else {
        return Response::status_page(500);
    };
    let own = d.own.identities(&d.root);
    let (src, dst) = (bare(&d.path), bare(&dst_path));
    let src_guard = look_guard(&own);
    let dst_guard = d.guard_for(dst_permit, &dst);
    let rt = d.wing.runtime();
    let (kind, stat) = match source(d, &src, &src_guard) {
        Ok(found) => found,
        Err(resp) => return resp,
    };
    if kind == FileType::Directory {
        if let Some(refused) = on_collection("COPY", d.depth) {
            return refused;
        }
    }
    let grant = src_permit.grant.clone();
    if kind == FileType::RegularFile && dst_permit.limit.is_some_and(|l| stat.size > l) {
        return Response::status_page(413);
    }
    // The source is only read: its locks ask nothing (RFC 4918 §7.5.1).
    if let Err(locked) = d.locks_let(dst_permit, &dst, Reach::Tree) {
        return locked;
    }
    let done = match kind {
        FileType::RegularFile => copy_file(
            d, &rt, dst_permit, &src, &dst, &src_guard, &dst_guard, stat.size,
        ),
        FileType::Directory => {
            let names = (text(&src), text(&dst));
            let cleared = clear(d, &rt, dst_permit, &dst, &dst_guard, true);
            match cleared {
                Err(e) => Err(e),
                Ok(Cleared::Refused(refused)) => Ok(Outcome::Partial(refused)),
                Ok(Cleared::Was(existed)) => {
                    let read = Source::Read { hidden: d.hidden };
                    let mut rules = Ruled::new(&rt, &grant, read, &own, d.hidden);
                    rules.to = Some(names.clone());
                    let zero = d.depth == crate::http::site::dav::Depth::Zero;
                    let durability = dst_permit.durability;
                    let walked = d.root.dav_at(&dst, &dst_guard, |ddir, dentry| {
                        d.root.dav_at(&src, &src_guard, |sdir, sentry| {
                            fsdav::copy_tree(
                                sdir.as_fd(),
                                sentry,
                                ddir.as_fd(),
                                dentry,
                                &names.0,
                                zero,
                                durability,
                                &mut rules,
                            )
                        })
                    });
                    walked.map(|()| match rules.refused.is_empty() {
                        true => Outcome::Done { created: !existed },
                        false => Outcome::Partial(rules.refused),
                    })
                }
            }
        }
        // A link is not read through, nor a FIFO or device read.
        FileType::Symlink => Err(fsdav::denied("a link is not copied")),
        _ => Err(Error::NotAFile { directory: false }),
    };
    // What a clear of the Destination removed takes its locks along
    // (the names gone only: a member locked meanwhile stays, and so does
    // its lock).
    d.drop_member_locks(&dst);
    answered(done, Wrote::Made)
}

/// A file's `COPY`: the Destination cleared as `Overwrite` says, then an
/// unnamed file filled from the source and named whole.
#[allow(clippy::too_many_arguments)]
fn copy_file(
    d: &Dav,
    rt: &Runtime,
    permit: &Permit,
    src: &Path,
    dst: &Path,
    src_guard: &Guard,
    dst_guard: &Guard,
    size: u64,
) -> Result<Outcome, Error> {
    let existed = match clear(d, rt, permit, dst, dst_guard, false)? {
        Cleared::Was(existed) => existed,
        Cleared::Refused(refused) => return Ok(Outcome::Partial(refused)),
    };
    if !existed && slashed(d) {
        // A trailing `/` names a collection: a file is not made there
        // (as a `PUT` of it is refused).
        return Err(Error::NotAFile { directory: true });
    }
    let (file, _) = d.root.dav_at(src, src_guard, |dir, entry| {
        fsdav::open_source(dir.as_fd(), entry, src)
    })?;
    let mut conditions = permit.conditions.clone();
    conditions.replace &= d.overwrite;
    let mut writing = d
        .root
        .begin_write_guarded(dst, Mode::Conditional(conditions), dst_guard)?;
    if writing.free_space() < rt.write_free_floor.saturating_add(size) {
        return Err(Error::NoSpace);
    }
    writing.copy_from(&file)?;
    let written = writing.commit(permit.durability)?;
    Ok(Outcome::Done {
        created: written.created && !existed,
    })
}

/// `MOVE`: one `renameat2` (a file replaced by it in one step), the
/// Destination cleared first as `Overwrite` says; a collection moves
/// only if every member may leave its name and take the new one, else
/// nothing moves (207). Across file systems (`EXDEV`), a copy then the
/// source's removal.
pub(super) fn move_(d: &mut Dav) -> Response {
    let (Some(src_permit), Some(dst_permit), Some(dst_path)) =
        (d.source.as_deref(), d.dest.as_deref(), d.dest_path.clone())
    else {
        return Response::status_page(500);
    };
    let own = d.own.identities(&d.root);
    let (src, dst) = (bare(&d.path), bare(&dst_path));
    let src_guard = src_permit.guard(own.clone());
    let look = look_guard(&own);
    let dst_guard = dst_permit.guard(own.clone());
    let rt = d.wing.runtime();
    let (kind, src_stat) = match source(d, &src, &look) {
        Ok(found) => found,
        Err(resp) => return resp,
    };
    if kind == FileType::Symlink {
        // Moved, a relative link would name something else; and a link to
        // a name the rules keep would take a name of the mover's choosing.
        return Response::status_page(403);
    }
    let dir = kind == FileType::Directory;
    if let Some(refused) = dir.then(|| on_collection("MOVE", d.depth)).flatten() {
        return refused;
    }
    let may = match dir {
        true => src_permit.removable.dirs,
        false => src_permit.removable.files,
    };
    if !may {
        return Response::status_page(403);
    }
    let grant = src_permit.grant.clone();
    if dir {
        // Every member must be let leave and arrive: checked before
        // anything moves.
        let mut rules = Ruled::new(&rt, &grant, Source::Move, &own, d.hidden);
        rules.to = Some((text(&src), text(&dst)));
        let label = text(&src);
        let checked = d.root.dav_at(&src, &look, |sdir, sentry| {
            fsdav::check_tree(sdir.as_fd(), sentry, &label, &mut rules)
        });
        match checked {
            Err(e) => return answered(Err(e), Wrote::Made),
            Ok(()) if !rules.refused.is_empty() => return multistatus(&rules.refused),
            Ok(()) => {}
        }
    }
    let locks = (d.locks_let(src_permit, &src, Reach::Tree))
        .and_then(|()| d.locks_let(dst_permit, &dst, Reach::Tree));
    if let Err(locked) = locks {
        return locked;
    }
    let existed = match clear(d, &rt, dst_permit, &dst, &dst_guard, dir) {
        Ok(Cleared::Was(existed)) => existed,
        Ok(Cleared::Refused(refused)) => return multistatus(&refused),
        Err(e) => return answered(Err(e), Wrote::Made),
    };
    if !existed && !dir && slashed(d) {
        return answered(Err(Error::NotAFile { directory: true }), Wrote::Made);
    }
    let replace = existed && !dir;
    // The source's locks asked again with its name held, as a DELETE of
    // it would: a LOCK of it either comes first (423) or finds it gone.
    let src_gate = d.gate(src_permit);
    let moved = d.root.dav_at(&dst, &dst_guard, |ddir, dentry| {
        d.root.dav_at(&src, &src_guard, |sdir, sentry| {
            let _held = fsdav::hold(sdir.as_fd(), sentry);
            if let Some(gate) = &src_gate {
                gate.decide(Reach::Tree, None)?;
            }
            match fsdav::rename(sdir.as_fd(), sentry, ddir.as_fd(), dentry, replace) {
                // Two names of one file: `rename(2)` leaves both, and the
                // source must go (RFC 4918 §9.9).
                Ok(()) if replace => {
                    let same = fsdav::look(sdir.as_fd(), sentry, &src)?
                        .is_some_and(|(_, st)| st.id == src_stat.id);
                    if same {
                        let entry = OsStr::from_bytes(sentry);
                        rustix::fs::unlinkat(&sdir, entry, AtFlags::empty())
                            .map_err(|e| fsdav::io_error(e, &src))?;
                    }
                    Ok(true)
                }
                Ok(()) => Ok(true),
                Err(Errno::EXIST | Errno::NOTEMPTY) => Err(Error::Exists),
                Err(Errno::XDEV) => Ok(false),
                Err(e) => Err(fsdav::io_error(e, &dst)),
            }
        })
    });
    let done = match moved {
        Ok(true) => Ok(Outcome::Done { created: !existed }),
        Ok(false) => across(
            d, &rt, &grant, dst_permit, &src, &dst, &look, &dst_guard, dir, existed,
        ),
        Err(e) => Err(e),
    };
    if let Ok(Outcome::Done { .. }) = done {
        d.drop_locks(&src);
    }
    d.drop_member_locks(&dst);
    answered(done, Wrote::Made)
}

/// A `MOVE` across file systems (a mount inside the tree): a copy, then
/// the source's removal — said in the error log, since it is not one
/// step.
#[allow(clippy::too_many_arguments)]
fn across(
    d: &Dav,
    rt: &Runtime,
    grant: &Grant,
    permit: &Permit,
    src: &Path,
    dst: &Path,
    look: &Guard,
    dst_guard: &Guard,
    dir: bool,
    existed: bool,
) -> Result<Outcome, Error> {
    let names = (text(src), text(dst));
    let mut rules = Ruled::new(rt, grant, Source::Move, &look.protected, d.hidden);
    rules.to = Some(names.clone());
    let durability = permit.durability;
    d.root.dav_at(dst, dst_guard, |ddir, dentry| {
        d.root.dav_at(src, look, |sdir, sentry| match dir {
            true => fsdav::copy_tree(
                sdir.as_fd(),
                sentry,
                ddir.as_fd(),
                dentry,
                &names.0,
                false,
                durability,
                &mut rules,
            ),
            false => {
                let floor = rt.write_free_floor;
                fsdav::copy_file(
                    sdir.as_fd(),
                    sentry,
                    ddir.as_fd(),
                    dentry,
                    dst,
                    durability,
                    floor,
                )
            }
        })
    })?;
    eprintln!(
        "nikaia: MOVE {} to {} crossed file systems: copied, then the source removed",
        names.0, names.1
    );
    let removed = match dir {
        true => remove_at(&d.root, rt, grant, src, look, None)?.is_empty(),
        false => d
            .root
            .dav_at(src, look, |sdir, sentry| {
                rustix::fs::unlinkat(&sdir, OsStr::from_bytes(sentry), AtFlags::empty())
                    .map_err(|e| fsdav::io_error(e, src))
            })
            .is_ok(),
    };
    match (removed, rules.refused.is_empty()) {
        (true, true) => Ok(Outcome::Done { created: !existed }),
        _ => {
            let mut refused = rules.refused;
            if !removed {
                refused.push((names.0, 409));
            }
            Ok(Outcome::Partial(refused))
        }
    }
}
