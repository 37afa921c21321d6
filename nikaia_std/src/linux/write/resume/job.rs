//! One request of the tus endpoint (`spec/site.md`, "Resumable uploads"),
//! as the sink of its body: held (no `100 Continue`) until its upload is
//! found and its final name passed the write rules — credentials checked
//! on the verifier threads — then done on the writer threads, which may
//! wait for the disk. A `PATCH`'s bytes are gathered into runs on the
//! worker and written at their offset by the writer, the body paused while
//! a run waits, as a body written to a file is (`linux/write.rs`).

mod acts;
mod patch;

use super::{now_ms, Known, Uploads};
use crate::fs::Root;
use crate::http::body::{Aborted, Erased, Flow, Reply, Resume};
use crate::http::site::resume::{self, Ask, Checksum, Id};
use crate::http::site::write::{self, Asked, Op, Permit};
use crate::http::site::{Check, Grant, Verdict};
use crate::http::{Request, Response};
use crate::linux::shared::Shared;
use crate::rt::Runtime;
use crate::sync::lock;
use aws_lc_rs::digest;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

/// The sink of one request of the endpoint.
pub(crate) struct Job {
    inner: Arc<Inner>,
    /// The run being gathered on the worker.
    run: Vec<u8>,
}

struct Inner {
    shared: Arc<Shared>,
    uploads: Arc<Uploads>,
    root: Root,
    req: Request,
    ask: Ask,
    hidden: bool,
    tls: bool,
    st: Mutex<St>,
    /// A `PATCH` writing: where it began and what it wrote. Only the
    /// writer threads take it (they may hold it across a write); the
    /// worker takes only `st`, never across one.
    patch: Mutex<Option<Patch>>,
}

#[derive(Default)]
struct St {
    reply: Option<Reply>,
    /// The body, held until the `PATCH` may write (or never read).
    paused: Option<Resume>,
    /// What the rules let it do, once they have.
    permit: Option<Box<Permit>>,
    /// The upload, once found.
    known: Option<Known>,
    /// A `PATCH`'s body is being taken (its [`Patch`] is the writer's).
    writing: bool,
    queue: VecDeque<Vec<u8>>,
    /// A writer turn is queued or running.
    running: bool,
    /// The body arrived whole.
    ended: bool,
    /// The client left: what came counts (unless a checksum was owed).
    aborted: bool,
    /// Answered, or given up: nothing more is done.
    over: bool,
}

struct Patch {
    generation: u64,
    start: u64,
    written: u64,
    sum: Option<(Checksum, digest::Context)>,
}

impl Job {
    pub(crate) fn new(
        shared: &Arc<Shared>,
        uploads: &Arc<Uploads>,
        req: &Request,
        root: Root,
        ask: Ask,
        hidden: bool,
        tls: bool,
    ) -> Job {
        Job {
            inner: Arc::new(Inner {
                shared: shared.clone(),
                uploads: uploads.clone(),
                root,
                req: req.clone(),
                ask,
                hidden,
                tls,
                st: Mutex::default(),
                patch: Mutex::default(),
            }),
            run: Vec::new(),
        }
    }

    /// Hands the gathered run to the writer; pauses the body while one
    /// waits. `end`: the body ended (or its client left) with this run,
    /// said in the same step as the run is queued, so that no writer turn
    /// finds the body over before its last run is there.
    fn hand_over(&mut self, flow: Option<&mut Flow<'_>>, end: Option<End>) {
        let run = std::mem::take(&mut self.run);
        let mut st = lock(&self.inner.st);
        match end {
            Some(End::Whole) => st.ended = true,
            Some(End::Left) => st.aborted = true,
            None => {}
        }
        if st.over || !st.writing {
            return;
        }
        if !run.is_empty() {
            st.queue.push_back(run);
        }
        if let (Some(flow), None) = (flow, &st.paused) {
            st.paused = Some(flow.pause());
        }
        self.inner.clone().run_writer(st);
    }
}

/// How a body ended.
enum End {
    Whole,
    Left,
}

impl Erased for Job {
    fn begin(&mut self, flow: &mut Flow<'_>, reply: Reply) {
        let mut st = lock(&self.inner.st);
        st.reply = Some(reply);
        st.paused = Some(flow.pause());
        drop(st);
        let inner = self.inner.clone();
        self.inner.shared.writers.pool.submit(move || inner.start());
    }

    fn piece(&mut self, piece: &[u8], flow: &mut Flow<'_>) {
        let mut rest = piece;
        while !rest.is_empty() {
            if crate::linux::write::gather(&mut self.run, &mut rest) {
                self.hand_over(Some(&mut *flow), None);
            }
        }
    }

    fn end(mut self: Box<Self>, _req: &Request) -> Option<Response> {
        self.hand_over(None, Some(End::Whole));
        None
    }

    fn abort(mut self: Box<Self>, _why: Aborted) {
        // What came counts (a `PATCH` not begun yet sees this when it is).
        self.hand_over(None, Some(End::Left));
    }
}

impl Inner {
    fn runtime(&self) -> Arc<Runtime> {
        self.shared.runtime()
    }

    /// On a writer thread: finds the upload and runs its final name
    /// through the write rules.
    fn start(self: Arc<Self>) {
        let rt = self.runtime();
        let Some(r) = rt.resumable.clone() else {
            return self.finish(resume::tus(Response::status_page(404)));
        };
        self.uploads.expire.store(r.expire.as_secs(), Relaxed);
        let asked = |refused| Asked {
            op: Op::Resume,
            hidden: self.hidden,
            refused,
        };
        let verified = |c: &Check| self.shared.auth.known(c);
        let gated = match &self.ask {
            Ask::Create {
                length,
                name,
                refused,
                ..
            } => write::gate(
                &rt,
                &self.req,
                name,
                asked(*refused),
                self.tls,
                Some(*length),
                None,
                verified,
            ),
            ask => {
                let id = ask.id().unwrap_or(Id([0; 16]));
                let Some(known) = self.uploads.load(id) else {
                    let rules = resume::writers_auth(&rt);
                    return self.unknown(rt, rules, 0);
                };
                if Uploads::expired(&known, r.expire, now_ms())
                    && self.uploads.remove_expired(id, &known)
                {
                    let rules = resume::writers_auth(&rt);
                    return self.unknown(rt, rules, 0);
                }
                let (name, owner) = (known.record.name.clone(), known.record.user.clone());
                lock(&self.st).known = Some(known);
                let owner = Some(owner);
                write::gate(
                    &rt,
                    &self.req,
                    &name,
                    asked(false),
                    self.tls,
                    None,
                    owner,
                    verified,
                )
            }
        };
        match gated {
            Err(refusal) => self.finish(refusal),
            Ok(mut permit) => match permit.check.take() {
                None => self.act(permit),
                Some(check) => {
                    lock(&self.st).permit = Some(Box::new(permit));
                    let me = self.clone();
                    let submitted = (self.shared.auth)
                        .submit(check, move |check, verdict| me.verified(*check, verdict));
                    if let Err(check) = submitted {
                        self.verified(*check, Verdict::Busy);
                    }
                }
            },
        }
    }

    /// An identifier that names no upload (or one gone): 404, but where a
    /// write rule names its writers, only to credentials that the users
    /// file of an auth rule protecting its names (`rules`, tried from
    /// `at`) verifies; without valid ones 401 (403 on a plain listener
    /// the rule refuses), as for a live upload: holding an identifier tells
    /// no one whether it is live.
    fn unknown(self: Arc<Self>, rt: Arc<Runtime>, rules: Vec<usize>, at: usize) {
        let Some(auth) = rules.get(at).and_then(|&i| rt.site.auth.get(i)) else {
            return self.finish(resume::tus(Response::status_page(404)));
        };
        if !self.tls && !auth.plain_http {
            return self.finish(Response::status_page(403));
        }
        let check = match Check::of(auth, &self.req) {
            Ok(check) => Box::new(check),
            Err(refusal) => return self.finish(refusal),
        };
        if self.shared.auth.known(&check) {
            return self.finish(resume::tus(Response::status_page(404)));
        }
        let me = self.clone();
        let submitted = self
            .shared
            .auth
            .submit(check, move |check, verdict| match verdict {
                Verdict::Valid => me.finish(resume::tus(Response::status_page(404))),
                Verdict::Invalid if at + 1 < rules.len() => me.unknown(rt, rules, at + 1),
                verdict => me.finish(
                    check
                        .decide(verdict)
                        .err()
                        .unwrap_or_else(|| resume::tus(Response::status_page(404))),
                ),
            });
        if let Err(check) = submitted {
            let busy = check.decide(Verdict::Busy).err();
            self.finish(busy.unwrap_or_else(|| Response::status_page(503)));
        }
    }

    /// Goes on once the credentials were checked.
    fn verified(self: Arc<Self>, check: Check, verdict: Verdict) {
        let Some(permit) = lock(&self.st).permit.take() else {
            return;
        };
        match permit.verified(check, verdict) {
            Ok(permit) => {
                let me = self.clone();
                self.shared.writers.pool.submit(move || me.act(permit));
            }
            Err(refusal) => self.finish(refusal),
        }
    }

    /// Does what was asked, the rules having let it.
    fn act(self: Arc<Self>, permit: Permit) {
        let Some(r) = self.runtime().resumable.clone() else {
            return self.finish(resume::tus(Response::status_page(404)));
        };
        let permit = Box::new(permit);
        let done = match self.ask.clone() {
            Ask::Create {
                length,
                name,
                metadata,
                ..
            } => self.create(&r, &permit, length, &name, metadata),
            Ask::Offset(id) => self.offset(&r, &permit, id),
            Ask::Terminate(id) => self.terminate(id),
            Ask::Append {
                id,
                offset,
                body,
                checksum,
            } => {
                return self.clone().append(permit, id, offset, body, checksum);
            }
        };
        lock(&self.st).permit = Some(permit);
        self.finish(done);
    }

    /// Sends the answer, dressed by the site's rules and counted; nothing
    /// more is done for this request.
    fn finish(&self, resp: Response) {
        let mut st = lock(&self.st);
        if st.over {
            return;
        }
        st.over = true;
        st.queue.clear();
        let reply = st.reply.take();
        let (name, grant) = match (&st.permit, &st.known) {
            (Some(p), _) => (p.name.clone(), p.grant.clone()),
            (None, Some(k)) => (k.record.name.clone(), Grant::default()),
            (None, None) => (String::new(), Grant::default()),
        };
        drop(st);
        let mut resp = resume::tus(resp);
        let status = resp.status();
        if status >= 400 && status != 409 && status != 460 {
            self.uploads.stats.refused.fetch_add(1, Relaxed);
        }
        let rt = self.runtime();
        resume::dress(&rt, &self.req, &name, &grant, self.tls, &mut resp);
        if let Some(reply) = reply {
            reply.send(resp);
        }
    }
}
