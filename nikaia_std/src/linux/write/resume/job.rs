//! One request of the tus endpoint (`spec/site.md`, "Resumable uploads"),
//! as an act of the wing's one life (`../sink.rs`): held (no `100
//! Continue`) until its upload is found and its final name passed the
//! write rules — credentials checked on the verifier threads — then done
//! on the writer threads, which may wait for the disk. A `PATCH`'s bytes
//! are gathered into runs on the worker and written at their offset by
//! the writer, the body paused while a run waits, as a body written to a
//! file is.

mod acts;
mod patch;

use super::super::sink::{Act, End, Sink, Step};
use super::super::Wing;
use super::{now_ms, Known, Uploads};
use crate::fs::Root;
use crate::http::site::resume::{self, Ask, Checksum, Id};
use crate::http::site::write::{self, Asked, Op, Permit};
use crate::http::site::{Check, Grant, Verdict};
use crate::http::{Request, Response};
use crate::rt::Runtime;
use aws_lc_rs::digest;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// The sink of one request of the endpoint.
pub(in crate::linux::write) fn request(
    wing: &Arc<Wing>,
    uploads: &Arc<Uploads>,
    req: &Request,
    root: Root,
    ask: Ask,
    hidden: bool,
    tls: bool,
) -> Sink<Job> {
    let job = Job {
        wing: wing.clone(),
        uploads: uploads.clone(),
        root,
        req: req.clone(),
        ask,
        hidden,
        tls,
        permit: None,
        known: None,
        patch: None,
        phase: Phase::Find,
    };
    Sink::new(wing, job)
}

/// One request of the endpoint: what it knows so far.
pub(in crate::linux::write) struct Job {
    wing: Arc<Wing>,
    uploads: Arc<Uploads>,
    root: Root,
    req: Request,
    ask: Ask,
    hidden: bool,
    tls: bool,
    /// What the rules let it do, once they have.
    permit: Option<Box<Permit>>,
    /// The upload, once found.
    known: Option<Known>,
    /// A `PATCH` writing: where it began and what it wrote.
    patch: Option<Patch>,
    /// What its next step does.
    phase: Phase,
}

/// Where a request of the endpoint is, between the wing's stages.
enum Phase {
    /// Its upload to find (not for a creation) and its name to run
    /// through the write rules.
    Find,
    /// An identifier that names no upload: the credentials of the auth
    /// rules `rules` (from `at`) are asked before a 404.
    Unknown { rules: Vec<usize>, at: usize },
    /// The rules let it: it does what it asks.
    Act,
}

struct Patch {
    generation: u64,
    start: u64,
    written: u64,
    sum: Option<(Checksum, digest::Context)>,
}

impl Act for Job {
    const STOPS_WITHOUT_CLIENT: bool = false;

    fn begin(&mut self) -> Step {
        // Finding the upload reads its record: a writer thread's work.
        Step::Open
    }

    fn checked(&mut self, check: Check, verdict: Verdict) -> Step {
        match &mut self.phase {
            Phase::Unknown { rules, at } => match verdict {
                Verdict::Valid => self.answer(Response::status_page(404)),
                Verdict::Invalid if *at + 1 < rules.len() => {
                    *at += 1;
                    self.unknown()
                }
                verdict => {
                    let refused = check.decide(verdict).err();
                    self.answer(refused.unwrap_or_else(|| Response::status_page(404)))
                }
            },
            _ => {
                let Some(permit) = self.permit.take() else {
                    return self.answer(Response::status_page(500));
                };
                match permit.verified(check, verdict) {
                    Ok(permit) => {
                        self.permit = Some(Box::new(permit));
                        self.phase = Phase::Act;
                        Step::Open
                    }
                    Err(refusal) => self.answer(refusal),
                }
            }
        }
    }

    fn open(&mut self) -> Step {
        match self.phase {
            Phase::Find => self.find(),
            Phase::Unknown { .. } => self.unknown(),
            Phase::Act => match self.permit.take() {
                Some(permit) => self.act(permit),
                None => self.answer(Response::status_page(500)),
            },
        }
    }

    fn write(&mut self, run: &[u8]) -> Result<(), Response> {
        let Some(known) = self.known.clone() else {
            return Ok(());
        };
        if let Err(resp) = self.write_run(&known, run) {
            self.release(&known);
            return Err(self.dressed(resp));
        }
        Ok(())
    }

    fn name(&mut self, end: End) -> Option<Response> {
        let known = self.known.clone()?;
        let resp = self.end_patch(&known, end == End::Left)?;
        Some(self.dressed(resp))
    }
}

impl Job {
    fn runtime(&self) -> Arc<Runtime> {
        self.wing.runtime()
    }

    /// On a writer thread: finds the upload and runs its final name
    /// through the write rules.
    fn find(&mut self) -> Step {
        let rt = self.runtime();
        let Some(r) = rt.resumable.clone() else {
            return self.answer(Response::status_page(404));
        };
        self.uploads.expire.store(r.expire.as_secs(), Relaxed);
        let asked = |refused| Asked {
            op: Op::Resume,
            hidden: self.hidden,
            refused,
        };
        let verified = |c: &Check| self.wing.auth.known(c);
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
                let found = self.uploads.load(id).filter(|known| {
                    !(Uploads::expired(known, r.expire, now_ms())
                        && self.uploads.remove_expired(id, known))
                });
                let Some(known) = found else {
                    let rules = resume::writers_auth(&rt);
                    self.phase = Phase::Unknown { rules, at: 0 };
                    return self.unknown();
                };
                let (name, owner) = (known.record.name.clone(), known.record.user.clone());
                self.known = Some(known);
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
            Err(refusal) => self.answer(refusal),
            Ok(mut permit) => match permit.check.take() {
                None => self.act(Box::new(permit)),
                Some(check) => {
                    self.permit = Some(Box::new(permit));
                    self.phase = Phase::Act;
                    Step::Check(check)
                }
            },
        }
    }

    /// An identifier that names no upload (or one gone): 404, but where a
    /// write rule names its writers, only to credentials that the users
    /// file of an auth rule protecting its names (the phase's `rules`,
    /// tried from `at`) verifies; without valid ones 401 (403 on a plain
    /// listener the rule refuses), as for a live upload: holding an
    /// identifier tells no one whether it is live.
    fn unknown(&mut self) -> Step {
        let Phase::Unknown { rules, at } = &self.phase else {
            return self.answer(Response::status_page(404));
        };
        let rt = self.runtime();
        let Some(auth) = rules.get(*at).and_then(|&i| rt.site.auth.get(i)) else {
            return self.answer(Response::status_page(404));
        };
        if !self.tls && !auth.plain_http {
            return self.answer(Response::status_page(403));
        }
        let check = match Check::of(auth, &self.req) {
            Ok(check) => Box::new(check),
            Err(refusal) => return self.answer(refusal),
        };
        if self.wing.auth.known(&check) {
            return self.answer(Response::status_page(404));
        }
        Step::Check(check)
    }

    /// Does what was asked, the rules having let it.
    fn act(&mut self, permit: Box<Permit>) -> Step {
        let Some(r) = self.runtime().resumable.clone() else {
            return self.answer(Response::status_page(404));
        };
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
                let refused = self.begin_append(&permit, id, offset, body, checksum);
                self.permit = Some(permit);
                return match refused {
                    Some(resp) => self.answer(resp),
                    None => Step::Body,
                };
            }
        };
        self.permit = Some(permit);
        self.answer(done)
    }

    /// The answer, dressed and counted: nothing more is done for this
    /// request.
    fn answer(&self, resp: Response) -> Step {
        Step::Answer(self.dressed(resp))
    }

    /// `resp` as the endpoint sends it: tus's headers, the site's rules'
    /// dress, counted among the refusals.
    fn dressed(&self, resp: Response) -> Response {
        let (name, grant) = match (&self.permit, &self.known) {
            (Some(p), _) => (p.name.clone(), p.grant.clone()),
            (None, Some(k)) => (k.record.name.clone(), Grant::default()),
            (None, None) => (String::new(), Grant::default()),
        };
        let mut resp = resume::tus(resp);
        let status = resp.status();
        if status >= 400 && status != 409 && status != 460 {
            self.uploads.stats.refused.fetch_add(1, Relaxed);
        }
        let rt = self.runtime();
        resume::dress(&rt, &self.req, &name, &grant, self.tls, &mut resp);
        resp
    }
}
