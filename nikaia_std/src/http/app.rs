//! What a program builds, on every target: the server's routes and runtime
//! ([`Server`]). Each backend gives it `start` and `run`: the Linux one
//! binds sockets and runs the event loop (`linux/server.rs`), the wasm32
//! one registers the routes for a JS host (`wasm/mod.rs`).

use super::request::Request;
use super::response::IntoResponse;
use super::router::Router;
use crate::rt::Runtime;

/// An HTTP/1.1 server: routes, then [`Server::run`] (or [`Server::start`]).
///
/// ```no_run
/// use nikaia_std::http::Server;
/// Server::new().route("/", |_req| "hello").run().unwrap();
/// ```
pub struct Server {
    pub(crate) router: Router,
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
