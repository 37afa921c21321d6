//! The answer pipeline: the one way a request becomes an answer, on every
//! target and for every protocol. Route → handler (a panic is a logged 500)
//! → error hiding → `http::File` resolved through the backend's ports
//! (`http::port`) → keep-alive → body plan. A backend parses the request, calls
//! [`answer`], runs the open the pipeline asks for where it may wait for the
//! disk ([`Progress::Open`]), and frames what comes out; it decides nothing.

mod before;
mod payload;

pub(crate) use before::{before_body, declared, Before};
pub(crate) use payload::{page, Answer, Payload};

use self::payload::finish;
use super::file::{self, Fetched, File, Job, ListAsk, Pages, Prepared, Step, Then};
use super::port::{Codings, Port, Reads, Rules};
use super::redirect::ToHttps;
use super::request::Request;
use super::response::{Body, Response};
use super::router::{Found, Handler, Router};
use super::site::upload::{self, Listing};
use super::site::{self, dress::Subject, Check, Gate, Grant, Verdict};
use crate::rt::Runtime;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::LazyLock;

/// Where the pipeline got to.
pub(crate) enum Progress {
    Ready(Answer),
    /// The file's open, or a directory's listing, may wait for the disk:
    /// the backend runs [`Job::run`] off its event loop, then
    /// [`Waiting::resume`] with [`Done::Opened`].
    Open(Job, Waiting),
    /// Credentials to check (bcrypt, slow on purpose): the backend checks
    /// them off its event loop, then [`Waiting::verified`].
    Verify(Box<Check>, Waiting),
}

/// What the backend did off its loop for a [`Waiting`] answer.
pub(crate) enum Done {
    /// The job [`Progress::Open`] asked for, done.
    Opened(Fetched),
    /// The check [`Progress::Verify`] asked for.
    Verified(Box<Check>, Verdict),
}

/// A request whose file is being opened, or whose credentials checked:
/// what the pipeline carries across.
pub(crate) struct Waiting {
    user: Response,
    file: File,
    then: Then,
    close: bool,
    grant: Grant,
    /// A listing waiting for the credentials its reader offered to be
    /// checked: what it offers for writes follows (`site/upload.rs`).
    list: Option<Box<ListAsk>>,
}

/// The runtime of a program without a runtime file: the directory
/// handler's rules are then the defaults (none).
static DEFAULTS: LazyLock<Runtime> = LazyLock::new(Runtime::default);

/// The runtime whose site rules apply to `file`, if any do.
fn rules<'f>(files: &'f impl Rules, file: &File) -> Option<&'f Runtime> {
    (file.pages != Pages::Off).then(|| files.runtime().unwrap_or(&DEFAULTS))
}

/// The same, only when the runtime sets a rule (nothing to dress
/// otherwise).
fn set_rules<'f>(files: &'f impl Rules, file: &File) -> Option<&'f Runtime> {
    rules(files, file).filter(|rt| !rt.site.is_empty())
}

/// Runs the pipeline for `req`. `redirect`: the listener it came on sends
/// it to HTTPS (`spec/listeners.md`). `may_keep`: the protocol and the
/// server would keep the connection open after this answer (the request
/// did not ask to close, the server is not stopping, keep-alive is on).
/// `log` receives each error the answer hides from the client.
///
/// A panic anywhere in it (a handler's is a 500 of its own, in `route`;
/// one in std's resolving is a bug) is this request's 500, and the
/// connection closes: the worker and its other connections go on.
pub(crate) fn answer(
    files: &impl Port,
    router: &Router,
    redirect: Option<&ToHttps>,
    req: &mut Request,
    may_keep: bool,
    log: &mut impl FnMut(&Request, &str),
) -> Progress {
    let decided = catch_unwind(AssertUnwindSafe(|| {
        decide(files, router, redirect, req, may_keep, log)
    }));
    decided.unwrap_or_else(|_| broken(req, log))
}

/// Runs the pipeline from `resp`, the answer a streamed route's sink gave
/// once its body arrived (the route was found at head time).
pub(crate) fn answer_with(
    files: &impl Port,
    req: &mut Request,
    resp: Response,
    may_keep: bool,
    log: &mut impl FnMut(&Request, &str),
) -> Progress {
    let decided = catch_unwind(AssertUnwindSafe(|| {
        respond(files, req, resp, may_keep, log)
    }));
    decided.unwrap_or_else(|_| broken(req, log))
}

/// The answer of a request refused before its body (its error, if it
/// carries one, logged and hidden).
pub(crate) fn refused(
    req: &Request,
    resp: Response,
    close: bool,
    log: &mut impl FnMut(&Request, &str),
) -> Answer {
    note(log, req, &resp);
    page(req, hide_error(resp), close)
}

/// The answer when std itself panicked deciding one: a plain 500, logged,
/// and the connection closed (its state may be anything).
fn broken(req: &Request, log: &mut impl FnMut(&Request, &str)) -> Progress {
    let why = format!("std panicked answering {} {}", req.method(), req.target());
    log(req, &why);
    Progress::Ready(page(req, Response::status_page(500), true))
}

fn decide(
    files: &impl Port,
    router: &Router,
    redirect: Option<&ToHttps>,
    req: &mut Request,
    may_keep: bool,
    log: &mut impl FnMut(&Request, &str),
) -> Progress {
    if let Some(rt) = files.runtime() {
        req.client = super::client::resolve(&rt.site.trusted_proxies, req);
    }
    // An ACME validation on a plain listener comes before everything: the
    // redirect, the site's rules, every route (`spec/tls.md`).
    let validation = (!files.tls())
        .then(|| super::redirect::http01(req, |host, token| files.http01(host, token)))
        .flatten();
    let resp = match validation.or_else(|| redirect.and_then(|r| r.answer(req))) {
        Some(resp) => resp,
        None => route(router, req),
    };
    respond(files, req, resp, may_keep, log)
}

/// The pipeline from a handler's response: its error hidden, keep-alive
/// decided, a file resolved under the site's rules.
fn respond(
    files: &(impl Reads + Codings + Rules),
    req: &Request,
    resp: Response,
    may_keep: bool,
    log: &mut impl FnMut(&Request, &str),
) -> Progress {
    note(log, req, &resp);
    let mut resp = hide_error(resp);
    let asked_close = resp
        .get_header("connection")
        .is_some_and(|v| v.eq_ignore_ascii_case("close"));
    let close = !may_keep || asked_close;
    match std::mem::replace(&mut resp.body, Body::Empty) {
        Body::File(mut f) => {
            let grant = match rules(files, &f).filter(|_| f.pages == Pages::On) {
                None => Grant::default(),
                Some(rt) => {
                    let index = f.indexes(Some(rt));
                    match site::gate(rt, req, &f.name, index, files.tls(), |c| files.verified(c)) {
                        Gate::Pass(grant) => grant,
                        Gate::Hide => {
                            f.pages = Pages::Refused;
                            Grant::default()
                        }
                        Gate::Answer(refusal) => {
                            let grant = Grant::default();
                            return Progress::Ready(site_page(
                                files, req, &f, &grant, refusal, close,
                            ));
                        }
                        Gate::Verify(check) => {
                            let waiting = Waiting {
                                user: resp,
                                file: *f,
                                then: Then::default(),
                                close,
                                grant: Grant::default(),
                                list: None,
                            };
                            return Progress::Verify(Box::new(check), waiting);
                        }
                    }
                }
            };
            begin(files, req, resp, *f, grant, close, log)
        }
        body => {
            resp.body = body;
            Progress::Ready(page(req, resp, close))
        }
    }
}

/// Starts resolving a file the request was let through to with `grant`.
fn begin(
    files: &(impl Reads + Codings + Rules),
    req: &Request,
    user: Response,
    file: File,
    grant: Grant,
    close: bool,
    log: &mut impl FnMut(&Request, &str),
) -> Progress {
    let step = file::begin(files, req, &user, &file);
    let waiting = Waiting {
        user,
        file,
        then: Then::default(),
        close,
        grant,
        list: None,
    };
    waiting.step(files, req, step, log)
}

impl Waiting {
    /// Goes on with what the backend did off its loop.
    pub(crate) fn resume(
        self,
        files: &impl Port,
        req: &Request,
        done: Done,
        log: &mut impl FnMut(&Request, &str),
    ) -> Progress {
        let decided = catch_unwind(AssertUnwindSafe(|| match done {
            Done::Opened(fetched) => self.fetched(files, req, fetched, log),
            Done::Verified(check, verdict) => self.verified(files, req, *check, verdict, log),
        }));
        decided.unwrap_or_else(|_| broken(req, log))
    }

    /// Goes on once the [`Progress::Verify`] check is done.
    pub(crate) fn verified(
        mut self,
        files: &impl Port,
        req: &Request,
        check: Check,
        verdict: Verdict,
        log: &mut impl FnMut(&Request, &str),
    ) -> Progress {
        if let Some(ask) = self.list.take() {
            let rt = rules(files, &self.file).unwrap_or(&DEFAULTS);
            let name = self.file.name.to_string_lossy().into_owned();
            let tls = files.tls();
            let listing = upload::checked(rt, req, &mut self.grant, &name, tls, check, verdict);
            return self.list(files, req, ask, listing);
        }
        match check.decide(verdict) {
            Ok(grant) => begin(files, req, self.user, self.file, grant, self.close, log),
            Err(refusal) => {
                let grant = Grant::default();
                Progress::Ready(site_page(
                    files, req, &self.file, &grant, refusal, self.close,
                ))
            }
        }
    }

    /// Goes on with what the [`Progress::Open`] job gave.
    fn fetched(
        mut self,
        files: &(impl Reads + Codings + Rules),
        req: &Request,
        fetched: Fetched,
        log: &mut impl FnMut(&Request, &str),
    ) -> Progress {
        let step = match fetched {
            Fetched::Opened(target, result) => {
                let then = std::mem::take(&mut self.then);
                file::opened(files, req, &self.user, &self.file, target, then, result)
            }
            Fetched::Listed(result) => Step::Ready(file::listed(result)),
        };
        self.step(files, req, step, log)
    }

    /// Where resolving got to, as the pipeline's progress: the answer, or a
    /// job for the backend to run off its loop.
    fn step(
        mut self,
        files: &(impl Reads + Codings + Rules),
        req: &Request,
        step: Step,
        log: &mut impl FnMut(&Request, &str),
    ) -> Progress {
        match step {
            Step::Ready(prepared) => ready(
                files,
                req,
                &self.file,
                &self.grant,
                prepared,
                self.close,
                log,
            ),
            Step::Open(target, then) => {
                self.then = then;
                Progress::Open(Job::Open(self.file.root.clone(), target), self)
            }
            Step::List(ask) => {
                // A listing of the directory handler's: what it offers
                // for writes, or its `?sign-in` (`site/upload.rs`).
                let Some(rt) = rules(files, &self.file) else {
                    return Progress::Open(Job::List(ask), self);
                };
                let name = self.file.name.to_string_lossy().into_owned();
                let verified = |c: &Check| files.verified(c);
                let listing =
                    upload::listing(rt, req, &mut self.grant, &name, files.tls(), verified);
                self.list(files, req, ask, listing)
            }
        }
    }

    /// A listing, once what it offers for writes is known: made off the
    /// loop, or the answer in its place (`?sign-in`), or the check of
    /// the reader's credentials first.
    fn list(
        mut self,
        files: &impl Rules,
        req: &Request,
        mut ask: Box<ListAsk>,
        listing: Listing,
    ) -> Progress {
        match listing {
            Listing::Offer(upload) => {
                ask.offer(upload);
                Progress::Open(Job::List(ask), self)
            }
            Listing::Verify(check) => {
                self.list = Some(ask);
                Progress::Verify(Box::new(check), self)
            }
            Listing::Answer(resp) => Progress::Ready(site_page(
                files,
                req,
                &self.file,
                &self.grant,
                resp,
                self.close,
            )),
        }
    }
}

/// A file's answer, resolved; under the directory handler's rules, the
/// file checked against them (a `fallback` or `not-found` page may be
/// denied or protected where the name asked for was not: the plain 404
/// then) and the answer dressed.
fn ready(
    files: &impl Rules,
    req: &Request,
    file: &File,
    grant: &Grant,
    prepared: Prepared,
    close: bool,
    log: &mut impl FnMut(&Request, &str),
) -> Progress {
    let Prepared {
        mut resp,
        length,
        plan,
        about,
    } = prepared;
    note(log, req, &resp);
    let Some(rt) = set_rules(files, file) else {
        return Progress::Ready(finish(req, resp, length, plan, close));
    };
    let sent = about.as_ref().map(|a| a.name.to_string_lossy());
    let sent = sent.as_deref().map(|s| if s == "." { "" } else { s });
    if sent.is_some_and(|s| !site::may_send(rt, grant, [s])) {
        return Progress::Ready(site_page(
            files,
            req,
            file,
            grant,
            Response::status_page(404),
            close,
        ));
    }
    let name = file.name.to_string_lossy();
    let subject = Subject {
        name: &name,
        sent,
        file_body: about.as_ref().is_some_and(|a| a.file_body),
        listing: about.as_ref().is_some_and(|a| a.listing),
        tls: files.tls(),
    };
    site::dress::dress(rt, req, grant, &subject, &mut resp);
    let mut answer = finish(req, resp, length, plan, close);
    answer.user = grant.user.clone();
    Progress::Ready(answer)
}

/// A directory handler's answer that sends no file (a refusal, `OPTIONS`,
/// a page in place of a file), dressed by the rules.
fn site_page(
    files: &impl Rules,
    req: &Request,
    file: &File,
    grant: &Grant,
    mut resp: Response,
    close: bool,
) -> Answer {
    if let Some(rt) = set_rules(files, file) {
        let name = file.name.to_string_lossy();
        let subject = Subject {
            name: &name,
            sent: None,
            file_body: false,
            listing: false,
            tls: files.tls(),
        };
        site::dress::dress(rt, req, grant, &subject, &mut resp);
    }
    let mut answer = page(req, resp, close);
    answer.user = grant.user.clone();
    answer
}

fn note(log: &mut impl FnMut(&Request, &str), req: &Request, resp: &Response) {
    if let Some(e) = &resp.log_error {
        log(req, e);
    }
}

/// The response a request gets before its body is resolved: its route's
/// handler (a panic is a logged 500), 405 with `Allow` for a known path and
/// another method (204 with `Allow` for `OPTIONS`), 404 otherwise. `param` is filled in for the handler.
fn route(router: &Router, req: &mut Request) -> Response {
    match router.find(req.method(), req.path.as_bytes()) {
        Found::Handler(entry, param) => {
            req.param = param;
            let answered = catch_unwind(AssertUnwindSafe(|| {
                match &entry.handler {
                Handler::Plain(handler) => handler(req),
                // A streamed route without a body: its sink ends at once.
                Handler::Stream(make) => match make(req) {
                    Ok(sink) => super::body::feed_whole(sink, req),
                    Err(answer) => answer,
                },
                // Reached only where the backend took the whole body
                // before std saw it (the wasm32 host): it writes nothing.
                // The directory writer there has no rules: 405, as on
                // Linux without a rule.
                Handler::File(make) if make(req).is_ok_and(|to| to.site.is_some()) => {
                    site::write::no_rule()
                }
                Handler::File(_) => Response::internal_error(
                    "a body written to a file needs a backend that writes: this target's is read-only"
                        .to_owned(),
                ),
            }
            }));
            answered.unwrap_or_else(|_| {
                Response::internal_error(format!(
                    "handler panicked on {} {}",
                    req.method(),
                    req.target()
                ))
            })
        }
        // RFC 9110 §9.3.7: OPTIONS asks what the path allows.
        Found::WrongMethod(allow) if req.method() == "OPTIONS" => {
            Response::new(204).header("Allow", format!("{allow}, OPTIONS"))
        }
        Found::WrongMethod(allow) => Response::status_page(405).header("Allow", allow),
        // The server as a whole: every route's methods are its own.
        Found::Nothing if req.method() == "OPTIONS" && req.path() == "*" => Response::new(204),
        Found::Nothing => Response::status_page(404),
    }
}

/// A response that carries an error for the log goes to the client as a
/// plain 500 — unless it is an error status already (a write the kernel
/// refused is 403, logged): the detail stays in the log.
fn hide_error(resp: Response) -> Response {
    if resp.log_error.is_some() && resp.status < 400 {
        Response::status_page(500)
    } else {
        resp
    }
}

#[cfg(test)]
mod tests;
