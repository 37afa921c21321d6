//! What the answer pipeline asks of a backend, one trait per job: reading
//! files ([`Reads`]), their coded variants ([`Codings`]), making the sinks
//! of bodies that go to disk ([`Writes`]), answering ACME's HTTP-01
//! validations ([`Challenges`]), and what the site's rules need of the
//! runtime and the connection ([`Rules`]). A backend is all five
//! ([`Port`]); each step of the pipeline asks only for the ones it uses.
//!
//! The Linux server implements them for each connection (`Serving`, in
//! `linux/shared.rs`): its kept table, io pool, writer threads, challenge
//! table and verifier pool. The wasm32 host reads files and nothing else;
//! the defaults are what a backend without the rest answers. Every call is
//! static (the pipeline is generic over the backend): no trait object.

use super::file::{Meta, Variant};
use super::redirect::Http01;
use super::site::{resume, Check};
use super::{body::Erased, Request, Response, ToFile};
use crate::fs::{self, Identity, Opened, Root};
use crate::rt::{Coding, Runtime, Vehicle};
use bytes::Bytes;
use std::path::Path;

/// Reading a file a request resolved to: the kept table, an open that
/// does not wait for the disk, the sidecars known absent, and how the
/// bytes of a file that is not kept travel.
pub(crate) trait Reads {
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
}

/// The coded forms of a file the backend serves: the sidecars it looks
/// for (`precompressed`) and the variants it keeps (`compress`).
pub(crate) trait Codings {
    /// The sidecar codings served (`precompressed`), in the server's order.
    fn precompressed(&self) -> &[Coding];
    /// Whether this backend keeps compressed variants (`compress`).
    fn compresses(&self) -> bool {
        false
    }
    /// The kept variant of the file `id` (`name` under `root`) compressed
    /// with `coding`, if one is kept and made from exactly that identity.
    /// Missing otherwise; then, when `queue`, the backend makes it off its
    /// workers for a later request.
    fn compressed(
        &self,
        _root: &Root,
        _name: &Path,
        _id: &Identity,
        _coding: Coding,
        _queue: bool,
    ) -> Variant {
        Variant::Missing
    }
}

/// Making the sinks of bodies that go to disk (a PUT, a DELETE, a
/// resumable upload's request), and counting the writes refused before
/// one is made. Where the backend writes nothing, each sink is a logged
/// 500 instead.
pub(crate) trait Writes {
    /// The sink that writes a request's body to the file `to` names (its
    /// `Content-Length`, if it gave one, is `length`), or the answer
    /// instead: a refusal from the head (the cap on writes at once), or —
    /// where the backend writes nothing — a logged 500.
    fn to_file(
        &self,
        req: &Request,
        to: ToFile,
        length: Option<u64>,
    ) -> Result<Box<dyn Erased>, Response> {
        let _ = (req, to, length);
        Err(Response::internal_error(
            "a body written to a file needs a backend that writes: this target's is read-only"
                .to_owned(),
        ))
    }
    /// The sink of a request of the tus endpoint, `ask` decided from its
    /// head (`spec/site.md`, "Resumable uploads"): the backend finds the
    /// upload, checks its final name under the write rules, and answers.
    /// Where the backend writes nothing, a logged 500.
    fn resume(
        &self,
        req: &Request,
        root: Root,
        ask: resume::Ask,
        hidden: bool,
    ) -> Result<Box<dyn Erased>, Response> {
        let _ = (req, root, ask, hidden);
        Err(Response::internal_error(
            "resumable uploads need a backend that writes: this target's is read-only".to_owned(),
        ))
    }
    /// The sink of a WebDAV request the site's rules let through from its
    /// head (`spec/site.md`, "WebDAV class 1"); where the backend writes
    /// nothing, a logged 500.
    fn dav(
        &self,
        req: &Request,
        job: crate::http::site::dav::Job,
    ) -> Result<Box<dyn Erased>, Response> {
        let _ = (req, job);
        Err(Response::internal_error(
            "WebDAV needs a backend that writes: this target's is read-only".to_owned(),
        ))
    }
    /// Counts an answer about a write of the directory writer, by status
    /// (`nikaia explain`); nothing where there are no counters.
    fn count_write(&self, _status: u16) {}
}

/// Answering ACME's HTTP-01 validations (`spec/tls.md`).
pub(crate) trait Challenges {
    /// What the server's ACME holds for an HTTP-01 validation of `token`
    /// asked for `host`: nothing, where there is no ACME.
    fn http01(&self, _host: Option<&str>, _token: &str) -> Http01 {
        Http01::NotOurs
    }
}

/// What the site's rules need (`spec/site.md`): the runtime that holds
/// them and the directory handler's pages, and what they ask of the
/// connection.
pub(crate) trait Rules {
    /// The runtime whose `cache-control`, `not-found` and `fallback` apply
    /// to `dir_handler`'s files; none where there is no runtime file.
    fn runtime(&self) -> Option<&Runtime> {
        None
    }
    /// Whether the connection is TLS (HSTS, auth on plain listeners).
    fn tls(&self) -> bool {
        false
    }
    /// Whether these credentials were verified a moment ago (the backend's
    /// bounded table; `spec/site.md`).
    fn verified(&self, _check: &Check) -> bool {
        false
    }
}

/// A backend: every port the pipeline may ask of it. Implemented for
/// whatever implements the five.
pub(crate) trait Port: Reads + Codings + Writes + Challenges + Rules {}

impl<B: Reads + Codings + Writes + Challenges + Rules> Port for B {}
