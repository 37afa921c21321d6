//! A body written under a root by std, the inbound twin of
//! [`File`](super::File) (`spec/files.md`, "A body written under a root"):
//! the program names the file, under an [`fs::Root`], and how it takes
//! its name; std writes the body to an unnamed file as it arrives, off the
//! workers, and gives it the name once it is whole and synced. Then the
//! program's answer, or std's.

use super::request::Request;
use super::response::{IntoResponse, Response};
use crate::fs::{self, Durability, Mode, Root, Written};
use std::path::{Path, PathBuf};

/// What a [`Server::to_file`](super::Server::to_file) handler makes of a
/// request's head: the file its body becomes.
///
/// ```no_run
/// use nikaia_std::{fs::Root, http::{Server, ToFile}};
/// let drop = Root::dir("/srv/drop").unwrap();
/// Server::new()
///     .to_file("PUT", "/drop/*name", move |req| ToFile::create(req.param().unwrap_or(""), &drop))
///     .run()
///     .unwrap();
/// ```
pub struct ToFile {
    pub(crate) root: Root,
    pub(crate) name: PathBuf,
    pub(crate) mode: Mode,
    pub(crate) durability: Durability,
    pub(crate) answer: Option<AnswerWith>,
    /// A write of the directory writer: the site's write rules decide it
    /// (`spec/site.md`, "Writes"), from the head.
    pub(crate) site: Option<super::site::write::Asked>,
    /// What those rules let it do, once they have.
    pub(crate) permit: Option<Box<super::site::write::Permit>>,
}

/// The program's answer once the body is written (or is not).
pub(crate) type AnswerWith =
    Box<dyn FnOnce(&Request, Result<Written, fs::Error>) -> Response + Send>;

impl ToFile {
    pub(crate) fn new(name: impl AsRef<Path>, root: &Root, mode: Mode) -> ToFile {
        ToFile {
            root: root.clone(),
            name: name.as_ref().to_path_buf(),
            mode,
            durability: Durability::default(),
            answer: None,
            site: None,
            permit: None,
        }
    }

    /// The body becomes `name` under `root` only if that name does not
    /// exist (412 when it does, or when it appears first).
    pub fn create(name: impl AsRef<Path>, root: &Root) -> ToFile {
        ToFile::new(name, root, Mode::Create)
    }

    /// The body becomes `name` under `root`, replacing the regular file
    /// there if there is one.
    pub fn replace(name: impl AsRef<Path>, root: &Root) -> ToFile {
        ToFile::new(name, root, Mode::Replace)
    }

    /// The body replaces `name` under `root` only if the file there is the
    /// version whose ETag is `etag` (as an `If-Match` gives it; `*`: any
    /// version), checked from the head and again when the name is given:
    /// 412 otherwise, and the file is untouched.
    pub fn replace_if(name: impl AsRef<Path>, root: &Root, etag: impl Into<String>) -> ToFile {
        ToFile::new(name, root, Mode::ReplaceIf(etag.into()))
    }

    /// What is on the disk before the name appears and the answer goes
    /// out ([`Durability::Data`] unless said).
    pub fn durability(mut self, durability: Durability) -> ToFile {
        self.durability = durability;
        self
    }

    /// The answer once the body is written, or why it is not: without it,
    /// std answers as [`answer_written`] says.
    pub fn answer<R, F>(mut self, answer: F) -> ToFile
    where
        F: FnOnce(&Request, Result<Written, fs::Error>) -> R + Send + 'static,
        R: IntoResponse,
    {
        self.answer = Some(Box::new(move |req, done| answer(req, done).into_response()));
        self
    }

    /// The answer to `req` for `done`: the program's, else std's.
    pub(crate) fn answer_for(
        answer: Option<AnswerWith>,
        req: &Request,
        done: Result<Written, fs::Error>,
    ) -> Response {
        match answer {
            Some(answer) => answer(req, done),
            None => answer_written(req, done),
        }
    }
}

/// What a [`Server::to_file`](super::Server::to_file) handler returns: the
/// [`ToFile`], or — as `Err` of a `Result` — the answer instead, from the
/// head (no byte of the body is read, no `100 Continue` sent).
pub trait IntoToFile {
    /// The file, or the answer that replaces it.
    fn into_to_file(self) -> Result<ToFile, Response>;
}

impl IntoToFile for ToFile {
    fn into_to_file(self) -> Result<ToFile, Response> {
        Ok(self)
    }
}

impl<R: IntoResponse> IntoToFile for Result<ToFile, R> {
    fn into_to_file(self) -> Result<ToFile, Response> {
        self.map_err(IntoResponse::into_response)
    }
}

/// std's answer to a body written to a file: `201 Created` with
/// `Location` (the request's path) for a name that is new, `204 No
/// Content` for one replaced, each with the new file's `ETag`; or the
/// status of what went wrong ([`status_of`]).
pub fn answer_written(req: &Request, done: Result<Written, fs::Error>) -> Response {
    write_answer(req, req.path(), Wrote::Made, done.map(Some))
}

/// The status of a write that did not happen: 404 for a name outside the
/// root (as a read), 409 for a directory that is missing or a name that is
/// a directory (or not a regular file), 412 for a name that exists (a
/// create) or holds another version, 403 for a write a rule refuses or the
/// kernel does, 507 for no space, 500 otherwise.
pub fn status_of(e: &fs::Error) -> u16 {
    failed(Wrote::Made, e)
}

/// What a write did, for its answer: made (or replaced) a name, or
/// removed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wrote {
    Made,
    Removed,
}

/// The one map from a write's failure to its status, for every write std
/// answers: a program's `to_file`, the directory writer's `PUT` and
/// `DELETE`, a resumable upload's runs and name.
pub(crate) fn failed(wrote: Wrote, e: &fs::Error) -> u16 {
    use std::io::ErrorKind::{DirectoryNotEmpty, PermissionDenied};
    match e {
        fs::Error::Outside(_) => 404,
        fs::Error::NotFound if wrote == Wrote::Removed => 404,
        // A missing directory on the way (no `make-dirs`), a directory at
        // the name, a directory that is not empty.
        fs::Error::NotFound | fs::Error::NotAFile { .. } => 409,
        fs::Error::Io(e) if e.kind() == DirectoryNotEmpty => 409,
        fs::Error::Exists | fs::Error::Precondition => 412,
        fs::Error::Denied(_) => 403,
        fs::Error::Io(e) if e.kind() == PermissionDenied => 403,
        fs::Error::NoSpace => 507,
        fs::Error::Locked(_) => 423,
        fs::Error::WouldBlock => 503,
        _ => 500,
    }
}

/// The answer to a write of `name` (as the log shows it): `201` with
/// `Location` and `ETag` for a name made, `204` (with the `ETag` of a
/// file replaced) otherwise, or the status [`failed`] gives — logged
/// where the server's side failed (500) or the kernel refused (403).
pub(crate) fn write_answer(
    req: &Request,
    name: &str,
    wrote: Wrote,
    done: Result<Option<Written>, fs::Error>,
) -> Response {
    match done {
        Ok(Some(written)) if written.created => {
            let location = req.target().split('?').next().unwrap_or("/").to_owned();
            Response::new(201)
                .header("Location", location)
                .header("ETag", written.id.etag())
        }
        Ok(Some(written)) => Response::new(204).header("ETag", written.id.etag()),
        Ok(None) => Response::new(204),
        Err(fs::Error::Locked(roots)) => crate::http::site::lock::locked(&roots),
        Err(e) => {
            let status = failed(wrote, &e);
            let mut resp = Response::status_page(status);
            if matches!(e, fs::Error::Io(_)) && matches!(status, 403 | 500) {
                resp.log_error = Some(format!("{} {name}: {e}", req.method()).into());
            }
            resp
        }
    }
}

/// A `to_file` route's handler: the file for a request, or the answer
/// instead.
pub(crate) type MakeFile = Box<dyn Fn(&Request) -> Result<ToFile, Response> + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    fn io(kind: ErrorKind) -> fs::Error {
        fs::Error::Io(std::io::Error::from(kind))
    }

    #[test]
    fn one_map_gives_every_write_failure_its_status() {
        let outside = fs::Outside::new(std::path::Path::new("../x"));
        let cases = [
            (fs::Error::Outside(outside), 404, 404),
            (fs::Error::NotFound, 409, 404),
            (fs::Error::NotAFile { directory: true }, 409, 409),
            (io(ErrorKind::DirectoryNotEmpty), 409, 409),
            (fs::Error::Exists, 412, 412),
            (fs::Error::Precondition, 412, 412),
            (fs::Error::Denied("a rule".into()), 403, 403),
            (io(ErrorKind::PermissionDenied), 403, 403),
            (fs::Error::NoSpace, 507, 507),
            (fs::Error::WouldBlock, 503, 503),
            (io(ErrorKind::Other), 500, 500),
        ];
        for (e, made, removed) in cases {
            assert_eq!(failed(Wrote::Made, &e), made, "{e:?}");
            assert_eq!(failed(Wrote::Removed, &e), removed, "{e:?}");
        }
    }

    #[test]
    fn the_kernels_refusal_and_a_fault_are_logged_a_rules_refusal_is_not() {
        let req = crate::http::h1::parse::test_request("PUT /a HTTP/1.1\r\nHost: t\r\n\r\n");
        let answer = |e| write_answer(&req, "a", Wrote::Made, Err(e));
        let kernel = answer(io(ErrorKind::PermissionDenied));
        assert_eq!(kernel.status(), 403);
        assert!(kernel.log_error.is_some());
        let rule = answer(fs::Error::Denied("the rule does not let this".into()));
        assert_eq!((rule.status(), rule.log_error.is_none()), (403, true));
        assert!(answer(io(ErrorKind::Other)).log_error.is_some());
    }
}
