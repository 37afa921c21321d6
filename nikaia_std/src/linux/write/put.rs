//! A body written to a file (`spec/files.md`, "A body written under a
//! root"): a program's `to_file` route, or a `PUT` of the directory
//! writer under the site's rules. Its credentials are checked before it
//! takes a place among the writes, its unnamed file is opened (the name
//! and the space found as the head asks) before the body is taken, its
//! runs are written keeping the file system above its floor, and the file
//! is synced and named once the body is whole.

use super::locks::table::Reach;
use super::own::{answer_refusal, answered, Own};
use super::sink::{Act, End, Sink, Step};
use super::{Slot, Wing};
use crate::fs::{self, Durability, Written};
use crate::http::site::write::Permit;
use crate::http::site::{Check, Verdict};
use crate::http::to_file::{AnswerWith, ToFile};
use crate::http::{Request, Response};
use crate::rt::Runtime;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// How much may be written between two looks at the free space: the
/// floor is kept by an estimate in between.
const SPACE_LOOK: u64 = 16 << 20;

/// The sink that writes `req`'s body as `to` says, or the answer from its
/// head: 503 while `max-writes` bodies are being written. Credentials
/// still to check take no place among the writes: a flood of wrong
/// passwords holds no writer's slot.
pub(super) fn upload(
    wing: &Arc<Wing>,
    rt: &Runtime,
    req: &Request,
    to: ToFile,
    length: Option<u64>,
) -> Result<Sink<Put>, Response> {
    let site = to.permit;
    let pending = site.as_ref().is_some_and(|p| p.check.is_some());
    let slot = match pending {
        true => None,
        false => Some(wing.slot(rt.max_writes).map_err(|busy| {
            if site.is_some() {
                wing.writes.refused(503);
            }
            answer_refusal(rt, req, site.as_deref(), busy)
        })?),
    };
    let (mode, durability) = match &site {
        Some(p) => (fs::Mode::Conditional(p.conditions.clone()), p.durability),
        None => (to.mode, to.durability),
    };
    let put = Put {
        wing: wing.clone(),
        req: req.clone(),
        to: Some(Target {
            root: to.root,
            name: to.name,
            mode,
        }),
        writing: None,
        space: Space {
            floor: rt.write_free_floor,
            room: 0,
            since_look: SPACE_LOOK,
        },
        durability,
        length,
        answer: to.answer,
        own: Own::of(rt, site.is_some()),
        site,
        slot,
    };
    Ok(Sink::new(wing, put))
}

/// A body written to a file.
pub(super) struct Put {
    wing: Arc<Wing>,
    req: Request,
    /// What it becomes and how: taken when the file is opened.
    to: Option<Target>,
    /// The file being written, between runs.
    writing: Option<fs::Writing>,
    /// What the writes know of the free space, between runs.
    space: Space,
    durability: Durability,
    /// The body's `Content-Length`, if it gave one.
    length: Option<u64>,
    /// A program's answer to what was written.
    answer: Option<AnswerWith>,
    /// The runtime file's own files and names, never written.
    own: Own,
    /// A write of the directory writer: what the site's rules let it do.
    site: Option<Box<Permit>>,
    /// Its place among the writes, once it has one.
    slot: Option<Slot>,
}

/// What a body becomes, until its file is opened.
struct Target {
    root: fs::Root,
    name: std::path::PathBuf,
    mode: fs::Mode,
}

impl Act for Put {
    const STOPS_WITHOUT_CLIENT: bool = true;

    fn begin(&mut self) -> Step {
        super::first(self.site.as_mut())
    }

    /// The credentials of a site write were checked: a place among the
    /// writes, or the answer.
    fn checked(&mut self, check: Check, verdict: Verdict) -> Step {
        if let Err(resp) = self
            .wing
            .verified(&self.req, &mut self.site, check, verdict)
        {
            self.wing.writes.refused(resp.status());
            return Step::Answer(resp);
        }
        match self.wing.slot(self.wing.runtime().max_writes) {
            Ok(slot) => {
                self.slot = Some(slot);
                Step::Open
            }
            Err(busy) => {
                let rt = self.wing.runtime();
                let resp = answer_refusal(&rt, &self.req, self.site.as_deref(), busy);
                self.wing.writes.refused(resp.status());
                Step::Answer(resp)
            }
        }
    }

    /// Opens the unnamed file (under the site's guard, for a write of the
    /// directory writer); a site write whose preconditions held but whose
    /// head cannot be taken (400, 415, 413) is answered now.
    fn open(&mut self) -> Step {
        let Some(to) = self.to.take() else {
            return Step::Answer(Response::status_page(500));
        };
        let guard = (self.site.as_ref()).map(|p| {
            let mut guard = p.guard(self.own.identities(&to.root));
            // WebDAV's locks and `If:`, asked at the open (a 423 before the
            // body) and again with the name held when it is given.
            let name = to.name.as_os_str().as_encoded_bytes();
            if let Some(gate) = self.wing.lock_gate(&to.root, name, p) {
                guard.held = super::locks::held(gate, Reach::Member, Reach::Own);
            }
            guard
        });
        let owed = self.site.as_ref().and_then(|p| p.after_preconditions);
        let opened = open(&to, guard.as_ref(), self.length, self.space.floor);
        match (opened, owed) {
            (Ok(writing), Some(status)) => {
                // The preconditions held: now the head's own fault (the
                // file closed before the answer).
                drop(writing);
                self.wing.bodies.files_refused.fetch_add(1, Relaxed);
                let resp = Response::status_page(status);
                let rt = self.wing.runtime();
                Step::Answer(answer_refusal(&rt, &self.req, self.site.as_deref(), resp))
            }
            (Ok(writing), None) => {
                self.writing = Some(writing);
                Step::Body
            }
            (Err(e), _) => {
                self.wing.bodies.files_refused.fetch_add(1, Relaxed);
                Step::Answer(self.answer(Err(e)))
            }
        }
    }

    fn write(&mut self, run: &[u8]) -> Result<(), Response> {
        let Some(writing) = self.writing.as_mut() else {
            return Ok(());
        };
        if let Err(e) = write_run(writing, run, &mut self.space) {
            // The file closes before the answer goes: its space is back
            // when the client reads the 507.
            self.writing = None;
            self.wing.bodies.files_failed.fetch_add(1, Relaxed);
            return Err(self.answer(Err(e)));
        }
        Ok(())
    }

    /// Syncs and names the file (the unnamed file goes with its
    /// descriptor, a named temporary is removed, if the client left).
    fn name(&mut self, end: End) -> Option<Response> {
        let writing = self.writing.take();
        if end == End::Left {
            self.slot = None;
            return None;
        }
        let done = match writing {
            Some(w) => w.commit(self.durability),
            None => Err(fs::Error::Io(std::io::Error::other("no file was opened"))),
        };
        let bodies = &self.wing.bodies;
        let counter = match &done {
            Ok(_) => &bodies.files_written,
            Err(fs::Error::NoSpace | fs::Error::Io(_)) => &bodies.files_failed,
            Err(_) => &bodies.files_refused,
        };
        counter.fetch_add(1, Relaxed);
        Some(self.answer(done))
    }
}

impl Put {
    /// The answer for what the file system did: the site's (dressed and
    /// counted), or the program's. Its place among the writes goes first.
    fn answer(&mut self, done: Result<Written, fs::Error>) -> Response {
        self.slot = None;
        if let Some(permit) = &self.site {
            return answered(&self.wing, &self.req, permit, done);
        }
        let (answer, req) = (self.answer.take(), &self.req);
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ToFile::answer_for(answer, req, done)
        }))
        .unwrap_or_else(|_| {
            Response::internal_error(format!(
                "handler panicked answering {} {}",
                req.method(),
                req.target()
            ))
        })
    }
}

/// Opens the unnamed file for `to` (under the site's guard, for a write
/// of the directory writer), and refuses a `Content-Length` that would
/// take the file system below its floor (507).
fn open(
    to: &Target,
    guard: Option<&fs::Guard>,
    length: Option<u64>,
    floor: u64,
) -> Result<fs::Writing, fs::Error> {
    let writing = match guard {
        Some(guard) => to
            .root
            .begin_write_guarded(&to.name, to.mode.clone(), guard)?,
        None => to.root.begin_write(&to.name, to.mode.clone())?,
    };
    if let Some(length) = length {
        if writing.free_space() < length.saturating_add(floor) {
            return Err(fs::Error::NoSpace);
        }
    }
    Ok(writing)
}

/// What a body's writes know of the free space.
#[derive(Clone, Copy)]
struct Space {
    /// The space the file system keeps (`write-free-floor`).
    floor: u64,
    /// Bytes free above the floor as last looked at, less what was
    /// written since.
    room: u64,
    /// Bytes written since the free space was last looked at.
    since_look: u64,
}

/// Writes one run, keeping the file system above its floor: the free
/// space is looked at again once [`SPACE_LOOK`] bytes were written since
/// the last look, or when the run would take more than the room left.
fn write_run(w: &mut fs::Writing, run: &[u8], space: &mut Space) -> Result<(), fs::Error> {
    let len = run.len() as u64;
    if space.floor > 0 && (space.since_look >= SPACE_LOOK || len > space.room) {
        space.room = w.free_space().saturating_sub(space.floor);
        space.since_look = 0;
        if len > space.room {
            return Err(fs::Error::NoSpace);
        }
    }
    w.write(run)?;
    space.room = space.room.saturating_sub(len);
    space.since_look += len;
    Ok(())
}
