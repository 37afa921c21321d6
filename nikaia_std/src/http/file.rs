//! `http::File`: "the answer to this request is that file, and I have not
//! looked at it". The handler returns the description; after it returns, std
//! opens the name under its root, stats the one descriptor (D6), decides the
//! status and headers, and picks how the body travels (D3, D8).

use super::coding::Wanted;
use super::conditional::{preconditions, span, Precondition, Span, Validators};
use super::request::Request;
use super::response::{Body, Response};
use crate::fs::{self, Identity, Opened, Root};
use crate::rt::Coding;
use crate::send::Vehicle;
use bytes::Bytes;
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
    pub(crate) index: Option<String>,
    /// List a directory without an index; `Some(true)` shows dot-names too.
    pub(crate) list: Option<bool>,
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
            index: None,
            list: None,
            pages: Pages::Off,
        }
    }

    /// When the name is a directory, answer with this file inside it; a
    /// request for the directory without its trailing slash is redirected
    /// to the path with one (so relative links in the index resolve).
    pub fn index(mut self, index: &str) -> File {
        self.index = Some(index.to_owned());
        self
    }
}

impl File {
    /// With [`File::index`]: a directory that has no index answers with a
    /// listing of its entries (an HTML page; names starting with `.` are
    /// left out unless `show_hidden`). Without this, such a directory is 404.
    pub fn list(mut self, show_hidden: bool) -> File {
        self.list = Some(show_hidden);
        self
    }

    /// The directory whose listing answers when `name` (its index) is
    /// missing, if listing is on.
    fn listed_dir(&self, name: &Path) -> Option<PathBuf> {
        let index = self.index.as_deref()?;
        self.list?;
        let dir = if self.name.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            self.name.clone()
        };
        (name == dir.join(index) || name == self.name.join(index)).then_some(dir)
    }
}

impl super::IntoResponse for File {
    fn into_response(self) -> Response {
        let mut r = Response::new(200);
        r.body = Body::File(Box::new(self));
        r
    }
}

/// What resolving a file asks of the backend that will send it: the kept
/// table, an open that does not wait for the disk, and the vehicle. The
/// Linux server answers from its kept table and io pool; the wasm32 host
/// has neither.
pub(crate) trait Files {
    /// A kept file's bytes, identity and header material, revalidated.
    fn kept(&self, root: &Root, name: &Path) -> Option<(Bytes, Identity, Meta)>;
    /// Offers a file just opened for keeping: its kept bytes if kept now.
    fn offer(&self, root: &Root, name: &Path, opened: &Opened, meta: &Meta) -> Option<Bytes>;
    /// Opens `name`; [`fs::Error::WouldBlock`] hands the open to the io pool.
    fn open_now(&self, root: &Root, name: &Path) -> Result<Opened, fs::Error>;
    /// Whether `name`, a sidecar, was found absent a moment ago (the kept
    /// table's [`ABSENT_FOR`]): its open is skipped.
    ///
    /// [`ABSENT_FOR`]: crate::cache::ABSENT_FOR
    fn known_absent(&self, _root: &Root, _name: &Path) -> bool {
        false
    }
    /// Notes that the open of `name`, a sidecar, found nothing.
    fn note_absent(&self, _root: &Root, _name: &Path) {}
    /// How `len` bytes of a file that is not kept travel.
    fn vehicle(&self, len: u64) -> Vehicle;
    /// The sidecar codings served (`precompressed`), in the server's order.
    fn precompressed(&self) -> &[Coding];
    /// The runtime whose `cache-control`, `not-found` and `fallback` apply
    /// to `dir_handler`'s files; none where there is no runtime file.
    fn runtime(&self) -> Option<&crate::rt::Runtime> {
        None
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
    /// The name the request asked for (or its index).
    Asked,
    /// The runtime's `fallback`, for a missing name: 200.
    Fallback,
    /// The runtime's `not-found` page: 404, whole.
    NotFound,
}

/// A file response, decided: its head, and how its body travels.
pub(crate) struct Prepared {
    pub resp: Response,
    /// The Content-Length (also for HEAD, which sends no body).
    pub length: u64,
    pub plan: Plan,
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
        #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
        vehicle: Vehicle,
    },
}

/// Where resolving got to.
pub(crate) enum Step {
    Ready(Prepared),
    /// The open would wait for the disk: run `root.open(target)` on the io
    /// pool and continue with [`opened`], handing back the [`Then`].
    Open(Target, Then),
}

/// What resolving carries across an open on the io pool: nothing while the
/// file itself is being opened; the file, found, while one of its
/// precompressed sidecars is.
#[derive(Default)]
pub(crate) struct Then(Option<Box<Original>>);

/// The file a request named (or the runtime's page for it), found, while
/// its sidecars are looked for.
struct Original {
    target: Target,
    id: Identity,
    meta: Meta,
    source: Source,
    /// Whether the answer carries `Vary: Accept-Encoding`.
    vary: bool,
    /// The codings still to try, best first; the one being opened is
    /// `trying`.
    left: Wanted,
    trying: Option<Coding>,
}

/// Starts resolving `file` for `req`: the kept table first, then an open
/// that may only use the kernel's caches.
pub(crate) fn begin(shared: &impl Files, req: &Request, user: &Response, file: &File) -> Step {
    if file.pages == Pages::Refused {
        return missing(shared, req, user, file, Phase::Asked, false);
    }
    let name = match &file.index {
        Some(index) if file.name.as_os_str().is_empty() || ends_with_slash(&file.name) => {
            file.name.join(index)
        }
        _ => file.name.clone(),
    };
    let target = Target {
        name,
        phase: Phase::Asked,
    };
    resolve(shared, req, user, file, target)
}

/// The answer for a name that is not there (`may_fall_back`: missing, not
/// outside or refused), after trying `from`: the runtime's `fallback` for a
/// GET or HEAD, else its `not-found` page, else the plain 404.
fn missing(
    shared: &impl Files,
    req: &Request,
    user: &Response,
    file: &File,
    from: Phase,
    may_fall_back: bool,
) -> Step {
    let plain = || Step::Ready(status_only(Response::status_page(404)));
    let Some(rt) = shared.runtime().filter(|_| file.pages != Pages::Off) else {
        return plain();
    };
    let get = req.method() == "GET" || req.is_head();
    let next = match from {
        Phase::Asked if may_fall_back && get && rt.fallback.is_some() => {
            rt.fallback.as_deref().map(|name| (name, Phase::Fallback))
        }
        Phase::Asked | Phase::Fallback => {
            rt.not_found.as_deref().map(|name| (name, Phase::NotFound))
        }
        Phase::NotFound => None,
    };
    match next {
        Some((name, phase)) => {
            let target = Target {
                name: PathBuf::from(name),
                phase,
            };
            resolve(shared, req, user, file, target)
        }
        None => plain(),
    }
}

/// What a file's headers need, derived once from its name and identity;
/// the kept table keeps it beside the mapping so a hit formats nothing.
#[derive(Clone)]
pub(crate) struct Meta {
    validators: Validators,
    content_type: &'static str,
    /// For a name ending `.br`, `.zst` or `.gz`: its validators when it is
    /// sent as the sidecar of the name without that ending (an ETag of its
    /// own, the coding in it).
    coded: Option<Validators>,
}

impl Meta {
    fn of(name: &Path, id: &Identity) -> Meta {
        let ext = name.extension().and_then(|e| e.to_str());
        let coding = Coding::ALL.into_iter().find(|c| Some(c.extension()) == ext);
        Meta {
            validators: Validators::of(id),
            content_type: content_type(name),
            coded: coding.map(|c| Validators::coded(id, c)),
        }
    }
}

fn resolve(
    shared: &impl Files,
    req: &Request,
    user: &Response,
    file: &File,
    target: Target,
) -> Step {
    if let Some((bytes, id, meta)) = shared.kept(&file.root, &target.name) {
        return found(
            shared,
            req,
            user,
            file,
            target,
            id,
            meta,
            Source::Kept(bytes),
        );
    }
    match shared.open_now(&file.root, &target.name) {
        Err(fs::Error::WouldBlock) => Step::Open(target, Then::default()),
        result => opened(shared, req, user, file, target, Then::default(), result),
    }
}

/// Continues with the result of opening `name` (on the worker, or on the
/// io pool).
pub(crate) fn opened(
    shared: &impl Files,
    req: &Request,
    user: &Response,
    file: &File,
    target: Target,
    then: Then,
    result: Result<Opened, fs::Error>,
) -> Step {
    if let Then(Some(original)) = then {
        return sidecar_opened(shared, req, user, file, *original, target, result);
    }
    let asked = target.phase == Phase::Asked;
    let name = &target.name;
    match result {
        Ok(opened) => {
            let meta = Meta::of(name, &opened.id);
            let source = match shared.offer(&file.root, name, &opened, &meta) {
                Some(bytes) => Source::Kept(bytes),
                None => Source::Open(opened.file),
            };
            found(shared, req, user, file, target, opened.id, meta, source)
        }
        Err(fs::Error::NotAFile { directory: true })
            if asked && file.index.is_some() && *name == file.name =>
        {
            if ends_with_slash(&file.name) || req.path().ends_with('/') {
                let index = file.index.as_deref().unwrap_or_default();
                let target = Target {
                    name: name.join(index),
                    phase: Phase::Asked,
                };
                resolve(shared, req, user, file, target)
            } else {
                Step::Ready(status_only(redirect_to_slash(req)))
            }
        }
        Err(fs::Error::WouldBlock) => Step::Open(target, Then::default()),
        Err(fs::Error::NotFound) if asked && file.listed_dir(name).is_some() => {
            let dir = file.listed_dir(name).unwrap_or_default();
            Step::Ready(status_only(listing(req, file, &dir)))
        }
        // Outside the root: the same 404 as a missing name, never the
        // fallback (a symlink out must not answer with the app).
        Err(fs::Error::Outside(_)) => missing(shared, req, user, file, target.phase, false),
        Err(fs::Error::NotFound | fs::Error::NotAFile { .. }) => {
            missing(shared, req, user, file, target.phase, true)
        }
        Err(e) => Step::Ready(status_only(Response::internal_error(format!(
            "cannot open {:?}: {e}",
            name
        )))),
    }
}

enum Source {
    Kept(Bytes),
    Open(fs::OpenFile),
}

/// The file itself is found: answer with the best sidecar the client
/// accepts, or with the file.
#[allow(clippy::too_many_arguments)]
fn found(
    shared: &impl Files,
    req: &Request,
    user: &Response,
    file: &File,
    target: Target,
    id: Identity,
    meta: Meta,
    source: Source,
) -> Step {
    // A handler that set its own Content-Encoding has chosen the bytes.
    let negotiate =
        !shared.precompressed().is_empty() && user.get_header("content-encoding").is_none();
    let left = if negotiate {
        Wanted::of(req, shared.precompressed())
    } else {
        Wanted::default()
    };
    let original = Original {
        target,
        id,
        meta,
        source,
        vary: negotiate,
        left,
        trying: None,
    };
    next_sidecar(shared, req, user, file, original)
}

/// Tries the sidecars still left, best first; the file itself when none
/// can be used.
fn next_sidecar(
    shared: &impl Files,
    req: &Request,
    user: &Response,
    file: &File,
    mut original: Original,
) -> Step {
    while let Some(coding) = original.left.next() {
        let name = sidecar_name(&original.target.name, coding);
        if let Some((bytes, id, meta)) = shared.kept(&file.root, &name) {
            if fresh(&id, &original.id) {
                let source = Source::Kept(bytes);
                return Step::Ready(coded(
                    shared, req, user, file, &original, coding, id, &meta, source,
                ));
            }
            continue;
        }
        if shared.known_absent(&file.root, &name) {
            continue;
        }
        original.trying = Some(coding);
        let target = Target {
            name,
            phase: original.target.phase,
        };
        match shared.open_now(&file.root, &target.name) {
            Err(fs::Error::WouldBlock) => {
                return Step::Open(target, Then(Some(Box::new(original))))
            }
            Err(fs::Error::NotFound) => shared.note_absent(&file.root, &target.name),
            result => {
                if let Some(p) = use_sidecar(shared, req, user, file, &original, target, result) {
                    return Step::Ready(p);
                }
            }
        }
    }
    let Original {
        target,
        id,
        meta,
        source,
        vary,
        ..
    } = original;
    let head = Head {
        validators: &meta.validators,
        content_type: meta.content_type,
        coding: None,
        vary,
    };
    Step::Ready(build(shared, req, user, file, &target, head, id, source))
}

/// Continues with a sidecar opened on the io pool.
fn sidecar_opened(
    shared: &impl Files,
    req: &Request,
    user: &Response,
    file: &File,
    original: Original,
    sidecar: Target,
    result: Result<Opened, fs::Error>,
) -> Step {
    if let Err(fs::Error::NotFound) = result {
        shared.note_absent(&file.root, &sidecar.name);
    }
    match use_sidecar(shared, req, user, file, &original, sidecar, result) {
        Some(prepared) => Step::Ready(prepared),
        None => next_sidecar(shared, req, user, file, original),
    }
}

/// The answer from an opened sidecar, if it can be used: a regular file
/// under the root (the open's rules), not empty, not older than the file.
fn use_sidecar(
    shared: &impl Files,
    req: &Request,
    user: &Response,
    file: &File,
    original: &Original,
    sidecar: Target,
    result: Result<Opened, fs::Error>,
) -> Option<Prepared> {
    let name = sidecar.name;
    let coding = original.trying?;
    let opened = result.ok()?;
    if !fresh(&opened.id, &original.id) {
        return None;
    }
    let meta = Meta::of(&name, &opened.id);
    let source = match shared.offer(&file.root, &name, &opened, &meta) {
        Some(bytes) => Source::Kept(bytes),
        None => Source::Open(opened.file),
    };
    Some(coded(
        shared, req, user, file, original, coding, opened.id, &meta, source,
    ))
}

/// The answer with a sidecar: its bytes, length and validators (its ETag
/// names the coding), the file's type.
#[allow(clippy::too_many_arguments)]
fn coded(
    shared: &impl Files,
    req: &Request,
    user: &Response,
    file: &File,
    original: &Original,
    coding: Coding,
    id: Identity,
    meta: &Meta,
    source: Source,
) -> Prepared {
    let head = Head {
        validators: meta.coded.as_ref().unwrap_or(&meta.validators),
        content_type: original.meta.content_type,
        coding: Some(coding),
        vary: true,
    };
    build(shared, req, user, file, &original.target, head, id, source)
}

/// A sidecar can stand for the file when it is not empty (no coding of
/// anything is empty) and not older than the file.
fn fresh(sidecar: &Identity, file: &Identity) -> bool {
    sidecar.size > 0 && sidecar.mtime_ns >= file.mtime_ns
}

/// `NAME.br`, `NAME.zst`, `NAME.gz`.
fn sidecar_name(name: &Path, coding: Coding) -> PathBuf {
    let mut s = name.as_os_str().to_owned();
    s.push(".");
    s.push(coding.extension());
    PathBuf::from(s)
}

/// How a file answer is headed: validators and type, and the coding when a
/// sidecar is sent.
struct Head<'a> {
    validators: &'a Validators,
    content_type: &'static str,
    coding: Option<Coding>,
    vary: bool,
}

fn status_only(resp: Response) -> Prepared {
    let length = resp.body.len();
    Prepared {
        resp,
        length,
        plan: Plan::None,
    }
}

/// Status, headers and body plan for a file (or sidecar) whose identity is
/// `id`.
#[allow(clippy::too_many_arguments)]
fn build(
    shared: &impl Files,
    req: &Request,
    user: &Response,
    file: &File,
    target: &Target,
    head: Head<'_>,
    id: Identity,
    source: Source,
) -> Prepared {
    let v = head.validators;
    let status = match target.phase {
        Phase::NotFound => 404,
        Phase::Asked | Phase::Fallback => user.status,
    };
    let mut resp = Response::new(status);
    resp.headers.reserve(user.headers.len() + 6);
    resp.headers.extend(user.headers.iter().cloned());
    for (name, value) in [("Last-Modified", &v.last_modified), ("ETag", &v.etag)] {
        if resp.get_header(name).is_none() {
            resp.push_header(name, value.clone());
        }
    }
    if let Some(coding) = head.coding {
        resp.push_header(
            "Content-Encoding",
            Bytes::from_static(coding.token().as_bytes()),
        );
    }
    let user_varies = user
        .get_header("vary")
        .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding"));
    if head.vary && !user_varies {
        resp.push_header("Vary", Bytes::from_static(b"Accept-Encoding"));
    }
    resp.default_type = Some(head.content_type);
    if status != 200 {
        // A handler's own status (a custom 404 page, say) is sent as is,
        // whole, without preconditions or ranges.
        return plan(shared, req, resp, source, 0, id.size);
    }
    if file.pages == Pages::On && resp.get_header("Cache-Control").is_none() {
        let rules = shared.runtime().map(|rt| &rt.cache_control);
        let name = target.name.to_string_lossy();
        if let Some(value) = rules.and_then(|rules| rules.value_for(&name)) {
            resp.push_header("Cache-Control", Bytes::copy_from_slice(value.as_bytes()));
        }
    }
    match preconditions(req, v) {
        Precondition::NotModified => {
            resp.status = 304;
            return Prepared {
                resp,
                length: 0,
                plan: Plan::None,
            };
        }
        Precondition::Failed => return status_only(Response::status_page(412)),
        Precondition::Proceed => {}
    }
    resp.push_header("Accept-Ranges", Bytes::from_static(b"bytes"));
    match span(req, id.size, v) {
        Span::Full => plan(shared, req, resp, source, 0, id.size),
        Span::Part { start, end } => {
            resp.status = 206;
            let range = format!("bytes {}-{}/{}", start, end - 1, id.size);
            resp.push_header("Content-Range", Bytes::from(range));
            plan(shared, req, resp, source, start, end)
        }
        Span::Unsatisfiable => {
            let mut r = Response::status_page(416);
            r.push_header("Content-Range", Bytes::from(format!("bytes */{}", id.size)));
            status_only(r)
        }
    }
}

fn plan(
    shared: &impl Files,
    req: &Request,
    resp: Response,
    source: Source,
    start: u64,
    end: u64,
) -> Prepared {
    let length = end - start;
    let plan = if req.is_head() || length == 0 {
        Plan::None
    } else {
        match source {
            Source::Kept(bytes) => Plan::Kept(bytes.slice(start as usize..end as usize)),
            Source::Open(file) => Plan::File {
                file: Arc::new(file),
                start,
                end,
                vehicle: shared.vehicle(length),
            },
        }
    };
    Prepared { resp, length, plan }
}

/// The type for a name's extension; `application/octet-stream` when unknown.
/// The common text types are declared UTF-8.
fn content_type(name: &Path) -> &'static str {
    match mime_guess::from_path(name).first_raw() {
        Some(t) => with_charset(t),
        None => "application/octet-stream",
    }
}

fn with_charset(t: &'static str) -> &'static str {
    match t {
        "text/html" => "text/html; charset=utf-8",
        "text/plain" => "text/plain; charset=utf-8",
        "text/css" => "text/css; charset=utf-8",
        "text/javascript" => "text/javascript; charset=utf-8",
        "application/javascript" => "application/javascript; charset=utf-8",
        "text/markdown" => "text/markdown; charset=utf-8",
        "text/csv" => "text/csv; charset=utf-8",
        "text/xml" => "text/xml; charset=utf-8",
        "text/x-rust" => "text/x-rust; charset=utf-8",
        other => other,
    }
}

fn ends_with_slash(p: &Path) -> bool {
    p.as_os_str().as_encoded_bytes().ends_with(b"/")
}

/// An HTML page listing the directory `dir` under the file's root. Names are
/// escaped for HTML and percent-encoded in links; the listing reads the
/// directory on the worker (a rare request, and the one exception to D9).
fn listing(req: &Request, file: &File, dir: &Path) -> Response {
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
fn redirect_to_slash(req: &Request) -> Response {
    let path = req.path().trim_start_matches('/');
    let mut location = format!("/{}/", percent_encode(path, b"-._~/!$&'()*+,;=:@"));
    if let Some(q) = req.query() {
        location.push('?');
        location.push_str(q);
    }
    Response::status_page(301).header("Location", location)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Coding::Zstd;

    #[test]
    fn sidecar_names_and_freshness() {
        assert_eq!(
            sidecar_name(Path::new("a/app.js"), Zstd),
            Path::new("a/app.js.zst")
        );
        let id = |size, mtime_ns| Identity {
            dev: 1,
            ino: 1,
            size,
            mtime_ns,
            ctime_ns: 0,
        };
        assert!(fresh(&id(10, 5), &id(100, 5)));
        assert!(fresh(&id(10, 6), &id(100, 5)));
        assert!(!fresh(&id(10, 4), &id(100, 5)));
        assert!(!fresh(&id(0, 6), &id(100, 5)));
    }
}
