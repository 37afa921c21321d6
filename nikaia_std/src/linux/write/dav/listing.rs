//! `PROPFIND`'s produced 207 for a collection at Depth 1 (`spec/site.md`,
//! "`PROPFIND`"): the collection's members read, `statx`ed and written a
//! chunk at a time on the writer threads as the client takes the answer,
//! never built whole; and the count that refuses a collection past the
//! listing's bound before a byte of it.

use super::props::{quota, respond, wants_dead, wants_quota, Discovery};
use crate::fs::dav::{self as fsdav, Stat};
use crate::fs::Root;
use crate::http::dav::xml::{Find, Multistatus};
use crate::http::produce::{Produced, Producer, Pull, Pulled};
use crate::http::site::dav::{member_may, Member};
use crate::http::site::Grant;
use crate::http::Response;
use crate::rt::Runtime;
use bytes::Bytes;
use rustix::fd::{AsFd, OwnedFd};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Members read and written per turn of a `PROPFIND`'s body.
const CHUNK: usize = 512;

/// The 207 of a collection at Depth 1, its own response in `head`: 507
/// instead where it has more members than a listing gives (refused whole,
/// before a byte of the 207: a listing that is not all of the collection
/// would read as whole to a sync client, which would then delete what it
/// left out), else produced as the client reads it.
pub(super) fn answer(walk: Walk, head: Multistatus, wing: Arc<super::super::Wing>) -> Response {
    if too_many(walk.dir.as_fd()) {
        let why = format!(
            "507 Insufficient Storage: the collection has more than {} members, more than a listing gives\n",
            crate::http::file::MAX_ENTRIES
        );
        let mut resp = Response::new(507).header("Content-Type", "text/plain; charset=utf-8");
        resp.body = crate::http::response::Body::Bytes(Bytes::from(why));
        return resp;
    }
    let shared = Arc::new(Mutex::new(Turns {
        ready: vec![Bytes::from(head.out)],
        walk: Some(walk),
        running: false,
        waiting: None,
        failed: None,
    }));
    let producer = Members { shared, wing };
    use crate::http::response::IntoResponse;
    let mut resp = Produced::new(producer)
        .content_type("application/xml; charset=utf-8")
        .into_response();
    resp.status = 207;
    resp
}

/// Whether the open directory `dir` has more members than a listing
/// gives ([`crate::http::file::MAX_ENTRIES`]): one pass of its entries,
/// no `stat`.
fn too_many(dir: rustix::fd::BorrowedFd<'_>) -> bool {
    let Ok(mut read) = rustix::fs::Dir::read_from(dir) else {
        return false;
    };
    let mut n = 0usize;
    while let Some(Ok(entry)) = read.read() {
        let raw = entry.file_name().to_bytes();
        if raw != b"." && raw != b".." && !crate::fs::is_temporary_name(raw) {
            n += 1;
            if n > crate::http::file::MAX_ENTRIES {
                return true;
            }
        }
    }
    false
}

/// The members still to answer, and the answers ready to send.
struct Turns {
    ready: Vec<Bytes>,
    walk: Option<Walk>,
    /// A writer turn is reading the next chunk.
    running: bool,
    /// The body waits for that turn.
    waiting: Option<crate::http::body::Resume>,
    failed: Option<String>,
}

/// A collection's members being read.
pub(super) struct Walk {
    dir: OwnedFd,
    read: Option<rustix::fs::Dir>,
    /// The collection's name, as the rules read it.
    name: String,
    /// Its exact bytes, for the hrefs and the opens.
    bytes: Vec<u8>,
    root: Root,
    find: Find,
    rt: Arc<Runtime>,
    grant: Grant,
    hidden: bool,
    budget: usize,
    /// The end of the multistatus was written.
    done: bool,
    /// `lockdiscovery`, where locks are kept and asked for.
    locks: Option<Discovery>,
}

impl Walk {
    /// The walk of the open collection `dir`, named `name` (as the rules
    /// read it) by the request `d`, for `find`, read by `grant`.
    pub(super) fn new(dir: OwnedFd, d: &super::Dav, name: &str, find: Find, grant: Grant) -> Walk {
        let b = d.path.as_os_str().as_bytes();
        let end = b.iter().rposition(|&c| c != b'/').map_or(0, |i| i + 1);
        let locks = Discovery::of(d, &find, grant.user.as_deref());
        Walk {
            dir,
            read: None,
            name: name.to_owned(),
            bytes: b[..end].to_vec(),
            root: d.root.clone(),
            find,
            rt: d.wing.runtime(),
            grant,
            hidden: d.hidden,
            budget: crate::http::file::MAX_ENTRIES,
            done: false,
            locks,
        }
    }

    /// The next members' responses (the end of the multistatus after
    /// the last), or `None` once it was written.
    fn chunk(&mut self) -> Result<Option<Vec<u8>>, String> {
        let mut read = match self.read.take() {
            Some(read) => read,
            None => rustix::fs::Dir::read_from(&self.dir).map_err(|e| e.to_string())?,
        };
        let chunk = self.chunk_from(&mut read);
        self.read = Some(read);
        chunk
    }

    /// [`Walk::chunk`] from the directory's reader.
    fn chunk_from(&mut self, read: &mut rustix::fs::Dir) -> Result<Option<Vec<u8>>, String> {
        let mut out = Multistatus { out: Vec::new() };
        let mut taken = 0;
        while taken < CHUNK {
            let Some(entry) = read.read() else {
                out.end();
                self.done = true;
                return Ok(Some(out.out));
            };
            let entry = entry.map_err(|e| e.to_string())?;
            let raw = entry.file_name().to_bytes();
            if raw == b"." || raw == b".." || crate::fs::is_temporary_name(raw) {
                continue;
            }
            if self.budget == 0 {
                // More came since the count that let the listing begin: the
                // answer ends short (HTTP/1.1 without its last chunk, HTTP/2
                // with a reset), so no client takes it for whole.
                return Err(format!(
                    "more than {} members",
                    crate::http::file::MAX_ENTRIES
                ));
            }
            self.budget -= 1;
            taken += 1;
            let member = match self.name.as_str() {
                "" => String::from_utf8_lossy(raw).into_owned(),
                n => format!("{n}/{}", String::from_utf8_lossy(raw)),
            };
            if !member_may(
                &self.rt,
                &self.grant,
                &member,
                Member::Read {
                    hidden: self.hidden,
                },
            ) {
                continue;
            }
            let mut at = self.bytes.clone();
            if !at.is_empty() {
                at.push(b'/');
            }
            at.extend_from_slice(raw);
            let Some((stat, dead)) = self.member(raw, &at) else {
                continue;
            };
            let quota = match wants_quota(&self.find) && stat.dir {
                true => quota(self.dir.as_fd()),
                false => None,
            };
            let locks = self.locks.as_ref();
            respond(
                &mut out,
                &self.find,
                &at,
                &stat,
                dead.as_deref(),
                quota,
                locks,
            );
        }
        Ok(Some(out.out))
    }

    /// What a member is (a link followed as a read follows it, inside the
    /// root only) and its dead properties where the answer wants them.
    fn member(&self, raw: &[u8], at: &[u8]) -> Option<(Stat, Option<Vec<u8>>)> {
        let name = Path::new(OsStr::from_bytes(at));
        let look = fsdav::look(self.dir.as_fd(), raw, name).ok()??;
        let link = look.0 == rustix::fs::FileType::Symlink;
        let want = wants_dead(&self.find);
        if link {
            let (fd, stat) = self.root.dav_target(name).ok()?;
            let dead = want.then(|| fsdav::read_dead(fd.as_fd())).flatten();
            return Some((stat, dead));
        }
        if !matches!(
            look.0,
            rustix::fs::FileType::RegularFile | rustix::fs::FileType::Directory
        ) {
            return None;
        }
        let dead = want
            .then(|| fsdav::dead_of(self.dir.as_fd(), raw))
            .flatten();
        Some((look.1, dead))
    }
}

/// The produced body of a `PROPFIND` of Depth 1.
struct Members {
    shared: Arc<Mutex<Turns>>,
    wing: Arc<super::Wing>,
}

impl Producer for Members {
    fn pull(&mut self, pull: &mut Pull<'_>) -> Pulled {
        let mut turns = crate::sync::lock(&self.shared);
        if let Some(why) = turns.failed.take() {
            return Pulled::Failed(why);
        }
        if !turns.ready.is_empty() {
            return Pulled::Piece(turns.ready.remove(0));
        }
        if turns.walk.is_none() {
            return Pulled::End;
        }
        turns.waiting = Some(pull.later());
        if !turns.running {
            turns.running = true;
            let shared = self.shared.clone();
            self.wing.pool.submit(move || turn(&shared));
        }
        Pulled::Later
    }
}

/// A writer turn of a `PROPFIND`'s body: the next chunk of members.
fn turn(shared: &Arc<Mutex<Turns>>) {
    let walk = crate::sync::lock(shared).walk.take();
    let Some(mut walk) = walk else {
        return;
    };
    let chunk = walk.chunk();
    let mut turns = crate::sync::lock(shared);
    turns.running = false;
    match chunk {
        Ok(Some(bytes)) => {
            if !walk.done {
                turns.walk = Some(walk);
            }
            if !bytes.is_empty() {
                turns.ready.push(Bytes::from(bytes));
            }
        }
        Ok(None) => {}
        Err(why) => turns.failed = Some(format!("PROPFIND: {why}")),
    }
    if let Some(resume) = turns.waiting.take() {
        drop(turns);
        resume.resume();
    }
}
