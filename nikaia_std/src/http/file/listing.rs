//! A directory without an index, listed; a directory asked for without its
//! trailing slash, redirected to it.

use super::File;
use crate::fs;
use crate::http::request::Request;
use crate::http::response::Response;
use std::path::Path;

/// An HTML page listing the directory `dir` under the file's root. Names are
/// escaped for HTML and percent-encoded in links; the listing reads the
/// directory on the worker (a rare request, and the one exception to D9).
pub(super) fn listing(req: &Request, file: &File, dir: &Path) -> Response {
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
        let slash = if e.is_dir { "/" } else { "" };
        page.push_str(&format!(
            "<li><a href=\"./{}{slash}\">{}{slash}</a></li>\n",
            percent_encode(&name, b"-._~/"),
            html_escape(&name)
        ));
    }
    page.push_str("</ul>\n");
    Response::new(200).body(crate::html::Raw::from(page))
}

fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes every byte but ASCII letters, digits and `keep`.
///
/// Kept rather than `percent_encoding::utf8_percent_encode`, which would
/// need an `AsciiSet` per `keep` list and a dependency for ten lines that
/// run only for a directory listing's links and a slash redirect.
fn percent_encode(s: &str, keep: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || keep.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// 301 to the request's path with a slash added. The Location is built from
/// the decoded path, re-encoded, with its leading slashes collapsed to one,
/// so `//evil.example` can never become a redirect to another host.
pub(super) fn redirect_to_slash(req: &Request) -> Response {
    let path = req.path().trim_start_matches('/');
    let mut location = format!("/{}/", percent_encode(path, b"-._~/!$&'()*+,;=:@"));
    if let Some(q) = req.query() {
        location.push('?');
        location.push_str(q);
    }
    Response::status_page(301).header("Location", location)
}
