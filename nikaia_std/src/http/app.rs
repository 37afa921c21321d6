//! What a program builds, on every target: the server's routes and runtime
//! ([`Server`]). Each backend gives it `start` and `run`: the Linux one
//! binds sockets and runs the event loop (`linux/server.rs`), the wasm32
//! one registers the routes for a JS host (`wasm/mod.rs`).

use super::request::Request;
use super::response::IntoResponse;
use super::router::Router;
use crate::rt::Runtime;
use std::path::PathBuf;

/// An HTTP/1.1 server: routes, then [`Server::run`] (or [`Server::start`]).
///
/// ```no_run
/// use nikaia_std::http::Server;
/// Server::new().route("/", |_req| "hello").run().unwrap();
/// ```
pub struct Server {
    pub(crate) router: Router,
    pub(crate) rt: Runtime,
    /// What a reload reads (`spec/listeners.md`, "Reload").
    pub(crate) source: Option<Source>,
}

/// The runtime file a reload reads again, and what the program changes in
/// what it read (`nikaia serve --listen`).
pub(crate) struct Source {
    pub file: PathBuf,
    pub adjust: Box<dyn Fn(&mut Runtime) + Send + Sync>,
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
            Ok(rt) => {
                let server = Server::with_runtime(rt);
                match std::env::var_os(crate::rt::RUNTIME_ENV).filter(|v| !v.is_empty()) {
                    Some(file) => server.reload_from(PathBuf::from(file), |_| {}),
                    None => server,
                }
            }
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
            source: None,
        }
    }

    /// Where a reload (SIGHUP, `Running::reload`) reads the runtime again:
    /// `file`, then `adjust` applied to what it read (the same overrides
    /// the program applied at start). Without it a reload reads the TLS
    /// pair again and nothing else.
    pub fn reload_from(
        mut self,
        file: impl Into<PathBuf>,
        adjust: impl Fn(&mut Runtime) + Send + Sync + 'static,
    ) -> Server {
        self.source = Some(Source {
            file: file.into(),
            adjust: Box::new(adjust),
        });
        self
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
