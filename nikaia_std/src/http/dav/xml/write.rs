//! The answers' XML: the 207 multistatus, written piece by piece with
//! quick-xml's writer, and a precondition's `DAV:error` body.
//!
//! Every element names its namespace itself: `D:` (declared once on the
//! root) for `DAV:`, `xmlns=""` for no namespace, and a prefix declared on
//! the element for any other; a dead property's value declares its own.

use super::{QName, Value, DAV};
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;

/// The multistatus writer: appends to `out`, piece by piece (a `PROPFIND`
/// of 10 000 entries is streamed: the caller takes the bytes after each
/// response).
pub(crate) struct Multistatus {
    pub out: Vec<u8>,
}

/// What a property element holds.
pub(crate) enum Content<'a> {
    /// Nothing: `<D:getcontentlength/>`, as in propname answers or a 404 list.
    Empty,
    /// Text, escaped.
    Text(&'a str),
    /// `<D:collection/>`, inside `resourcetype`.
    Collection,
    /// A dead property's stored XML, written as it is.
    Raw(&'a Value),
}

pub(crate) struct Prop<'a> {
    pub name: &'a QName,
    pub content: Content<'a>,
}

impl Multistatus {
    /// The XML declaration and `<D:multistatus xmlns:D="DAV:">`.
    pub(crate) fn begin() -> Multistatus {
        let mut m = Multistatus { out: Vec::new() };
        let mut w = Writer::new(&mut m.out);
        put(
            &mut w,
            Event::Decl(BytesDecl::new("1.0", Some("utf-8"), None)),
        );
        put(
            &mut w,
            Event::Start(BytesStart::new("D:multistatus").with_attributes([("xmlns:D", DAV)])),
        );
        m
    }

    /// One `<D:response>`: `href` is already percent-encoded by the caller
    /// (escaped here for XML); each propstat is (status code, props),
    /// written as `HTTP/1.1 200 OK` and so on.
    pub(crate) fn response(&mut self, href: &str, propstats: &[(u16, &[Prop<'_>])]) {
        let with: Vec<_> = propstats.iter().map(|&(s, p)| (s, p, None)).collect();
        self.response_errors(href, &with);
    }

    /// As [`Multistatus::response`], each propstat with a precondition's
    /// element in its `<D:error>` where one is given (RFC 4918 §14.22:
    /// `cannot-modify-protected-property` beside a 403).
    pub(crate) fn response_errors(
        &mut self,
        href: &str,
        propstats: &[(u16, &[Prop<'_>], Option<&str>)],
    ) {
        let mut w = Writer::new(&mut self.out);
        start(&mut w, "D:response");
        text_element(&mut w, "D:href", href);
        for (status, props, error) in propstats {
            start(&mut w, "D:propstat");
            start(&mut w, "D:prop");
            for p in *props {
                property(&mut w, p);
            }
            end(&mut w, "D:prop");
            text_element(&mut w, "D:status", &status_line(*status));
            if let Some(name) = error {
                start(&mut w, "D:error");
                put(&mut w, Event::Empty(BytesStart::new(format!("D:{name}"))));
                end(&mut w, "D:error");
            }
            end(&mut w, "D:propstat");
        }
        end(&mut w, "D:response");
    }

    /// A `<D:response>` with `<D:href>` and `<D:status>` only: a member a
    /// `COPY`, `MOVE` or `DELETE` could not take.
    pub(crate) fn status(&mut self, href: &str, status: u16) {
        self.status_error(href, status, None);
    }

    /// As [`Multistatus::status`], with a precondition's element in a
    /// `<D:error>` when `error` is given (`Some("propfind-finite-depth")`).
    pub(crate) fn status_error(&mut self, href: &str, status: u16, error: Option<&str>) {
        let mut w = Writer::new(&mut self.out);
        start(&mut w, "D:response");
        text_element(&mut w, "D:href", href);
        text_element(&mut w, "D:status", &status_line(status));
        if let Some(name) = error {
            start(&mut w, "D:error");
            put(&mut w, Event::Empty(BytesStart::new(format!("D:{name}"))));
            end(&mut w, "D:error");
        }
        end(&mut w, "D:response");
    }

    /// `</D:multistatus>`.
    pub(crate) fn end(&mut self) {
        end(&mut Writer::new(&mut self.out), "D:multistatus");
    }
}

/// `<?xml ...?><D:error xmlns:D="DAV:"><D:NAME/></D:error>`: the body of a
/// precondition refusal (403 `propfind-finite-depth`, 403
/// `cannot-modify-protected-property`).
pub(crate) fn error_body(name: &str) -> String {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out);
    put(
        &mut w,
        Event::Decl(BytesDecl::new("1.0", Some("utf-8"), None)),
    );
    put(
        &mut w,
        Event::Start(BytesStart::new("D:error").with_attributes([("xmlns:D", DAV)])),
    );
    put(&mut w, Event::Empty(BytesStart::new(format!("D:{name}"))));
    end(&mut w, "D:error");
    // Only `&str`s went in.
    String::from_utf8(out).unwrap_or_default()
}

/// A property element and its content.
fn property(w: &mut Writer<&mut Vec<u8>>, p: &Prop<'_>) {
    let (tag, decl) = if p.name.ns == DAV {
        (format!("D:{}", p.name.local), None)
    } else if p.name.ns.is_empty() {
        (p.name.local.clone(), Some(("xmlns", "")))
    } else {
        (
            format!("p:{}", p.name.local),
            Some(("xmlns:p", p.name.ns.as_str())),
        )
    };
    let mut s = BytesStart::new(tag.as_str());
    s.extend_attributes(decl);
    let inner: &str = match &p.content {
        Content::Empty => return put(w, Event::Empty(s)),
        Content::Text(t) => {
            put(w, Event::Start(s));
            put(w, Event::Text(BytesText::new(t)));
            return end(w, &tag);
        }
        Content::Collection => "<D:collection/>",
        Content::Raw(v) => &v.0,
    };
    put(w, Event::Start(s));
    put(w, Event::Text(BytesText::from_escaped(inner)));
    end(w, &tag);
}

fn status_line(status: u16) -> String {
    let reason = match status {
        207 => "Multi-Status",
        424 => "Failed Dependency",
        502 => "Bad Gateway",
        s => crate::http::response::reason(s),
    };
    format!("HTTP/1.1 {status} {reason}")
}

fn start(w: &mut Writer<&mut Vec<u8>>, name: &str) {
    put(w, Event::Start(BytesStart::new(name)));
}

fn end(w: &mut Writer<&mut Vec<u8>>, name: &str) {
    put(w, Event::End(BytesEnd::new(name)));
}

fn text_element(w: &mut Writer<&mut Vec<u8>>, name: &str, text: &str) {
    start(w, name);
    put(w, Event::Text(BytesText::new(text)));
    end(w, name);
}

/// Writes an event; writing to a `Vec` does not fail.
fn put(w: &mut Writer<&mut Vec<u8>>, e: Event<'_>) {
    let _ = w.write_event(e);
}

/// Text content escaped: `&`, `<`, `>`, and a carriage return as a
/// reference (a literal one would be read back as a line feed).
pub(super) fn escape_text(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
}

/// An attribute value escaped for double quotes, its whitespace as
/// references so that normalisation gives it back as it is.
pub(super) fn escape_attr(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c => escape_text(out, c.encode_utf8(&mut [0; 4])),
        }
    }
}
