//! A `DELETE` of the directory writer (`spec/site.md`, "Writes"): its
//! body, if it has one, is held and never read; the name is removed on a
//! writer thread once the credentials are checked, under the site's guard,
//! and the answer says what the file system did.

use super::locks::table::Reach;
use super::own::Own;
use super::sink::{Act, End, Sink, Step};
use super::Wing;
use crate::fs::Root;
use crate::http::site::dav::Depth;
use crate::http::site::write::{self, Op, Permit};
use crate::http::site::{Check, Verdict};
use crate::http::to_file::ToFile;
use crate::http::{Request, Response};
use crate::rt::Runtime;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// The sink of a `DELETE` of `to`'s name.
pub(super) fn removal(wing: &Arc<Wing>, rt: &Runtime, req: &Request, to: ToFile) -> Sink<Remove> {
    let remove = Remove {
        wing: wing.clone(),
        root: to.root,
        name: to.name,
        req: req.clone(),
        own: Own::of(rt, true),
        permit: to.permit,
    };
    Sink::new(wing, remove)
}

/// A removal.
pub(super) struct Remove {
    wing: Arc<Wing>,
    root: Root,
    /// The name's exact bytes (the permit's is the rules' text).
    name: PathBuf,
    req: Request,
    own: Own,
    permit: Option<Box<Permit>>,
}

impl Act for Remove {
    const STOPS_WITHOUT_CLIENT: bool = false;

    fn begin(&mut self) -> Step {
        super::first(self.permit.as_mut())
    }

    fn checked(&mut self, check: Check, verdict: Verdict) -> Step {
        match self
            .wing
            .verified(&self.req, &mut self.permit, check, verdict)
        {
            Ok(()) => Step::Open,
            Err(resp) => Step::Answer(resp),
        }
    }

    /// Removes the name (it may wait for the disk) and answers.
    fn open(&mut self) -> Step {
        let Some(permit) = self.permit.take() else {
            return Step::Answer(Response::status_page(500));
        };
        debug_assert_eq!(permit.op, Op::Delete);
        let mut guard = permit.guard(self.own.identities(&self.root));
        let bytes = self.name.as_os_str().as_encoded_bytes();
        let gate = self.wing.lock_gate(&self.root, bytes, &permit);
        if let Some(gate) = &gate {
            guard.held = super::locks::held(gate.clone(), Reach::Member, Reach::Member);
        }
        if permit.webdav {
            // A collection goes with its members (RFC 4918 §9.6.1).
            let rt = self.wing.runtime();
            // The head refused a `Depth` that is not one (`site::dav`).
            let depth = crate::http::site::dav::depth(&self.req).unwrap_or(Depth::Infinity);
            let tree = super::dav::remove_collection(
                &self.root,
                &rt,
                &permit,
                &self.name,
                &guard,
                depth,
                gate.as_ref(),
            );
            if let Some(done) = tree {
                let resp = match done {
                    Ok(mut resp) => {
                        write::dress_answer(&rt, &self.req, &permit, &mut resp);
                        resp
                    }
                    Err(e) => write::answer(&rt, &self.req, &permit, Err(e)),
                };
                let stats = &self.wing.writes;
                if let Some(gate) = &gate {
                    // What is gone of it (all of it, or all but what a
                    // rule or a lock kept) takes its locks along.
                    gate.locks.drop_under(&gate.root, &gate.name);
                }
                match resp.status() {
                    204 => stats.deleted.fetch_add(1, Relaxed),
                    s if s >= 400 => {
                        stats.refused(s);
                        0
                    }
                    _ => 0,
                };
                return Step::Answer(resp);
            }
        }
        let done = self.root.remove_guarded(
            &self.name,
            &permit.conditions,
            permit.removable,
            &guard,
            permit.durability,
        );
        let stats = &self.wing.writes;
        if done.is_ok() {
            stats.deleted.fetch_add(1, Relaxed);
            if let Some(gate) = &gate {
                gate.locks.drop_under(&gate.root, &gate.name);
            }
        }
        let rt = self.wing.runtime();
        let resp = write::answer(&rt, &self.req, &permit, done.map(|()| None));
        if resp.status() >= 400 {
            stats.refused(resp.status());
        }
        Step::Answer(resp)
    }

    /// Never asked: a removal takes no body.
    fn write(&mut self, _run: &[u8]) -> Result<(), Response> {
        Ok(())
    }

    fn name(&mut self, _end: End) -> Option<Response> {
        None
    }
}
