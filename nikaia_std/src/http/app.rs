//! What a program builds, on every target: the server's routes and runtime
//! ([`Server`]), and the step every backend shares when a request arrives:
//! routing it and running its handler ([`route`]).
//!
//! The Linux backend (`server.rs`) binds sockets and runs the event loop;
//! the wasm32 backend (`wasm.rs`) registers the routes for a JS host.

use super::request::Request;
use super::response::{IntoResponse, Response};
use super::router::{Found, Router};
use crate::rt::Runtime;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// An HTTP/1.1 server: routes, then [`Server::run`] (or [`Server::start`]).
///
/// ```no_run
/// use nikaia_std::http::Server;
/// Server::new().route("/", |_req| "hello").run().unwrap();
/// ```
pub struct Server {
    pub(crate) router: Router,
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) rt: Runtime,
}

impl Default for Server {
    fn default() -> Self {
        Server::new()
    }
}

impl Server {
    /// A server configured by the runtime file `NIKAIA_RUNTIME` names, or by
    /// the defaults. A bad runtime file is reported and the process exits 2;
    /// use [`Server::with_runtime`] to handle it yourself.
    pub fn new() -> Server {
        match Runtime::from_args(None) {
            Ok(rt) => Server::with_runtime(rt),
            Err(errors) => {
                for e in errors {
                    eprintln!("{e}");
                }
                std::process::exit(2);
            }
        }
    }

    /// A server with this runtime configuration.
    pub fn with_runtime(rt: Runtime) -> Server {
        Server {
            router: Router::default(),
            rt,
        }
    }

    /// Answers GET (and HEAD, from the same handler) at `path`. A path ending
    /// in `/*name` matches every path under it; the rest is
    /// [`Request::param`], percent-decoded once.
    pub fn route<R, F>(self, path: &str, handler: F) -> Server
    where
        F: Fn(&Request) -> R + Send + Sync + 'static,
        R: IntoResponse,
    {
        self.method("GET", path, handler)
    }

    /// Answers `method` at `path`.
    pub fn method<R, F>(mut self, method: &str, path: &str, handler: F) -> Server
    where
        F: Fn(&Request) -> R + Send + Sync + 'static,
        R: IntoResponse,
    {
        self.router.add(
            method,
            path,
            Box::new(move |req| handler(req).into_response()),
        );
        self
    }
}

/// The response a request gets before its body is resolved: its route's
/// handler (a panic is a logged 500), 405 with `Allow` for a known path and
/// another method, 404 otherwise. `param` is filled in for the handler.
pub(crate) fn route(router: &Router, req: &mut Request) -> Response {
    match router.find(req.method(), &req.path) {
        Found::Handler(handler, param) => {
            req.param = param;
            catch_unwind(AssertUnwindSafe(|| handler(req))).unwrap_or_else(|_| {
                Response::internal_error(format!(
                    "handler panicked on {} {}",
                    req.method(),
                    req.target()
                ))
            })
        }
        Found::WrongMethod(allow) => Response::status_page(405).header("Allow", allow),
        Found::Nothing => Response::status_page(404),
    }
}

/// A response that carries an error for the log goes to the client as a
/// plain 500: the detail stays in the log.
pub(crate) fn hide_error(resp: Response) -> Response {
    if resp.log_error.is_some() && resp.status != 500 {
        Response::status_page(500)
    } else {
        resp
    }
}
