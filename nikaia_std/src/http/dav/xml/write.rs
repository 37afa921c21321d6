//! The answers' XML: the 207 multistatus, written piece by piece with
//! quick-xml's writer, and a precondition's `DAV:error` body.
//!
//! Every element names its namespace itself: `D:` (declared once on the
//! root) for `DAV:`, `xmlns=""` for no namespace, and a prefix declared on
//! the element for any other; a dead property's value declares its own.

use super::{QName, Value, DAV};
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, Event};
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
    /// The server's own markup, written as it is: `lockdiscovery`'s
    /// activelocks, `supportedlock`'s lockentries.
    Markup(&'a str),
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
        // Written by hand into one buffer: a listing writes 10 000 of
        // these, and the names in them came from the parser (valid names)
        // or are the server's own.
        let mut s = String::with_capacity(256);
        s.push_str("<D:response><D:href>");
        escape_text(&mut s, href);
        s.push_str("</D:href>");
        for (status, props, error) in propstats {
            s.push_str("<D:propstat><D:prop>");
            for p in *props {
                property(&mut s, p);
            }
            s.push_str("</D:prop><D:status>");
            status_line(&mut s, *status);
            s.push_str("</D:status>");
            if let Some(name) = error {
                s.push_str("<D:error><D:");
                s.push_str(name);
                s.push_str("/></D:error>");
            }
            s.push_str("</D:propstat>");
        }
        s.push_str("</D:response>");
        self.out.extend_from_slice(s.as_bytes());
    }

    /// A `<D:response>` with `<D:href>` and `<D:status>` only: a member a
    /// `COPY`, `MOVE` or `DELETE` could not take.
    pub(crate) fn status(&mut self, href: &str, status: u16) {
        self.status_error(href, status, None);
    }

    /// As [`Multistatus::status`], with a precondition's element in a
    /// `<D:error>` when `error` is given (`Some("propfind-finite-depth")`).
    pub(crate) fn status_error(&mut self, href: &str, status: u16, error: Option<&str>) {
        match error {
            Some(name) => self.status_error_markup(href, status, &format!("<D:{name}/>")),
            None => self.status_with(href, status, None),
        }
    }

    /// As [`Multistatus::status`], with `error` (the server's own markup,
    /// written as it is) in a `<D:error>`: a member refused 423 with
    /// `<D:lock-token-submitted><D:href>…` (see `condition`).
    pub(crate) fn status_error_markup(&mut self, href: &str, status: u16, error: &str) {
        self.status_with(href, status, Some(error));
    }

    fn status_with(&mut self, href: &str, status: u16, error: Option<&str>) {
        let mut s = String::with_capacity(128);
        s.push_str("<D:response><D:href>");
        escape_text(&mut s, href);
        s.push_str("</D:href><D:status>");
        status_line(&mut s, status);
        s.push_str("</D:status>");
        if let Some(markup) = error {
            s.push_str("<D:error>");
            s.push_str(markup);
            s.push_str("</D:error>");
        }
        s.push_str("</D:response>");
        self.out.extend_from_slice(s.as_bytes());
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

/// A property element and its content: `D:` for `DAV:`, `xmlns=""` for
/// no namespace, a prefix declared on the element for any other.
fn property(s: &mut String, p: &Prop<'_>) {
    let local = p.name.local.as_str();
    let prefix = if p.name.ns == DAV {
        s.push_str("<D:");
        s.push_str(local);
        "D:"
    } else if p.name.ns.is_empty() {
        s.push('<');
        s.push_str(local);
        s.push_str(" xmlns=\"\"");
        ""
    } else {
        s.push_str("<p:");
        s.push_str(local);
        s.push_str(" xmlns:p=\"");
        escape_attr(s, &p.name.ns);
        s.push('"');
        "p:"
    };
    if let Content::Raw(Value(_, Some(lang))) = &p.content {
        s.push_str(" xml:lang=\"");
        escape_attr(s, lang);
        s.push('"');
    }
    match &p.content {
        Content::Empty => return s.push_str("/>"),
        Content::Text(t) => {
            s.push('>');
            escape_text(s, t);
        }
        Content::Collection => s.push_str("><D:collection/>"),
        Content::Raw(v) => {
            s.push('>');
            s.push_str(&v.0);
        }
        Content::Markup(m) => {
            s.push('>');
            s.push_str(m);
        }
    }
    s.push_str("</");
    s.push_str(prefix);
    s.push_str(local);
    s.push('>');
}

/// `HTTP/1.1 200 OK` and so on.
fn status_line(s: &mut String, status: u16) {
    let reason = match status {
        207 => "Multi-Status",
        424 => "Failed Dependency",
        502 => "Bad Gateway",
        s => crate::http::response::reason(s),
    };
    s.push_str("HTTP/1.1 ");
    s.push_str(&status.to_string());
    s.push(' ');
    s.push_str(reason);
}

fn end(w: &mut Writer<&mut Vec<u8>>, name: &str) {
    put(w, Event::End(BytesEnd::new(name)));
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
