//! How a found file is headed: its status (200, 206, 304, 412, 416, or the
//! handler's own), its validators, type, coding and caching headers, and
//! how its body travels.

use super::resolve::{Ask, Source};
use super::{About, Pages, Phase, Plan, Prepared, Target};
use crate::fs::Identity;
use crate::http::conditional::{preconditions, span, Precondition, Span, Validators};
use crate::http::port::{Reads, Rules};
use crate::http::response::Response;
use crate::rt::Coding;
use bytes::Bytes;
use std::path::Path;
use std::sync::Arc;

/// What a file's headers need, derived once from its name and identity;
/// the kept table keeps it beside the mapping so a hit formats nothing,
/// and shares it (a hit's copy is one reference count).
#[derive(Clone)]
pub(crate) struct Meta(Arc<Material>);

pub(crate) struct Material {
    pub(super) validators: Validators,
    pub(super) content_type: &'static str,
    /// For a name ending `.br`, `.zst` or `.gz`: its validators when it is
    /// sent as the sidecar of the name without that ending (an ETag of its
    /// own, the coding in it).
    pub(super) coded: Option<Validators>,
}

impl Meta {
    pub(crate) fn of(name: &Path, id: &Identity) -> Meta {
        let ext = name.extension().and_then(|e| e.to_str());
        let coding = Coding::ALL.into_iter().find(|c| Some(c.extension()) == ext);
        Meta(Arc::new(Material {
            validators: Validators::of(id),
            content_type: content_type(name),
            coded: coding.map(|c| Validators::coded(id, c)),
        }))
    }
}

impl std::ops::Deref for Meta {
    type Target = Material;
    fn deref(&self) -> &Material {
        &self.0
    }
}

/// How a file answer is headed: validators and type, and the coding when a
/// sidecar is sent.
pub(super) struct Head<'a> {
    pub(super) validators: &'a Validators,
    pub(super) content_type: &'static str,
    pub(super) coding: Option<Coding>,
    pub(super) vary: bool,
}

pub(super) fn status_only(resp: Response) -> Prepared {
    let length = resp.body.len();
    Prepared {
        resp,
        length,
        plan: Plan::None,
        about: None,
    }
}

/// Status, headers and body plan for a file (or sidecar) whose identity is
/// `id`, and, where the site's rules will read it, what the answer is
/// about: that file (named as asked, for a sidecar), its bytes unless the
/// answer is 412 or 416.
pub(super) fn build(
    ask: &Ask<'_, impl Reads + Rules>,
    target: &Target,
    head: Head<'_>,
    id: Identity,
    source: Source,
) -> Prepared {
    let mut prepared = decide(ask, target, head, id, source);
    // Only the site's rules read it (`http::site`).
    let rules =
        ask.file.pages != Pages::Off && ask.files.runtime().is_some_and(|rt| !rt.site.is_empty());
    if rules {
        prepared.about = Some(About {
            name: target.name.clone(),
            file_body: !matches!(prepared.resp.status, 412 | 416),
            listing: false,
        });
    }
    prepared
}

fn decide(
    ask: &Ask<'_, impl Reads + Rules>,
    target: &Target,
    head: Head<'_>,
    id: Identity,
    source: Source,
) -> Prepared {
    let Ask {
        files,
        req,
        user,
        file,
    } = *ask;
    let v = head.validators;
    let status = match target.phase {
        Phase::NotFound { .. } => 404,
        Phase::Asked | Phase::Index(_) | Phase::Fallback { .. } => user.status,
    };
    let mut resp = Response::new(status);
    resp.headers.reserve(user.headers.len() + 6);
    resp.headers.extend(user.headers.iter().cloned());
    for (name, value) in [("Last-Modified", &v.last_modified), ("ETag", &v.etag)] {
        if resp.get_header(name).is_none() {
            resp.push_header(name, value.clone());
        }
    }
    if let Some(coding) = head.coding {
        resp.push_header(
            "Content-Encoding",
            Bytes::from_static(coding.token().as_bytes()),
        );
    }
    let user_varies = user
        .get_header("vary")
        .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding"));
    let by_accept = matches!(
        target.phase,
        Phase::Fallback { by_accept: true } | Phase::NotFound { by_accept: true }
    );
    match (head.vary && !user_varies, by_accept) {
        (true, false) => resp.push_header("Vary", Bytes::from_static(b"Accept-Encoding")),
        (true, true) => resp.push_header("Vary", Bytes::from_static(b"Accept-Encoding, Accept")),
        (false, true) => resp.push_header("Vary", Bytes::from_static(b"Accept")),
        (false, false) => {}
    }
    resp.default_type = Some(head.content_type);
    if status != 200 {
        // A handler's own status (a custom 404 page, say) is sent as is,
        // whole, without preconditions or ranges.
        return plan(ask, resp, source, 0, id.size);
    }
    if file.pages == Pages::On && resp.get_header("Cache-Control").is_none() {
        let rules = files.runtime().map(|rt| &rt.cache_control);
        let name = target.name.to_string_lossy();
        if let Some(value) = rules.and_then(|rules| rules.value_for(&name)) {
            resp.push_header("Cache-Control", Bytes::copy_from_slice(value.as_bytes()));
        }
    }
    match preconditions(req, v) {
        Precondition::NotModified => {
            resp.status = 304;
            return Prepared {
                resp,
                length: 0,
                plan: Plan::None,
                about: None,
            };
        }
        Precondition::Failed => return status_only(Response::status_page(412)),
        Precondition::Proceed => {}
    }
    resp.push_header("Accept-Ranges", Bytes::from_static(b"bytes"));
    // Varying by Accept-Encoding: the coded and the identity bytes share
    // the file's Last-Modified, so an If-Range date cannot join them.
    match span(req, id.size, v, head.vary) {
        Span::Full => plan(ask, resp, source, 0, id.size),
        Span::Part { start, end } => {
            resp.status = 206;
            let range = format!("bytes {}-{}/{}", start, end - 1, id.size);
            resp.push_header("Content-Range", Bytes::from(range));
            plan(ask, resp, source, start, end)
        }
        Span::Unsatisfiable => {
            let mut r = Response::status_page(416);
            r.push_header("Content-Range", Bytes::from(format!("bytes */{}", id.size)));
            status_only(r)
        }
    }
}

fn plan(
    ask: &Ask<'_, impl Reads>,
    resp: Response,
    source: Source,
    start: u64,
    end: u64,
) -> Prepared {
    let length = end - start;
    let plan = if ask.req.is_head() || length == 0 {
        Plan::None
    } else {
        match source {
            Source::Kept(bytes) => Plan::Kept(bytes.slice(start as usize..end as usize)),
            Source::Open(file) => Plan::File {
                file: Arc::new(file),
                start,
                end,
                vehicle: ask.files.vehicle(length),
            },
        }
    };
    Prepared {
        resp,
        length,
        plan,
        about: None,
    }
}

/// The type for a name's extension; `application/octet-stream` when unknown.
/// The common text types are declared UTF-8.
pub(crate) fn content_type(name: &Path) -> &'static str {
    match mime_guess::from_path(name).first_raw() {
        Some(t) => with_charset(t),
        None => "application/octet-stream",
    }
}

fn with_charset(t: &'static str) -> &'static str {
    match t {
        "text/html" => "text/html; charset=utf-8",
        "text/plain" => "text/plain; charset=utf-8",
        "text/css" => "text/css; charset=utf-8",
        "text/javascript" => "text/javascript; charset=utf-8",
        "application/javascript" => "application/javascript; charset=utf-8",
        "text/markdown" => "text/markdown; charset=utf-8",
        "text/csv" => "text/csv; charset=utf-8",
        "text/xml" => "text/xml; charset=utf-8",
        "text/x-rust" => "text/x-rust; charset=utf-8",
        other => other,
    }
}
