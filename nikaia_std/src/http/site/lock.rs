//! WebDAV class 2 under a site's rules (`spec/site.md`, "WebDAV class 2:
//! locks"), its parts decided from the head: the `If:` header read whole
//! with the names its tags give under the served directory, and what
//! `LOCK` and `UNLOCK` ask. Target- and protocol-independent: the writes
//! wing decides with the locks when the write acts (`linux/write/locks/`).

use super::path;
use crate::http::dav::cond::{self, If};
use crate::http::dav::xml;
use crate::http::request::Request;
use crate::http::response::Response;
use crate::rt::Runtime;
use std::sync::Arc;

/// A request's `If:` (RFC 4918 §10.4), and each of its tags as a name
/// under the served directory; and the token of a `Lock-Token` header
/// (MS-WDV §2.2.4.2: Office puts its lock's token there on a `PUT`).
#[derive(Debug)]
pub(crate) struct Cond {
    header: Option<If>,
    /// Each Resource-Tag, and the name it gives (no `/` at either end);
    /// `None` for a tag of another server or no name a request can give.
    tags: Vec<(String, Option<Vec<u8>>)>,
    /// The `Lock-Token` header's token.
    lock_token: Option<String>,
}

impl Cond {
    /// The name `tag` gives (`None`: not this server's).
    pub(crate) fn name_of(&self, tag: &str) -> Option<&[u8]> {
        let found = self.tags.iter().find(|(t, _)| t == tag);
        found.and_then(|(_, name)| name.as_deref())
    }

    /// The tokens the request submits: those `If:` submits, and the
    /// `Lock-Token` header's.
    pub(crate) fn submitted(&self) -> Vec<&str> {
        let mut tokens = self.header.as_ref().map_or_else(Vec::new, If::submitted);
        if let Some(t) = self.lock_token.as_deref().filter(|t| !tokens.contains(t)) {
            tokens.push(t);
        }
        tokens
    }

    /// Whether `If:` is true (no `If:` is); see [`If::holds`].
    pub(crate) fn holds<'s>(
        &self,
        about: &mut dyn FnMut(Option<&str>) -> Option<cond::State<'s>>,
    ) -> bool {
        self.header.as_ref().is_none_or(|h| h.holds(about))
    }
}

/// The request's `If:` and `Lock-Token`, where `[webdav-locks]` is set:
/// `None` without either (or without the table: a class-1 server reads
/// neither), 400 for an `If:` that is not RFC 4918's grammar or that came
/// twice. An `UNLOCK`'s `Lock-Token` is its own (`unlock_token`), and a
/// `Lock-Token` that is not one Coded-URL submits nothing.
pub(crate) fn cond(rt: &Runtime, req: &Request, tls: bool) -> Result<Option<Arc<Cond>>, Response> {
    if rt.site.webdav_locks.is_none() {
        return Ok(None);
    }
    let lock_token = match req.method() {
        "UNLOCK" => None,
        _ => {
            let mut all = req
                .headers()
                .filter(|(n, _)| n.eq_ignore_ascii_case("lock-token"));
            match (all.next(), all.next()) {
                (Some((_, v)), None) => cond::lock_token(v).map(str::to_owned),
                _ => None,
            }
        }
    };
    let mut all = req.headers().filter(|(n, _)| n.eq_ignore_ascii_case("if"));
    let header = match (all.next(), all.next()) {
        (None, _) => None,
        (Some(_), Some(_)) => return Err(bad("one If header, not several")),
        (Some((_, value)), None) => Some(cond::parse(value).map_err(|cond::Bad(why)| bad(why))?),
    };
    if header.is_none() && lock_token.is_none() {
        return Ok(None);
    }
    let mut tags: Vec<(String, Option<Vec<u8>>)> = Vec::new();
    let lists = header.iter().flat_map(|h| &h.lists);
    for tag in lists.filter_map(|l| l.tag.as_ref()) {
        if !tags.iter().any(|(t, _)| t == tag) {
            tags.push((tag.clone(), tag_name(tag, req, tls)));
        }
    }
    Ok(Some(Arc::new(Cond {
        header,
        tags,
        lock_token,
    })))
}

/// The name a Resource-Tag gives under the served directory: an absolute
/// path, or an absolute URI of this server's scheme and authority (as a
/// Destination is read), percent-decoded and normalised.
fn tag_name(tag: &str, req: &Request, tls: bool) -> Option<Vec<u8>> {
    let path = super::dav::local_path(tag, req, tls).ok()?;
    let path = path.split(['?', '#']).next().unwrap_or("");
    let decoded = crate::text::percent::percent_decode(path)?;
    let tail = decoded.strip_prefix(b"/")?;
    let normal = path::normalise(tail)?;
    Some(bare(&normal).to_vec())
}

/// A name without a `/` at either end.
pub(crate) fn bare(name: &[u8]) -> &[u8] {
    let start = name.iter().position(|&b| b != b'/').unwrap_or(name.len());
    let end = name
        .iter()
        .rposition(|&b| b != b'/')
        .map_or(start, |i| i + 1);
    &name[start..end]
}

/// What a `LOCK` asks, from its head: a new lock (a body) or a refresh
/// (none, RFC 4918 §9.10.2); its `Depth` (0 or infinity, none is
/// infinity: 400 for `1`); its `Timeout`, capped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LockAsk {
    pub infinity: bool,
    pub timeout: u64,
}

/// A `LOCK`'s `Depth` and `Timeout`.
pub(crate) fn lock_ask(rt: &Runtime, req: &Request) -> Result<LockAsk, Response> {
    let max = rt
        .site
        .webdav_locks
        .as_ref()
        .map_or(3600, |l| l.max_timeout.as_secs());
    let infinity = match super::dav::depth(req)? {
        super::dav::Depth::Zero => false,
        super::dav::Depth::Infinity => true,
        super::dav::Depth::One => return Err(bad("a LOCK's Depth is 0 or infinity")),
    };
    let timeout = cond::timeout(req.header_bytes("timeout"), max);
    Ok(LockAsk { infinity, timeout })
}

/// An `UNLOCK`'s `Lock-Token` (RFC 4918 §10.5): 400 without one.
pub(crate) fn unlock_token(req: &Request) -> Result<String, Response> {
    let mut all = req
        .headers()
        .filter(|(n, _)| n.eq_ignore_ascii_case("lock-token"));
    match (all.next(), all.next()) {
        (Some((_, v)), None) => match cond::lock_token(v) {
            Some(t) => Ok(t.to_owned()),
            None => Err(bad("the Lock-Token is not a Coded-URL")),
        },
        _ => Err(bad("an UNLOCK needs one Lock-Token")),
    }
}

/// 423 with RFC 4918's `lock-token-submitted`, naming the roots of the
/// locks whose tokens the request did not submit (§7.5, §16).
pub(crate) fn locked(roots: &[String]) -> Response {
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    xml(423, xml::error_hrefs("lock-token-submitted", &roots))
}

/// An answer with an XML body.
pub(crate) fn xml(status: u16, body: impl Into<bytes::Bytes>) -> Response {
    let mut resp = Response::new(status).header("Content-Type", "application/xml; charset=utf-8");
    resp.body = crate::http::response::Body::Bytes(body.into());
    resp
}

fn bad(why: &str) -> Response {
    super::write::unmakeable_answer(why)
}
