//! WebDAV's requests in the wing (`spec/site.md`, "WebDAV class 1"): one
//! act, [`Dav`], through the one life every write has (`sink.rs`) — its
//! credentials checked (the request's name's, then the Destination's),
//! a place among the writes taken, then on a writer thread what may wait
//! for the disk. Its rooms: the acts on names (`names.rs`: `MKCOL`,
//! `COPY`, `MOVE`, a collection's `DELETE`), the properties (`props.rs`:
//! `PROPPATCH`, `PROPFIND`'s answer), a collection's listing produced as
//! the client reads it (`listing.rs`), and the rules a collection's
//! members meet (`members.rs`).

mod listing;
mod lock;
mod members;
mod names;
mod props;
mod removal;

pub(super) use names::href;
pub(super) use removal::remove_collection;

use super::locks::table::Reach;
use super::own::Own;
use super::sink::{Act, End, Sink, Step};
use super::{Slot, Wing};
use crate::http::site::dav::{Depth, Job, XML_MAX};
use crate::http::site::write::{self, Op, Permit};
use crate::http::site::{Check, Verdict};
use crate::http::{Request, Response};
use crate::rt::Runtime;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The sink of a WebDAV request its head let through.
pub(super) fn request(wing: &Arc<Wing>, rt: &Runtime, req: &Request, job: Job) -> Sink<Dav> {
    let Job {
        op,
        root,
        hidden,
        source,
        dest,
        depth,
        overwrite,
        discard,
    } = job;
    let (dest_path, dest) = match dest {
        Some(d) => (Some(d.path), Some(d.permit)),
        None => (None, None),
    };
    let dav = Dav {
        wing: wing.clone(),
        req: req.clone(),
        op,
        root,
        hidden,
        depth,
        overwrite,
        discard,
        path: source.path,
        dest_path,
        source: Some(source.permit),
        dest,
        checking: Side::Source,
        own: Own::of(rt, true),
        max_writes: rt.max_writes,
        body: Vec::new(),
        slot: None,
    };
    Sink::new(wing, dav)
}

/// A name as the locks table keeps it: its bytes, no `/` at either end.
fn lock_name(path: &Path) -> &[u8] {
    crate::http::site::lock::bare(path.as_os_str().as_encoded_bytes())
}

/// Which name's credentials are being checked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Source,
    Dest,
}

/// A WebDAV request in the wing.
pub(super) struct Dav {
    wing: Arc<Wing>,
    req: Request,
    op: Op,
    root: crate::fs::Root,
    hidden: bool,
    depth: Depth,
    overwrite: bool,
    discard: bool,
    /// The request's name (exact bytes).
    path: PathBuf,
    /// The Destination's (`COPY`, `MOVE`).
    dest_path: Option<PathBuf>,
    source: Option<Box<Permit>>,
    dest: Option<Box<Permit>>,
    checking: Side,
    own: Own,
    max_writes: usize,
    /// A `PROPFIND`'s or `PROPPATCH`'s body, as it came.
    body: Vec<u8>,
    slot: Option<Slot>,
}

impl Dav {
    /// The next credentials to check, or the request's place among the
    /// writes and its writer turn.
    fn next(&mut self) -> Step {
        if let Some(check) = self.source.as_mut().and_then(|p| p.check.take()) {
            self.checking = Side::Source;
            return Step::Check(check);
        }
        if let Some(check) = self.dest.as_mut().and_then(|p| p.check.take()) {
            self.checking = Side::Dest;
            return Step::Check(check);
        }
        // A read takes no writer's place; a `PROPPATCH` or `LOCK` takes
        // its place once its body is here (a body that never comes holds
        // none).
        if !matches!(self.op, Op::Propfind | Op::Proppatch | Op::Lock) {
            match self.wing.slot(self.max_writes) {
                Ok(slot) => self.slot = Some(slot),
                Err(busy) => return Step::Answer(self.refusal(busy)),
            }
        }
        Step::Open
    }

    /// The request's permit (the source's).
    fn permit(&self) -> Option<&Permit> {
        self.source.as_deref()
    }

    /// What the request asks of the locks, with `permit`'s user and
    /// `If:` (while there are locks): about its own name.
    fn gate(&self, permit: &Permit) -> Option<super::locks::Gate> {
        let own = self.path.as_os_str().as_encoded_bytes();
        self.wing.lock_gate(&self.root, own, permit)
    }

    /// What the locks and `If:` say of a write of `name` reaching
    /// `reach`, by the request's user (`permit`: the side's whose rule
    /// lets the write); its untagged `If:` lists are about the request's
    /// own name.
    fn locks_let(&self, permit: &Permit, name: &Path, reach: Reach) -> Result<(), Response> {
        let Some(gate) = self.gate(permit) else {
            return Ok(());
        };
        gate.decide_at(lock_name(name), reach, None).map_err(|e| {
            let wrote = crate::http::to_file::Wrote::Made;
            crate::http::to_file::write_answer(&self.req, &permit.name, wrote, Err(e))
        })
    }

    /// 412 where the request's `If:` is false of its own name; the locks'
    /// tokens are not asked (`LOCK` of a name that exists, a refresh,
    /// `UNLOCK`: none of them writes the name).
    fn cond_holds(&self, permit: &Permit) -> Result<(), Response> {
        match self.gate(permit) {
            Some(gate) if !gate.cond_holds() => Err(Response::status_page(412)),
            _ => Ok(()),
        }
    }

    /// `permit`'s guard for a write of `at`, asking the locks and `If:`
    /// again with the name held when it is given (a `COPY`'s file, named
    /// only once its bytes are copied).
    fn guard_for(&self, permit: &Permit, at: &Path) -> crate::fs::Guard {
        let mut guard = permit.guard(self.own.identities(&self.root));
        if let Some(mut gate) = self.gate(permit) {
            gate.at = lock_name(at).to_vec();
            guard.held = super::locks::held(gate, Reach::Member, Reach::Own);
        }
        guard
    }

    /// The locks of a name that went (removed, or moved away) go with it.
    fn drop_locks(&self, name: &Path) {
        if let Some(locks) = &self.wing.locks {
            locks.drop_under(&self.root, lock_name(name));
        }
    }

    /// The locks of the members of a Destination replaced whole (a
    /// `COPY` or `MOVE` with `Overwrite: T` onto a collection) go with
    /// them.
    fn drop_member_locks(&self, name: &Path) {
        if let Some(locks) = &self.wing.locks {
            locks.drop_below(&self.root, lock_name(name));
        }
    }

    /// A refusal, dressed as the site dresses an answer about the name,
    /// and counted.
    fn refusal(&self, mut resp: Response) -> Response {
        self.wing.writes.refused(resp.status());
        if let Some(p) = self.permit() {
            write::dress_answer(&self.wing.runtime(), &self.req, p, &mut resp);
        }
        resp
    }

    /// An answer, dressed and counted (a refusal by its status).
    fn answer(&self, mut resp: Response) -> Response {
        if resp.status() >= 400 {
            self.wing.writes.refused(resp.status());
        }
        self.wing.writes.dav_answered(self.req.method());
        if let Some(p) = self.permit() {
            write::dress_answer(&self.wing.runtime(), &self.req, p, &mut resp);
        }
        resp
    }
}

impl Act for Dav {
    const STOPS_WITHOUT_CLIENT: bool = false;

    fn begin(&mut self) -> Step {
        self.next()
    }

    fn checked(&mut self, check: Check, verdict: Verdict) -> Step {
        let slot = match self.checking {
            Side::Source => &mut self.source,
            Side::Dest => &mut self.dest,
        };
        match self.wing.verified(&self.req, slot, check, verdict) {
            Ok(()) => self.next(),
            Err(resp) => {
                self.wing.writes.refused(resp.status());
                Step::Answer(resp)
            }
        }
    }

    fn open(&mut self) -> Step {
        if self.discard {
            // Finder's file, answered as if written (`apple-double`), and
            // as if locked: Finder opens it for writing only after a LOCK.
            let resp = match self.op {
                Op::Lock | Op::Unlock => lock::discarded(self),
                _ => Response::new(201),
            };
            return Step::Answer(self.answer(resp));
        }
        let resp = match self.op {
            Op::Propfind | Op::Proppatch | Op::Lock => return Step::Body,
            Op::Mkcol => names::mkcol(self),
            Op::Copy => names::copy(self),
            Op::Move => names::move_(self),
            Op::Unlock => lock::unlock(self),
            _ => Response::status_page(500),
        };
        Step::Answer(self.answer(resp))
    }

    fn write(&mut self, run: &[u8]) -> Result<(), Response> {
        if (self.body.len() + run.len()) as u64 > XML_MAX {
            return Err(self.answer(Response::status_page(413)));
        }
        self.body.extend_from_slice(run);
        Ok(())
    }

    fn name(&mut self, end: End) -> Option<Response> {
        if end == End::Left {
            return None;
        }
        if self.op == Op::Propfind {
            let resp = props::propfind(self);
            return Some(self.answer(resp));
        }
        match self.wing.slot(self.max_writes) {
            Ok(slot) => self.slot = Some(slot),
            Err(busy) => return Some(self.refusal(busy)),
        }
        let resp = match self.op {
            Op::Lock => lock::lock(self),
            _ => props::proppatch(self),
        };
        Some(self.answer(resp))
    }
}
