//! What a program builds, on every target: the server's routes and runtime
//! ([`Server`]). Each backend gives it `start` and `run`: the Linux one
//! binds sockets and runs the event loop (`linux/server.rs`), the wasm32
//! one registers the routes for a JS host (`wasm/mod.rs`).

use super::body::{Erased, IntoSink, Limit, MakeSink, Rule, Takes, WithBody};
use super::request::Request;
use super::response::IntoResponse;
use super::router::{Entry, Handler, Plain, Router};
use super::to_file::{IntoToFile, MakeFile};
use crate::rt::{ConfigError, Runtime};
use std::path::{Path, PathBuf};

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

/// The runtime file a reload reads again, and how the program reads it
/// (`nikaia serve`: its `--listen` and its `--domain`).
pub(crate) struct Source {
    pub file: PathBuf,
    pub load: Box<Load>,
}

/// How a program reads its runtime file: the runtime, and the warnings
/// to log with it; or every problem (the reload is refused).
pub(crate) type Load =
    dyn Fn(&Path) -> Result<(Runtime, Vec<String>), Vec<ConfigError>> + Send + Sync;

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
        self,
        file: impl Into<PathBuf>,
        adjust: impl Fn(&mut Runtime) + Send + Sync + 'static,
    ) -> Server {
        self.reload_with(file, move |file| {
            let mut rt = Runtime::load(file)?;
            adjust(&mut rt);
            Ok((rt, Vec::new()))
        })
    }

    /// Where a reload reads the runtime again, and how: `load(file)`, as
    /// the program read it at start (`nikaia serve` reads `[acme]` with
    /// its `--domain`: [`Runtime::load_with`]). Its warnings go to the
    /// error log; its errors refuse the reload.
    pub fn reload_with(
        mut self,
        file: impl Into<PathBuf>,
        load: impl Fn(&Path) -> Result<(Runtime, Vec<String>), Vec<ConfigError>> + Send + Sync + 'static,
    ) -> Server {
        self.source = Some(Source {
            file: file.into(),
            load: Box::new(load),
        });
        self
    }

    /// Answers GET (and HEAD, from the same handler) at `path`. A path ending
    /// in `/*name` matches every path under it; the rest is
    /// [`Request::param`], percent-decoded once. It takes no body: one
    /// sent is read to a bound and thrown away (`spec/http.md`).
    pub fn route<R, F>(self, path: &str, handler: F) -> Server
    where
        F: Fn(&Request) -> R + Send + Sync + 'static,
        R: IntoResponse,
    {
        self.on("GET", path, handler)
    }

    /// Answers `method` at `path` without a body, as [`Server::route`]
    /// answers GET (for `OPTIONS`, `DELETE`, a `POST` whose head says it
    /// all): a body sent is not the handler's.
    pub fn on<R, F>(mut self, method: &str, path: &str, handler: F) -> Server
    where
        F: Fn(&Request) -> R + Send + Sync + 'static,
        R: IntoResponse,
    {
        let handler: Plain = Box::new(move |req| handler(req).into_response());
        self.router.add(method, path, Entry::plain(handler));
        self
    }

    /// Has `handler` answer every method the route at `path` (added
    /// before) has no handler for, without a body (one sent is thrown
    /// away to a bound), instead of the router's 405: `nikaia serve`'s
    /// directory handler, whose rules decide what a name allows.
    pub(crate) fn otherwise<R, F>(mut self, path: &str, handler: F) -> Server
    where
        F: Fn(&Request) -> R + Send + Sync + 'static,
        R: IntoResponse,
    {
        let handler: Plain = Box::new(move |req| handler(req).into_response());
        self.router.otherwise(path, Entry::plain(handler));
        self
    }

    /// [`Server::otherwise`] for a route of [`Server::to_file`]s, without
    /// a limit on the body: the handler's file decides every other method
    /// as its own (the tus endpoint: 405 with what the path takes).
    pub(crate) fn otherwise_to_file<T, F>(mut self, path: &str, handler: F) -> Server
    where
        F: Fn(&Request) -> T + Send + Sync + 'static,
        T: IntoToFile,
    {
        let make: MakeFile = Box::new(move |req| handler(req).into_to_file());
        let rule = Rule {
            takes: Takes::Stream,
            limit: Some(Limit::None),
            coded: false,
        };
        let entry = Entry {
            handler: Handler::File(make),
            rule,
        };
        self.router.otherwise(path, entry);
        self
    }

    /// Answers `method` at `path`, with the request's whole body
    /// ([`WithBody::body`]), up to the runtime file's `body-limit` (1 MiB)
    /// or the limit [`Server::max_body`] gives the route.
    pub fn method<R, F>(self, method: &str, path: &str, handler: F) -> Server
    where
        F: Fn(&WithBody<'_>) -> R + Send + Sync + 'static,
        R: IntoResponse,
    {
        let handler: Plain = Box::new(move |req| handler(&WithBody { req }).into_response());
        self.add_taking(method, path, Handler::Plain(handler), Takes::Whole)
    }

    /// Answers `method` at `path` with a [`Sink`] the handler makes when
    /// the request's head has arrived: the body is fed to it a piece at a
    /// time as it arrives, up to the runtime file's `stream-limit` (1 GiB)
    /// or the limit [`Server::max_body`] gives the route; then the sink
    /// answers.
    pub fn stream<S, F>(self, method: &str, path: &str, handler: F) -> Server
    where
        F: Fn(&Request) -> S + Send + Sync + 'static,
        S: IntoSink,
    {
        let make: MakeSink = Box::new(move |req| {
            let sink = handler(req).into_sink()?;
            Ok(Box::new(sink) as Box<dyn Erased>)
        });
        self.add_taking(method, path, Handler::Stream(make), Takes::Stream)
    }

    /// Answers `method` at `path` by writing the request's body to the
    /// file the handler names when the head has arrived ([`ToFile`]):
    /// std writes it as it arrives, off the workers, to an unnamed file
    /// that takes the name only once the body is whole and synced; then
    /// [`ToFile::answer`]'s answer, or std's ([`answer_written`]). Up to
    /// the runtime file's `stream-limit` (1 GiB) or the limit
    /// [`Server::max_body`] gives the route. On wasm32, whose file system
    /// is read-only, every such request is a logged 500.
    ///
    /// [`ToFile`]: super::ToFile
    /// [`ToFile::answer`]: super::ToFile::answer
    /// [`answer_written`]: super::answer_written
    pub fn to_file<T, F>(self, method: &str, path: &str, handler: F) -> Server
    where
        F: Fn(&Request) -> T + Send + Sync + 'static,
        T: IntoToFile,
    {
        let make: MakeFile = Box::new(move |req| handler(req).into_to_file());
        self.add_taking(method, path, Handler::File(make), Takes::Stream)
    }

    /// Adds a route that takes its body as `takes` says, with the runtime
    /// file's limit until [`Server::max_body`] gives it one.
    fn add_taking(mut self, method: &str, path: &str, handler: Handler, takes: Takes) -> Server {
        let rule = Rule {
            takes,
            limit: None,
            coded: false,
        };
        self.router.add(method, path, Entry { handler, rule });
        self
    }

    /// The body limit of the route just added (by [`Server::method`] or
    /// [`Server::stream`]): it wins over the runtime file's default.
    /// [`Limit::None`] lifts it. Panics after [`Server::route`] or
    /// [`Server::on`], which take no body.
    pub fn max_body(mut self, limit: Limit) -> Server {
        let entry = self.router.last_mut().expect("max_body follows a route");
        assert!(
            entry.rule.takes != Takes::Nothing,
            "max_body: the route just added takes no body (it was added by `route` or `on`)"
        );
        entry.rule.limit = Some(limit);
        self
    }

    /// The route just added takes a body with a `Content-Encoding` as it
    /// is (without this, such a body is answered 415: std decodes no
    /// request body).
    pub fn coded_body(mut self) -> Server {
        let entry = self.router.last_mut().expect("coded_body follows a route");
        assert!(
            entry.rule.takes != Takes::Nothing,
            "coded_body: the route just added takes no body (it was added by `route` or `on`)"
        );
        entry.rule.coded = true;
        self
    }
}
