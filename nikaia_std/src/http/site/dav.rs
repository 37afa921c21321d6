//! WebDAV class 1 under a site's rules (`spec/site.md`, "WebDAV class
//! 1"): what a `PROPFIND`, `PROPPATCH`, `MKCOL`, `COPY` or `MOVE` of the
//! directory writer is let do, decided from its head — its name and, for
//! `COPY` and `MOVE`, its Destination, each through the rules a read or a
//! write of it meets, in their order — and what `OPTIONS` says of them.
//! Target- and protocol-independent: the backend acts once the
//! credentials are checked (`linux/write/dav/`).

use super::write::{self, gate as write_gate, rule_for, Asked, Op, Permit};
use super::{gate_read, path, Check, Gate, Grant};
use crate::fs::Root;
use crate::http::request::Request;
use crate::http::response::Response;
use crate::rt::{AppleDouble, Runtime};
use bytes::Bytes;
use std::path::{Path, PathBuf};

/// WebDAV's methods beside the writer's `PUT` and `DELETE` (classes 1
/// and 2): each routed to the rules, each counted by `nikaia explain`.
pub(crate) const METHODS: [&str; 7] = [
    "PROPFIND",
    "PROPPATCH",
    "MKCOL",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
];

/// The most a `PROPFIND` or `PROPPATCH` body may hold, whatever
/// `body-limit` says.
pub(crate) const XML_MAX: u64 = 1 << 20;

/// Whether `PROPFIND` answers on `name`: the top-level `webdav`, or a
/// write rule of the name's with `webdav = true`.
pub(crate) fn reads(rt: &Runtime, name: &str) -> bool {
    let bare = name.strip_suffix('/').unwrap_or(name);
    rt.site.webdav || rule_for(rt, bare).is_some_and(|r| r.webdav)
}

/// What `OPTIONS` adds where WebDAV answers: its class, and the header
/// Microsoft's clients look for before they speak it.
pub(crate) fn options(rt: &Runtime, name: &str, resp: &mut Response) {
    if reads(rt, name) {
        let class: &'static [u8] = match rt.site.webdav_locks {
            Some(_) => b"1, 2",
            None => b"1",
        };
        resp.push_header("DAV", Bytes::from_static(class));
        resp.push_header("MS-Author-Via", Bytes::from_static(b"DAV"));
    }
}

/// A request's `Depth` (RFC 4918 §10.2); none is infinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Depth {
    Zero,
    One,
    Infinity,
}

/// A header WebDAV reads one value of: 400 when it came more than once
/// (RFC 9110 §5.3 would join them into a list this server never takes,
/// and a proxy may read the last where this reads the first).
fn single<'r>(req: &'r Request, name: &str) -> Result<Option<&'r [u8]>, Response> {
    let mut all = req.headers().filter(|(n, _)| n.eq_ignore_ascii_case(name));
    match (all.next(), all.next()) {
        (_, Some(_)) => Err(bad("a WebDAV header came more than once")),
        (first, None) => Ok(first.map(|(_, v)| v)),
    }
}

/// The `Depth` header, or the 400 of one that is not `0`, `1` or
/// `infinity`, or that came twice. Whether the method takes it for a
/// collection is asked when the name is found (§10.2: a name without
/// members ignores it).
pub(crate) fn depth(req: &Request) -> Result<Depth, Response> {
    match single(req, "depth")?.map(<[u8]>::trim_ascii) {
        None => Ok(Depth::Infinity),
        Some(b"0") => Ok(Depth::Zero),
        Some(b"1") => Ok(Depth::One),
        Some(v) if v.eq_ignore_ascii_case(b"infinity") => Ok(Depth::Infinity),
        Some(_) => Err(bad("Depth must be 0, 1 or infinity")),
    }
}

/// One name a WebDAV request acts on: its exact bytes under the root, the
/// rules' text of it, and what the rules let the request do there.
pub(crate) struct Side {
    pub path: PathBuf,
    pub permit: Box<Permit>,
}

/// A WebDAV request the rules let through from its head.
pub(crate) struct Job {
    pub op: Op,
    pub root: Root,
    /// Dot-names are shown (`--hidden`).
    pub hidden: bool,
    /// The request's name.
    pub source: Side,
    /// `COPY` and `MOVE`: the Destination.
    pub dest: Option<Side>,
    pub depth: Depth,
    /// `Overwrite` (RFC 4918 §10.6): `T` unless it says `F`.
    pub overwrite: bool,
    /// Finder's AppleDouble file, discarded (`apple-double = "discard"`):
    /// answered as if written, nothing written.
    pub discard: bool,
}

/// What [`ask`] needs of the directory writer's handler.
#[derive(Clone)]
pub(crate) struct Asking<'a> {
    pub root: &'a Root,
    pub path: &'a Path,
    pub asked: Asked,
    /// A body came (or its length is not known).
    pub body: bool,
    pub tls: bool,
}

/// Decides a WebDAV request from its head, in the order `spec/site.md`
/// gives: its name (404 for one the normaliser refused), the method's
/// rule (405), the read or write rules (deny, auth, the writer), then the
/// Destination as a write of it, then what the head itself asks
/// (`Depth`, `Overwrite`, a body `MKCOL` does not take). The refusal is
/// answered as it is (the caller dresses and counts it).
pub(crate) fn ask(
    rt: &Runtime,
    req: &Request,
    a: Asking<'_>,
    verified: &dyn Fn(&Check) -> bool,
) -> Result<Job, Response> {
    let name = a.path.to_string_lossy().into_owned();
    let op = a.asked.op;
    if a.asked.refused {
        return Err(Response::status_page(404));
    }
    let depth = depth(req)?;
    let source = match op {
        Op::Propfind | Op::Copy => read_side(rt, req, a.path, &name, op, a.tls, verified)?,
        Op::Move => {
            let asked = Asked {
                op: Op::Delete,
                ..a.asked
            };
            let bare = name.strip_suffix('/').unwrap_or(&name);
            if !rule_for(rt, bare).is_some_and(|r| r.webdav) {
                return Err(super::not_allowed(rt, &name));
            }
            write_side(rt, req, a.path, &name, asked, a.tls, verified)?
        }
        _ => {
            if let Some(why) = write::unmakeable(a.path.as_os_str().as_encoded_bytes()) {
                return Err(write::unmakeable_answer(why));
            }
            write_side(rt, req, a.path, &name, a.asked, a.tls, verified)?
        }
    };
    let dest = match op {
        Op::Copy | Op::Move => Some(destination(rt, req, a.tls, verified)?),
        _ => None,
    };
    // RFC 4918's `"T" | "F"` are case-insensitive literals.
    let overwrite = match single(req, "overwrite")?.map(<[u8]>::trim_ascii) {
        None | Some(b"T" | b"t") => true,
        Some(b"F" | b"f") => false,
        Some(_) => return Err(bad("Overwrite must be T or F")),
    };
    if op == Op::Mkcol && a.body {
        return Err(Response::status_page(415));
    }
    if let Some(dest) = &dest {
        let (from, to) = (bare(&name), bare(&dest.permit.name));
        let under = |a: &str, b: &str| {
            b.is_empty() || a.len() > b.len() && a.starts_with(b) && a[b.len()..].starts_with('/')
        };
        // Onto itself, into itself, or onto a collection that holds it
        // (which `Overwrite: T` would remove, the source with it).
        if from == to || under(to, from) || under(from, to) {
            return Err(Response::status_page(403));
        }
    }
    Ok(Job {
        op,
        root: a.root.clone(),
        hidden: a.asked.hidden,
        source,
        dest,
        depth,
        overwrite,
        discard: false,
    })
}

/// What a method's `Depth` is on a collection once the name is found to
/// be one (a name without members ignores it, RFC 4918 §10.2): `PROPFIND`
/// infinity is 403 (§9.1: refused, so that one request never walks a
/// whole tree), `COPY` takes 0 or infinity, `MOVE` and `DELETE` infinity
/// only (§9.6.1, §9.9.2: a collection goes whole, never more than the
/// client meant).
pub(crate) fn on_collection(method: &str, depth: Depth) -> Option<Response> {
    match (method, depth) {
        ("PROPFIND", Depth::Infinity) => Some(finite_depth()),
        ("COPY", Depth::One) => Some(bad("COPY of a collection takes Depth 0 or infinity")),
        ("MOVE" | "DELETE", Depth::Zero | Depth::One) => {
            Some(bad("MOVE and DELETE of a collection take Depth infinity"))
        }
        _ => None,
    }
}

/// A `DELETE` under a `webdav` rule whose `Depth` is not one: 400 from
/// the head (a collection's `Depth` is asked when it is found).
pub(crate) fn delete_depth(rt: &Runtime, req: &Request, name: &str) -> Option<Response> {
    if !rule_for(rt, bare(name)).is_some_and(|r| r.webdav) {
        return None;
    }
    depth(req).err()
}

/// Whether `name`'s last component is one of Finder's: an AppleDouble
/// file (`._NAME`) or `.DS_Store`.
pub(crate) fn apple_double(name: &[u8]) -> bool {
    let trimmed = name.strip_suffix(b"/").unwrap_or(name);
    let last = trimmed.rsplit(|&b| b == b'/').next().unwrap_or(b"");
    (last.starts_with(b"._") && last.len() > 2) || last == b".DS_Store"
}

/// A `PUT` (or `MKCOL`, `LOCK`, `UNLOCK`) of Finder's file where
/// `apple-double = "discard"` and WebDAV writes the directory it is in:
/// checked as a write of a name beside it would be, then answered
/// without a write. `None` where it is refused as a dot-name (the
/// caller's usual path).
pub(crate) fn discard(
    rt: &Runtime,
    req: &Request,
    a: Asking<'_>,
    verified: &dyn Fn(&Check) -> bool,
) -> Option<Result<Job, Response>> {
    let bytes = a.path.as_os_str().as_encoded_bytes();
    if rt.site.apple_double != AppleDouble::Discard || !apple_double(bytes) {
        return None;
    }
    // The name a write beside it would have: the dots taken off.
    let lossy = a.path.to_string_lossy();
    let lossy = lossy.trim_end_matches('/');
    let (dir, last) = lossy.rsplit_once('/').unwrap_or(("", lossy));
    // `._report.docx` stands for `report.docx`, `.DS_Store` for `DS_Store`.
    let plain = last
        .strip_prefix("._")
        .unwrap_or(last.trim_start_matches('.'));
    let stand_in = match dir {
        "" => plain.to_owned(),
        dir => format!("{dir}/{plain}"),
    };
    if !write::writable_name(&stand_in) || !rule_for(rt, &stand_in).is_some_and(|r| r.webdav) {
        return None;
    }
    let asked = Asked {
        op: Op::Put,
        refused: false,
        ..a.asked
    };
    let stand = Path::new(&stand_in);
    let side = write_side(rt, req, stand, &stand_in, asked, a.tls, verified);
    Some(side.map(|source| Job {
        op: a.asked.op,
        root: a.root.clone(),
        hidden: a.asked.hidden,
        source,
        dest: None,
        depth: Depth::Zero,
        overwrite: true,
        discard: true,
    }))
}

/// The read rules' permit for `name` (a `PROPFIND`, a `COPY`'s source):
/// 405 where WebDAV does not answer there.
fn read_side(
    rt: &Runtime,
    req: &Request,
    at: &Path,
    name: &str,
    op: Op,
    tls: bool,
    verified: &dyn Fn(&Check) -> bool,
) -> Result<Side, Response> {
    if op == Op::Propfind && !reads(rt, name) {
        return Err(super::not_allowed(rt, name));
    }
    if op == Op::Copy && !rule_for(rt, bare(name)).is_some_and(|r| r.webdav) && !reads(rt, name) {
        return Err(super::not_allowed(rt, name));
    }
    let mut gate = gate_read(rt, req, name, tls, verified);
    if matches!(&gate, Gate::Pass(g) if g.users.is_none()) && op == Op::Propfind {
        // A collection no rule protects whose members one does (`**`
        // covers every name but the served directory's own): the members'
        // rule asks for the credentials, or they would all be left out.
        let inside = match bare(name) {
            "" => "x".to_owned(),
            dir => format!("{dir}/x"),
        };
        if let probe @ (Gate::Verify(_) | Gate::Pass(_)) =
            gate_read(rt, req, &inside, tls, verified)
        {
            gate = probe;
        } else if let Gate::Answer(challenge) = gate_read(rt, req, &inside, tls, verified) {
            if challenge.status() == 401 {
                gate = Gate::Answer(challenge);
            }
        }
    }
    let permit = match gate {
        Gate::Pass(grant) => Permit::reading(op, name, grant, None, tls),
        Gate::Hide => return Err(Response::status_page(404)),
        Gate::Answer(refusal) => return Err(refusal),
        Gate::Verify(check) => {
            Permit::reading(op, name, Grant::default(), Some(Box::new(check)), tls)
        }
    };
    Ok(Side {
        path: at.to_path_buf(),
        permit: Box::new(permit),
    })
}

/// The write rules' permit for `name`.
fn write_side(
    rt: &Runtime,
    req: &Request,
    at: &Path,
    name: &str,
    asked: Asked,
    tls: bool,
    verified: &dyn Fn(&Check) -> bool,
) -> Result<Side, Response> {
    let permit = write_gate(rt, req, name, asked, tls, Some(0), None, verified)?;
    Ok(Side {
        path: at.to_path_buf(),
        permit: Box::new(permit),
    })
}

/// The Destination of a `COPY` or `MOVE` (RFC 4918 §10.3), ruled as a
/// `PUT` of it: 400 without one or for one no write may make (a dot
/// segment, a component too long, a control character), 502 for another
/// scheme, host or port than the request's, 403 for a dot-name; then the
/// write rules.
fn destination(
    rt: &Runtime,
    req: &Request,
    tls: bool,
    verified: &dyn Fn(&Check) -> bool,
) -> Result<Side, Response> {
    let raw = single(req, "destination")?.map(|v| std::str::from_utf8(v).map(str::trim));
    let Some(Ok(raw)) = raw else {
        return Err(bad("COPY and MOVE need a Destination (one, in ASCII)"));
    };
    let target = local_path(raw, req, tls)?;
    let target = target.split(['?', '#']).next().unwrap_or("");
    let Some(decoded) = crate::text::percent::percent_decode(target) else {
        return Err(bad("the Destination's path is not a name"));
    };
    // Every name is under the served directory's route (`/*path`).
    let Some(tail) = decoded.strip_prefix(b"/") else {
        return Err(bad("the Destination's path must begin with /"));
    };
    let Some(normal) = path::normalise(tail) else {
        return Err(bad("the Destination has a . or .. segment"));
    };
    if let Some(why) = write::unmakeable(&normal) {
        return Err(write::unmakeable_answer(why));
    }
    let Some(at) = crate::fs::name_from_bytes(&normal) else {
        return Err(bad("the Destination is not a name this system can make"));
    };
    let name = at.to_string_lossy().into_owned();
    let asked = Asked {
        op: match req.method() {
            "MOVE" => Op::Move,
            _ => Op::Copy,
        },
        // A dot-name is never written: 403, never hidden behind 404.
        hidden: true,
        refused: false,
    };
    let length = None;
    let permit = write_gate(rt, req, &name, asked, tls, length, None, verified)?;
    Ok(Side {
        path: at.to_path_buf(),
        permit: Box::new(permit),
    })
}

/// The path of a Destination that names this server: an absolute path
/// as it is, an absolute URI only with the request's scheme and
/// authority (502 for another: RFC 4918 §9.8.4, §9.9.4).
pub(super) fn local_path<'d>(raw: &'d str, req: &Request, tls: bool) -> Result<&'d str, Response> {
    if raw.starts_with("//") {
        return Err(bad("the Destination is a network-path reference"));
    }
    if raw.starts_with('/') {
        return Ok(raw);
    }
    let Some((scheme, rest)) = raw.split_once("://") else {
        return Err(bad("the Destination is neither an absolute URI nor a path"));
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = (&rest[..end], &rest[end..]);
    let path = if path.starts_with('/') { path } else { "/" };
    // On a plain listener TLS may have ended in front (`plain-http`): an
    // `https` Destination of the same host names this server too, its
    // port read as `https`'s.
    let https = scheme.eq_ignore_ascii_case("https");
    let ours = match tls {
        true => https,
        false => https || scheme.eq_ignore_ascii_case("http"),
    };
    let host = req.header("host").unwrap_or("");
    if !ours || !same_authority(authority, host, https) {
        let mut resp = Response::status_page(502);
        resp.log_error = None;
        return Err(resp);
    }
    Ok(path)
}

/// Whether two authorities name the same host and port, the scheme's
/// default port written or not. Userinfo is never the same.
fn same_authority(a: &str, b: &str, tls: bool) -> bool {
    let default = if tls { "443" } else { "80" };
    let split = |s: &str| -> Option<(String, String)> {
        if s.contains('@') || s.is_empty() {
            return None;
        }
        let (host, port) = match s.rfind(':') {
            Some(i) if !s[i..].contains(']') => (&s[..i], &s[i + 1..]),
            _ => (s, default),
        };
        let port = if port.is_empty() { default } else { port };
        Some((host.to_ascii_lowercase(), port.to_owned()))
    };
    matches!((split(a), split(b)), (Some(x), Some(y)) if x == y)
}

/// What a collection's walk does with a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Member {
    /// Read it (`PROPFIND`, a `COPY`'s source): as a listing shows it.
    Read { hidden: bool },
    /// Make it (a `COPY`'s or `MOVE`'s Destination).
    Create,
    /// Remove it (`DELETE`, a `MOVE`'s source).
    Remove { dir: bool },
}

/// Whether a request let through with `grant` may do `what` to the member
/// `name` of a collection it acts on, under that member's own rules:
/// deny, dot-names, the member's write rule (with `webdav`), its writers
/// and the auth rule that says who they are.
pub(crate) fn member_may(rt: &Runtime, grant: &Grant, name: &str, what: Member) -> bool {
    let bare = bare(name);
    if let Member::Read { hidden } = what {
        return (hidden || crate::http::serve::visible(bare)) && super::may_send(rt, grant, [bare]);
    }
    if rt
        .site
        .deny
        .iter()
        .any(|r| crate::rt::any_matches(&r.patterns, bare))
    {
        return false;
    }
    if !write::writable_name(bare) {
        return false;
    }
    let Some(rule) = rule_for(rt, bare).filter(|r| r.webdav) else {
        return false;
    };
    let flag = match what {
        Member::Create => rule.create,
        Member::Remove { dir: false } => rule.delete,
        Member::Remove { dir: true } => rule.delete_dirs,
        Member::Read { .. } => false,
    };
    let user = grant.user.as_deref();
    let writer = rule.anyone || user.is_some_and(|u| rule.writers.iter().any(|w| w == u));
    let auth = (rt.site.auth.iter()).find(|a| crate::rt::any_matches(&a.patterns, bare));
    let known = match auth {
        None => rule.anyone,
        Some(a) => rule.anyone || grant.users == Some(a.generation),
    };
    flag && writer && known
}

/// A name without its trailing `/`.
fn bare(name: &str) -> &str {
    name.strip_suffix('/').unwrap_or(name)
}

/// 400 saying why.
fn bad(why: &str) -> Response {
    write::unmakeable_answer(why)
}

/// 403 with RFC 4918's `propfind-finite-depth` precondition.
fn finite_depth() -> Response {
    precondition(403, "propfind-finite-depth")
}

/// An answer with RFC 4918's `DAV:error` body naming `condition`.
pub(crate) fn precondition(status: u16, condition: &str) -> Response {
    let body = crate::http::dav::xml::error_body(condition);
    let mut resp = Response::new(status).header("Content-Type", "application/xml; charset=utf-8");
    resp.body = crate::http::response::Body::Bytes(Bytes::from(body));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_compare_with_their_default_port() {
        assert!(same_authority("example.com", "EXAMPLE.com:80", false));
        assert!(same_authority("example.com:443", "example.com", true));
        assert!(!same_authority("example.com:8080", "example.com", false));
        assert!(!same_authority("evil.com", "example.com", false));
        assert!(!same_authority("u@example.com", "example.com", false));
        assert!(same_authority("[::1]:8080", "[::1]:8080", false));
        assert!(same_authority("[::1]", "[::1]:80", false));
        assert!(!same_authority("", "", false));
    }

    #[test]
    fn finder_files() {
        assert!(apple_double(b"a/._x.txt"));
        assert!(apple_double(b".DS_Store"));
        assert!(apple_double(b"d/.DS_Store/"));
        assert!(!apple_double(b"a/._"));
        assert!(!apple_double(b"a/.env"));
        assert!(!apple_double(b"a/x._y"));
    }
}
