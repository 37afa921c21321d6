//! The headers the operator's rules put on a directory handler's answer
//! (`spec/site.md`): the security preset, then the header rules in file
//! order, then CORS.

use super::Grant;
use crate::http::request::Request;
use crate::http::response::Response;
use crate::rt::{any_matches, Runtime};
use bytes::Bytes;
use std::borrow::Cow;

/// What an answer is about, for its rules.
pub(crate) struct Subject<'a> {
    /// The request's name under the served directory (normalised).
    pub name: &'a str,
    /// The name of the file the answer is about (its bytes, or its 304,
    /// 412, 416), when there is one.
    pub sent: Option<&'a str>,
    /// The body is that file's bytes (not a status page or a listing).
    pub file_body: bool,
    /// The answer is a listing the server wrote (its own policy, never
    /// the sandbox).
    pub listing: bool,
    /// The connection is TLS.
    pub tls: bool,
}

/// Puts the site's headers on `resp`.
pub(crate) fn dress(
    rt: &Runtime,
    req: &Request,
    grant: &Grant,
    at: &Subject<'_>,
    resp: &mut Response,
) {
    let site = &rt.site;
    if let Some(preset) = &site.security_headers {
        set(
            resp,
            "X-Content-Type-Options",
            Bytes::from_static(b"nosniff"),
        );
        let policy = Bytes::from_static(b"strict-origin-when-cross-origin");
        set(resp, "Referrer-Policy", policy);
        if at.tls {
            let mut hsts = format!("max-age={}", preset.hsts_max_age.as_secs());
            if preset.hsts_subdomains {
                hsts.push_str("; includeSubDomains");
            }
            set(resp, "Strict-Transport-Security", Bytes::from(hsts));
        }
    }
    let kept_by_none = resp
        .get_header("cache-control")
        .is_some_and(|v| v.to_ascii_lowercase().contains("no-store"));
    if grant.user.is_some() && !kept_by_none {
        // A protected answer is the user's: no shared cache keeps it (one
        // no cache may keep, such as a tus offset, stays so).
        set(resp, "Cache-Control", Bytes::from_static(b"private"));
    }
    let name = at
        .sent
        .unwrap_or(at.name.strip_suffix('/').unwrap_or(at.name));
    let error = resp.status >= 400;
    for rule in &site.headers {
        if (error && !rule.always) || !any_matches(&rule.patterns, name) {
            continue;
        }
        let representation = |n: &str| {
            n.eq_ignore_ascii_case("content-type") || n.eq_ignore_ascii_case("content-disposition")
        };
        for &(n, ref v) in &rule.set {
            if at.file_body || !representation(n) {
                set(resp, n, v.clone());
            }
        }
        for &(n, ref v) in &rule.add {
            if at.file_body || !representation(n) {
                resp.headers.push((Cow::Borrowed(n), v.clone()));
            }
        }
        for n in rule
            .remove
            .iter()
            .filter(|n| at.file_body || !representation(n))
        {
            resp.headers.retain(|(h, _)| !h.eq_ignore_ascii_case(n));
            if n.eq_ignore_ascii_case("content-type") {
                resp.default_type = None;
            }
        }
    }
    if let Some(sent) = at.sent {
        sandbox(rt, sent, at.listing, resp);
    }
    if let Some(cors) = &site.cors {
        super::cors::dress(cors, req, resp);
    }
}

/// A file someone may have uploaded is served so that it cannot act as the
/// site (`spec/site.md`, "Writes"): `Content-Security-Policy: sandbox`
/// (no script, no forms, an opaque origin: an uploaded page cannot read
/// the site or use the credentials a browser sends it by itself) and
/// `nosniff`, on every answer about a file a write rule covers, unless the
/// rule says its content is trusted. Put after the header rules, so no
/// rule takes them off; a policy a rule set stays, and both apply. A
/// `listing` of a directory a rule covers is the server's own page, with
/// a policy of its own that lets its upload control run (`render.rs`):
/// `nosniff` only.
fn sandbox(rt: &Runtime, sent: &str, listing: bool, resp: &mut Response) {
    let Some(rule) = super::write::rule_for(rt, sent) else {
        return;
    };
    if rule.trusted {
        return;
    }
    if !listing {
        resp.headers.push((
            Cow::Borrowed("Content-Security-Policy"),
            Bytes::from_static(b"sandbox"),
        ));
    }
    set(
        resp,
        "X-Content-Type-Options",
        Bytes::from_static(b"nosniff"),
    );
}

/// Replaces every header `name` with one of `value`.
fn set(resp: &mut Response, name: &'static str, value: Bytes) {
    resp.headers.retain(|(h, _)| !h.eq_ignore_ascii_case(name));
    resp.headers.push((Cow::Borrowed(name), value));
}

/// Adds `token` to the answer's `Vary`.
pub(super) fn vary(resp: &mut Response, token: &'static str) {
    match resp
        .headers
        .iter_mut()
        .find(|(h, _)| h.eq_ignore_ascii_case("vary"))
    {
        Some((_, value)) => {
            let has = value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()));
            if !has {
                let mut joined = value.to_vec();
                joined.extend_from_slice(b", ");
                joined.extend_from_slice(token.as_bytes());
                *value = Bytes::from(joined);
            }
        }
        None => resp
            .headers
            .push((Cow::Borrowed("Vary"), Bytes::from_static(token.as_bytes()))),
    }
}
