//! Writes under a site's rules (`spec/site.md`, "Writes"): what a `PUT`
//! or `DELETE` of the directory writer is let do, decided from its head in
//! the order the spec gives — the name, deny, the write rule, auth (its
//! check off the loop), the plain-HTTP refusal, the preconditions (when
//! the write acts), the head's own faults, the size — and the answer once
//! the file system acted. Target- and protocol-independent: a backend
//! runs the check, the write and the removal off its workers.

use super::path::Candidates;
use super::{dress, Check, Grant, Verdict};
use crate::fs::{self, Conditions, Durability, Removable, Written};
use crate::http::request::Request;
use crate::http::response::Response;
use crate::http::to_file::{write_answer, Wrote};
use crate::rt::{any_matches, Runtime, WriteRule};
use crate::text::date::parse_http_date;

/// What a request asks the directory writer for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `PUT`: the body becomes the file.
    Put,
    /// `DELETE`: the name goes.
    Delete,
    /// A request of the tus endpoint (`resume.rs`): its upload's final
    /// name is checked as a `PUT` of it.
    Resume,
    /// WebDAV (`dav.rs`): `MKCOL` makes a collection.
    Mkcol,
    /// `PROPPATCH` changes a name's dead properties.
    Proppatch,
    /// `COPY`, checked at its Destination (its source is read).
    Copy,
    /// `MOVE`, checked at its Destination (its source as a `DELETE`).
    Move,
    /// `PROPFIND`: a read, under the read rules.
    Propfind,
    /// `LOCK` (`[webdav-locks]`): takes or refreshes a lock, and makes an
    /// empty file where nothing is; ruled as a `PUT` of the name.
    Lock,
    /// `UNLOCK`: releases a lock; ruled as its `LOCK` was.
    Unlock,
}

impl Op {
    /// Whether the op is one of WebDAV's (a `webdav = true` rule's).
    pub(crate) fn dav(self) -> bool {
        matches!(
            self,
            Op::Mkcol | Op::Proppatch | Op::Copy | Op::Move | Op::Propfind | Op::Lock | Op::Unlock
        )
    }
}

/// What the directory writer's handler made of a request before the rules.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Asked {
    pub op: Op,
    /// Dot-names are shown (`--hidden`): one asked for is refused 403, not
    /// hidden behind 404.
    pub hidden: bool,
    /// The normaliser refused the name (a dot segment, a hidden name, bytes
    /// the target cannot name): 404, as for a read.
    pub refused: bool,
}

/// What a request is let do, once the head passed the rules.
pub(crate) struct Permit {
    pub op: Op,
    /// The request's name under the served directory, for the answer's rules.
    pub name: String,
    pub conditions: Conditions,
    pub make_dirs: bool,
    pub removable: Removable,
    pub durability: Durability,
    /// The most the body may hold (`max-size`, else `stream-limit`).
    pub limit: Option<u64>,
    /// Owed once the preconditions held: the head's own fault (400 for
    /// `Content-Range`, 415 for `Content-Encoding`, 413 for a length past
    /// the limit).
    pub after_preconditions: Option<u16>,
    /// Credentials still to verify (bcrypt, off the loop); then
    /// [`Permit::verified`].
    pub check: Option<Box<Check>>,
    pub grant: Grant,
    pub tls: bool,
    /// The rule has `webdav = true`: a `DELETE` of a collection takes its
    /// members too.
    pub webdav: bool,
    /// The request's `If:`, where `[webdav-locks]` is set: evaluated, with
    /// the locks, when the write acts.
    pub cond: Option<std::sync::Arc<super::lock::Cond>>,
    /// The users who may write; `None`: anyone.
    writers: Option<Vec<String>>,
    /// Taken on a plain listener where the rule wants TLS: 403 once auth
    /// has spoken.
    plain_refused: bool,
    /// A resumable upload's creator (`None` inside: created without
    /// credentials): any other user is told it does not exist (404).
    owner: Option<Option<String>>,
}

/// Decides from the head what `req` may do to `name` (normalised, with a
/// trailing `/` for a directory): the permit, or the answer instead.
/// `verified`: whether the backend's table of verified credentials has
/// these. `owner`: for a request about a resumable upload, the user who
/// created it — any other is 404 once verified.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gate(
    rt: &Runtime,
    req: &Request,
    name: &str,
    asked: Asked,
    tls: bool,
    length: Option<u64>,
    owner: Option<Option<String>>,
    verified: impl FnOnce(&Check) -> bool,
) -> Result<Permit, Response> {
    let site = &rt.site;
    if asked.refused {
        return Err(Response::status_page(404));
    }
    let names = Candidates::of(name, &[]);
    let matches = |patterns: &[crate::rt::Glob]| names.iter().any(|n| any_matches(patterns, n));
    if let Some(rule) = site.deny.iter().find(|r| matches(&r.patterns)) {
        return Err(Response::status_page(rule.status));
    }
    if !writable_name(name) {
        return Err(Response::status_page(if asked.hidden { 403 } else { 404 }));
    }
    let bare = name.strip_suffix('/').unwrap_or(name);
    let Some(rule) = rule_for(rt, bare) else {
        return Err(super::not_allowed(rt, name));
    };
    let allowed = match asked.op {
        Op::Put | Op::Resume => rule.create || rule.replace,
        Op::Delete => rule.delete || rule.delete_dirs,
        Op::Mkcol => rule.webdav && rule.create,
        Op::Proppatch => rule.webdav && rule.replace,
        Op::Copy | Op::Move => rule.webdav && (rule.create || rule.replace),
        Op::Lock | Op::Unlock => {
            rule.webdav && (rule.create || rule.replace) && site.webdav_locks.is_some()
        }
        // A read: never a write rule's (`dav.rs` gates it).
        Op::Propfind => false,
    };
    if !allowed || bare.is_empty() {
        return Err(super::not_allowed(rt, name));
    }
    let mut permit = Permit {
        op: asked.op,
        name: name.to_owned(),
        conditions: conditions(req, rule),
        // A removal makes nothing, not even the directories on its way.
        make_dirs: rule.make_dirs && asked.op != Op::Delete,
        removable: Removable {
            files: rule.delete,
            dirs: rule.delete_dirs,
        },
        durability: rule.durability,
        limit: rule.max_size.or(Some(rt.stream_limit)),
        after_preconditions: None,
        check: None,
        grant: Grant::default(),
        tls,
        webdav: rule.webdav,
        cond: super::lock::cond(rt, req, tls)?,
        writers: (!rule.anyone).then(|| rule.writers.clone()),
        plain_refused: !tls && !rule.plain_http,
        owner,
    };
    if matches!(asked.op, Op::Put | Op::Resume) {
        permit.after_preconditions = head_fault(req, length, permit.limit);
    }
    match site.auth.iter().find(|r| matches(&r.patterns)) {
        // Fail closed: writers are named, and nothing here names anyone.
        None if !rule.anyone => Err(Response::status_page(403)),
        None => permit.settle(),
        Some(auth) if !tls && !auth.plain_http => Err(Response::status_page(403)),
        Some(auth) => {
            let check = Check::of(auth, req)?;
            if verified(&check) {
                return permit.verified(check, Verdict::Valid);
            }
            permit.check = Some(Box::new(check));
            Ok(permit)
        }
    }
}

impl Permit {
    /// The permit of a read a WebDAV request makes (`PROPFIND`, a
    /// `COPY`'s source), let through by the read rules with `grant`, or
    /// with `check` still to verify: no writer to be, nothing to write.
    pub(crate) fn reading(
        op: Op,
        name: &str,
        grant: Grant,
        check: Option<Box<Check>>,
        tls: bool,
    ) -> Permit {
        Permit {
            op,
            name: name.to_owned(),
            conditions: Conditions::default(),
            make_dirs: false,
            removable: Removable::default(),
            durability: Durability::default(),
            limit: None,
            after_preconditions: None,
            check,
            grant,
            tls,
            webdav: false,
            cond: None,
            writers: None,
            plain_refused: false,
            owner: None,
        }
    }

    /// Goes on once the credentials were checked: through, or the answer
    /// (401, 503; 403 for a user who is not one of the rule's writers, or
    /// on a plain listener the rule refuses).
    pub(crate) fn verified(mut self, check: Check, verdict: Verdict) -> Result<Permit, Response> {
        self.check = None;
        self.grant = check.decide(verdict)?;
        self.settle()
    }

    /// What comes after auth: the writer, then the listener.
    fn settle(self) -> Result<Permit, Response> {
        let user = self.grant.user.as_deref();
        if self.owner.as_ref().is_some_and(|o| o.as_deref() != user) {
            return Err(Response::status_page(404));
        }
        let writer = match &self.writers {
            None => true,
            Some(writers) => user.is_some_and(|u| writers.iter().any(|w| w == u)),
        };
        if !writer || self.plain_refused {
            return Err(Response::status_page(403));
        }
        Ok(self)
    }

    /// The guard the file system acts under: no link followed, the
    /// `protected` files refused.
    pub(crate) fn guard(&self, protected: Vec<(u64, u64)>) -> fs::Guard {
        fs::Guard {
            make_dirs: self.make_dirs,
            protected,
            held: Default::default(),
        }
    }
}

/// The write rule that governs `name` (without a trailing `/`): the first
/// that matches it. A sidecar (`NAME.gz`, `.br`, `.zst`) is governed by the
/// rule of `NAME`, and only if that rule matches the sidecar too: it is
/// writable only where the file it stands for is.
pub(crate) fn rule_for<'r>(rt: &'r Runtime, name: &str) -> Option<&'r WriteRule> {
    let first = |n: &str| rt.site.write.iter().find(|r| any_matches(&r.patterns, n));
    let original = [".br", ".zst", ".gz"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext).filter(|o| !o.is_empty()));
    match original {
        Some(original) => first(original).filter(|r| any_matches(&r.patterns, name)),
        None => first(name),
    }
}

/// Whether a name may ever be written: no component is a dot-name
/// (`.well-known` included: an uploader must never plant an ACME token or
/// a `.htaccess`-like file another tool reads).
pub(crate) fn writable_name(name: &str) -> bool {
    name.split('/').all(|c| !c.starts_with('.'))
}

/// The methods beyond a read's that `name` (normalised, with a trailing
/// `/` for a directory) allows: `PROPFIND` where WebDAV reads are on,
/// and what its write rule allows, never on the served directory itself
/// nor on a dot-name. The one source of every `Allow` (`site::allow`).
pub(crate) fn allowed(rt: &Runtime, name: &str) -> Vec<&'static str> {
    let bare = name.strip_suffix('/').unwrap_or(name);
    let mut out = Vec::new();
    if super::dav::reads(rt, name) {
        out.push("PROPFIND");
    }
    if bare.is_empty() || !writable_name(bare) {
        return out;
    }
    let rule = rule_for(rt, bare);
    out.extend_from_slice(methods(rule));
    if let Some(r) = rule.filter(|r| r.webdav) {
        out.extend_from_slice(&["PROPPATCH", "COPY", "MOVE"][usize::from(!r.replace)..]);
        if r.create {
            out.push("MKCOL");
        }
        if rt.site.webdav_locks.is_some() && (r.create || r.replace) {
            out.extend_from_slice(&["LOCK", "UNLOCK"]);
        }
    }
    out
}

/// The longest name component a file system here holds (`NAME_MAX`).
const COMPONENT_MAX: usize = 255;
/// The longest name a read opens (`PATH_MAX` less its NUL).
const NAME_MAX: usize = 4095;

/// Why no write may make `name` (its exact bytes, normalised), or `None`
/// when one may: a component longer than any file system takes, a name
/// longer than any open takes, or a control character (U+0000–U+001F,
/// U+007F, and U+0080–U+009F where the name is UTF-8) — a name that would
/// break the listings, logs and terminals that show it. Every write that
/// makes a name asks it from the head: a `PUT`'s target, a resumable
/// upload's final name, and any later one (a WebDAV `Destination`). Reads
/// and removals of names that exist never ask it.
pub(crate) fn unmakeable(name: &[u8]) -> Option<&'static str> {
    if name.len() > NAME_MAX {
        return Some("the name is longer than a file's name can be");
    }
    if name.split(|&b| b == b'/').any(|c| c.len() > COMPONENT_MAX) {
        return Some("a part of the name is longer than 255 bytes");
    }
    let control = name
        .utf8_chunks()
        .any(|chunk| chunk.valid().chars().any(char::is_control));
    control.then_some("the name holds a control character")
}

/// The 400 of a name no write may make, saying why.
pub(crate) fn unmakeable_answer(why: &str) -> Response {
    let mut resp = Response::new(400).header("Content-Type", "text/plain; charset=utf-8");
    resp.body =
        crate::http::response::Body::Bytes(bytes::Bytes::from(format!("400 Bad Request: {why}\n")));
    resp
}

/// The writes a rule allows.
fn methods(rule: Option<&WriteRule>) -> &'static [&'static str] {
    match rule {
        None => &[],
        Some(r) if (r.create || r.replace) && (r.delete || r.delete_dirs) => &["PUT", "DELETE"],
        Some(r) if r.create || r.replace => &["PUT"],
        Some(_) => &["DELETE"],
    }
}

/// The 405 of a name no write rule covers (a target without a runtime
/// file).
pub(crate) fn no_rule() -> Response {
    static NONE: std::sync::LazyLock<Runtime> = std::sync::LazyLock::new(Runtime::default);
    super::not_allowed(&NONE, "")
}

/// The request's preconditions, and what the rule lets a write do.
fn conditions(req: &Request, rule: &WriteRule) -> Conditions {
    Conditions {
        create: rule.create,
        replace: rule.replace,
        if_match: req.header("if-match").map(str::to_owned),
        if_none_match: req.header("if-none-match").map(str::to_owned),
        if_unmodified_since: req.header("if-unmodified-since").and_then(parse_http_date),
    }
}

/// What a `PUT`'s head says that no write can take: a part of a file
/// (`Content-Range`, RFC 9110 §14.5: never written as if it were the
/// whole), a coded body, a length past the limit.
fn head_fault(req: &Request, length: Option<u64>, limit: Option<u64>) -> Option<u16> {
    if req.header_bytes("content-range").is_some() {
        return Some(400);
    }
    let coded = req
        .header_bytes("content-encoding")
        .is_some_and(|v| !v.trim_ascii().eq_ignore_ascii_case(b"identity"));
    if coded {
        return Some(415);
    }
    match (length, limit) {
        (Some(length), Some(limit)) if length > limit => Some(413),
        _ => None,
    }
}

/// The answer once the file system acted (`done`: for a `PUT`, the file
/// written), dressed by the site's rules.
pub(crate) fn answer(
    rt: &Runtime,
    req: &Request,
    permit: &Permit,
    done: Result<Option<Written>, fs::Error>,
) -> Response {
    let wrote = match permit.op {
        Op::Delete => Wrote::Removed,
        _ => Wrote::Made,
    };
    let mut resp = write_answer(req, &permit.name, wrote, done);
    dress_answer(rt, req, permit, &mut resp);
    resp
}

/// A refusal from the head, or any answer about a write, dressed as the
/// directory handler's answers are.
pub(crate) fn dress_answer(rt: &Runtime, req: &Request, permit: &Permit, resp: &mut Response) {
    dress_refusal(rt, req, &permit.name, &permit.grant, permit.tls, resp);
}

/// The site's headers on an answer about the write of `name`.
pub(crate) fn dress_refusal(
    rt: &Runtime,
    req: &Request,
    name: &str,
    grant: &Grant,
    tls: bool,
    resp: &mut Response,
) {
    resp.user = grant.user.as_deref().map(Box::from);
    if rt.site.is_empty() {
        return;
    }
    let subject = dress::Subject {
        name,
        sent: None,
        file_body: false,
        listing: false,
        tls,
    };
    dress::dress(rt, req, grant, &subject, resp);
}

/// The paths the runtime file names, which no write may touch: the
/// runtime file itself, users files, certificates and keys, ACME's
/// storage, the logs and the stats socket. A backend takes their identity
/// when a write acts.
pub(crate) fn own_files(rt: &Runtime) -> Vec<std::path::PathBuf> {
    let mut out: Vec<std::path::PathBuf> = Vec::new();
    out.extend(rt.source.clone());
    out.extend(rt.site.auth.iter().map(|a| a.htpasswd.clone()));
    out.extend(rt.tls_cert.clone());
    out.extend(rt.tls_key.clone());
    for pair in &rt.certificates {
        out.push(pair.cert.clone());
        out.push(pair.key.clone());
    }
    if let Some(acme) = &rt.acme {
        out.push(acme.storage.clone());
    }
    for log in [&rt.access_log, &rt.error_log] {
        if let crate::rt::LogTarget::File(path) = log {
            out.push(path.clone());
        }
    }
    out.extend(rt.stats_socket.clone());
    out
}

/// The names under the served directory the runtime file names (the
/// `not-found` and `fallback` pages): never writable either.
pub(crate) fn own_names(rt: &Runtime) -> Vec<&str> {
    [&rt.not_found, &rt.fallback]
        .into_iter()
        .filter_map(|n| n.as_deref())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::unmakeable;

    #[test]
    fn names_no_write_may_make() {
        let longest = "y".repeat(255);
        for ok in [
            &b"a.txt"[..],
            b"drop/caf\xe9.txt",
            b"d\xff\x85/x",
            "ünï/日本.txt".as_bytes(),
            longest.as_bytes(),
        ] {
            assert_eq!(unmakeable(ok), None, "{ok:?}");
        }
        let long = format!("d/{}/x", "x".repeat(256));
        let deep = "d/".repeat(2048);
        for bad in [
            long.as_bytes(),
            deep.as_bytes(),
            b"a\nb",
            b"a\rb",
            b"tab\t",
            b"\x1b[31m",
            b"del\x7f",
            b"nul\0",
            "next\u{85}line".as_bytes(),
            b"caf\xe9\x01",
        ] {
            assert!(unmakeable(bad).is_some(), "{bad:?}");
        }
    }
}
