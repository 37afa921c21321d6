//! The XML of WebDAV locks (RFC 4918 §9.10, §14, §16): a `LOCK` body read
//! (`DAV:lockinfo`), a lock shown (`DAV:activelock`), a `LOCK` answer's
//! body, the `supportedlock` property and the precondition bodies that
//! name hrefs.
//!
//! What neon (litmus, davfs2) needs of an answer, and gets: the
//! `activelock`'s `locktoken/href` equal to the `Lock-Token` header, the
//! depth written `0` or `infinity`, the timeout `Second-N` or `Infinite`
//! (anything else aborts its parse), and the owner given back as it came.

use super::read::Reader;
use super::write::escape_text;
use super::{value, Bad};

/// The owner's content, written again, in bytes at most: every lock's is
/// kept in the locks file, which each change rewrites whole (a client's
/// is a name or a URL: Finder's is 60 bytes).
const MAX_OWNER: usize = 4 << 10;

/// The largest `Second-N` written (RFC 4918 §10.7: at most 2^32 − 1).
const MAX_SECONDS: u64 = u32::MAX as u64;

/// A LOCK request's body (RFC 4918 §9.10, `DAV:lockinfo`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct LockInfo {
    pub shared: bool,
    /// The `DAV:owner` element's content, written again self-contained
    /// exactly as a dead property's value is (text escaped, namespace
    /// declarations carried), to be written back verbatim inside
    /// `<D:owner>…</D:owner>`; `None` without an owner element. An
    /// `xml:lang` on the owner (or around it) is not kept.
    pub owner: Option<String>,
}

/// A `LOCK` body (RFC 4918 §9.10, §14.11): the scope asked and the owner.
///
/// Refused (400, [`Bad`]), beside what every body is refused for (see the
/// module): a root other than `DAV:lockinfo`; `DAV:lockscope` missing,
/// given twice, or not holding exactly one element, `DAV:exclusive` or
/// `DAV:shared`; `DAV:locktype` missing, given twice, or not holding
/// exactly `DAV:write` (the only lock type there is); `DAV:owner` given
/// twice, or its content, written again, longer than 4 KiB.
///
/// RFC 4918 names no status for a scope or type the server does not know.
/// Apache's mod_dav answers 412 for them (its "unknown XML element within
/// the DAV:lockinfo element", util_lock.c `dav_lock_parse_lockinfo`), and
/// 412 for any other element it does not know; here a scope or type that
/// is not one of these is a bad request, 400, since 412 means "an `If:`
/// was false" to a client, and other elements are ignored (§17), as in
/// `PROPFIND`.
pub(crate) fn lockinfo(body: &[u8]) -> Result<LockInfo, Bad> {
    let mut r = Reader::new(body)?;
    if !r.root()?.name.is_dav("lockinfo") {
        return Err(Bad("the root element is not DAV:lockinfo"));
    }
    let mut shared = None;
    let mut write = false;
    let mut owner = None;
    while let Some(child) = r.child()? {
        if child.name.is_dav("lockscope") {
            let scope = sole(
                &mut r,
                Bad("DAV:lockscope does not hold exactly one element"),
            )?;
            let is = if scope.is_dav("exclusive") {
                false
            } else if scope.is_dav("shared") {
                true
            } else {
                return Err(Bad(
                    "a DAV:lockscope other than DAV:exclusive or DAV:shared",
                ));
            };
            if shared.replace(is).is_some() {
                return Err(Bad("DAV:lockscope given twice"));
            }
        } else if child.name.is_dav("locktype") {
            let kind = sole(
                &mut r,
                Bad("DAV:locktype does not hold exactly one element"),
            )?;
            if !kind.is_dav("write") {
                return Err(Bad("a DAV:locktype other than DAV:write"));
            }
            if std::mem::replace(&mut write, true) {
                return Err(Bad("DAV:locktype given twice"));
            }
        } else if child.name.is_dav("owner") {
            let mut budget = MAX_OWNER;
            let content = value(&mut r, &mut budget).map_err(|e| match e {
                Bad("the property values are too large") => Bad("DAV:owner longer than 4 KiB"),
                e => e,
            })?;
            if owner.replace(content.0).is_some() {
                return Err(Bad("DAV:owner given twice"));
            }
        } else {
            r.skip()?;
        }
    }
    r.finish()?;
    let Some(shared) = shared else {
        return Err(Bad("no DAV:lockscope"));
    };
    if !write {
        return Err(Bad("no DAV:locktype"));
    }
    Ok(LockInfo { shared, owner })
}

/// The name of the only child element of the element open now (text
/// between is ignored), that child skipped; `none` when there is not
/// exactly one.
fn sole(r: &mut Reader<'_>, none: Bad) -> Result<super::QName, Bad> {
    let Some(first) = r.child()? else {
        return Err(none);
    };
    r.skip()?;
    if r.child()?.is_some() {
        return Err(none);
    }
    Ok(first.name)
}

/// One lock as shown in `lockdiscovery` (RFC 4918 §14.1).
#[derive(Debug)]
pub(crate) struct Active<'a> {
    pub shared: bool,
    pub infinity: bool,
    /// The stored owner content ([`LockInfo::owner`]), written raw.
    pub owner: Option<&'a str>,
    /// Seconds left; `None` = `Infinite`. Written at most 2^32 − 1.
    pub timeout: Option<u64>,
    /// `None`: not shown (not the owner's), no `<D:locktoken>`.
    pub token: Option<&'a str>,
    /// The lock root's href, already percent-encoded (escaped for XML here).
    pub root: &'a str,
}

/// Appends `<D:activelock>…</D:activelock>` (`D:` bound to `DAV:` by the
/// caller), its children in the order of RFC 4918's DTD: `lockscope`,
/// `locktype`, `depth` (`0` or `infinity`), `owner` if any, `timeout`
/// (`Second-N` or `Infinite`), `locktoken` if shown, `lockroot`.
pub(crate) fn activelock(out: &mut String, a: &Active<'_>) {
    out.push_str("<D:activelock><D:lockscope>");
    out.push_str(if a.shared {
        "<D:shared/>"
    } else {
        "<D:exclusive/>"
    });
    out.push_str("</D:lockscope><D:locktype><D:write/></D:locktype><D:depth>");
    out.push_str(if a.infinity { "infinity" } else { "0" });
    out.push_str("</D:depth>");
    if let Some(owner) = a.owner {
        out.push_str("<D:owner>");
        out.push_str(owner);
        out.push_str("</D:owner>");
    }
    out.push_str("<D:timeout>");
    match a.timeout {
        Some(s) => {
            out.push_str("Second-");
            out.push_str(&s.min(MAX_SECONDS).to_string());
        }
        None => out.push_str("Infinite"),
    }
    out.push_str("</D:timeout>");
    if let Some(token) = a.token {
        out.push_str("<D:locktoken><D:href>");
        escape_text(out, token);
        out.push_str("</D:href></D:locktoken>");
    }
    out.push_str("<D:lockroot><D:href>");
    escape_text(out, a.root);
    out.push_str("</D:href></D:lockroot></D:activelock>");
}

/// The whole body of a `LOCK` answer (RFC 4918 §9.10.1): the XML
/// declaration, `<D:prop xmlns:D="DAV:"><D:lockdiscovery>`, each lock's
/// `activelock`, and the ends.
pub(crate) fn lock_answer(locks: &[Active<'_>]) -> Vec<u8> {
    let mut s = String::from(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:prop xmlns:D=\"DAV:\"><D:lockdiscovery>",
    );
    for a in locks {
        activelock(&mut s, a);
    }
    s.push_str("</D:lockdiscovery></D:prop>");
    s.into_bytes()
}

/// The content of the `supportedlock` property (RFC 4918 §15.10): an
/// exclusive and a shared write lock.
pub(crate) const SUPPORTED_LOCK: &str = "<D:lockentry><D:lockscope><D:exclusive/></D:lockscope>\
    <D:locktype><D:write/></D:locktype></D:lockentry>\
    <D:lockentry><D:lockscope><D:shared/></D:lockscope>\
    <D:locktype><D:write/></D:locktype></D:lockentry>";

/// Appends a precondition's element naming `hrefs` (already
/// percent-encoded; escaped here): `<D:NAME><D:href>H</D:href>…</D:NAME>`,
/// or `<D:NAME/>` with none. What goes in a `<D:error>`, alone
/// ([`error_hrefs`]) or inside a 207
/// ([`super::Multistatus::status_error_markup`]).
pub(crate) fn condition(out: &mut String, name: &str, hrefs: &[&str]) {
    out.push_str("<D:");
    out.push_str(name);
    if hrefs.is_empty() {
        out.push_str("/>");
        return;
    }
    out.push('>');
    for h in hrefs {
        out.push_str("<D:href>");
        escape_text(out, h);
        out.push_str("</D:href>");
    }
    out.push_str("</D:");
    out.push_str(name);
    out.push('>');
}

/// A precondition refusal's whole body naming hrefs (RFC 4918 §16):
/// `<?xml …?><D:error xmlns:D="DAV:"><D:NAME><D:href>H</D:href>…</D:NAME></D:error>`
/// — 423 `lock-token-submitted` (at least one href), 423
/// `no-conflicting-lock`, 409 `lock-token-matches-request-uri` (none).
pub(crate) fn error_hrefs(name: &str, hrefs: &[&str]) -> String {
    let mut s =
        String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:error xmlns:D=\"DAV:\">");
    condition(&mut s, name, hrefs);
    s.push_str("</D:error>");
    s
}
