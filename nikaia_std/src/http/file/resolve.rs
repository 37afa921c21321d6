//! Resolution: from the name a [`File`] gives to a found file (or one of its
//! precompressed sidecars) or a status: the kept table first, then an open
//! that may only use the kernel's caches; a directory's index, its listing
//! (read off the worker: [`Step::List`]), and the runtime's `fallback` and `not-found` pages for a missing name.

use super::compress;
use super::head::{build, status_only, Head, Meta};
use super::listing::{self, redirect_to_slash};
use super::{navigation, File, Pages, Phase, Prepared, Step, Target, Then};
use crate::fs::{self, Identity, Opened};
use crate::http::coding::Wanted;
use crate::http::port::{Codings, Reads, Rules};
use crate::http::request::Request;
use crate::http::response::Response;
use crate::rt::Coding;
use bytes::Bytes;
use std::path::{Path, PathBuf};

/// What every step of resolving asks about: the backend, the request, the
/// handler's response (its status and headers) and the file it returned.
pub(super) struct Ask<'a, F> {
    pub(super) files: &'a F,
    pub(super) req: &'a Request,
    pub(super) user: &'a Response,
    pub(super) file: &'a File,
}

/// The file a request named (or the runtime's page for it), found, while
/// its sidecars are looked for.
pub(super) struct Original {
    target: Target,
    id: Identity,
    meta: Meta,
    source: Source,
    /// Whether the answer carries `Vary: Accept-Encoding`.
    vary: bool,
    /// The codings still to try, best first; the one being opened is
    /// `trying`. `wanted` is all of them, for the kept variants.
    left: Wanted,
    wanted: Wanted,
    trying: Option<Coding>,
}

/// Where a found file's bytes come from.
pub(super) enum Source {
    Kept(Bytes),
    Open(fs::OpenFile),
}

/// Starts resolving `file` for `req`: the kept table first, then an open
/// that may only use the kernel's caches.
pub(crate) fn begin(
    files: &(impl Reads + Codings + Rules),
    req: &Request,
    user: &Response,
    file: &File,
) -> Step {
    Ask {
        files,
        req,
        user,
        file,
    }
    .begin()
}

/// Continues with the result of opening `target` (on the worker, or on the
/// io pool), handing back the [`Then`] that [`Step::Open`] gave.
pub(crate) fn opened(
    files: &(impl Reads + Codings + Rules),
    req: &Request,
    user: &Response,
    file: &File,
    target: Target,
    then: Then,
    result: Result<Opened, fs::Error>,
) -> Step {
    Ask {
        files,
        req,
        user,
        file,
    }
    .opened(target, then, result)
}

impl<F: Reads + Codings + Rules> Ask<'_, F> {
    fn begin(&self) -> Step {
        let file = self.file;
        if file.pages == Pages::Refused {
            return self.missing(Phase::Asked, false);
        }
        let dir = file.name.as_os_str().is_empty() || ends_with_slash(&file.name);
        if dir && self.serves_directories() {
            return self.index(0);
        }
        let target = Target {
            name: file.name.clone(),
            phase: Phase::Asked,
        };
        self.resolve(target)
    }

    /// The index names tried for a directory (`File::indexes`).
    fn indexes(&self) -> &[String] {
        self.file.indexes(self.files.runtime())
    }

    /// Whether a directory is answered (its index, or its listing) rather
    /// than 404: the handler asked for an index or a listing. The runtime's
    /// `index` may still be `[]`.
    fn serves_directories(&self) -> bool {
        !self.file.index.is_empty() || self.file.listed(self.files.runtime()).is_some()
    }

    /// Tries the directory's index name number `n`; past the last, the
    /// directory's listing if it is on, else a missing name.
    fn index(&self, n: usize) -> Step {
        let file = self.file;
        let Some(index) = self.indexes().get(n) else {
            return match file.listed_dir(self.files.runtime()) {
                Some(dir) => {
                    let rt = self.files.runtime().filter(|_| file.pages != Pages::Off);
                    listing::begin(self.req, file, dir, rt)
                }
                None => self.missing(Phase::Asked, true),
            };
        };
        let target = Target {
            name: file.name.join(index),
            phase: Phase::Index(n),
        };
        self.resolve(target)
    }

    /// The answer for a name that is not there (`may_fall_back`: missing, not
    /// outside or refused), after trying `from`: the runtime's `fallback` for a
    /// GET or HEAD, else its `not-found` page, else the plain 404.
    fn missing(&self, from: Phase, may_fall_back: bool) -> Step {
        let plain = |by_accept: bool| {
            let mut page = Response::status_page(404);
            if by_accept {
                page.push_header("Vary", Bytes::from_static(b"Accept"));
            }
            Step::Ready(status_only(page))
        };
        let Some(rt) = self
            .files
            .runtime()
            .filter(|_| self.file.pages != Pages::Off)
        else {
            return plain(false);
        };
        let get = self.req.method() == "GET" || self.req.is_head();
        let (next, by_accept) = match from {
            Phase::Asked | Phase::Index(_) if may_fall_back && get && rt.fallback.is_some() => {
                let rule = navigation::decide(self.req, rt.fallback_for);
                let by_accept = rule.by_accept;
                let next = if rule.fall_back {
                    rt.fallback
                        .as_deref()
                        .map(|n| (n, Phase::Fallback { by_accept }))
                } else {
                    rt.not_found
                        .as_deref()
                        .map(|n| (n, Phase::NotFound { by_accept }))
                };
                (next, by_accept)
            }
            Phase::Asked | Phase::Index(_) => (
                rt.not_found
                    .as_deref()
                    .map(|n| (n, Phase::NotFound { by_accept: false })),
                false,
            ),
            Phase::Fallback { by_accept } => (
                rt.not_found
                    .as_deref()
                    .map(|n| (n, Phase::NotFound { by_accept })),
                by_accept,
            ),
            Phase::NotFound { by_accept } => (None, by_accept),
        };
        match next {
            Some((name, phase)) => {
                let target = Target {
                    name: PathBuf::from(name),
                    phase,
                };
                self.resolve(target)
            }
            None => plain(by_accept),
        }
    }

    fn resolve(&self, target: Target) -> Step {
        let root = &self.file.root;
        if let Some((bytes, id, meta)) = self.files.kept(root, &target.name) {
            return self.found(target, id, meta, Source::Kept(bytes));
        }
        match self.files.open_now(root, &target.name) {
            Err(fs::Error::WouldBlock) => Step::Open(target, Then::default()),
            result => self.opened(target, Then::default(), result),
        }
    }

    /// Continues with the result of opening `target` (on the worker, or on
    /// the io pool).
    fn opened(&self, target: Target, then: Then, result: Result<Opened, fs::Error>) -> Step {
        if let Then(Some(original)) = then {
            return self.sidecar_opened(*original, target, result);
        }
        let (req, file) = (self.req, self.file);
        let asked = target.phase == Phase::Asked;
        let index = match target.phase {
            Phase::Index(n) => Some(n),
            _ => None,
        };
        let name = &target.name;
        match result {
            Ok(opened) => {
                let meta = Meta::of(name, &opened.id);
                let source = match self.files.offer(&file.root, name, &opened, &meta) {
                    Some(bytes) => Source::Kept(bytes),
                    None => Source::Open(opened.file),
                };
                self.found(target, opened.id, meta, source)
            }
            Err(fs::Error::NotAFile { directory: true })
                if asked && self.serves_directories() && *name == file.name =>
            {
                if ends_with_slash(&file.name) || req.path().ends_with('/') {
                    self.index(0)
                } else {
                    Step::Ready(status_only(redirect_to_slash(req)))
                }
            }
            Err(fs::Error::WouldBlock) => Step::Open(target, Then::default()),
            // This index name is not there (or not a file): the next one.
            Err(fs::Error::NotFound | fs::Error::NotAFile { .. }) if index.is_some() => {
                self.index(index.map_or(0, |n| n + 1))
            }
            // Outside the root: the same 404 as a missing name, never the
            // fallback (a symlink out must not answer with the app).
            Err(fs::Error::Outside(_)) => self.missing(target.phase, false),
            Err(fs::Error::NotFound | fs::Error::NotAFile { .. }) => {
                self.missing(target.phase, true)
            }
            Err(e) => Step::Ready(status_only(Response::internal_error(format!(
                "cannot open {:?}: {e}",
                name
            )))),
        }
    }

    /// The file itself is found: answer with the best sidecar the client
    /// accepts, or with the file.
    fn found(&self, target: Target, id: Identity, meta: Meta, source: Source) -> Step {
        let files = self.files;
        // A handler that set its own Content-Encoding has chosen the bytes.
        let negotiate =
            !files.precompressed().is_empty() && self.user.get_header("content-encoding").is_none();
        let left = if negotiate {
            Wanted::of(self.req, files.precompressed())
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
            wanted: left,
            trying: None,
        };
        self.next_sidecar(original)
    }

    /// Tries the sidecars still left, best first; the file itself when none
    /// can be used.
    fn next_sidecar(&self, mut original: Original) -> Step {
        let (files, root) = (self.files, &self.file.root);
        while let Some(coding) = original.left.next() {
            let name = sidecar_name(&original.target.name, coding);
            if let Some((bytes, id, meta)) = files.kept(root, &name) {
                if fresh(&id, &original.id) {
                    let source = Source::Kept(bytes);
                    return Step::Ready(self.coded(&original, coding, id, &meta, source));
                }
                continue;
            }
            if files.known_absent(root, &name) {
                continue;
            }
            original.trying = Some(coding);
            let target = Target {
                name,
                phase: original.target.phase,
            };
            match files.open_now(root, &target.name) {
                Err(fs::Error::WouldBlock) => {
                    return Step::Open(target, Then(Some(Box::new(original))))
                }
                Err(fs::Error::NotFound) => files.note_absent(root, &target.name),
                result => {
                    if let Some(p) = self.use_sidecar(&original, target, result) {
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
            wanted,
            ..
        } = original;
        let variant =
            compress::kept_variant(self, root, &target.name, &id, meta.content_type, wanted);
        if let Some((coding, bytes, validators)) = variant {
            let head = Head {
                validators: &validators,
                content_type: meta.content_type,
                coding: Some(coding),
                vary: true,
            };
            // Lengths and ranges count the encoded bytes.
            let id = Identity {
                size: bytes.len() as u64,
                ..id
            };
            return Step::Ready(build(self, &target, head, id, Source::Kept(bytes)));
        }
        let head = Head {
            validators: &meta.validators,
            content_type: meta.content_type,
            coding: None,
            vary,
        };
        Step::Ready(build(self, &target, head, id, source))
    }

    /// Continues with a sidecar opened on the io pool.
    fn sidecar_opened(
        &self,
        original: Original,
        sidecar: Target,
        result: Result<Opened, fs::Error>,
    ) -> Step {
        if let Err(fs::Error::NotFound) = result {
            self.files.note_absent(&self.file.root, &sidecar.name);
        }
        match self.use_sidecar(&original, sidecar, result) {
            Some(prepared) => Step::Ready(prepared),
            None => self.next_sidecar(original),
        }
    }

    /// The answer from an opened sidecar, if it can be used: a regular file
    /// under the root (the open's rules), not empty, not older than the file.
    fn use_sidecar(
        &self,
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
        let source = match self.files.offer(&self.file.root, &name, &opened, &meta) {
            Some(bytes) => Source::Kept(bytes),
            None => Source::Open(opened.file),
        };
        Some(self.coded(original, coding, opened.id, &meta, source))
    }

    /// The answer with a sidecar: its bytes, length and validators (its ETag
    /// names the coding), the file's type.
    fn coded(
        &self,
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
        build(self, &original.target, head, id, source)
    }
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

fn ends_with_slash(p: &Path) -> bool {
    p.as_os_str().as_encoded_bytes().ends_with(b"/")
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
