//! What a listing offers its reader for writes in the directory
//! (`spec/site.md`, "Writes", "The listing"): the upload control to a
//! reader who may create there, a link to sign in to one who could with
//! credentials not shown, and the answer of that link (`?sign-in`): 401
//! until a writer's credentials verify, then back to the listing. The
//! credentials a read offers are checked as a write's would be (off the
//! loop, through the table of verified ones) and never refused: the read
//! itself does not need them.

use super::path::Candidates;
use super::write::{rule_for, writable_name};
use super::{unauthorized, Check, Grant, Verdict};
use crate::http::file::Upload;
use crate::http::request::Request;
use crate::http::response::Response;
use crate::rt::{any_matches, AuthRule, Runtime, WriteRule};
use bytes::Bytes;

/// What the listing of a directory does, once its reader is known.
pub(crate) enum Listing {
    /// The listing, offering this.
    Offer(Upload),
    /// Credentials to check first (bcrypt, off the loop); then
    /// [`checked`].
    Verify(Check),
    /// Instead of the listing (`?sign-in`): 401 (503 when the verifiers
    /// are busy), or 303 back to it.
    Answer(Response),
}

/// Who may create in a listed directory, on this listener: the write rule
/// of a name inside it, and the auth rule a write of that name finds
/// (`writes-only` ones included; `None`: the rule lets anyone, and no
/// credentials are asked).
struct Uploads<'r> {
    rule: &'r WriteRule,
    auth: Option<&'r AuthRule>,
}

impl<'r> Uploads<'r> {
    /// `None` where no one may create in `dir` (a listing's name, with or
    /// without its trailing `/`) on this listener: no rule creates there,
    /// the rule or its auth rule refuses a plain listener, or the rule
    /// names writers no auth rule verifies (every write is 403). Asked of
    /// a name inside it, as a write would be (`write::gate`).
    fn of(rt: &'r Runtime, dir: &str, tls: bool) -> Option<Uploads<'r>> {
        let dir = dir.trim_end_matches('/');
        let inside = match dir {
            "" | "." => "upload".to_owned(),
            dir => format!("{dir}/upload"),
        };
        let rule = rule_for(rt, &inside).filter(|r| r.create && writable_name(&inside))?;
        if !tls && !rule.plain_http {
            return None;
        }
        let names = Candidates::of(&inside, &[]);
        let auth =
            (rt.site.auth.iter()).find(|a| names.iter().any(|n| any_matches(&a.patterns, n)));
        match auth {
            None if !rule.anyone => None,
            Some(a) if !tls && !a.plain_http => None,
            auth => Some(Uploads { rule, auth }),
        }
    }

    fn writer(&self, user: &str) -> bool {
        self.rule.anyone || self.rule.writers.iter().any(|w| w == user)
    }
}

/// What the listing of `dir` offers a reader let through with `grant`, or
/// what answers instead of it (`?sign-in`). Credentials verified on the
/// way in against the users a write here needs count at once; others the
/// request offers are checked (`verified`: whether the backend's table of
/// verified credentials has them; else [`Listing::Verify`]).
pub(crate) fn listing(
    rt: &Runtime,
    req: &Request,
    grant: &mut Grant,
    dir: &str,
    tls: bool,
    verified: impl FnOnce(&Check) -> bool,
) -> Listing {
    let signing_in = sign_in_asked(req);
    let (uploads, auth) = match asking(rt, dir, tls, signing_in) {
        Ok(found) => found,
        Err(listing) => return listing,
    };
    let user = grant.user.as_deref();
    if grant.users == Some(auth.generation) && user.is_some_and(|u| uploads.writer(u)) {
        return done(Upload::Control, signing_in);
    }
    match Check::of(auth, req) {
        Err(unauthorized) if signing_in => Listing::Answer(unauthorized),
        Err(_) => Listing::Offer(Upload::SignIn),
        Ok(check) if verified(&check) => checked(rt, req, grant, dir, tls, check, Verdict::Valid),
        Ok(check) => Listing::Verify(check),
    }
}

/// [`listing`] once the credentials it sent to be checked were: a
/// writer's (for the users a write here needs under the runtime current
/// now) get the control, and the grant names them (the access log, and
/// `Cache-Control: private`: the page is theirs); anyone else the listing
/// with its sign-in link, or 401 for `?sign-in`.
pub(crate) fn checked(
    rt: &Runtime,
    req: &Request,
    grant: &mut Grant,
    dir: &str,
    tls: bool,
    check: Check,
    verdict: Verdict,
) -> Listing {
    let signing_in = sign_in_asked(req);
    let (uploads, auth) = match asking(rt, dir, tls, signing_in) {
        Ok(found) => found,
        Err(listing) => return listing,
    };
    let writer = verdict == Verdict::Valid
        && check.generation == auth.generation
        && uploads.writer(&check.user);
    if writer {
        grant.user = Some(check.user);
        return done(Upload::Control, signing_in);
    }
    if !signing_in {
        return Listing::Offer(Upload::SignIn);
    }
    Listing::Answer(match verdict {
        // 503, try again.
        Verdict::Busy => (check.decide(verdict).err()).unwrap_or_else(|| unauthorized(&auth.realm)),
        // A wrong password, or a user who is not a writer: asked again.
        _ => unauthorized(&auth.realm),
    })
}

/// Who may create in `dir` and the auth rule that says who they are, or
/// the listing where no credentials decide it (no one may create there,
/// or anyone may).
fn asking<'r>(
    rt: &'r Runtime,
    dir: &str,
    tls: bool,
    signing_in: bool,
) -> Result<(Uploads<'r>, &'r AuthRule), Listing> {
    let Some(uploads) = Uploads::of(rt, dir, tls) else {
        return Err(done(Upload::Off, signing_in));
    };
    let Some(auth) = uploads.auth else {
        return Err(done(Upload::Control, signing_in));
    };
    Ok((uploads, auth))
}

/// The listing offering `upload`, or for `?sign-in` the way back to it.
fn done(upload: Upload, signing_in: bool) -> Listing {
    if !signing_in {
        return Listing::Offer(upload);
    }
    // Relative to `DIR/?sign-in`: the listing itself, whatever bytes its
    // path holds.
    let mut back = Response::status_page(303);
    back.push_header("Location", Bytes::from_static(b"./"));
    Listing::Answer(back)
}

/// Whether the request is the listing's sign-in link: a query parameter
/// `sign-in` (with or without a value).
fn sign_in_asked(req: &Request) -> bool {
    (req.query().unwrap_or("").split('&'))
        .any(|p| p.split_once('=').map_or(p, |(k, _)| k) == "sign-in")
}
