//! What a request's head decides before any byte of its body is read
//! (`spec/http.md`, "Request bodies"), for every protocol: whether the
//! body is read at all, for whom, and up to what — the redirect and
//! ACME's validations first (they take no body), then the route, then its
//! declaration (415, 413), then, for a streamed route, its handler (which
//! may answer instead of taking the body). Only what passes all of it
//! makes a backend send `100 Continue`.

use super::super::body::{self, Admit, Declared, Erased, Takes};
use super::super::port::{Port, Rules, Writes};
use super::super::redirect::ToHttps;
use super::super::request::Request;
use super::super::response::Response;
use super::super::router::{Found, Handler, Router};
use super::super::site::write::Op;
use super::super::to_file::{MakeFile, ToFile};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// How a request with a body goes on.
pub(crate) enum Before {
    /// The body is no one's (a redirect, ACME's validation, no route, a
    /// route that takes none): answer with the pipeline now, and throw the
    /// body away to a bound ([`body::DRAIN_MAX`]).
    AnswerNow,
    /// Refused before its body: answer this, and the body is not read for
    /// anyone.
    Refuse(Response),
    /// Read it whole, up to `limit`, then answer with the pipeline.
    Whole { limit: Option<u64> },
    /// Feed it to `sink`, up to `limit`; the sink answers.
    Stream {
        sink: Box<dyn Erased>,
        limit: Option<u64>,
    },
}

/// Decides how the body of `req` (whose head `declared` describes, a body
/// present) is taken.
pub(crate) fn before_body(
    files: &impl Port,
    router: &Router,
    redirect: Option<&ToHttps>,
    req: &mut Request,
    declared: Declared,
) -> Before {
    if let Some(rt) = files.runtime() {
        req.client = super::super::client::resolve(&rt.site.trusted_proxies, req);
    }
    let validation = !files.tls()
        && super::super::redirect::http01(req, |host, token| files.http01(host, token)).is_some();
    if validation || redirect.is_some_and(|r| r.answer(req).is_some()) {
        return Before::AnswerNow;
    }
    let Found::Handler(entry, param) = router.find(req.method(), req.path.as_bytes()) else {
        return Before::AnswerNow;
    };
    req.param = param;
    let defaults = crate::rt::Runtime::default();
    let rt = files.runtime().unwrap_or(&defaults);
    if let Handler::File(make) = &entry.handler {
        return to_file(files, make, &entry.rule, req, declared, rt);
    }
    match body::admit(&entry.rule, declared, rt) {
        Admit::Bodiless
        | Admit::Take {
            takes: Takes::Nothing,
            ..
        } => Before::AnswerNow,
        Admit::Refuse(status, _) => Before::Refuse(Response::status_page(status)),
        Admit::Take {
            takes: Takes::Whole,
            limit,
        } => Before::Whole { limit },
        Admit::Take {
            takes: Takes::Stream,
            limit,
        } => match &entry.handler {
            Handler::Stream(make) => match catch_unwind(AssertUnwindSafe(|| make(req))) {
                Ok(Ok(sink)) => Before::Stream { sink, limit },
                // The handler answered from the head: the body is no one's.
                Ok(Err(answer)) => Before::Refuse(answer),
                Err(_) => Before::Refuse(Response::internal_error(format!(
                    "handler panicked on {} {}",
                    req.method(),
                    req.target()
                ))),
            },
            Handler::Plain(_) | Handler::File(_) => Before::Whole { limit },
        },
    }
}

/// A body that becomes a file: its route's declaration decides as for a
/// stream (an empty body too is written), then the handler names the
/// file, then the backend makes the sink that writes it.
fn to_file(
    files: &(impl Writes + Rules),
    make: &MakeFile,
    rule: &body::Rule,
    req: &mut Request,
    declared: Declared,
    rt: &crate::rt::Runtime,
) -> Before {
    let limit = match body::admit(rule, declared, rt) {
        Admit::Refuse(status, _) => return Before::Refuse(Response::status_page(status)),
        Admit::Take { limit, .. } => limit,
        Admit::Bodiless => rule.limit(rt),
    };
    let made = catch_unwind(AssertUnwindSafe(|| make(req)));
    let to = match made {
        Ok(Ok(to)) if to.site.is_some_and(|s| s.op == Op::Resume) => {
            return resume(files, req, to, declared);
        }
        Ok(Ok(to)) if to.site.is_some() => return site_write(files, req, to, declared),
        Ok(Ok(to)) => to,
        Ok(Err(answer)) => return Before::Refuse(answer),
        Err(_) => {
            return Before::Refuse(Response::internal_error(format!(
                "handler panicked on {} {}",
                req.method(),
                req.target()
            )))
        }
    };
    match files.to_file(req, to, declared.length) {
        Ok(sink) => Before::Stream { sink, limit },
        Err(answer) => Before::Refuse(answer),
    }
}

/// A write of the directory writer: the site's write rules decide it from
/// the head (`spec/site.md`, "Writes"); the backend's sink does what they
/// let it, once the credentials are checked.
fn site_write(
    files: &(impl Writes + Rules),
    req: &Request,
    mut to: ToFile,
    declared: Declared,
) -> Before {
    use super::super::site::{dav, write, Grant};
    static DEFAULTS: std::sync::LazyLock<crate::rt::Runtime> =
        std::sync::LazyLock::new(crate::rt::Runtime::default);
    let rt = files.runtime().unwrap_or(&DEFAULTS);
    let Some(asked) = to.site else {
        return Before::Refuse(Response::status_page(500));
    };
    let name = to.name.to_string_lossy().into_owned();
    let length = match declared.present {
        true => declared.length,
        false => Some(0),
    };
    let tls = files.tls();
    let asking = dav::Asking {
        root: &to.root,
        path: &to.name,
        asked,
        body: length != Some(0),
        tls,
    };
    let verified = |c: &super::super::site::Check| files.verified(c);
    let job = match asked.op {
        Op::Put | Op::Mkcol | Op::Lock | Op::Unlock => {
            dav::discard(rt, req, asking.clone(), &verified)
        }
        _ => None,
    };
    let job = match job {
        None if asked.op.dav() => Some(dav::ask(rt, req, asking, &verified)),
        job => job,
    };
    if let Some(job) = job {
        return match job.and_then(|job| files.dav(req, job)) {
            Ok(sink) => {
                let limit = Some(dav::XML_MAX);
                Before::Stream { sink, limit }
            }
            Err(mut refusal) => {
                files.count_write(refusal.status());
                write::dress_refusal(rt, req, &name, &Grant::default(), tls, &mut refusal);
                Before::Refuse(refusal)
            }
        };
    }
    // A name no write may make (too long, a control character): 400 from
    // the head, before any rule (`spec/site.md`, "The order of checks").
    let unmakeable = match (asked.op, asked.refused) {
        (Op::Put, false) => {
            write::unmakeable(to.name.as_os_str().as_encoded_bytes()).map(write::unmakeable_answer)
        }
        (Op::Delete, false) => dav::delete_depth(rt, req, &name),
        _ => None,
    };
    if let Some(mut refusal) = unmakeable {
        files.count_write(400);
        write::dress_refusal(rt, req, &name, &Grant::default(), tls, &mut refusal);
        return Before::Refuse(refusal);
    }
    match write::gate(rt, req, &name, asked, tls, length, None, |c| {
        files.verified(c)
    }) {
        Err(mut refusal) => {
            files.count_write(refusal.status());
            write::dress_refusal(rt, req, &name, &Grant::default(), tls, &mut refusal);
            Before::Refuse(refusal)
        }
        Ok(permit) => {
            let limit = permit.limit;
            to.permit = Some(Box::new(permit));
            match files.to_file(req, to, declared.length) {
                Ok(sink) => Before::Stream { sink, limit },
                Err(answer) => Before::Refuse(answer),
            }
        }
    }
}

/// A request of the tus endpoint: what it asks is decided from its head
/// (`OPTIONS`, and what no upload can take, answered now); the backend's
/// sink finds the upload and does it, once the write rules let it.
fn resume(files: &(impl Writes + Rules), req: &Request, to: ToFile, declared: Declared) -> Before {
    use super::super::site::{resume, Grant};
    static DEFAULTS: std::sync::LazyLock<crate::rt::Runtime> =
        std::sync::LazyLock::new(crate::rt::Runtime::default);
    let rt = files.runtime().unwrap_or(&DEFAULTS);
    let hidden = to.site.is_some_and(|s| s.hidden);
    let tail = req.param_bytes().unwrap_or(b"");
    let body = match declared.present {
        true => declared.length,
        false => Some(0),
    };
    match resume::ask(rt, req, tail, hidden, body) {
        Err(mut answer) => {
            resume::dress(rt, req, "", &Grant::default(), files.tls(), &mut answer);
            Before::Refuse(answer)
        }
        Ok(ask) => match files.resume(req, to.root, ask, hidden) {
            Ok(sink) => Before::Stream { sink, limit: None },
            Err(answer) => Before::Refuse(answer),
        },
    }
}

/// What a request's head says of its body: present, its length, coded.
pub(crate) fn declared(req: &Request, present: bool, length: Option<u64>) -> Declared {
    Declared {
        present,
        length,
        coded: body::coded(req),
    }
}
