//! What `nikaia serve DIR` answers, as a handler any program (and the wasm32
//! host) can route: every name under one `Dir` root, `index.html` for a
//! directory, a redirect to the slash, dot-names hidden; the operator's
//! site rules on its answers (`spec/site.md`).

use super::file::{File, Pages};
use super::request::Request;
use super::response::Response;
use super::site::path::normalise;
use super::site::write::{Asked, Op};
use super::to_file::ToFile;
use crate::fs::{self, Root};
use std::path::Path;

/// Whether a decoded request name may be served when dot-names are hidden:
/// no component may start with `.`, except a first component `.well-known`
/// (RFC 8615).
pub fn visible(name: &str) -> bool {
    visible_bytes(name.as_bytes())
}

/// [`visible`] for a name's bytes (which need not be UTF-8).
fn visible_bytes(name: &[u8]) -> bool {
    name.split(|&b| b == b'/')
        .enumerate()
        .all(|(i, c)| !c.starts_with(b".") || (i == 0 && c == b".well-known"))
}

/// The handler of `nikaia serve`, for a route ending in `/*path`: the file
/// the tail names under `root`, with `index.html` for directories (and a
/// listing of a directory without one when `list`), dot-names answered 404
/// unless `hidden`.
///
/// The name is the tail's exact bytes, UTF-8 or not (`caf%E9.txt` opens
/// the Latin-1 name), normalised first: empty segments merged (`//a.txt`
/// is `a.txt`), and a `.` or `..` segment answered 404 like a hidden name.
/// Where the target cannot name such bytes (wasm32), it is 404 too.
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
        let (name, refused) = asked_name(req, hidden);
        let mut file = File::new(name, &root).index_html();
        if refused {
            // Never opened: the answer is the runtime's `not-found` page or
            // the plain 404, as for a missing name.
            file.pages = Pages::Refused;
            return Response::new(404).body(file);
        }
        file.pages = Pages::On;
        file.hidden = hidden;
        let file = if list { file.list(hidden) } else { file };
        Response::new(200).body(file)
    }
}

/// The name a request of the directory handler (or writer) asks for:
/// the tail's exact bytes (a name that is not UTF-8 is served as it is),
/// normalised, and whether it is refused — a dot segment, a hidden name,
/// or bytes the target cannot name (wasm32: not UTF-8; never a lossy name
/// opened instead).
fn asked_name(req: &Request, hidden: bool) -> (std::path::PathBuf, bool) {
    let tail = req.param_bytes().unwrap_or(b"");
    let normal = normalise(tail);
    let bytes = normal.as_deref().unwrap_or(tail);
    let name = fs::name_from_bytes(bytes);
    let refused = normal.is_none() || name.is_none() || (!hidden && !visible_bytes(bytes));
    (name.unwrap_or(Path::new("")).to_path_buf(), refused)
}

/// The writer of `nikaia serve`, for `PUT` and `DELETE` routes ending in
/// `/*path` beside [`dir_handler`]'s: the body becomes the file the tail
/// names under `root` (`PUT`), or the name goes (`DELETE`), only as the
/// runtime file's write rules allow (`spec/site.md`, "Writes"; none by
/// default: every such request is 405). Routed for WebDAV's `PROPFIND`,
/// `PROPPATCH`, `MKCOL`, `COPY` and `MOVE` too, it answers them as the
/// rules' `webdav` keys allow (`spec/site.md`, "WebDAV class 1"). Route it with `.coded_body()`
/// and `.max_body(Limit::None)`: the rules decide a coded body (415) and
/// the size (413), in their order.
///
/// ```no_run
/// use nikaia_std::{fs::Root, http::{dir_handler, dir_writer, Limit, Server}};
/// let root = Root::dir("site").unwrap();
/// let writer = std::sync::Arc::new(dir_writer(root.clone(), false));
/// let remover = writer.clone();
/// Server::new()
///     .route("/*path", dir_handler(root, false, false))
///     .to_file("PUT", "/*path", move |req| writer(req))
///     .coded_body()
///     .max_body(Limit::None)
///     .to_file("DELETE", "/*path", move |req| remover(req))
///     .run()
///     .unwrap();
/// ```
pub fn dir_writer(root: Root, hidden: bool) -> impl Fn(&Request) -> ToFile + Send + Sync + 'static {
    move |req| {
        let (name, refused) = asked_name(req, hidden);
        let op = match req.method() {
            "DELETE" => Op::Delete,
            "MKCOL" => Op::Mkcol,
            "PROPPATCH" => Op::Proppatch,
            "COPY" => Op::Copy,
            "MOVE" => Op::Move,
            "PROPFIND" => Op::Propfind,
            "LOCK" => Op::Lock,
            "UNLOCK" => Op::Unlock,
            _ => Op::Put,
        };
        let mut to = ToFile::new(name, &root, fs::Mode::Replace);
        to.site = Some(Asked {
            op,
            hidden,
            refused,
        });
        to
    }
}

/// The tus endpoint of `nikaia serve` (`spec/site.md`, "Resumable
/// uploads"), for a route ending in `/*id` at the runtime file's
/// `[resumable] endpoint`, with `POST`, `HEAD`, `PATCH`, `DELETE` and
/// `OPTIONS`: an upload whose bytes arrive over as many requests as the
/// link needs, and that becomes a file under `root` only whole and only
/// as the write rules allow a `PUT` of its name. Route it with
/// `.max_body(Limit::None)`: an upload's own length bounds each `PATCH`.
pub fn resumable(root: Root, hidden: bool) -> impl Fn(&Request) -> ToFile + Send + Sync + 'static {
    move |req| {
        let tail = req.param_bytes().unwrap_or(b"");
        let mut to = ToFile::new(
            fs::name_from_bytes(tail).unwrap_or(Path::new("")),
            &root,
            fs::Mode::Create,
        );
        to.site = Some(Asked {
            op: Op::Resume,
            hidden,
            refused: false,
        });
        to
    }
}

impl super::Server {
    /// Every route of `nikaia serve ROOT`: [`dir_handler`] for `GET`,
    /// `HEAD` and `OPTIONS` (CORS preflights) of every name, and for every
    /// other method but the writer's (405 with the methods the rules let
    /// the name have), [`dir_writer`] for `PUT` and `DELETE` as the write
    /// rules allow, and, where the
    /// runtime file has `[resumable]`, [`resumable`] at its endpoint
    /// (read now: a reload does not move it).
    pub fn serve_dir(self, root: Root, hidden: bool, list: bool) -> super::Server {
        use super::Limit;
        use std::sync::Arc;
        let writer = Arc::new(dir_writer(root.clone(), hidden));
        let remover = writer.clone();
        let dav = writer.clone();
        let tus = Arc::new(resumable(root.clone(), hidden));
        let endpoint = self
            .rt
            .resumable
            .as_ref()
            .map(|r| format!("{}*id", r.endpoint));
        let handler = Arc::new(dir_handler(root, hidden, list));
        let preflight = handler.clone();
        let other = handler.clone();
        let mut server = self
            .route("/*path", move |req| handler(req))
            .on("OPTIONS", "/*path", move |req| preflight(req))
            .to_file("PUT", "/*path", move |req| writer(req))
            .coded_body()
            .max_body(Limit::None)
            .to_file("DELETE", "/*path", move |req| remover(req));
        // WebDAV (`spec/site.md`, "WebDAV class 1"): decided by the rules
        // as the writer's methods are (405 where no rule lets them).
        for method in super::site::dav::METHODS {
            let dav = dav.clone();
            server = server.to_file(method, "/*path", move |req| dav(req));
        }
        server = server
            // Any other method: 405, with what the rules let the name do.
            .otherwise("/*path", move |req| other(req));
        if let Some(endpoint) = endpoint {
            for method in ["POST", "HEAD", "PATCH", "DELETE", "OPTIONS"] {
                let tus = tus.clone();
                server = server
                    .to_file(method, &endpoint, move |req| tus(req))
                    .max_body(Limit::None);
            }
            // Any other method: the endpoint's 405, with what its path takes.
            server = server.otherwise_to_file(&endpoint, move |req| tus(req));
        }
        server
    }
}

#[cfg(test)]
mod tests {
    use super::{visible, visible_bytes};

    #[test]
    fn hidden_names() {
        assert!(visible_bytes(b"caf\xe9.txt"));
        assert!(visible_bytes(b"d\xff/x"));
        assert!(!visible_bytes(b"d\xff/.x\xff"));
        assert!(!visible_bytes(b".\xff"));
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
