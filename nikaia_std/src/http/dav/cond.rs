//! The request headers of WebDAV class 2 (RFC 4918): `If` (§10.4), parsed
//! and evaluated; `Timeout` (§10.7); `Lock-Token` (§10.5). Protocol only:
//! bytes in, values out. What a tag names, what a resource's entity-tag is
//! and which locks cover it are the caller's (`State`).
//!
//! Choices where the RFC leaves room or implementations differ:
//! - `Not` is matched without regard to case. RFC 4918 writes its grammar
//!   in RFC 2616's notation (§1.3), where a quoted literal is
//!   case-insensitive unless said otherwise (RFC 2616 §2.1), and nothing
//!   else can start a condition with `n`/`N`. Apache (`dav_process_if_header`)
//!   and Go's x/net/webdav (`if.go`, `lex`) only know `Not`; clients send
//!   `Not`, so the difference only decides between 400 and a meaning.
//! - A token under `Not` submits nothing (`If::submitted`). §10.4.1 says
//!   every state token in the header is submitted; but `Not <t>` asserts
//!   that `t` is *not* a lock of the resource, and a client that holds the
//!   lock has no use for that. Counting it would let a header like
//!   `(Not <t>) (Not <DAV:no-lock>)` — true whatever `t` is — unlock a
//!   resource for anyone who merely read `t` in a `lockdiscovery`.
//! - A `Timeout` of `Second-0` grants 1 second: §10.7 allows it, but a
//!   lock of 0 s would be gone before the answer reached the client, which
//!   asked for the shortest lock, not for none.

/// Why a header is refused (400).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Bad(pub &'static str);

/// An `If:` header (RFC 4918 §10.4), parsed whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct If {
    pub lists: Vec<List>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct List {
    /// The Resource-Tag in force for this list (the text between < and >,
    /// as sent: an absolute URI or an absolute path, maybe
    /// percent-encoded); None in a No-tag-list (it is about the
    /// Request-URI).
    pub tag: Option<String>,
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Condition {
    pub not: bool,
    pub test: Test,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Test {
    /// The Coded-URL's URI, without `<>`.
    Token(String),
    /// The entity-tag as sent, e.g. `"abc"` or `W/"abc"`, with quotes.
    ETag(String),
}

/// What a list's resource is now, for evaluation.
pub(crate) struct State<'s> {
    /// Its ETag (strong, with quotes) if it is a file that exists; None if
    /// nothing is mapped there or it has none.
    pub etag: Option<String>,
    /// Whether `token` names a lock whose scope covers the resource (any
    /// user's lock).
    pub locked_by: Box<dyn Fn(&str) -> bool + 's>,
}

/// The longest `If` value taken, in bytes.
pub(crate) const MAX_LEN: usize = 8 * 1024;
/// The most lists in one `If` value.
pub(crate) const MAX_LISTS: usize = 64;
/// The most conditions in one list.
pub(crate) const MAX_CONDITIONS: usize = 64;

/// The state token no lock ever has (§10.4.8).
const NO_LOCK: &str = "DAV:no-lock";

/// Parses the header's value (the bytes after "If:"; several If headers in
/// one request are refused by the caller).
///
/// LWS (spaces, tabs) may stand between lists, tags, conditions and `Not`,
/// and inside a list's parentheses; none inside `<…>` or `[…]`. Refused:
/// an empty value; a list with no condition; tagged and untagged lists
/// mixed; a tag with no list after it; a tag that is neither an absolute
/// URI nor an absolute path; a Coded-URL that is not an absolute URI (a
/// scheme `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`, then URI
/// characters); an entity-tag that is not one (RFC 9110 §8.8.3, but
/// spaces inside the quotes are taken: `is_entity_tag`) or has LWS around
/// it inside its brackets; unbalanced brackets; `Not` twice;
/// anything else (control characters, stray bytes). Bounds: at most
/// `MAX_LEN` (8 KiB) of value, `MAX_LISTS` (64) lists and `MAX_CONDITIONS`
/// (64) conditions per list.
pub(crate) fn parse(value: &[u8]) -> Result<If, Bad> {
    if value.len() > MAX_LEN {
        return Err(Bad("If: the value is longer than 8 KiB"));
    }
    let mut p = Parser { s: value, i: 0 };
    p.lws();
    let tagged = match p.peek() {
        Some(b'(') => false,
        Some(b'<') => true,
        None => return Err(Bad("If: empty")),
        Some(_) => return Err(Bad("If: a list or a tag must come first")),
    };
    let mut lists: Vec<List> = Vec::new();
    let mut tag: Option<String> = None;
    let mut tag_has_list = true;
    loop {
        p.lws();
        match p.peek() {
            None => break,
            Some(b'<') => {
                if !tagged {
                    return Err(Bad("If: tagged and untagged lists mixed"));
                }
                if !tag_has_list {
                    return Err(Bad("If: a tag with no list"));
                }
                tag = Some(p.resource_tag()?);
                tag_has_list = false;
            }
            Some(b'(') => {
                if lists.len() == MAX_LISTS {
                    return Err(Bad("If: more than 64 lists"));
                }
                let conditions = p.list()?;
                lists.push(List {
                    tag: tag.clone(),
                    conditions,
                });
                tag_has_list = true;
            }
            Some(b')') => return Err(Bad("If: a \")\" with no \"(\"")),
            Some(_) => return Err(Bad("If: stray characters between lists")),
        }
    }
    if !tag_has_list {
        return Err(Bad("If: a tag with no list"));
    }
    Ok(If { lists })
}

impl If {
    /// The lock tokens the header submits (RFC 4918 §10.4.1: submitted
    /// wherever they appear, whether or not their list is true), except
    /// those under `Not` (a negated token submits nothing: see the module's
    /// comment), and never `DAV:no-lock`. In order of appearance, each once.
    pub(crate) fn submitted(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for c in self.lists.iter().flat_map(|l| &l.conditions) {
            if let (false, Test::Token(t)) = (c.not, &c.test) {
                if t != NO_LOCK && !out.contains(&t.as_str()) {
                    out.push(t);
                }
            }
        }
        out
    }

    /// Whether the header is true: some list all of whose conditions hold.
    /// `about(tag)` gives the state of the list's resource (tag None = the
    /// Request-URI); None when the tag names nothing on this server
    /// (another host, a bad URI): such a list is false. `about` is called
    /// once per list, in order, until a list holds.
    ///
    /// `DAV:no-lock` is a token no lock has (so `(<DAV:no-lock>)` is false
    /// and `(Not <DAV:no-lock>)` true). ETags compare weakly (§10.4.4
    /// allows it): `W/` is dropped from both and the opaque tags compared.
    /// An unmapped resource has no etag and no locks (§10.4.11: `(["x"])`
    /// false, `(Not ["x"])` true).
    pub(crate) fn holds<'s>(
        &self,
        about: &mut dyn FnMut(Option<&str>) -> Option<State<'s>>,
    ) -> bool {
        self.lists.iter().any(|list| {
            let Some(state) = about(list.tag.as_deref()) else {
                return false;
            };
            list.conditions.iter().all(|c| {
                let matched = match &c.test {
                    Test::Token(t) => t != NO_LOCK && (state.locked_by)(t),
                    Test::ETag(e) => state.etag.as_deref().is_some_and(|cur| weak_eq(e, cur)),
                };
                matched != c.not
            })
        })
    }
}

/// RFC 9110 §8.8.3.2 weak comparison: the opaque tags match, `W/` or not.
fn weak_eq(a: &str, b: &str) -> bool {
    a.strip_prefix("W/").unwrap_or(a) == b.strip_prefix("W/").unwrap_or(b)
}

/// A `Timeout` header (§10.7: `1#TimeType`, TimeType = "Second-" 1*DIGIT /
/// "Infinite", no LWS inside one), as seconds granted: the first TimeType
/// understood, capped at `max`. `Infinite`, a value past 2^32-1 (§10.7:
/// MUST NOT be greater), or no understood value at all (absent, garbage)
/// gives `max`; `Second-0` gives 1 (see the module's comment). Never
/// fails: the timeout is only the client's wish (§6.6, the server
/// chooses), so a bad one is no reason to refuse a LOCK — Apache grants
/// such a LOCK too. Both words are matched without regard to case.
pub(crate) fn timeout(value: Option<&[u8]>, max: u64) -> u64 {
    let Some(value) = value else {
        return max;
    };
    for item in value.split(|&b| b == b',') {
        let item = trim_lws(item);
        if item.eq_ignore_ascii_case(b"Infinite") {
            return max;
        }
        let Some(digits) = strip_prefix_ci(item, b"Second-") else {
            continue;
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            continue;
        }
        let mut n: u64 = 0;
        for &d in digits {
            n = n.saturating_mul(10).saturating_add(u64::from(d - b'0'));
        }
        if n > u64::from(u32::MAX) {
            return max;
        }
        return n.max(1).min(max);
    }
    max
}

/// A `Lock-Token` header's Coded-URL (`<urn:uuid:...>`, LWS around
/// allowed): the URI inside, or None if it is not one.
pub(crate) fn lock_token(value: &[u8]) -> Option<&str> {
    let inner = trim_lws(value).strip_prefix(b"<")?.strip_suffix(b">")?;
    if !is_absolute_uri(inner) {
        return None;
    }
    std::str::from_utf8(inner).ok()
}

fn trim_lws(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

fn strip_prefix_ci<'v>(s: &'v [u8], prefix: &[u8]) -> Option<&'v [u8]> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// A URI character (RFC 3986: unreserved, reserved, `%`): visible ASCII
/// but `"`, `<`, `>`, `\`, `^`, `` ` ``, `{`, `|`, `}`.
fn is_uri_char(b: u8) -> bool {
    matches!(b, 0x21..=0x7e) && !b"\"<>\\^`{|}".contains(&b)
}

/// `scheme ":" rest`, all of it URI characters.
fn is_absolute_uri(s: &[u8]) -> bool {
    has_scheme(s) && s.iter().copied().all(is_uri_char)
}

/// Starts with `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`.
fn has_scheme(s: &[u8]) -> bool {
    let Some(colon) = s.iter().position(|&b| b == b':') else {
        return false;
    };
    let scheme = &s[..colon];
    scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

struct Parser<'v> {
    s: &'v [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn lws(&mut self) {
        while let Some(b' ' | b'\t') = self.peek() {
            self.i += 1;
        }
    }

    /// The bytes up to `close` (not included), which is then passed; None
    /// if it never comes.
    fn until(&mut self, close: u8) -> Option<&[u8]> {
        let rest = &self.s[self.i..];
        let n = rest.iter().position(|&b| b == close)?;
        self.i += n + 1;
        Some(&rest[..n])
    }

    /// `"<" Simple-ref ">"`, at a `<`.
    fn resource_tag(&mut self) -> Result<String, Bad> {
        self.i += 1;
        let Some(tag) = self.until(b'>') else {
            return Err(Bad("If: a tag with no \">\""));
        };
        if tag.iter().any(|&b| matches!(b, b' ' | b'\t')) {
            return Err(Bad("If: a tag with spaces in it"));
        }
        // Lenient on the characters (a client may send a path raw, or
        // characters RFC 3986 wants escaped): an unknown tag only makes its
        // list false. UTF-8, no controls, no `<`.
        let Ok(tag) = std::str::from_utf8(tag) else {
            return Err(Bad("If: a tag that is not UTF-8"));
        };
        let clean = tag
            .bytes()
            .all(|b| b >= 0x80 || (0x21..=0x7e).contains(&b) && b != b'<');
        if !clean || !(tag.starts_with('/') || has_scheme(tag.as_bytes())) {
            return Err(Bad("If: a tag that is neither an absolute URI nor a path"));
        }
        Ok(tag.to_owned())
    }

    /// `"(" 1*Condition ")"`, at a `(`.
    fn list(&mut self) -> Result<Vec<Condition>, Bad> {
        self.i += 1;
        let mut conditions = Vec::new();
        loop {
            self.lws();
            match self.peek() {
                None => return Err(Bad("If: a list with no \")\"")),
                Some(b')') => {
                    self.i += 1;
                    if conditions.is_empty() {
                        return Err(Bad("If: a list with no condition"));
                    }
                    return Ok(conditions);
                }
                Some(_) => {
                    if conditions.len() == MAX_CONDITIONS {
                        return Err(Bad("If: more than 64 conditions in a list"));
                    }
                    conditions.push(self.condition()?);
                }
            }
        }
    }

    /// `["Not"] (Coded-URL / "[" entity-tag "]")`.
    fn condition(&mut self) -> Result<Condition, Bad> {
        let not = strip_prefix_ci(&self.s[self.i..], b"Not").is_some();
        if not {
            self.i += 3;
            self.lws();
        }
        let test = match self.peek() {
            Some(b'<') => {
                self.i += 1;
                let Some(uri) = self.until(b'>') else {
                    return Err(Bad("If: a state token with no \">\""));
                };
                if !is_absolute_uri(uri) {
                    return Err(Bad("If: a state token that is not an absolute URI"));
                }
                // All ASCII: checked above.
                Test::Token(String::from_utf8_lossy(uri).into_owned())
            }
            Some(b'[') => {
                self.i += 1;
                let Some(etag) = self.until(b']') else {
                    return Err(Bad("If: an entity-tag with no \"]\""));
                };
                if !is_entity_tag(etag) {
                    return Err(Bad("If: an entity-tag that is not one"));
                }
                let Ok(etag) = std::str::from_utf8(etag) else {
                    return Err(Bad("If: an entity-tag that is not UTF-8"));
                };
                Test::ETag(etag.to_owned())
            }
            _ if not => return Err(Bad("If: \"Not\" not followed by a condition")),
            _ => return Err(Bad("If: a condition that is neither <token> nor [etag]")),
        };
        Ok(Condition { not, test })
    }
}

/// RFC 9110 §8.8.3: `[ "W/" ] DQUOTE *etagc DQUOTE`, etagc = %x21 /
/// %x23-7E / obs-text; and spaces and tabs inside the quotes, which RFC
/// 2616's `quoted-string` allowed (RFC 4918 cites it, and its own examples
/// use `["I am an ETag"]`). Such a tag never matches one of ours.
fn is_entity_tag(s: &[u8]) -> bool {
    let s = s.strip_prefix(b"W/").unwrap_or(s);
    match s {
        [b'"', inner @ .., b'"'] => inner
            .iter()
            .all(|&b| matches!(b, b' ' | b'\t' | 0x21 | 0x23..=0x7e | 0x80..)),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
