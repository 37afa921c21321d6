//! `LOCK` and `UNLOCK` on a writer thread (`spec/site.md`, "WebDAV class
//! 2: locks"): a new lock taken (and, on a name where nothing is, an
//! empty file made through the `PUT` path), a lock refreshed, a lock
//! released — each a change of the locks file under its `flock`.

use super::names::bare;
use super::Dav;
use crate::fs::dav as fsdav;
use crate::fs::{Error, Mode};
use crate::http::dav::xml::{self, Active};
use crate::http::site::lock as site_lock;
use crate::http::to_file::{write_answer, Wrote};
use crate::http::Response;
use crate::linux::write::locks::table::{Asked, Lock, Reach, Table};
use crate::linux::write::locks::{self, now, Locks};
use crate::rt::WebdavLocks;
use rustix::fd::AsFd;
use rustix::fs::FileType;
use std::sync::atomic::Ordering::Relaxed;

/// A `LOCK`, its body here: a new lock (a body) or a refresh (none).
pub(super) fn lock(d: &mut Dav) -> Response {
    let (Some(locks), Some(_)) = (d.wing.locks.clone(), d.source.as_deref()) else {
        // `[webdav-locks]` came with a reload: it needs a restart.
        return Response::status_page(503);
    };
    let rt = d.wing.runtime();
    let ask = match site_lock::lock_ask(&rt, &d.req) {
        Ok(ask) => ask,
        Err(refused) => return refused,
    };
    let name = super::lock_name(&d.path).to_vec();
    if d.body.iter().all(u8::is_ascii_whitespace) {
        return refresh(d, &locks, &name, ask.timeout);
    }
    let info = match xml::lockinfo(&d.body) {
        Ok(info) => info,
        Err(xml::Bad(why)) => return crate::http::site::write::unmakeable_answer(why),
    };
    if !info.owner.as_deref().is_none_or(locks::owner_fits) {
        let why = "DAV:owner longer than 4 KiB as the locks file keeps it";
        return crate::http::site::write::unmakeable_answer(why);
    }
    // New locks are taken one at a time in a process, so that LOCKs
    // racing for the last place do not each make a file first.
    let _one = locks.creating();
    // A name that changes under the LOCK (made by another process's LOCK,
    // removed by a DELETE) is looked at again, a few times at most: past
    // them, 503 and a second to wait.
    for _ in 0..5 {
        match take(d, &locks, &rt, &info, ask, &name) {
            Took::Answer(resp) => return resp,
            Took::Again => continue,
        }
    }
    Response::status_page(503).header("Retry-After", "1")
}

/// What one try of a new lock came to.
enum Took {
    Answer(Response),
    /// The name changed since it was looked at: look again.
    Again,
}

/// One try of a new lock of `name`: what is there looked at, the locks
/// held and the bounds asked, an empty file made where nothing is, the
/// lock written — and, where the table refuses it, the file made for it
/// removed.
fn take(
    d: &Dav,
    locks: &Locks,
    rt: &crate::rt::Runtime,
    info: &xml::LockInfo,
    ask: site_lock::LockAsk,
    name: &[u8],
) -> Took {
    use Took::{Again, Answer};
    let Some(permit) = d.source.as_deref() else {
        return Answer(Response::status_page(500));
    };
    // What is at the name: a file or a collection is locked as it is;
    // nothing, an empty file is made first (RFC 4918 §7.3).
    let at = bare(&d.path);
    let look = permit.guard(d.own.identities(&d.root));
    let found = (d.root).dav_at(&at, &look, |dir, entry| {
        fsdav::look(dir.as_fd(), entry, &at)
    });
    let (collection, made) = match found {
        Ok(Some((FileType::Directory, _))) => (true, false),
        Ok(Some((FileType::RegularFile, _))) => (false, false),
        // A link is not locked through (as it is not moved through).
        Ok(Some(_)) => return Answer(Response::status_page(403)),
        Ok(None) | Err(Error::NotFound) => (false, true),
        Err(e) => return Answer(write_answer(&d.req, &permit.name, Wrote::Made, Err(e))),
    };
    let asked = Asked {
        infinity: ask.infinity && collection,
        shared: info.shared,
    };
    // Seen before anything is made: a conflict or a bound makes no file
    // (and both are asked again when the lock is written).
    let now = now();
    let bounds = rt.site.webdav_locks.clone();
    if let Some(refused) = conflict(locks, name, &asked, now) {
        return Answer(refused);
    }
    let user = permit.grant.user.clone();
    if over(&locks.table(), bounds.as_ref(), user.as_deref(), now) {
        locks.stats.refused.fetch_add(1, Relaxed);
        return Answer(busy());
    }
    let mut made_id = None;
    if made && d.path.as_os_str().as_encoded_bytes().ends_with(b"/") {
        // A collection's name where nothing is: a PUT there is 409, and
        // a LOCK makes no file of it either (MKCOL makes collections).
        return Answer(Response::status_page(409));
    }
    if made {
        match make_empty(d) {
            Ok(id) => made_id = Some(id),
            // Made meanwhile (by the other process of an upgrade, for a
            // lock of its own): looked at again, as a name that exists.
            Err(refused) if matches!(refused.status(), 403 | 412) => return Again,
            Err(refused) => return Answer(refused),
        }
    } else if !permit.conditions.replace {
        // A lock guards writes this user may not make here.
        return Answer(Response::status_page(403));
    } else if let Err(refused) = d.cond_holds(permit) {
        // Only `If:` is asked of a name that exists: a lock of it is no
        // write, and a shared lock needs no other lock's token.
        return Answer(refused);
    }
    let Ok(token) = locks::new_token() else {
        return Answer(Response::status_page(500));
    };
    let lock = Lock {
        token,
        root: name.to_vec(),
        collection,
        infinity: asked.infinity,
        shared: asked.shared,
        user,
        owner: info.owner.clone(),
        expires: now + ask.timeout * 1000,
        timeout: ask.timeout,
    };
    // Written with the name held, as a DELETE removes it and a PUT gives
    // it: a DELETE either comes first (the name is gone: looked at again)
    // or meets the lock.
    let write = || {
        locks.change(now, |t| {
            if !t.conflicts(name, &asked, now).is_empty() {
                return (Taken::Conflict, false);
            }
            if over(t, bounds.as_ref(), lock.user.as_deref(), now) {
                return (Taken::Over, false);
            }
            if !locks::exists(&d.root, name) {
                return (Taken::Gone, false);
            }
            t.insert(lock.clone());
            (Taken::Yes, true)
        })
    };
    let held = (d.root).dav_at(&at, &look, |dir, entry| {
        Ok(fsdav::holding(dir.as_fd(), entry, write))
    });
    let taken = match held {
        Ok(taken) => taken,
        // The way to the name went (its collection removed): again.
        Err(Error::NotFound) => Ok(Taken::Gone),
        Err(e) => return Answer(write_answer(&d.req, &permit.name, Wrote::Made, Err(e))),
    };
    if let (Some(id), false) = (made_id, matches!(taken, Ok(Taken::Yes))) {
        // The file made for a lock the table refused goes, unless a lock
        // (another process's) covers it by now.
        let _ = (d.root).dav_at(&at, &look, |dir, entry| {
            let keep = || !locks.table().covering(name, now).is_empty();
            fsdav::unmake_empty(dir.as_fd(), entry, id, &at, keep);
            Ok(())
        });
    }
    match taken {
        Ok(Taken::Yes) => {}
        Ok(Taken::Gone) => return Again,
        Ok(Taken::Conflict) => {
            locks.stats.refused.fetch_add(1, Relaxed);
            let held = conflict(locks, name, &asked, now);
            return Answer(held.unwrap_or_else(|| {
                site_lock::xml(423, xml::error_hrefs("no-conflicting-lock", &[]))
            }));
        }
        Ok(Taken::Over) => {
            locks.stats.refused.fetch_add(1, Relaxed);
            return Answer(busy());
        }
        Err(e) => {
            return Answer(unwritten("LOCK", locks, e));
        }
    }
    locks.stats.taken.fetch_add(1, Relaxed);
    let status = if made { 201 } else { 200 };
    let resp = answer(status, &lock, now).header("Lock-Token", format!("<{}>", lock.token));
    Answer(resp)
}

/// What a change of the table said of a new lock.
enum Taken {
    Yes,
    Conflict,
    Over,
    /// The name went since it was looked at.
    Gone,
}

/// Whether `user` holds `max-locks-per-user` locks, or everyone
/// `max-locks`.
fn over(t: &Table, bounds: Option<&WebdavLocks>, user: Option<&str>, now: u64) -> bool {
    let (all, own) = t.counts(user, now);
    bounds.is_some_and(|b| all >= b.max_locks || own >= b.max_locks_per_user)
}

/// 503: past a bound, until locks are released or expire.
fn busy() -> Response {
    Response::status_page(503).header("Retry-After", "60")
}

/// 423 where a lock held conflicts with the one asked for (RFC 4918
/// §6.1, `no-conflicting-lock`, naming the roots of those held).
fn conflict(locks: &Locks, name: &[u8], asked: &Asked, now: u64) -> Option<Response> {
    let table = locks.table();
    let held = table.conflicts(name, asked, now);
    if held.is_empty() {
        return None;
    }
    locks.stats.refused.fetch_add(1, Relaxed);
    let roots: Vec<String> = held.iter().map(|l| locks::href(l)).collect();
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    Some(site_lock::xml(
        423,
        xml::error_hrefs("no-conflicting-lock", &roots),
    ))
}

/// Makes the empty file a `LOCK` of a name where nothing is makes, as a
/// `PUT` of no bytes would: the rule's `create`, its parent there (409)
/// or made (`make-dirs`), the locks of the collection it goes in.
fn make_empty(d: &Dav) -> Result<(u64, u64), Response> {
    let Some(permit) = d.source.as_deref() else {
        return Err(Response::status_page(500));
    };
    let mut guard = permit.guard(d.own.identities(&d.root));
    if let Some(gate) = d.gate(permit) {
        guard.held = locks::held(gate, Reach::Member, Reach::Own);
    }
    let mut conditions = permit.conditions.clone();
    conditions.replace = false;
    let at = bare(&d.path);
    let made = (d.root)
        .begin_write_guarded(&at, Mode::Conditional(conditions), &guard)
        .and_then(|w| w.commit(permit.durability));
    match made {
        Ok(written) => {
            d.wing.writes.created.fetch_add(1, Relaxed);
            Ok((written.id.dev, written.id.ino))
        }
        Err(e) => Err(write_answer(&d.req, &permit.name, Wrote::Made, Err(e))),
    }
}

/// A `LOCK` without a body (RFC 4918 §9.10.2): the lock whose token the
/// `If:` submits, covering the name and the user's, lives `timeout`
/// seconds from now — 412 `lock-token-matches-request-uri` where none is.
fn refresh(d: &Dav, locks: &Locks, name: &[u8], timeout: u64) -> Response {
    let Some(permit) = d.source.as_deref() else {
        return Response::status_page(500);
    };
    let Some(cond) = permit.cond.clone() else {
        let why = "a LOCK without a body refreshes a lock: If: names its token";
        return crate::http::site::write::unmakeable_answer(why);
    };
    if let Err(refused) = d.cond_holds(permit) {
        return refused;
    }
    let user = permit.grant.user.as_deref();
    let tokens = cond.submitted();
    let now = now();
    let refreshed = locks.change(now, |t| {
        for token in &tokens {
            if let Some(l) = t.find_mut(token, now) {
                if l.covers(name) && l.owned_by(user) {
                    l.expires = now + timeout * 1000;
                    l.timeout = timeout;
                    return (Some(l.clone()), true);
                }
            }
        }
        (None, false)
    });
    match refreshed {
        Ok(Some(lock)) => {
            locks.stats.refreshed.fetch_add(1, Relaxed);
            answer(200, &lock, now)
        }
        Ok(None) => site_lock::xml(412, xml::error_hrefs("lock-token-matches-request-uri", &[])),
        Err(e) => unwritten("LOCK", locks, e),
    }
}

/// `UNLOCK` (RFC 4918 §9.11): the lock its `Lock-Token` names goes, if
/// it covers the name and is the user's: 204; else 409
/// `lock-token-matches-request-uri` (another user's lock is not told
/// apart from none).
pub(super) fn unlock(d: &mut Dav) -> Response {
    let (Some(locks), Some(permit)) = (d.wing.locks.clone(), d.source.as_deref()) else {
        return Response::status_page(503);
    };
    let token = match site_lock::unlock_token(&d.req) {
        Ok(token) => token,
        Err(refused) => return refused,
    };
    if let Err(refused) = d.cond_holds(permit) {
        return refused;
    }
    let name = super::lock_name(&d.path).to_vec();
    let user = permit.grant.user.clone();
    let now = now();
    let released = locks.change(now, |t| {
        let mine = t
            .find(&token, now)
            .is_some_and(|l| l.covers(&name) && l.owned_by(user.as_deref()));
        if !mine {
            return (false, false);
        }
        t.remove_if(|l| l.token == token);
        (true, true)
    });
    match released {
        Ok(true) => {
            locks.stats.released.fetch_add(1, Relaxed);
            Response::new(204)
        }
        Ok(false) => site_lock::xml(409, xml::error_hrefs("lock-token-matches-request-uri", &[])),
        Err(e) => unwritten("UNLOCK", &locks, e),
    }
}

/// A `LOCK` or `UNLOCK` of Finder's file where `apple-double =
/// "discard"`: answered as if the lock were taken (a token no table keeps;
/// a refresh gives back the token its `If:` names) or released.
pub(super) fn discarded(d: &Dav) -> Response {
    if d.op == crate::http::site::write::Op::Unlock {
        return Response::new(204);
    }
    let rt = d.wing.runtime();
    let timeout = site_lock::lock_ask(&rt, &d.req).map_or(1, |a| a.timeout);
    let asked = (d.source.as_deref())
        .and_then(|p| p.cond.as_ref())
        .and_then(|c| c.submitted().first().map(|t| t.to_string()));
    let refresh = asked.is_some();
    let Some(token) = asked.or_else(|| locks::new_token().ok()) else {
        return Response::status_page(500);
    };
    let now = now();
    let lock = Lock {
        token,
        root: super::lock_name(&d.path).to_vec(),
        collection: false,
        infinity: false,
        shared: false,
        user: None,
        owner: None,
        expires: now + timeout * 1000,
        timeout,
    };
    // Its root is the name asked for (the job's is the name it stands
    // in for).
    let root = d.req.target().split(['?', '#']).next().unwrap_or("/");
    let body = xml::lock_answer(&[active(&lock, now, true, root)]);
    let resp = site_lock::xml(200, body);
    match refresh {
        true => resp,
        false => resp.header("Lock-Token", format!("<{}>", lock.token)),
    }
}

/// 500, said in the error log: the locks file could not be changed.
fn unwritten(method: &str, locks: &Locks, e: std::io::Error) -> Response {
    let mut resp = Response::status_page(500);
    let dir = locks.dir().display();
    resp.log_error = Some(format!("{method}: [webdav-locks] {dir}: {e}").into());
    resp
}

/// A `LOCK`'s answer: `<D:prop><D:lockdiscovery>` with the lock, its
/// token shown (its owner asked).
fn answer(status: u16, lock: &Lock, now: u64) -> Response {
    let root = locks::href(lock);
    let active = active(lock, now, true, &root);
    site_lock::xml(status, xml::lock_answer(&[active]))
}

/// A lock as `lockdiscovery` shows it; its token only to its owner.
pub(super) fn active<'a>(lock: &'a Lock, now: u64, show: bool, root: &'a str) -> Active<'a> {
    Active {
        shared: lock.shared,
        infinity: lock.infinity,
        owner: lock.owner.as_deref(),
        // The seconds left, rounded up: never a `Second-0`.
        timeout: Some(lock.expires.saturating_sub(now).div_ceil(1000).max(1)),
        token: show.then_some(lock.token.as_str()),
        root,
    }
}
