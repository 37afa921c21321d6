//! The operator's rules for the directory handler's answers
//! (`spec/site.md`): one name per request (`path`), the decisions taken
//! before a file is opened (deny, `OPTIONS` and CORS preflights, Basic
//! authentication: [`gate`]), and the headers put on what comes out
//! (`dress`). Target- and protocol-independent: a backend only runs the
//! bcrypt check the gate asks for off its event loop.

pub(crate) mod basic;
mod cors;
pub(crate) mod dress;
pub(crate) mod path;

use super::request::Request;
use super::response::Response;
use crate::rt::{any_matches, AuthRule, Runtime, Users};
use bytes::Bytes;
use std::sync::Arc;

/// What the gate decided for a request of the directory handler.
pub(crate) enum Gate {
    /// Answer with this (a deny rule's 403, `OPTIONS`, a preflight, 401,
    /// 403); no file is opened.
    Answer(Response),
    /// A deny rule's 404: answered as a missing name is (the `not-found`
    /// page, never the `fallback`), so it tells nothing; never opened.
    Hide,
    /// Credentials to check off the event loop first.
    Verify(Check),
    /// Go on to the file.
    Pass(Grant),
}

/// What a request was let through with.
#[derive(Clone, Debug, Default)]
pub(crate) struct Grant {
    /// The user whose credentials were verified (for the access log).
    pub user: Option<String>,
    /// The `[[auth]]` rule they were verified for.
    pub rule: Option<usize>,
}

/// Credentials to verify against one rule's users: bcrypt, off the loop.
pub(crate) struct Check {
    pub users: Arc<Users>,
    pub generation: u64,
    pub user: String,
    pub password: Vec<u8>,
    rule: usize,
    realm: String,
}

/// What checking credentials found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Valid,
    Invalid,
    /// Too many checks wait already: 503, try again.
    Busy,
}

impl Check {
    /// The gate's decision once the check is done: through, or the answer.
    pub(crate) fn decide(self, verdict: Verdict) -> Result<Grant, Response> {
        match verdict {
            Verdict::Valid => Ok(Grant {
                user: Some(self.user),
                rule: Some(self.rule),
            }),
            Verdict::Invalid => Err(unauthorized(&self.realm)),
            Verdict::Busy => {
                let mut r = Response::status_page(503);
                r.push_header("Retry-After", Bytes::from_static(b"1"));
                Err(r)
            }
        }
    }
}

/// The decisions before the file: deny, `OPTIONS`, auth (`spec/site.md`,
/// "The order of decisions"). `name` is the normalised request name,
/// `index` the directory index; `tls`: the connection is TLS;
/// `verified`: whether the backend's table of verified credentials has
/// these.
pub(crate) fn gate(
    rt: &Runtime,
    req: &Request,
    name: &str,
    index: Option<&str>,
    tls: bool,
    verified: impl FnOnce(&Check) -> bool,
) -> Gate {
    let site = &rt.site;
    if site.deny.is_empty() && site.auth.is_empty() && req.method() != "OPTIONS" {
        return Gate::Pass(Grant::default());
    }
    let names = path::candidates(name, index);
    let matches = |patterns: &[crate::rt::Glob]| names.iter().any(|n| any_matches(patterns, n));
    if let Some(rule) = site.deny.iter().find(|r| matches(&r.patterns)) {
        return match rule.status {
            404 => Gate::Hide,
            status => Gate::Answer(Response::status_page(status)),
        };
    }
    if req.method() == "OPTIONS" {
        return Gate::Answer(match &site.cors {
            Some(cors) if cors::is_preflight(req) => cors::preflight(cors, req),
            _ => allow(),
        });
    }
    let Some((i, rule)) = site
        .auth
        .iter()
        .enumerate()
        .find(|(_, r)| matches(&r.patterns))
    else {
        return Gate::Pass(Grant::default());
    };
    if !tls && !rule.plain_http {
        return Gate::Answer(Response::status_page(403));
    }
    let Some((user, password)) = req
        .header_bytes("authorization")
        .and_then(basic::credentials)
    else {
        return Gate::Answer(unauthorized(&rule.realm));
    };
    let check = check(i, rule, user, password);
    if verified(&check) {
        return match check.decide(Verdict::Valid) {
            Ok(grant) => Gate::Pass(grant),
            Err(resp) => Gate::Answer(resp),
        };
    }
    Gate::Verify(check)
}

fn check(rule_index: usize, rule: &AuthRule, user: String, password: Vec<u8>) -> Check {
    Check {
        users: rule.users.clone(),
        generation: rule.generation,
        user,
        password,
        rule: rule_index,
        realm: rule.realm.clone(),
    }
}

/// Whether the file `sent` may go out to a request let through with
/// `grant`: not denied, and not protected by a rule the request was not
/// verified for (a `fallback` or `not-found` page may be protected where
/// the name asked for was not).
pub(crate) fn may_send(rt: &Runtime, grant: &Grant, sent: &str) -> bool {
    let site = &rt.site;
    if site.deny.iter().any(|r| any_matches(&r.patterns, sent)) {
        return false;
    }
    match site
        .auth
        .iter()
        .position(|r| any_matches(&r.patterns, sent))
    {
        None => true,
        Some(i) => grant.rule == Some(i),
    }
}

/// 204 with the directory handler's methods.
fn allow() -> Response {
    let mut r = Response::new(204);
    r.push_header("Allow", Bytes::from_static(b"GET, HEAD, OPTIONS"));
    r
}

/// 401 asking for Basic credentials.
fn unauthorized(realm: &str) -> Response {
    let mut r = Response::status_page(401);
    let challenge = format!("Basic realm=\"{realm}\", charset=\"UTF-8\"");
    r.push_header("WWW-Authenticate", Bytes::from(challenge));
    r
}
