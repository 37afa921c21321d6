//! `http::File`: "the answer to this request is that file, and I have not
//! looked at it". The handler returns the description; after it returns, std
//! opens the name under its root, stats the one descriptor (D6), decides the
//! status and headers, and picks how the body travels (D3, D8).
//!
//! Four jobs, one file each: this one is the description (the [`File`] a
//! handler returns) and what resolving it gives; `resolve` walks from the
//! name to a found file or a status (index, sidecars, the runtime's pages);
//! `head` decides a found file's status, headers and body plan; `listing`
//! answers for a directory without an index (its entries read off the
//! worker, a [`Job`] like a cold open). What they ask of the backend is in
//! `http::port`: reading files ([`Reads`]), their coded variants
//! ([`Codings`]) and the runtime's pages ([`Rules`]).
//!
//! [`Reads`]: super::port::Reads
//! [`Codings`]: super::port::Codings
//! [`Rules`]: super::port::Rules

mod compress;
mod head;
mod listing;
mod navigation;
mod resolve;

pub(crate) use compress::Variant;
#[cfg(target_os = "linux")]
pub(crate) use head::content_type;
pub(crate) use head::Meta;
#[cfg(target_os = "linux")]
pub(crate) use listing::MAX_ENTRIES;
pub(crate) use listing::{listed, Ask as ListAsk, Listed, Upload};
pub(crate) use resolve::{begin, opened};

use super::response::{Body, Response};
use crate::fs::{self, Opened, Root};
use crate::rt::Vehicle;
use bytes::Bytes;
use resolve::Original;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A file under a root, as a response body. Nothing is opened until the
/// handler has returned.
///
/// ```no_run
/// use nikaia_std::{fs, http::{File, Server}};
/// let site = fs::Root::dir("site").unwrap();
/// Server::new()
///     .route("/", { let r = site.clone(); move |_| File::new("index.html", &r) })
///     .route("/files/*name", move |req| File::new(req.param().unwrap_or(""), &site))
///     .run()
///     .unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct File {
    pub(crate) name: PathBuf,
    pub(crate) root: Root,
    /// The names tried, in order, for a directory (`File::index`).
    /// Borrowed for `dir_handler`'s `index.html`, so a request costs no copy.
    pub(crate) index: std::borrow::Cow<'static, [String]>,
    /// List a directory without an index; `Some(true)` shows dot-names too.
    pub(crate) list: Option<bool>,
    /// Whether `dir_handler` shows dot-names (`--hidden`): what a listing
    /// the runtime's `list = true` asks for shows.
    pub(crate) hidden: bool,
    /// Whether the server's `cache-control`, `not-found` and `fallback`
    /// apply: only to the files of `dir_handler`.
    pub(crate) pages: Pages,
}

/// How the runtime's pages apply to a [`File`] (spec/runtime-file.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pages {
    /// A program's own file: none of them.
    Off,
    /// A file of `dir_handler`: all of them.
    On,
    /// A name `dir_handler` refused (a dot-name): never opened; the answer
    /// is the `not-found` page, or the plain 404, never the `fallback`.
    Refused,
}

impl File {
    /// The file `name` under `root`. There is no default root: a name a
    /// request chose is confined by the root it is given with.
    pub fn new(name: impl AsRef<Path>, root: &Root) -> File {
        File {
            name: name.as_ref().to_path_buf(),
            root: root.clone(),
            index: std::borrow::Cow::Borrowed(&[]),
            list: None,
            hidden: false,
            pages: Pages::Off,
        }
    }

    /// When the name is a directory, answer with this file inside it; a
    /// request for the directory without its trailing slash is redirected
    /// to the path with one (so relative links in the index resolve).
    /// Called again, each name is tried in turn (`index.html`, then
    /// `index.htm`); the first that is a file answers.
    pub fn index(mut self, index: &str) -> File {
        self.index.to_mut().push(index.to_owned());
        self
    }

    /// `index.html` alone, the index of `dir_handler`'s files.
    pub(crate) fn index_html(mut self) -> File {
        static INDEX_HTML: std::sync::LazyLock<[String; 1]> =
            std::sync::LazyLock::new(|| ["index.html".to_owned()]);
        self.index = std::borrow::Cow::Borrowed(&*INDEX_HTML);
        self
    }

    /// The index names tried for a directory: the runtime's `index` for a
    /// file of `dir_handler` that has any (the operator's list), else the
    /// handler's own.
    pub(crate) fn indexes<'a>(&'a self, rt: Option<&'a crate::rt::Runtime>) -> &'a [String] {
        match rt {
            Some(rt) if self.pages != Pages::Off && !self.index.is_empty() => &rt.index,
            _ => &self.index,
        }
    }
}

impl File {
    /// A directory that has none of its [`File::index`] names (any
    /// directory, without them) answers with a listing of its entries (HTML
    /// or JSON; names starting with `.` are left out unless `show_hidden`).
    /// Without this, such a directory is 404.
    pub fn list(mut self, show_hidden: bool) -> File {
        self.list = Some(show_hidden);
        self
    }

    /// Whether a directory without an index is listed, and with dot-names:
    /// asked for by the handler (`File::list`), or for `dir_handler`'s
    /// files by the runtime's `list = true`.
    pub(crate) fn listed(&self, rt: Option<&crate::rt::Runtime>) -> Option<bool> {
        let by_runtime = self.pages == Pages::On && rt.is_some_and(|rt| rt.list);
        self.list.or(by_runtime.then_some(self.hidden))
    }

    /// The directory listed when none of its index names is a file, if
    /// listing is on.
    fn listed_dir(&self, rt: Option<&crate::rt::Runtime>) -> Option<PathBuf> {
        self.listed(rt)?;
        Some(if self.name.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            self.name.clone()
        })
    }
}

impl super::IntoResponse for File {
    fn into_response(self) -> Response {
        let mut r = Response::new(200);
        r.body = Body::File(Box::new(self));
        r
    }
}

/// A name to open under the file's root, and what it is for.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub name: PathBuf,
    phase: Phase,
}

impl AsRef<Path> for Target {
    fn as_ref(&self) -> &Path {
        &self.name
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The name the request asked for.
    Asked,
    /// The request's directory's index name number `n` (`File::index`).
    Index(usize),
    /// The runtime's `fallback`, for a missing name: 200. `by_accept`:
    /// the request's `Accept` decided it (`Vary: Accept`).
    Fallback { by_accept: bool },
    /// The runtime's `not-found` page: 404, whole.
    NotFound { by_accept: bool },
}

/// A file response, decided: its head, and how its body travels.
pub(crate) struct Prepared {
    pub resp: Response,
    /// The Content-Length (also for HEAD, which sends no body).
    pub length: u64,
    pub plan: Plan,
    /// The file the answer is about, for the operator's rules.
    pub about: Option<About>,
}

/// The file an answer is about (`spec/site.md`): its name under the root,
/// whether the body is its bytes (not a status page or a listing), and
/// whether it is a listing the server wrote (never sandboxed as a file
/// someone uploaded may be).
pub(crate) struct About {
    pub name: PathBuf,
    pub file_body: bool,
    pub listing: bool,
}

pub(crate) enum Plan {
    /// No body (HEAD, 304, or a status page carried in `resp`).
    None,
    /// Bytes of a kept mapping.
    Kept(Bytes),
    /// A range of an opened file, by `sendfile` or by `pread`.
    File {
        file: Arc<fs::OpenFile>,
        start: u64,
        end: u64,
        vehicle: Vehicle,
    },
}

/// Where resolving got to.
pub(crate) enum Step {
    Ready(Prepared),
    /// The open would wait for the disk: run `root.open(target)` on the io
    /// pool and continue with [`opened`], handing back the [`Then`].
    Open(Target, Then),
    /// A directory to list: reading it may wait for the disk, so the
    /// backend runs [`ListAsk::run`] off its loop (always: there is no
    /// cached listing) and continues with [`listed`].
    List(Box<ListAsk>),
}

/// What a backend runs off its event loop for a request's file: an open or
/// a listing, each of which may wait for the disk (D9). Target-independent:
/// the io pool runs it on Linux, the wasm32 host in place.
pub(crate) enum Job {
    Open(Root, Target),
    List(Box<ListAsk>),
}

/// What a [`Job`] gave.
pub(crate) enum Fetched {
    Opened(Target, Result<Opened, fs::Error>),
    Listed(Result<Listed, fs::Error>),
}

impl Job {
    /// Does the work; it may wait for the disk.
    pub(crate) fn run(self) -> Fetched {
        match self {
            Job::Open(root, target) => {
                let result = root.open(&target);
                Fetched::Opened(target, result)
            }
            Job::List(ask) => Fetched::Listed(ask.run()),
        }
    }
}

/// What resolving carries across an open on the io pool: nothing while the
/// file itself is being opened; the file, found, while one of its
/// precompressed sidecars is.
#[derive(Default)]
pub(crate) struct Then(Option<Box<Original>>);
