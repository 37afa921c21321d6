//! The directory writer's side of the writer threads (`spec/site.md`,
//! "Writes"): the runtime file's own files found by identity when a write
//! acts, the answers (dressed by the site's rules, counted for `nikaia
//! explain`), and the sink of a `DELETE`, which removes the name once the
//! credentials are checked and answers without reading a body.

use super::super::shared::Shared;
use crate::fs::{self, Root, Written};
use crate::http::body::{Aborted, Erased, Flow, Reply, Resume};
use crate::http::site::write::{self, Op, Permit};
use crate::http::site::{Check, Verdict};
use crate::http::to_file::ToFile;
use crate::http::{Request, Response};
use crate::rt::Runtime;
use crate::sync::lock;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

/// What the runtime file names, which no write may touch: paths on the
/// machine, and names under the served directory.
#[derive(Default)]
pub(crate) struct Own {
    paths: Vec<PathBuf>,
    names: Vec<String>,
}

impl Own {
    /// What `rt` names, for a write of the directory writer (`site`);
    /// nothing for a program's own.
    pub(crate) fn of(rt: &Runtime, site: bool) -> Own {
        if !site {
            return Own::default();
        }
        Own {
            paths: write::own_files(rt),
            names: write::own_names(rt)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        }
    }

    /// Their (device, inode) now: each path as it is and as its links lead,
    /// each name as it opens under `root`. It may wait for the disk.
    pub(crate) fn identities(&self, root: &Root) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for path in &self.paths {
            let seen = [std::fs::metadata(path), std::fs::symlink_metadata(path)];
            out.extend(seen.into_iter().flatten().map(|m| (m.dev(), m.ino())));
        }
        for name in &self.names {
            if let Ok(opened) = root.open(name) {
                out.push((opened.id.dev, opened.id.ino));
            }
        }
        out
    }
}

/// A refusal of a site write (or the cap's 503 for any write), dressed
/// and counted.
pub(super) fn answer_refusal(
    rt: &Runtime,
    req: &Request,
    permit: Option<&Permit>,
    mut resp: Response,
) -> Response {
    if let Some(p) = permit {
        write::dress_answer(rt, req, p, &mut resp);
    }
    resp
}

/// The answer to a site write once the file system acted, counted.
pub(super) fn answered(
    shared: &Shared,
    req: &Request,
    permit: &Permit,
    done: Result<Written, fs::Error>,
) -> Response {
    let stats = &shared.stats.writes;
    match &done {
        Ok(w) if w.created => stats.created.fetch_add(1, Relaxed),
        Ok(_) => stats.replaced.fetch_add(1, Relaxed),
        Err(_) => 0,
    };
    if let Ok(w) = &done {
        stats.bytes.fetch_add(w.id.size, Relaxed);
    }
    let rt = shared.runtime();
    let resp = write::answer(&rt, req, permit, done.map(Some));
    if resp.status() >= 400 {
        stats.refused(resp.status());
    }
    resp
}

/// The sink of a `DELETE` of the directory writer: it holds the body
/// (which nothing reads), removes the name on a writer thread once the
/// credentials are checked, and answers.
pub(crate) struct Removal {
    job: Arc<RemoveJob>,
}

struct RemoveJob {
    shared: Arc<Shared>,
    root: Root,
    /// The name's exact bytes (the permit's is the rules' text).
    name: PathBuf,
    req: Request,
    own: Own,
    permit: Mutex<Option<Box<Permit>>>,
    reply: Mutex<Option<Reply>>,
    /// The body, held: it is never read.
    held: Mutex<Option<Resume>>,
}

impl Removal {
    pub(crate) fn new(shared: &Arc<Shared>, rt: &Runtime, req: &Request, to: ToFile) -> Removal {
        Removal {
            job: Arc::new(RemoveJob {
                shared: shared.clone(),
                root: to.root,
                name: to.name,
                req: req.clone(),
                own: Own::of(rt, true),
                permit: Mutex::new(to.permit),
                reply: Mutex::new(None),
                held: Mutex::new(None),
            }),
        }
    }
}

impl Erased for Removal {
    fn begin(&mut self, flow: &mut Flow<'_>, reply: Reply) {
        *lock(&self.job.reply) = Some(reply);
        *lock(&self.job.held) = Some(flow.pause());
        let check = lock(&self.job.permit).as_mut().and_then(|p| p.check.take());
        let Some(check) = check else {
            return self.job.clone().remove();
        };
        let job = self.job.clone();
        let auth = &self.job.shared.auth;
        if let Err(check) = auth.submit(check, move |check, verdict| job.verified(*check, verdict))
        {
            self.job.clone().verified(*check, Verdict::Busy);
        }
    }

    fn piece(&mut self, _piece: &[u8], _flow: &mut Flow<'_>) {}

    fn end(self: Box<Self>, _req: &Request) -> Option<Response> {
        None
    }

    fn abort(self: Box<Self>, _why: Aborted) {}
}

impl RemoveJob {
    /// Goes on once the credentials were checked.
    fn verified(self: Arc<Self>, check: Check, verdict: Verdict) {
        let Some(permit) = lock(&self.permit).take() else {
            return;
        };
        let (name, tls) = (permit.name.clone(), permit.tls);
        match permit.verified(check, verdict) {
            Ok(permit) => {
                *lock(&self.permit) = Some(Box::new(permit));
                self.remove();
            }
            Err(mut resp) => {
                let rt = self.shared.runtime();
                let grant = Default::default();
                write::dress_refusal(&rt, &self.req, &name, &grant, tls, &mut resp);
                self.send(resp);
            }
        }
    }

    /// Removes the name on a writer thread (it may wait for the disk).
    fn remove(self: Arc<Self>) {
        let job = self.clone();
        self.shared.writers.pool.submit(move || {
            let Some(permit) = lock(&job.permit).take() else {
                return;
            };
            debug_assert_eq!(permit.op, Op::Delete);
            let guard = permit.guard(job.own.identities(&job.root));
            let done = job.root.remove_guarded(
                &job.name,
                &permit.conditions,
                permit.removable,
                &guard,
                permit.durability,
            );
            let stats = &job.shared.stats.writes;
            if done.is_ok() {
                stats.deleted.fetch_add(1, Relaxed);
            }
            let rt = job.shared.runtime();
            let resp = write::answer(&rt, &job.req, &permit, done.map(|()| None));
            if resp.status() >= 400 {
                stats.refused(resp.status());
            }
            job.send(resp);
        });
    }

    fn send(&self, resp: Response) {
        if let Some(reply) = lock(&self.reply).take() {
            reply.send(resp);
        }
    }
}
