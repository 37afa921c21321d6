//! The strict reader under `propfind` and `proppatch`: quick-xml's pull
//! parser, with what it leaves to its caller done here — a `DOCTYPE`
//! refused (so no entity is ever defined), only the five predefined
//! entities and character references expanded, well-formedness at the end
//! of the body (quick-xml just stops), names checked as XML names, and the
//! namespaces resolved by our own scope stack, which refuses what XML
//! Namespaces 1.0 forbids (an empty prefixed declaration, an unbound
//! prefix, the reserved prefixes rebound).

use super::{Bad, QName};
use quick_xml::events::{BytesStart, Event};
use quick_xml::XmlVersion;

/// Elements nested deeper than this are refused.
const MAX_DEPTH: usize = 64;
/// Namespace declarations in scope at once (on the open elements).
const MAX_BINDINGS: usize = 256;
/// Attributes on one element, namespace declarations included.
const MAX_ATTRIBUTES: usize = 256;
const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";
const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";

/// An attribute: its expanded name, its name as the document wrote it
/// (`xml:lang`, `a:b`) and its value with references resolved and
/// whitespace normalised as XML 1.0 §3.3.3 says.
#[derive(Debug)]
pub(super) struct Attr {
    pub name: QName,
    pub raw: String,
    pub value: String,
}

/// An element's start, resolved.
#[derive(Debug)]
pub(super) struct Elem {
    pub name: QName,
    /// As the document wrote it (`D:prop`, `foo`).
    pub raw: String,
    /// Attributes, without the namespace declarations.
    pub attrs: Vec<Attr>,
    /// Its own namespace declarations: (prefix, namespace), prefix "" for
    /// the default one, in document order.
    pub decls: Vec<(String, String)>,
}

pub(super) enum Ev {
    Start(Elem),
    End,
    Text(String),
}

struct Binding {
    prefix: String,
    ns: String,
    depth: usize,
}

pub(super) struct Reader<'a> {
    inner: quick_xml::Reader<&'a [u8]>,
    depth: usize,
    first: bool,
    root_seen: bool,
    pending_end: bool,
    scope: Vec<Binding>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(body: &'a [u8]) -> Result<Reader<'a>, Bad> {
        let text = std::str::from_utf8(body).map_err(|_| Bad("the body is not UTF-8"))?;
        if !text.chars().all(legal_char) {
            return Err(Bad("a character XML does not allow"));
        }
        let mut inner = quick_xml::Reader::from_str(text);
        let config = inner.config_mut();
        config.check_end_names = true;
        config.check_comments = true;
        config.allow_unmatched_ends = false;
        config.allow_dangling_amp = false;
        config.expand_empty_elements = false;
        config.trim_text(false);
        Ok(Reader {
            inner,
            depth: 0,
            first: true,
            root_seen: false,
            pending_end: false,
            scope: Vec::new(),
        })
    }

    /// The depth of the element last started and not yet ended (0 outside the root).
    pub(super) fn depth(&self) -> usize {
        self.depth
    }

    /// The next event; `None` at the end of a well-formed document.
    pub(super) fn next(&mut self) -> Result<Option<Ev>, Bad> {
        loop {
            if self.pending_end {
                self.pending_end = false;
                self.end();
                return Ok(Some(Ev::End));
            }
            let first = std::mem::replace(&mut self.first, false);
            let event = self
                .inner
                .read_event()
                .map_err(|_| Bad("the body is not well-formed XML"))?;
            match event {
                Event::Decl(d) => {
                    if !first {
                        return Err(Bad("an XML declaration not at the start"));
                    }
                    if d.version().is_err() {
                        return Err(Bad("a bad XML declaration"));
                    }
                    if let Some(enc) = d.encoding() {
                        let enc = enc.map_err(|_| Bad("a bad XML declaration"))?;
                        if !enc.eq_ignore_ascii_case("utf-8")
                            && !enc.eq_ignore_ascii_case("us-ascii")
                        {
                            return Err(Bad("an encoding other than UTF-8"));
                        }
                    }
                }
                Event::DocType(_) => return Err(Bad("a DOCTYPE")),
                Event::PI(_) | Event::Comment(_) => {}
                Event::Start(_) | Event::Empty(_) if self.depth == 0 && self.root_seen => {
                    return Err(Bad("more than one root element"));
                }
                Event::Start(e) => return Ok(Some(Ev::Start(self.start(&e)?))),
                Event::Empty(e) => {
                    let elem = self.start(&e)?;
                    self.pending_end = true;
                    return Ok(Some(Ev::Start(elem)));
                }
                Event::End(_) => {
                    // quick-xml checked that the name matches its start.
                    self.end();
                    return Ok(Some(Ev::End));
                }
                Event::Text(t) if self.depth == 0 => {
                    if !t.chars().all(|c| matches!(c, ' ' | '\t' | '\r' | '\n')) {
                        return Err(Bad("text outside the root element"));
                    }
                }
                Event::CData(_) | Event::GeneralRef(_) if self.depth == 0 => {
                    return Err(Bad("text outside the root element"));
                }
                Event::Text(t) if t.contains("]]>") => {
                    return Err(Bad("']]>' in text"));
                }
                Event::Text(t) => return Ok(Some(Ev::Text(t.xml10_content().into_owned()))),
                Event::CData(t) => return Ok(Some(Ev::Text(t.xml10_content().into_owned()))),
                Event::GeneralRef(r) => {
                    let c = match r.resolve_char_ref() {
                        Ok(Some(c)) if legal_char(c) => c,
                        Ok(Some(_)) | Err(_) => {
                            return Err(Bad("a character reference XML does not allow"))
                        }
                        Ok(None) => match &*r {
                            "lt" => '<',
                            "gt" => '>',
                            "amp" => '&',
                            "apos" => '\'',
                            "quot" => '"',
                            _ => return Err(Bad("an undefined entity")),
                        },
                    };
                    return Ok(Some(Ev::Text(c.to_string())));
                }
                Event::Eof => {
                    if self.depth > 0 {
                        return Err(Bad("an element is not closed"));
                    }
                    if !self.root_seen {
                        return Err(Bad("no root element"));
                    }
                    return Ok(None);
                }
            }
        }
    }

    fn end(&mut self) {
        let depth = self.depth;
        while self.scope.last().is_some_and(|b| b.depth == depth) {
            self.scope.pop();
        }
        self.depth -= 1;
    }

    fn start(&mut self, e: &BytesStart<'_>) -> Result<Elem, Bad> {
        if self.depth == MAX_DEPTH {
            return Err(Bad("elements nested too deep"));
        }
        self.depth += 1;
        self.root_seen = true;
        let depth = self.depth;
        let raw = e.name().as_ref().to_owned();
        if !qualified_name(&raw) {
            return Err(Bad("an element name that is not an XML name"));
        }
        if !attributes_apart(e.attributes_raw()) {
            return Err(Bad("attributes not separated by whitespace"));
        }
        let mut attrs = Vec::new();
        let mut decls = Vec::new();
        for (i, a) in e.attributes().enumerate() {
            if i == MAX_ATTRIBUTES {
                return Err(Bad("too many attributes on an element"));
            }
            let a = a.map_err(|_| Bad("a malformed attribute"))?;
            let key = a.key.as_ref().to_owned();
            if a.value.contains('<') {
                return Err(Bad("'<' in an attribute value"));
            }
            let value = a
                .normalized_value(XmlVersion::Implicit1_0)
                .map_err(|_| Bad("an undefined entity or a bad reference in an attribute"))?;
            if !value.chars().all(legal_char) {
                return Err(Bad("a character reference XML does not allow"));
            }
            if !qualified_name(&key) {
                return Err(Bad("an attribute name that is not an XML name"));
            }
            let value = value.into_owned();
            if key == "xmlns" {
                if value == XML_NS || value == XMLNS_NS {
                    return Err(Bad("a reserved namespace declared as the default"));
                }
                decls.push((String::new(), value));
            } else if let Some(prefix) = key.strip_prefix("xmlns:") {
                match prefix {
                    "xmlns" => return Err(Bad("the xmlns prefix declared")),
                    "xml" if value == XML_NS => continue,
                    "xml" => return Err(Bad("the xml prefix bound to another namespace")),
                    _ if value.is_empty() => {
                        return Err(Bad("an empty prefixed namespace declaration"))
                    }
                    _ if value == XML_NS || value == XMLNS_NS => {
                        return Err(Bad("a reserved namespace bound to a prefix"))
                    }
                    _ => decls.push((prefix.to_owned(), value)),
                }
            } else {
                attrs.push((key, value));
            }
        }
        for (prefix, ns) in &decls {
            self.scope.push(Binding {
                prefix: prefix.clone(),
                ns: ns.clone(),
                depth,
            });
        }
        if self.scope.len() > MAX_BINDINGS {
            return Err(Bad("too many namespace declarations"));
        }
        let name = match raw.split_once(':') {
            None => QName {
                ns: self.lookup("").unwrap_or_default().to_owned(),
                local: raw.clone(),
            },
            Some((prefix, local)) => QName {
                ns: self.prefixed(prefix)?.to_owned(),
                local: local.to_owned(),
            },
        };
        let mut resolved: Vec<Attr> = Vec::with_capacity(attrs.len());
        for (raw, value) in attrs {
            let name = match raw.split_once(':') {
                None => QName {
                    ns: String::new(),
                    local: raw.clone(),
                },
                Some((prefix, local)) => QName {
                    ns: self.prefixed(prefix)?.to_owned(),
                    local: local.to_owned(),
                },
            };
            if resolved.iter().any(|a| a.name == name) {
                return Err(Bad("an attribute given twice"));
            }
            resolved.push(Attr { name, raw, value });
        }
        Ok(Elem {
            name,
            raw,
            attrs: resolved,
            decls,
        })
    }

    fn prefixed(&self, prefix: &str) -> Result<&str, Bad> {
        match prefix {
            "xml" => Ok(XML_NS),
            "xmlns" => Err(Bad("the xmlns prefix on a name")),
            _ => self
                .lookup(prefix)
                .ok_or(Bad("an unbound namespace prefix")),
        }
    }

    /// The namespace `prefix` ("" for the default) is bound to, if any.
    fn lookup(&self, prefix: &str) -> Option<&str> {
        self.scope
            .iter()
            .rev()
            .find(|b| b.prefix == prefix)
            .map(|b| b.ns.as_str())
    }

    /// Every binding in scope on the open element at `depth`, the innermost
    /// for each prefix, sorted by prefix (the default one, "", first; absent
    /// if never declared).
    pub(super) fn in_scope(&self, depth: usize) -> Vec<(String, String)> {
        let mut map = std::collections::BTreeMap::new();
        for b in self.scope.iter().take_while(|b| b.depth <= depth) {
            map.insert(b.prefix.as_str(), b.ns.as_str());
        }
        map.into_iter()
            .map(|(p, n)| (p.to_owned(), n.to_owned()))
            .collect()
    }

    /// The root element's start (the first event that is not prolog).
    pub(super) fn root(&mut self) -> Result<Elem, Bad> {
        match self.next()? {
            Some(Ev::Start(e)) => Ok(e),
            // The reader yields nothing else at depth 0.
            _ => Err(Bad("no root element")),
        }
    }

    /// The next child element of the element open now, skipping
    /// text; `None` once that element ends.
    pub(super) fn child(&mut self) -> Result<Option<Elem>, Bad> {
        loop {
            match self.next()? {
                Some(Ev::Start(e)) => return Ok(Some(e)),
                Some(Ev::End) => return Ok(None),
                Some(Ev::Text(_)) => {}
                None => return Err(Bad("an element is not closed")),
            }
        }
    }

    /// Skips what is left of the element open now, its end included.
    pub(super) fn skip(&mut self) -> Result<(), Bad> {
        let depth = self.depth;
        while self.depth >= depth {
            if self.next()?.is_none() {
                return Err(Bad("an element is not closed"));
            }
        }
        Ok(())
    }

    /// Reads to the end of the body: only comments, processing
    /// instructions and whitespace may follow the root.
    pub(super) fn finish(&mut self) -> Result<(), Bad> {
        match self.next()? {
            None => Ok(()),
            Some(_) => Err(Bad("the body is not well-formed XML")),
        }
    }
}

/// Whether each attribute value's closing quote is followed by whitespace
/// or the end (quick-xml reads `a='1'b='2'` as two attributes; XML 1.0
/// §3.1 wants `S` between them).
fn attributes_apart(raw: &str) -> bool {
    let mut quote = None;
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                if chars
                    .peek()
                    .is_some_and(|n| !matches!(n, ' ' | '\t' | '\r' | '\n'))
                {
                    return false;
                }
            }
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None => {}
        }
    }
    true
}

/// XML 1.0 §2.2 `Char`.
pub(super) fn legal_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// `NCName` or `NCName:NCName` (XML Namespaces 1.0 `QName`).
fn qualified_name(s: &str) -> bool {
    match s.split_once(':') {
        None => nc_name(s),
        Some((p, l)) => nc_name(p) && nc_name(l),
    }
}

/// XML 1.0 (fifth edition) §2.3 `Name` without a colon.
pub(super) fn nc_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(name_start) && chars.all(|c| name_start(c) || name_char(c))
}

fn name_start(c: char) -> bool {
    matches!(c,
        'A'..='Z' | '_' | 'a'..='z'
        | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}' | '\u{F8}'..='\u{2FF}'
        | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}' | '\u{200C}'..='\u{200D}'
        | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}' | '\u{3001}'..='\u{D7FF}'
        | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}' | '\u{10000}'..='\u{EFFFF}')
}

fn name_char(c: char) -> bool {
    matches!(c, '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}
