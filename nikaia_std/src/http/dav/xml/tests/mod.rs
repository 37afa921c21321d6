//! The bodies litmus 0.13's props suite sends (verbatim, or as neon's
//! `ne_proppatch` builds them), the attacks, and the answers parsed back:
//! the requests in `requests`, what goes in and comes out again in
//! `answers`.

mod answers;
mod locks;
mod requests;

use super::read::{Ev, Reader};
use super::*;
pub(super) const NS: &str = "http://example.com/neon/litmus/";
pub(super) const DECL: &str = "<?xml version=\"1.0\" encoding=\"utf-8\" ?>";

pub(super) fn q(ns: &str, local: &str) -> QName {
    QName {
        ns: ns.into(),
        local: local.into(),
    }
}

/// A PROPPATCH body as neon 0.32's `ne_proppatch` writes it.
pub(super) fn neon_proppatch(items: &[(&str, &str, Option<&str>)]) -> String {
    let mut body = format!("{DECL}\n<D:propertyupdate xmlns:D=\"DAV:\">");
    for (ns, name, value) in items {
        let elm = if value.is_some() { "set" } else { "remove" };
        body += &format!(
            "<D:{elm}><D:prop><{name} xmlns=\"{ns}\">{}",
            value.unwrap_or("")
        );
        body += &format!("</{name}></D:prop></D:{elm}>\n");
    }
    body + "</D:propertyupdate>\n"
}

/// A parsed document, for checking what the writer wrote.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Node {
    E(QName, Vec<(QName, String)>, Vec<Node>),
    T(String),
}

/// Parses `doc` with the strict reader (quick-xml under it): Err if it is
/// not well-formed or breaks a namespace rule.
pub(super) fn tree(doc: &[u8]) -> Result<Node, Bad> {
    let mut r = Reader::new(doc)?;
    let mut stack: Vec<Node> = vec![Node::E(q("", ""), vec![], vec![])];
    while let Some(ev) = r.next()? {
        match ev {
            Ev::Start(e) => {
                let attrs = e.attrs.into_iter().map(|a| (a.name, a.value)).collect();
                stack.push(Node::E(e.name, attrs, vec![]));
            }
            Ev::End => {
                let done = stack.pop().unwrap();
                let Some(Node::E(_, _, kids)) = stack.last_mut() else {
                    unreachable!()
                };
                kids.push(done);
            }
            Ev::Text(t) => {
                let Some(Node::E(_, _, kids)) = stack.last_mut() else {
                    unreachable!()
                };
                match kids.last_mut() {
                    Some(Node::T(s)) => s.push_str(&t),
                    _ => kids.push(Node::T(t)),
                }
            }
        }
    }
    let Some(Node::E(_, _, mut kids)) = stack.pop() else {
        unreachable!()
    };
    Ok(kids.pop().unwrap())
}

/// The first element named `name` in document order.
pub(super) fn find<'a>(n: &'a Node, name: &QName) -> Option<&'a Node> {
    match n {
        Node::E(q, _, kids) => {
            if q == name {
                return Some(n);
            }
            kids.iter().find_map(|k| find(k, name))
        }
        Node::T(_) => None,
    }
}

pub(super) fn text(n: &Node) -> String {
    match n {
        Node::T(t) => t.clone(),
        Node::E(_, _, kids) => kids.iter().map(text).collect(),
    }
}

/// A one-response multistatus with these dead properties, parsed back.
pub(super) fn answer(props: &[(QName, Value)]) -> Node {
    let list: Vec<Prop<'_>> = props
        .iter()
        .map(|(name, v)| Prop {
            name,
            content: Content::Raw(v),
        })
        .collect();
    let mut m = Multistatus::begin();
    m.response("/litmus/prop", &[(200, &list)]);
    m.end();
    tree(&m.out).unwrap_or_else(|e| panic!("{e:?}: {}", String::from_utf8_lossy(&m.out)))
}

pub(super) fn sets(changes: Vec<Change>) -> Vec<(QName, Value)> {
    changes
        .into_iter()
        .map(|c| match c {
            Change::Set(n, v) => (n, v),
            Change::Remove(n) => panic!("remove {n:?}"),
        })
        .collect()
}
