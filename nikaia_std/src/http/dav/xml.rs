//! WebDAV's XML (RFC 4918 §14, §17): the `PROPFIND`, `PROPPATCH` and
//! `LOCK` bodies read, dead property values and lock owners kept
//! self-contained, and the 207 multistatus, `LOCK` answer and precondition
//! bodies written. Protocol-independent: bytes in, values and bytes out.
//!
//! A body is refused (400, [`Bad`]) when it is not well-formed, has a
//! `DOCTYPE` (no entity is ever defined: no billion laughs, no external
//! entity read), refers to an entity other than the five predefined ones,
//! breaks XML Namespaces 1.0 (an unbound prefix, an empty prefixed
//! declaration `xmlns:x=""`), or nests elements deeper than 64.
//!
//! Normative text: `spec/site.md`, "WebDAV class 1".

mod lock;
mod read;
#[cfg(test)]
mod tests;
mod write;

pub(crate) use lock::{
    activelock, error_hrefs, lock_answer, lockinfo, Active, LockInfo, SUPPORTED_LOCK,
};
use read::{Elem, Ev, Reader};
pub(crate) use write::{error_body, Content, Multistatus, Prop};

pub(crate) const DAV: &str = "DAV:";

/// The values of one `PROPPATCH`, written again, in bytes at most.
const MAX_VALUES: usize = 1 << 20;

/// An expanded name: namespace and local name (`ns` "" = no namespace).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct QName {
    pub ns: String,
    pub local: String,
}

impl QName {
    pub(crate) fn dav(local: &str) -> QName {
        QName {
            ns: DAV.to_owned(),
            local: local.to_owned(),
        }
    }

    pub(crate) fn is_dav(&self, local: &str) -> bool {
        self.ns == DAV && self.local == local
    }
}

/// Why a body is refused (400); the text is said in the answer's body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Bad(pub &'static str);

/// What a `PROPFIND` asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Find {
    AllProp { include: Vec<QName> },
    PropName,
    Prop(Vec<QName>),
}

/// A `PROPFIND` body; an empty body (or only whitespace) is
/// `AllProp { include: vec![] }` (RFC 4918 §9.1). Elements this server
/// does not know are ignored (§17), in any namespace.
pub(crate) fn propfind(body: &[u8]) -> Result<Find, Bad> {
    if body
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    {
        return Ok(Find::AllProp { include: vec![] });
    }
    let mut r = Reader::new(body)?;
    if !r.root()?.name.is_dav("propfind") {
        return Err(Bad("the root element is not DAV:propfind"));
    }
    let mut find = None;
    let mut include = None;
    while let Some(child) = r.child()? {
        let what = if child.name.is_dav("allprop") {
            r.skip()?;
            Find::AllProp { include: vec![] }
        } else if child.name.is_dav("propname") {
            r.skip()?;
            Find::PropName
        } else if child.name.is_dav("prop") {
            Find::Prop(names(&mut r)?)
        } else if child.name.is_dav("include") {
            if include.is_some() {
                return Err(Bad("DAV:include given twice"));
            }
            include = Some(names(&mut r)?);
            continue;
        } else {
            r.skip()?;
            continue;
        };
        if find.replace(what).is_some() {
            return Err(Bad("more than one of DAV:allprop, DAV:propname, DAV:prop"));
        }
    }
    r.finish()?;
    match (find, include) {
        (None, _) => Err(Bad("none of DAV:allprop, DAV:propname, DAV:prop")),
        (Some(Find::AllProp { .. }), include) => Ok(Find::AllProp {
            include: include.unwrap_or_default(),
        }),
        (Some(_), Some(_)) => Err(Bad("DAV:include without DAV:allprop")),
        (Some(find), None) => Ok(find),
    }
}

/// The names of the children of the element open now (a `DAV:prop` or
/// `DAV:include`), each once, in document order; their contents ignored.
fn names(r: &mut Reader<'_>) -> Result<Vec<QName>, Bad> {
    let mut out: Vec<QName> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while let Some(e) = r.child()? {
        r.skip()?;
        if seen.insert(e.name.clone()) {
            out.push(e.name);
        }
    }
    Ok(out)
}

/// Whether a name can be written as an element's: its local name an XML
/// name without a colon, its namespace only characters XML allows.
pub(crate) fn name_ok(name: &QName) -> bool {
    read::nc_name(&name.local) && name.ns.chars().all(read::legal_char)
}

/// Whether a value is well-formed, self-contained XML content (a stored
/// record is checked so before it is written into an answer).
pub(crate) fn well_formed_value(value: &Value) -> bool {
    let doc = format!("<x>{}</x>", value.0);
    let Ok(mut r) = Reader::new(doc.as_bytes()) else {
        return false;
    };
    loop {
        match r.next() {
            Ok(Some(_)) => {}
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
}

/// A dead property's value: XML content, self-contained (every element in
/// it declares the namespace it uses, so it can be written anywhere as it
/// is), and the `xml:lang` in scope on its property element, kept as RFC
/// 4918 §4.3 asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Value(pub String, pub Option<String>);

/// One change a `PROPPATCH` asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Change {
    Set(QName, Value),
    Remove(QName),
}

/// A `PROPPATCH` body: the changes in document order (RFC 4918 §9.2).
///
/// A set's value is the property element's content written again: text
/// escaped, comments and processing instructions dropped, and each element
/// at its top carrying every namespace declaration in scope where it was
/// (the default one too, `xmlns=""` when there is none), so prefixes used
/// in content keep their meaning. Of the property element's own attributes
/// only `xml:lang` is kept, its own or the nearest one around it.
pub(crate) fn proppatch(body: &[u8]) -> Result<Vec<Change>, Bad> {
    let mut r = Reader::new(body)?;
    let root = r.root()?;
    if !root.name.is_dav("propertyupdate") {
        return Err(Bad("the root element is not DAV:propertyupdate"));
    }
    let top = lang(&root, None);
    let mut changes = Vec::new();
    let mut budget = MAX_VALUES;
    while let Some(op) = r.child()? {
        let at_op = lang(&op, top.as_deref());
        let set = if op.name.is_dav("set") {
            true
        } else if op.name.is_dav("remove") {
            false
        } else {
            r.skip()?;
            continue;
        };
        while let Some(prop) = r.child()? {
            if !prop.name.is_dav("prop") {
                r.skip()?;
                continue;
            }
            let at_prop = lang(&prop, at_op.as_deref());
            while let Some(p) = r.child()? {
                if set {
                    let mut value = value(&mut r, &mut budget)?;
                    value.1 = lang(&p, at_prop.as_deref());
                    changes.push(Change::Set(p.name, value));
                } else {
                    r.skip()?;
                    changes.push(Change::Remove(p.name));
                }
            }
        }
    }
    r.finish()?;
    Ok(changes)
}

/// The `xml:lang` in scope on `e`: its own, else `around`'s.
fn lang(e: &Elem, around: Option<&str>) -> Option<String> {
    let own = e.attrs.iter().find(|a| a.raw == "xml:lang");
    own.map(|a| a.value.clone())
        .or_else(|| around.map(str::to_owned))
}

/// The content of the element open now, written again self-contained,
/// taking its length from `budget` (a value's top elements repeat the
/// declarations in scope, so the values can outgrow the body).
fn value(r: &mut Reader<'_>, budget: &mut usize) -> Result<Value, Bad> {
    let mut out = String::new();
    // The bindings in scope around the value, found at its first element.
    let mut outer: Option<Vec<(String, String)>> = None;
    // The names of the elements started in the value and not ended yet,
    // and whether the last one started is still empty (its start tag not
    // closed: written `<x/>` if it ends so).
    let mut names: Vec<String> = Vec::new();
    let mut open = false;
    loop {
        let ev = r.next()?.ok_or(Bad("an element is not closed"))?;
        if open && !matches!(ev, Ev::End) {
            out.push('>');
            open = false;
        }
        match ev {
            Ev::Text(t) => write::escape_text(&mut out, &t),
            Ev::Start(e) => {
                let own = e.decls.iter().map(|(p, n)| (p.as_str(), n.as_str()));
                if names.is_empty() {
                    let outer = outer.get_or_insert_with(|| r.in_scope(r.depth() - 1));
                    let mut decls: Vec<(&str, &str)> = outer
                        .iter()
                        .filter(|(p, _)| !e.decls.iter().any(|(q, _)| p == q))
                        .map(|(p, n)| (p.as_str(), n.as_str()))
                        .collect();
                    decls.extend(own);
                    decls.sort_unstable();
                    start_tag(&mut out, &e, &decls, true);
                } else {
                    start_tag(&mut out, &e, &own.collect::<Vec<_>>(), false);
                }
                names.push(e.raw);
                open = true;
            }
            Ev::End => {
                let Some(name) = names.pop() else {
                    *budget -= out.len();
                    return Ok(Value(out, None));
                };
                if open {
                    out.push_str("/>");
                    open = false;
                } else {
                    out.push_str("</");
                    out.push_str(&name);
                    out.push('>');
                }
            }
        }
        if out.len() > *budget {
            return Err(Bad("the property values are too large"));
        }
    }
}

/// `<raw decls attrs` without the closing `>`.
fn start_tag(out: &mut String, e: &Elem, decls: &[(&str, &str)], top: bool) {
    out.push('<');
    out.push_str(&e.raw);
    if top && !decls.iter().any(|(p, _)| p.is_empty()) {
        out.push_str(" xmlns=\"\"");
    }
    for (prefix, ns) in decls {
        out.push_str(if prefix.is_empty() {
            " xmlns"
        } else {
            " xmlns:"
        });
        out.push_str(prefix);
        out.push_str("=\"");
        write::escape_attr(out, ns);
        out.push('"');
    }
    for a in &e.attrs {
        out.push(' ');
        out.push_str(&a.raw);
        out.push_str("=\"");
        write::escape_attr(out, &a.value);
        out.push('"');
    }
}
