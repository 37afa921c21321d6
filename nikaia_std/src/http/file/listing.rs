//! A directory without an index, listed; a directory asked for without its
//! trailing slash, redirected to it.

use super::File;
use crate::fs;
use crate::http::request::Request;
use crate::http::response::Response;
use crate::text::html::html_escape;
use crate::text::percent::percent_encode;
use std::path::Path;

/// An HTML page listing the directory `dir` under the file's root. Names are
/// escaped for HTML and percent-encoded in links; the listing reads the
/// directory on the worker (a rare request, and the one exception to D9).
/// A name a `[[deny]]` rule of `rt` matches is left out, so the listing
/// does not tell it exists (`spec/site.md`).
pub(super) fn listing(
    req: &Request,
    file: &File,
    dir: &Path,
    rt: Option<&crate::rt::Runtime>,
) -> Response {
    let entries = match file.root.list(dir) {
        Ok(e) => e,
        Err(fs::Error::Io(e)) => {
            return Response::internal_error(format!("cannot list {dir:?}: {e}"))
        }
        Err(_) => return Response::status_page(404),
    };
    let show_hidden = file.list.unwrap_or(false);
    let title = html_escape(req.path());
    let mut page = format!(
        "<!doctype html>\n<meta charset=\"utf-8\">\n<title>Index of {title}</title>\n<h1>Index of {title}</h1>\n<ul>\n<li><a href=\"../\">../</a></li>\n"
    );
    for e in entries {
        let name = e.name.to_string_lossy();
        if name.starts_with('.') && !show_hidden {
            continue;
        }
        if let Some(rt) = rt.filter(|rt| !rt.site.deny.is_empty()) {
            let full = match dir.to_string_lossy() {
                d if d == "." || d.is_empty() => name.to_string(),
                d => format!("{}/{name}", d.trim_end_matches('/')),
            };
            if rt
                .site
                .deny
                .iter()
                .any(|r| crate::rt::any_matches(&r.patterns, &full))
            {
                continue;
            }
        }
        let slash = if e.is_dir { "/" } else { "" };
        page.push_str(&format!(
            "<li><a href=\"./{}{slash}\">{}{slash}</a></li>\n",
            percent_encode(name.as_bytes(), b"-._~/"),
            html_escape(&name)
        ));
    }
    page.push_str("</ul>\n");
    Response::new(200).body(crate::html::Raw::from(page))
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
