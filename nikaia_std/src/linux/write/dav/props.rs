//! Properties (`spec/site.md`, "WebDAV class 1", "Properties",
//! "`PROPFIND`"): `PROPPATCH` writes a name's dead properties in one
//! extended attribute, all or nothing; `PROPFIND` answers the live ones
//! from one `statx` and the dead ones from that attribute (a
//! collection's members through `listing.rs`, as the client reads).

use super::listing;
use super::names::{href, xml_answer};
use super::Dav;
use crate::fs::dav::{self as fsdav, Stat};
use crate::fs::Error;
use crate::http::dav::dead;
use crate::http::dav::xml::{self, Change, Content, Find, Multistatus, Prop, QName, Value};
use crate::http::site::dav::{on_collection, Depth};
use crate::http::Response;
use crate::linux::write::locks::table::{Reach, Table};
use rustix::fd::AsFd;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The 400 of a body that is not what the method takes.
fn bad(why: &str) -> Response {
    crate::http::site::write::unmakeable_answer(why)
}

/// `PROPPATCH`: the changes applied in order to the name's dead
/// properties and written in one `fsetxattr`, or none of them (RFC 4918
/// §9.2): a live property is 403 and the rest 424; past what the file
/// system or the bound holds, 507.
pub(super) fn proppatch(d: &mut Dav) -> Response {
    let changes = match xml::proppatch(&d.body) {
        Ok(c) if c.is_empty() => return bad("PROPPATCH names no property (RFC 4918 §14.19)"),
        Ok(c) => c,
        Err(xml::Bad(why)) => return bad(why),
    };
    let Some(permit) = d.source.as_deref() else {
        return Response::status_page(500);
    };
    if let Err(locked) = d.locks_let(permit, &d.path, Reach::Own) {
        return locked;
    }
    let names: Vec<&QName> = changes
        .iter()
        .map(|c| match c {
            Change::Set(n, _) | Change::Remove(n) => n,
        })
        .collect();
    let protected: Vec<&QName> = names.iter().copied().filter(|n| n.ns == xml::DAV).collect();
    let status = if !protected.is_empty() {
        Err(403)
    } else {
        let guard = permit.guard(d.own.identities(&d.root));
        let at = super::names::bare(&d.path);
        let gate = d.gate(permit);
        let done = d.root.dav_at(&at, &guard, |dir, entry| {
            // The runtime file's own files take no properties either.
            if let Some((_, stat)) = fsdav::look(dir.as_fd(), entry, &at)? {
                fsdav::guarded(&guard, &stat, &at)?;
            }
            fsdav::change_dead(dir.as_fd(), entry, &at, |old| {
                // The locks asked again with the name held: a LOCK that
                // came since the first look is met.
                if let Some(gate) = &gate {
                    gate.decide(Reach::Own, None)?;
                }
                let mut props = old.and_then(|r| dead::decode(&r).ok()).unwrap_or_default();
                dead::apply(&mut props, &changes);
                if props.is_empty() {
                    return Ok(None);
                }
                Ok(Some(dead::encode(&props)))
            })
        });
        match done {
            Ok(()) => Ok(()),
            Err(Error::Locked(roots)) => return crate::http::site::lock::locked(&roots),
            Err(Error::Precondition) => return Response::status_page(412),
            Err(Error::NotFound) => return Response::status_page(404),
            Err(Error::NoSpace) => Err(507),
            Err(Error::Denied(_)) => Err(403),
            Err(Error::Outside(_)) => return Response::status_page(404),
            Err(e) => {
                let mut resp = Response::status_page(500);
                resp.log_error = Some(format!("PROPPATCH: {e}").into());
                return resp;
            }
        }
    };
    fn empty<'a>(n: &&'a QName) -> Prop<'a> {
        Prop {
            name: n,
            content: Content::Empty,
        }
    }
    let mut out = Multistatus::begin();
    let bytes = d.path.as_os_str().as_bytes();
    let href = href(bytes, bytes.ends_with(b"/"));
    match status {
        Ok(()) => {
            let props: Vec<Prop<'_>> = names.iter().map(empty).collect();
            out.response(&href, &[(200, &props)]);
        }
        Err(403) if !protected.is_empty() => {
            let refused: Vec<Prop<'_>> = protected.iter().map(empty).collect();
            let rest: Vec<Prop<'_>> = names
                .iter()
                .filter(|n| n.ns != xml::DAV)
                .map(empty)
                .collect();
            let protected = Some("cannot-modify-protected-property");
            out.response_errors(&href, &[(403, &refused, protected), (424, &rest, None)]);
        }
        Err(status) => {
            let props: Vec<Prop<'_>> = names.iter().map(empty).collect();
            out.response(&href, &[(status, &props)]);
        }
    }
    out.end();
    xml_answer(207, out.out)
}

/// `PROPFIND` of Depth 0 or 1: the name's response now, its members'
/// as the client reads.
pub(super) fn propfind(d: &mut Dav) -> Response {
    let find = match xml::propfind(&d.body) {
        Ok(f) => f,
        Err(xml::Bad(why)) => return bad(why),
    };
    let Some(permit) = d.source.as_deref() else {
        return Response::status_page(500);
    };
    // The served directory itself is `.` to the file system.
    let at = match d.path.as_os_str().is_empty() {
        true => Path::new("."),
        false => d.path.as_path(),
    };
    let (fd, stat) = match d.root.dav_target(at) {
        Ok(found) => found,
        Err(Error::NotFound | Error::Outside(_)) => return Response::status_page(404),
        Err(Error::NotAFile { .. }) => return Response::status_page(403),
        Err(e) => {
            let mut resp = Response::status_page(500);
            resp.log_error = Some(format!("PROPFIND: {e}").into());
            return resp;
        }
    };
    if let Some(refused) = stat
        .dir
        .then(|| on_collection("PROPFIND", d.depth))
        .flatten()
    {
        return refused;
    }
    let name = d.path.to_string_lossy().into_owned();
    let dead = wants_dead(&find)
        .then(|| fsdav::read_dead(fd.as_fd()))
        .flatten();
    let mut out = Multistatus::begin();
    let quota = wants_quota(&find).then(|| quota(fd.as_fd())).flatten();
    let bytes = d.path.as_os_str().as_bytes();
    let locks = Discovery::of(d, &find, permit.grant.user.as_deref());
    respond(
        &mut out,
        &find,
        bytes,
        &stat,
        dead.as_deref(),
        quota,
        locks.as_ref(),
    );
    if d.depth != Depth::One || !stat.dir {
        out.end();
        return xml_answer(207, out.out);
    }
    let walk = listing::Walk::new(
        fd,
        d,
        name.trim_end_matches('/'),
        find,
        permit.grant.clone(),
    );
    listing::answer(walk, out, d.wing.clone())
}

/// What `lockdiscovery` shows, read once for a whole `PROPFIND`: the
/// locks held, and the user who asks (a lock's token is shown to its
/// owner only).
pub(super) struct Discovery {
    table: std::sync::Arc<Table>,
    user: Option<String>,
    now: u64,
}

impl Discovery {
    /// Where `[webdav-locks]` is set and `find` may name the lock
    /// properties.
    pub(super) fn of(d: &Dav, find: &Find, user: Option<&str>) -> Option<Discovery> {
        let asks = match find {
            Find::Prop(names) => {
                (names.iter()).any(|n| n.is_dav("lockdiscovery") || n.is_dav("supportedlock"))
            }
            Find::AllProp { .. } | Find::PropName => true,
        };
        let locks = d.wing.locks.as_ref().filter(|_| asks)?;
        Some(Discovery {
            table: locks.table(),
            user: user.map(str::to_owned),
            now: crate::linux::write::locks::now(),
        })
    }

    /// The `activelock`s of the locks whose scope holds `name`.
    fn markup(&self, name: &[u8]) -> String {
        let name = crate::http::site::lock::bare(name);
        let mut out = String::new();
        for lock in self.table.covering(name, self.now) {
            let root = crate::linux::write::locks::href(lock);
            let show = lock.owned_by(self.user.as_deref());
            xml::activelock(&mut out, &super::lock::active(lock, self.now, show, &root));
        }
        out
    }
}

/// Whether `find` names RFC 4331's quota properties.
pub(super) fn wants_quota(find: &Find) -> bool {
    match find {
        Find::Prop(names) => names
            .iter()
            .any(|n| n.ns == xml::DAV && n.local.starts_with("quota-")),
        _ => false,
    }
}

/// The bytes free for an unprivileged writer on the file system of `fd`,
/// and the bytes used on it.
pub(super) fn quota(fd: rustix::fd::BorrowedFd<'_>) -> Option<(u64, u64)> {
    let st = rustix::fs::fstatvfs(fd).ok()?;
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    let used = st
        .f_blocks
        .saturating_sub(st.f_bfree)
        .saturating_mul(st.f_frsize);
    Some((free, used))
}

/// Whether an answer to `find` reads dead properties.
pub(super) fn wants_dead(find: &Find) -> bool {
    match find {
        Find::AllProp { .. } | Find::PropName => true,
        // A dead property is never in `DAV:` (`PROPPATCH` refuses them).
        Find::Prop(names) => names.iter().any(|n| n.ns != xml::DAV),
    }
}

/// One `<D:response>` for `name` as `find` asks.
pub(super) fn respond(
    out: &mut Multistatus,
    find: &Find,
    name: &[u8],
    stat: &Stat,
    dead: Option<&[u8]>,
    quota: Option<(u64, u64)>,
    locks: Option<&Discovery>,
) {
    let dead: Vec<(QName, Value)> = dead.and_then(|r| dead::decode(r).ok()).unwrap_or_default();
    let mut live = live(OsStr::from_bytes(name), stat, find);
    if let Some(locks) = locks {
        live.push((
            "supportedlock",
            Live::Markup(xml::SUPPORTED_LOCK.to_owned()),
        ));
        live.push(("lockdiscovery", Live::Markup(locks.markup(name))));
    }
    // RFC 4331's quota, asked by name only (it is not in `allprop`, §3),
    // for a collection: its file system's free and used bytes.
    if let (Find::Prop(_), Some((free, used)), true) = (find, quota, stat.dir) {
        live.push(("quota-available-bytes", Live::Text(free.to_string())));
        live.push(("quota-used-bytes", Live::Text(used.to_string())));
    }
    let href = href(name, stat.dir);
    let names: Vec<&QName> = live.iter().map(|(n, _)| live_name(n)).collect();
    match find {
        Find::AllProp { .. } => {
            let mut props: Vec<Prop<'_>> = names
                .iter()
                .zip(&live)
                .map(|(n, (_, c))| Prop {
                    name: n,
                    content: c.content(),
                })
                .collect();
            props.extend(dead.iter().map(|(n, v)| Prop {
                name: n,
                content: Content::Raw(v),
            }));
            out.response(&href, &[(200, &props)]);
        }
        Find::PropName => {
            let mut props: Vec<Prop<'_>> = names
                .iter()
                .map(|n| Prop {
                    name: n,
                    content: Content::Empty,
                })
                .collect();
            props.extend(dead.iter().map(|(n, _)| Prop {
                name: n,
                content: Content::Empty,
            }));
            out.response(&href, &[(200, &props)]);
        }
        Find::Prop(asked) => {
            let (mut found, mut missing) = (Vec::new(), Vec::new());
            for q in asked {
                let is_live = (q.ns == xml::DAV)
                    .then(|| live.iter().position(|(n, _)| *n == q.local))
                    .flatten();
                if let Some(i) = is_live {
                    found.push(Prop {
                        name: q,
                        content: live[i].1.content(),
                    });
                } else if let Some((_, v)) = dead.iter().find(|(n, _)| n == q) {
                    found.push(Prop {
                        name: q,
                        content: Content::Raw(v),
                    });
                } else {
                    missing.push(Prop {
                        name: q,
                        content: Content::Empty,
                    });
                }
            }
            let mut stats: Vec<(u16, &[Prop<'_>])> = Vec::new();
            if !found.is_empty() {
                stats.push((200, &found));
            }
            if !missing.is_empty() {
                stats.push((404, &missing));
            }
            out.response(&href, &stats);
        }
    }
}

/// The `DAV:` names of the live properties, made once.
static LIVE_NAMES: std::sync::LazyLock<Vec<QName>> = std::sync::LazyLock::new(|| {
    [
        "resourcetype",
        "getlastmodified",
        "getcontentlength",
        "getetag",
        "getcontenttype",
        "creationdate",
        "quota-available-bytes",
        "quota-used-bytes",
        "supportedlock",
        "lockdiscovery",
    ]
    .map(QName::dav)
    .into()
});

/// The name of the live property `local` (one of [`LIVE_NAMES`]).
fn live_name(local: &str) -> &'static QName {
    let all = &*LIVE_NAMES;
    all.iter().find(|n| n.local == local).unwrap_or(&all[0])
}

/// A live property's value.
enum Live {
    Text(String),
    Collection,
    Empty,
    /// XML written as it is (`supportedlock`, `lockdiscovery`).
    Markup(String),
}

impl Live {
    fn content(&self) -> Content<'_> {
        match self {
            Live::Text(t) => Content::Text(t),
            Live::Collection => Content::Collection,
            Live::Empty => Content::Empty,
            Live::Markup(m) => Content::Markup(m),
        }
    }
}

/// The live properties of `name` as it is now: what a `GET` of it would
/// say (its `ETag` byte for byte, its type), and its birth where the file
/// system keeps one.
fn live(name: &OsStr, stat: &Stat, find: &Find) -> Vec<(&'static str, Live)> {
    // Only what the answer names is made (a type guessed, a date written,
    // per member of a listing of 10 000).
    let asked = |p: &str| match find {
        Find::Prop(names) => names.iter().any(|n| n.ns == xml::DAV && n.local == p),
        Find::AllProp { .. } | Find::PropName => true,
    };
    let modified = stat.mtime_ns.div_euclid(1_000_000_000).max(0) as u64;
    let date = match asked("getlastmodified") {
        true => String::from_utf8_lossy(&crate::text::date::imf_fixdate(modified)).into_owned(),
        false => String::new(),
    };
    let mut out = vec![
        (
            "resourcetype",
            match stat.dir {
                true => Live::Collection,
                false => Live::Empty,
            },
        ),
        ("getlastmodified", Live::Text(date)),
    ];
    if !stat.dir {
        out.push(("getcontentlength", Live::Text(stat.size.to_string())));
        out.push(("getetag", Live::Text(stat.etag())));
        let kind = match asked("getcontenttype") {
            true => crate::http::file::content_type(Path::new(name)),
            false => "",
        };
        out.push(("getcontenttype", Live::Text(kind.to_owned())));
    }
    if let Some(born) = stat.born {
        out.push((
            "creationdate",
            Live::Text(crate::text::date::rfc3339(born.max(0) as u64)),
        ));
    }
    out
}
