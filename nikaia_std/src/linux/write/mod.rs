//! The wing for everything that goes to disk (`spec/files.md`, "A body
//! written under a root"; `spec/site.md`, "Writes", "Resumable uploads"):
//! D9 for writes. The worker only copies each piece of a body into a
//! bounded run of buffers; the writer threads open, write in order, sync
//! and name — all of which may wait for the disk — and answer through the
//! request's connection. A body whose runs are not written yet is paused
//! (HTTP/1.1 stops reading the socket, HTTP/2 stops granting window), so
//! a slow disk holds the client back, never a worker.
//!
//! Its rooms: the one life every write goes through (`sink.rs`: held,
//! checked, opened, written, named, answered); the acts that differ — a
//! body written to a file (`put.rs`), a removal (`remove.rs`), a request
//! of the tus endpoint (`resume/`, with the uploads' table and their
//! directory), WebDAV's requests (`dav/`) — and what the runtime file keeps from every write
//! (`own.rs`). It sees of the server only its [`Wing`]: the writer and
//! verifier threads, the count of writes at once, the counters, and the
//! runtime current now.

mod dav;
pub(crate) mod locks;
mod own;
mod put;
mod remove;
pub(crate) mod resume;
mod sink;

pub(crate) use own::Own;

use super::auth_pool::AuthPool;
use super::current::Current;
use super::pool::IoPool;
use super::stats::{BodyStats, WriteStats};
use crate::http::body::Erased;
use crate::http::site::resume::Ask;
use crate::http::site::write::{Op, Permit};
use crate::http::site::{Check, Verdict};
use crate::http::to_file::ToFile;
use crate::http::{Request, Response};
use crate::rt::Runtime;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// The writer threads: each may wait on a sync for as long as the disk
/// takes; the others go on with other bodies.
const THREADS: usize = 4;

/// What the wing uses of the server, and nothing else.
pub(crate) struct Wing {
    /// The writer threads.
    pool: IoPool,
    /// Bodies being written now (`max-writes` bounds it).
    active: AtomicUsize,
    /// The verifier threads and their table of verified credentials.
    auth: Arc<AuthPool>,
    /// The runtime new requests use.
    current: Arc<Current>,
    bodies: Arc<BodyStats>,
    writes: Arc<WriteStats>,
    /// The tus endpoint's uploads, while `[resumable]` is set (read at
    /// start: a change needs a restart or an upgrade).
    pub(crate) uploads: Option<Arc<resume::Uploads>>,
    /// WebDAV's locks, while `[webdav-locks]` is set (its `dir` read at
    /// start: a change needs a restart or an upgrade).
    pub(crate) locks: Option<Arc<locks::Locks>>,
}

impl Wing {
    pub(crate) fn new(
        rt: &Runtime,
        auth: Arc<AuthPool>,
        current: Arc<Current>,
        bodies: Arc<BodyStats>,
        writes: Arc<WriteStats>,
    ) -> std::io::Result<Wing> {
        let uploads = match &rt.resumable {
            Some(r) => Some(resume::Uploads::open(r).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("[resumable] dir {}: {e}", r.dir.display()),
                )
            })?),
            None => None,
        };
        let locks = match &rt.site.webdav_locks {
            Some(l) => Some(locks::Locks::open(l).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("[webdav-locks] dir {}: {e}", l.dir.display()),
                )
            })?),
            None => None,
        };
        Ok(Wing {
            pool: IoPool::named("nikaia-write", THREADS)?,
            active: AtomicUsize::new(0),
            auth,
            current,
            bodies,
            writes,
            uploads,
            locks,
        })
    }

    /// The sink that writes `req`'s body as `to` says (or removes the
    /// name, for a `DELETE` of the directory writer), or the answer from
    /// its head: 503 while `max-writes` bodies are being written.
    pub(crate) fn to_file(
        self: &Arc<Self>,
        rt: &Runtime,
        req: &Request,
        to: ToFile,
        length: Option<u64>,
    ) -> Result<Box<dyn Erased>, Response> {
        if to.permit.as_ref().is_some_and(|p| p.op == Op::Delete) {
            return Ok(Box::new(remove::removal(self, rt, req, to)));
        }
        Ok(Box::new(put::upload(self, rt, req, to, length)?))
    }

    /// The sink of a WebDAV request its head let through
    /// (`spec/site.md`, "WebDAV class 1").
    pub(crate) fn dav(
        self: &Arc<Self>,
        rt: &Runtime,
        req: &Request,
        job: crate::http::site::dav::Job,
    ) -> Result<Box<dyn Erased>, Response> {
        Ok(Box::new(dav::request(self, rt, req, job)))
    }

    /// The sink of a request of the tus endpoint, `ask` decided from its
    /// head; 404 where `[resumable]` came with a reload (it needs a
    /// restart).
    pub(crate) fn resume(
        self: &Arc<Self>,
        req: &Request,
        root: crate::fs::Root,
        ask: Ask,
        hidden: bool,
        tls: bool,
    ) -> Result<Box<dyn Erased>, Response> {
        let Some(uploads) = &self.uploads else {
            return Err(crate::http::site::resume::tus(Response::status_page(404)));
        };
        let request = resume::request(self, uploads, req, root, ask, hidden, tls);
        Ok(Box::new(request))
    }

    /// What a write of `name` (its bytes under the served directory) with
    /// `permit` asks of the locks, while there are locks.
    fn lock_gate(
        &self,
        root: &crate::fs::Root,
        name: &[u8],
        permit: &Permit,
    ) -> Option<locks::Gate> {
        let locks = self.locks.as_ref()?;
        let name = crate::http::site::lock::bare(name).to_vec();
        Some(locks::Gate {
            locks: locks.clone(),
            root: root.clone(),
            at: name.clone(),
            name,
            user: permit.grant.user.clone(),
            cond: permit.cond.clone(),
        })
    }

    /// The runtime new requests use now.
    fn runtime(&self) -> Arc<Runtime> {
        self.current.runtime()
    }

    /// Takes a place among the bodies being written, or the 503 that says
    /// there is none (`max-writes`).
    fn slot(self: &Arc<Self>, max: usize) -> Result<Slot, Response> {
        if self.active.fetch_add(1, Relaxed) >= max {
            self.active.fetch_sub(1, Relaxed);
            self.bodies.files_refused.fetch_add(1, Relaxed);
            return Err(Response::status_page(503).header("Retry-After", "1"));
        }
        Ok(Slot(self.clone()))
    }

    /// The verdict on a site write's credentials: its permit back in
    /// `slot`, or the refusal, dressed as the site dresses them.
    fn verified(
        &self,
        req: &Request,
        slot: &mut Option<Box<Permit>>,
        check: Check,
        verdict: Verdict,
    ) -> Result<(), Response> {
        let Some(permit) = slot.take() else {
            return Err(Response::status_page(500));
        };
        let (name, tls) = (permit.name.clone(), permit.tls);
        match permit.verified(check, verdict) {
            Ok(permit) => {
                *slot = Some(Box::new(permit));
                Ok(())
            }
            Err(mut resp) => {
                let rt = self.runtime();
                let grant = Default::default();
                crate::http::site::write::dress_refusal(&rt, req, &name, &grant, tls, &mut resp);
                Err(resp)
            }
        }
    }

    /// Finishes what is queued (a name being given is given), then stops
    /// the writer threads.
    pub(crate) fn close(&self) {
        self.pool.close();
    }
}

/// What comes first for a write the site's rules let through: the check
/// of its credentials, if one is owed, else its opening.
fn first(permit: Option<&mut Box<Permit>>) -> sink::Step {
    match permit.and_then(|p| p.check.take()) {
        Some(check) => sink::Step::Check(check),
        None => sink::Step::Open,
    }
}

/// A place among the bodies being written, given back when dropped.
struct Slot(Arc<Wing>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Relaxed);
    }
}
