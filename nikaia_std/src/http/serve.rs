//! What `nikaia serve DIR` answers, as a handler any program (and the wasm32
//! host) can route: every name under one `Dir` root, `index.html` for a
//! directory, a redirect to the slash, dot-names hidden; the operator's
//! site rules on its answers (`spec/site.md`).

use super::file::{File, Pages};
use super::request::Request;
use super::response::Response;
use super::site::path::normalise;
use crate::fs::Root;

/// Whether a decoded request name may be served when dot-names are hidden:
/// no component may start with `.`, except a first component `.well-known`
/// (RFC 8615).
pub fn visible(name: &str) -> bool {
    name.split('/')
        .enumerate()
        .all(|(i, c)| !c.starts_with('.') || (i == 0 && c == ".well-known"))
}

/// The handler of `nikaia serve`, for a route ending in `/*path`: the file
/// the tail names under `root`, with `index.html` for directories (and a
/// listing of a directory without one when `list`), dot-names answered 404
/// unless `hidden`.
///
/// The name is normalised first: empty segments merged (`//a.txt` is
/// `a.txt`), and a `.` or `..` segment answered 404 like a hidden name.
///
/// The server's runtime adds what the operator set (`spec/runtime-file.md`,
/// `spec/site.md`): `cache-control` on file answers (a `Cache-Control` the
/// handler's response already has wins), the `not-found` page for a
/// missing, hidden or outside name, the `fallback` for a GET or HEAD of a
/// missing name, and the site's header rules, CORS, auth and deny lists.
/// Route it for `OPTIONS` too (as `nikaia serve` does) for CORS
/// preflights; `OPTIONS` is answered 204 with `Allow`.
pub fn dir_handler(
    root: Root,
    hidden: bool,
    list: bool,
) -> impl Fn(&Request) -> Response + Send + Sync + 'static {
    move |req| {
        let tail = req.param().unwrap_or("");
        let normal = normalise(tail);
        let name = normal.as_deref().unwrap_or(tail);
        let mut file = File::new(name, &root).index("index.html");
        if normal.is_none() || (!hidden && !visible(name)) {
            // Never opened: the answer is the runtime's `not-found` page or
            // the plain 404, as for a missing name.
            file.pages = Pages::Refused;
            return Response::new(404).body(file);
        }
        file.pages = Pages::On;
        let file = if list { file.list(hidden) } else { file };
        Response::new(200).body(file)
    }
}

#[cfg(test)]
mod tests {
    use super::visible;

    #[test]
    fn hidden_names() {
        for ok in ["", "a", "a/b.txt", ".well-known/acme", "a/b.c/", "a..b"] {
            assert!(visible(ok), "{ok}");
        }
        for hidden in [
            ".git",
            ".git/config",
            "a/.env",
            ".well-known/.x",
            "x/.well-known/y",
            "a/./b",
            "a/../b",
        ] {
            assert!(!visible(hidden), "{hidden}");
        }
    }
}
