//! A directory without an index, listed; a directory asked for without its
//! trailing slash, redirected to it.
//!
//! Three jobs, one file each: `ask` reads what the request asks for (the
//! format, the sort, the order), `read` reads and filters the directory
//! (off the worker: it may wait for the disk, D9), `render` makes the
//! page's bytes and its ETag. This file ties them to the pipeline.

mod ask;
mod read;
mod render;

use super::head::status_only;
use super::{About, File, Prepared, Step};
use crate::fs::{self, Root};
use crate::http::conditional::list_matches;
use crate::http::request::Request;
use crate::http::response::{Body, Response};
use crate::rt::Glob;
use crate::text::percent::percent_encode;
use ask::Format;
use bytes::Bytes;
#[cfg(target_os = "linux")]
pub(crate) use read::MAX_ENTRIES;
pub(crate) use render::Upload;
use std::path::PathBuf;

/// A listing to make off the worker: everything it needs, taken from the
/// request, the file and the runtime on the worker.
pub(crate) struct Ask {
    root: Root,
    /// The directory under the root (`.` for the root itself).
    dir: PathBuf,
    /// The request's path: the page's title.
    path: String,
    format: Format,
    sort: ask::Sort,
    order: ask::Order,
    show_hidden: bool,
    /// The `[[deny]]` patterns that apply (names matched are left out).
    deny: Vec<Glob>,
    /// The request's `If-None-Match`: a listing it names is not rendered.
    if_none_match: Option<String>,
    /// What the page offers the reader for writes here.
    upload: Upload,
}

/// A listing made: its bytes and validator.
pub(crate) struct Listed {
    dir: PathBuf,
    /// Empty when `If-None-Match` named the ETag (304).
    body: Bytes,
    etag: String,
    format: Format,
    not_modified: bool,
}

/// Starts the listing of `dir` under the file's root: the directory is read
/// off the worker ([`Step::List`]; the backend runs [`Ask::run`], then
/// [`listed`]). A name a `[[deny]]` rule of `rt` matches is left out, so
/// the listing does not tell it exists (`spec/site.md`).
pub(super) fn begin(
    req: &Request,
    file: &File,
    dir: PathBuf,
    rt: Option<&crate::rt::Runtime>,
) -> Step {
    let (format, sort, order) = ask::asked(req);
    let deny = rt
        .map(|rt| {
            let rules = rt.site.deny.iter();
            rules.flat_map(|r| r.patterns.iter().cloned()).collect()
        })
        .unwrap_or_default();
    Step::List(Box::new(Ask {
        root: file.root.clone(),
        dir,
        path: req.path().to_owned(),
        format,
        sort,
        order,
        show_hidden: file.listed(rt).unwrap_or(false),
        deny,
        if_none_match: req.header("if-none-match").map(str::to_owned),
        // Decided once the reader is known (`Ask::offer`).
        upload: Upload::Off,
    }))
}

impl Ask {
    /// What the page offers for writes, decided once the reader's
    /// credentials were checked (`http/site/upload.rs`).
    pub(crate) fn offer(&mut self, upload: Upload) {
        self.upload = upload;
    }

    /// Reads, filters, sorts and renders the listing. May wait for the
    /// disk: the io pool runs it (in place on wasm32).
    pub(crate) fn run(self) -> Result<Listed, fs::Error> {
        let filter = read::Filter {
            show_hidden: self.show_hidden,
            deny: &self.deny,
        };
        let (entries, truncated) =
            read::read(&self.root, &self.dir, &filter, self.sort, self.order)?;
        let top = self.dir.as_os_str().is_empty() || self.dir.as_os_str() == ".";
        let page = render::Page {
            path: &self.path,
            parent: !top,
            format: self.format,
            sort: self.sort,
            order: self.order,
            upload: self.upload,
        };
        let etag = render::etag(&page, &entries, truncated);
        let not_modified = self
            .if_none_match
            .as_deref()
            .is_some_and(|inm| list_matches(inm, &etag, false));
        let body = if not_modified {
            Bytes::new()
        } else {
            Bytes::from(render::render(&page, &entries, truncated))
        };
        Ok(Listed {
            dir: self.dir,
            body,
            etag,
            format: self.format,
            not_modified,
        })
    }
}

/// The answer with a listing made off the worker: 200 with the page, or
/// 304 when `If-None-Match` names its ETag; `Vary: Accept` on both (the
/// format follows it), and an HTML page's policy on both (a 304's headers
/// replace those a browser kept with the page). A directory that cannot be read is 404 (missing,
/// outside, not a directory) or 500 (an I/O error, logged).
pub(crate) fn listed(result: Result<Listed, fs::Error>) -> Prepared {
    let listed = match result {
        Ok(l) => l,
        Err(fs::Error::Io(e)) => {
            return status_only(Response::internal_error(format!("cannot list: {e}")))
        }
        Err(_) => return status_only(Response::status_page(404)),
    };
    let etag = Bytes::from(listed.etag);
    let not_modified = listed.not_modified;
    let mut resp = Response::new(if not_modified { 304 } else { 200 });
    resp.push_header("ETag", etag);
    resp.push_header("Vary", Bytes::from_static(b"Accept"));
    if listed.format == Format::Html {
        let policy = Bytes::from_static(render::POLICY.as_bytes());
        resp.push_header("Content-Security-Policy", policy);
    }
    if !not_modified {
        resp.default_type = Some(match listed.format {
            Format::Html => "text/html; charset=utf-8",
            Format::Json => "application/json",
        });
        resp.body = Body::Bytes(listed.body);
    }
    let mut prepared = status_only(resp);
    prepared.about = Some(About {
        name: listed.dir,
        file_body: false,
        listing: true,
    });
    prepared
}

/// 301 to the request's path with a slash added. The Location is built from
/// the decoded path's exact bytes (a name that is not UTF-8 too), re-encoded,
/// with its leading slashes collapsed to one, so `//evil.example` can never
/// become a redirect to another host.
pub(super) fn redirect_to_slash(req: &Request) -> Response {
    let bytes = req.path_bytes();
    let path = &bytes[bytes.iter().take_while(|&&b| b == b'/').count()..];
    let mut location = format!("/{}/", percent_encode(path, b"-._~/!$&'()*+,;=:@"));
    if let Some(q) = req.query() {
        location.push('?');
        location.push_str(q);
    }
    Response::status_page(301).header("Location", location)
}
