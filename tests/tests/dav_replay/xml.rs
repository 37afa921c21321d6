//! The 207 multistatus, parsed (RFC 4918 §14.16) with its namespaces
//! resolved, and what the replays ask of it.

use super::wire::{Answer, DAV};
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

/// One property of a propstat: its namespace, local name, text.
#[derive(Debug, Clone)]
pub(crate) struct Prop {
    pub(crate) ns: Vec<u8>,
    pub(crate) name: String,
    pub(crate) text: String,
    /// `resourcetype` holds `<D:collection/>`.
    pub(crate) collection: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Propstat {
    pub(crate) status: String,
    pub(crate) props: Vec<Prop>,
}

#[derive(Debug, Default)]
pub(crate) struct Resp {
    pub(crate) href: String,
    pub(crate) propstats: Vec<Propstat>,
    /// A `<D:status>` straight under `<D:response>` (a member's refusal).
    pub(crate) status: Option<String>,
}

impl Resp {
    /// The property `{ns}name` and the status line of its propstat.
    pub(crate) fn prop(&self, ns: &[u8], name: &str) -> Option<(&Prop, &str)> {
        self.propstats.iter().find_map(|ps| {
            ps.props
                .iter()
                .find(|p| p.ns == ns && p.name == name)
                .map(|p| (p, ps.status.as_str()))
        })
    }

    /// `{ns}name` is in a 200 propstat: its text.
    pub(crate) fn ok(&self, ns: &[u8], name: &str) -> &str {
        match self.prop(ns, name) {
            Some((p, s)) if s.contains(" 200 ") => &p.text,
            other => panic!(
                "{}: {{{}}}{name} is not in a 200 propstat: {other:?}\n{self:#?}",
                self.href,
                String::from_utf8_lossy(ns)
            ),
        }
    }

    /// `{ns}name` is in a 404 propstat.
    pub(crate) fn missing(&self, ns: &[u8], name: &str) {
        match self.prop(ns, name) {
            Some((_, s)) if s.contains(" 404 ") => {}
            other => panic!(
                "{}: {{{}}}{name} is not in a 404 propstat: {other:?}\n{self:#?}",
                self.href,
                String::from_utf8_lossy(ns)
            ),
        }
    }

    pub(crate) fn is_collection(&self) -> bool {
        self.ok(DAV, "resourcetype");
        self.prop(DAV, "resourcetype").unwrap().0.collection
    }
}

/// Parses a 207's body as RFC 4918 §14.16 says it is made, with
/// namespaces resolved; panics on XML that is not well-formed (an
/// unclosed element, a mismatched end, an unbound prefix, a stray text
/// outside the root).
pub(crate) fn multistatus(a: &Answer) -> Vec<Resp> {
    assert_eq!(a.status, 207, "{}", a.text());
    let ctype = a.header("content-type").unwrap_or("");
    assert!(
        ctype.starts_with("application/xml") || ctype.starts_with("text/xml"),
        "a 207 is XML: Content-Type {ctype:?}"
    );
    let text = std::str::from_utf8(&a.body).expect("the 207 is UTF-8");
    let mut r = NsReader::from_str(text);
    let mut stack: Vec<(Vec<u8>, String)> = Vec::new();
    let mut out: Vec<Resp> = Vec::new();
    let mut roots = 0;
    let mut buf_text = String::new();
    loop {
        let (ns, ev) = r
            .read_resolved_event()
            .unwrap_or_else(|e| panic!("the 207 is not well-formed: {e}\n{text}"));
        let ns_of = |ns: &ResolveResult<'_>| match ns {
            ResolveResult::Bound(n) => n.as_ref().as_bytes().to_vec(),
            ResolveResult::Unbound => Vec::new(),
            ResolveResult::Unknown(p) => {
                panic!("unbound prefix {p:?} in the 207\n{text}")
            }
        };
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(ev, Event::Empty(_));
                let n = ns_of(&ns);
                let local = e.local_name().as_ref().to_owned();
                if stack.is_empty() {
                    roots += 1;
                    assert!(
                        n == DAV && local == "multistatus",
                        "the root is DAV:multistatus, not {{{}}}{local}\n{text}",
                        String::from_utf8_lossy(&n)
                    );
                }
                let depth = stack.len();
                let in_dav =
                    |i: usize, l: &str| stack.get(i).is_some_and(|(sn, sl)| sn == DAV && sl == l);
                if n == DAV && local == "response" && depth == 1 {
                    out.push(Resp::default());
                } else if n == DAV && local == "propstat" && depth == 2 {
                    out.last_mut().unwrap().propstats.push(Propstat::default());
                } else if depth == 4 && in_dav(3, "prop") && in_dav(2, "propstat") {
                    let ps = out.last_mut().unwrap().propstats.last_mut().unwrap();
                    ps.props.push(Prop {
                        ns: n.clone(),
                        name: local.clone(),
                        text: String::new(),
                        collection: false,
                    });
                } else if depth == 5
                    && n == DAV
                    && local == "collection"
                    && in_dav(4, "resourcetype")
                {
                    let ps = out.last_mut().unwrap().propstats.last_mut().unwrap();
                    ps.props.last_mut().unwrap().collection = true;
                }
                buf_text.clear();
                if !empty {
                    stack.push((n, local));
                }
            }
            Event::End(_) => {
                let (n, local) = stack.pop().expect("an end without a start");
                let depth = stack.len();
                let t = std::mem::take(&mut buf_text);
                let resp = out.last_mut();
                if n == DAV && local == "href" && depth == 2 {
                    resp.unwrap().href = t.trim().to_owned();
                } else if n == DAV && local == "status" && depth == 3 {
                    resp.unwrap().propstats.last_mut().unwrap().status = t.trim().to_owned();
                } else if n == DAV && local == "status" && depth == 2 {
                    resp.unwrap().status = Some(t.trim().to_owned());
                } else if depth == 4 {
                    let ps = resp.unwrap().propstats.last_mut().unwrap();
                    ps.props.last_mut().unwrap().text = t;
                }
            }
            Event::Text(t) => {
                let s = t.xml10_content().into_owned();
                assert!(
                    !stack.is_empty() || s.trim().is_empty(),
                    "text outside the root: {s:?}\n{text}"
                );
                buf_text.push_str(&s);
            }
            Event::CData(c) => buf_text.push_str(&c.xml10_content()),
            Event::GeneralRef(g) => {
                if let Some(c) = g.resolve_char_ref().expect("a character reference") {
                    buf_text.push(c);
                } else {
                    buf_text.push(match &*g {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        other => panic!("entity &{other}; in the 207\n{text}"),
                    });
                }
            }
            Event::DocType(_) => panic!("a DOCTYPE in the 207\n{text}"),
            Event::Eof => break,
            _ => {}
        }
    }
    assert!(stack.is_empty(), "the 207 ends inside {stack:?}\n{text}");
    assert_eq!(roots, 1, "one root element\n{text}");
    for resp in &out {
        assert!(!resp.href.is_empty(), "a response without href\n{text}");
        for ps in &resp.propstats {
            assert!(
                ps.status.starts_with("HTTP/1.1 "),
                "propstat status {:?}",
                ps.status
            );
        }
    }
    out
}

/// The response for `href` (as the server writes it: a path, or an
/// absolute URL ending in it).
/// A collection's href may or may not end in `/` (RFC 4918 §8.3 lets a
/// server answer either): compared without it.
pub(crate) fn find<'a>(all: &'a [Resp], href: &str) -> &'a Resp {
    all.iter()
        .find(|r| path_of(&r.href) == path_of(href))
        .unwrap_or_else(|| panic!("no response for {href} in {all:#?}"))
}

/// The path of an href (a path, or an absolute URL), without a final `/`
/// but for the root's.
pub(crate) fn path_of(href: &str) -> &str {
    let path = match href.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => href,
    };
    match path.strip_suffix('/') {
        Some("") | None => path,
        Some(p) => p,
    }
}

pub(crate) fn hrefs(all: &[Resp]) -> Vec<String> {
    let mut v: Vec<String> = all.iter().map(|r| path_of(&r.href).to_owned()).collect();
    v.sort();
    v
}

/// One `<D:activelock>` (RFC 4918 §14.1), as a client reads it.
#[derive(Debug, Default, Clone)]
pub(crate) struct ActiveLock {
    /// `exclusive` or `shared`.
    pub(crate) scope: String,
    pub(crate) depth: String,
    pub(crate) timeout: String,
    /// The `<D:locktoken><D:href>` (empty when not shown).
    pub(crate) token: String,
    pub(crate) root: String,
    /// The text of `<D:owner>`'s `<D:href>` (both clients send one).
    pub(crate) owner_href: String,
}

/// Every `<D:activelock>` in an XML body (a `LOCK`'s `<D:prop>`, or a
/// 207 with `lockdiscovery`), namespaces resolved; panics on XML that is
/// not well-formed.
pub(crate) fn activelocks(a: &Answer) -> Vec<ActiveLock> {
    let text = std::str::from_utf8(&a.body).expect("the XML is UTF-8");
    let mut r = NsReader::from_str(text);
    let mut stack: Vec<(bool, String)> = Vec::new();
    let mut out: Vec<ActiveLock> = Vec::new();
    let mut buf = String::new();
    // The path below the activelock, DAV: names only (`None` outside).
    let inside = |stack: &[(bool, String)]| {
        let at = stack.iter().rposition(|(d, l)| *d && l == "activelock")?;
        Some(
            stack[at + 1..]
                .iter()
                .map(|(d, l)| if *d { l.clone() } else { format!("?{l}") })
                .collect::<Vec<_>>()
                .join("/"),
        )
    };
    loop {
        let (ns, ev) = r
            .read_resolved_event()
            .unwrap_or_else(|e| panic!("not well-formed: {e}\n{text}"));
        let dav = matches!(&ns, ResolveResult::Bound(n) if n.as_ref().as_bytes() == DAV);
        if let ResolveResult::Unknown(p) = &ns {
            panic!("unbound prefix {p:?}\n{text}");
        }
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let local = e.local_name().as_ref().to_owned();
                if dav && local == "activelock" {
                    out.push(ActiveLock::default());
                } else if dav
                    && (local == "exclusive" || local == "shared")
                    && inside(&stack).as_deref() == Some("lockscope")
                {
                    out.last_mut().unwrap().scope = local.clone();
                }
                buf.clear();
                if matches!(ev, Event::Start(_)) {
                    stack.push((dav, local));
                }
            }
            Event::End(_) => {
                let path = inside(&stack);
                stack.pop();
                let t = std::mem::take(&mut buf).trim().to_owned();
                if let (Some(path), Some(lock)) = (path, out.last_mut()) {
                    match path.as_str() {
                        "depth" => lock.depth = t,
                        "timeout" => lock.timeout = t,
                        "locktoken/href" => lock.token = t,
                        "lockroot/href" => lock.root = t,
                        "owner/href" => lock.owner_href = t,
                        _ => {}
                    }
                }
            }
            Event::Text(t) => buf.push_str(&t.xml10_content()),
            Event::GeneralRef(g) => {
                if let Some(c) = g.resolve_char_ref().expect("a character reference") {
                    buf.push(c);
                } else {
                    buf.push(match &*g {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        other => panic!("entity &{other};\n{text}"),
                    });
                }
            }
            Event::DocType(_) => panic!("a DOCTYPE\n{text}"),
            Event::Eof => break,
            _ => {}
        }
    }
    assert!(stack.is_empty(), "the XML ends inside {stack:?}\n{text}");
    out
}

/// A `<D:error>` body (RFC 4918 §16): the condition's DAV: name and the
/// hrefs in it.
pub(crate) fn error_condition(a: &Answer) -> (String, Vec<String>) {
    let text = std::str::from_utf8(&a.body).expect("the XML is UTF-8");
    let mut r = NsReader::from_str(text);
    let mut depth = 0;
    let mut name = String::new();
    let mut hrefs = Vec::new();
    let mut buf = String::new();
    loop {
        let (ns, ev) = r
            .read_resolved_event()
            .unwrap_or_else(|e| panic!("not well-formed: {e}\n{text}"));
        let dav = matches!(&ns, ResolveResult::Bound(n) if n.as_ref().as_bytes() == DAV);
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let local = e.local_name().as_ref().to_owned();
                if depth == 0 {
                    assert!(dav && local == "error", "the root is DAV:error\n{text}");
                } else if depth == 1 && dav {
                    name = local;
                }
                buf.clear();
                if matches!(ev, Event::Start(_)) {
                    depth += 1;
                }
            }
            Event::End(ref e) => {
                depth -= 1;
                if depth == 2 && dav && e.local_name().as_ref() == "href" {
                    hrefs.push(std::mem::take(&mut buf).trim().to_owned());
                }
            }
            Event::Text(t) => buf.push_str(&t.xml10_content()),
            Event::Eof => break,
            _ => {}
        }
    }
    (name, hrefs)
}
