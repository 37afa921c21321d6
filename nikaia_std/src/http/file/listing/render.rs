//! A listing's bytes: the HTML page or the JSON document, and its ETag,
//! made from the entries read (`read.rs`), never from the directory's own
//! mtime (which an in-place edit of a file in it does not change).

use super::ask::{Format, Order, Sort};
use super::read::Entry;
use crate::text::date::civil_from_days;
use crate::text::html::html_escape;
use crate::text::percent::percent_encode;
use crate::text::sha256::sha256;
use std::fmt::Write;
use std::sync::LazyLock;

/// The most bytes of one listing page; rows that would go past it are left
/// out and the page says it was truncated (`spec/files.md`, "Listings").
pub(crate) const MAX_PAGE: usize = 16 << 20;

/// Room kept below [`MAX_PAGE`] for the end of the page.
const TAIL: usize = 256;

/// What the page says besides its entries.
pub(crate) struct Page<'a> {
    /// The request's path (decoded), the page's title.
    pub path: &'a str,
    /// Whether to link the parent (`../`): not at the root of the tree.
    pub parent: bool,
    pub format: Format,
    pub sort: Sort,
    pub order: Order,
    /// What the HTML page offers for writes here (`spec/site.md`,
    /// "Writes").
    pub upload: Upload,
}

/// What a listing offers its reader for writes in the directory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Upload {
    /// Nothing: no one may create here on this listener.
    #[default]
    Off,
    /// The upload control: the reader may create here.
    Control,
    /// A link to sign in (`?sign-in`): a writer could, with credentials
    /// the reader has not shown.
    SignIn,
}

/// The page's bytes: `truncated` when the directory had more entries than
/// were read; rows past [`MAX_PAGE`] are left out too.
pub(crate) fn render(page: &Page<'_>, entries: &[Entry], truncated: bool) -> Vec<u8> {
    // Sized once for ordinary names (a row is about 110 bytes besides the
    // name, written twice: text and link).
    let guess: usize = entries.iter().map(|e| 2 * e.name.len() + 120).sum();
    let mut out = String::with_capacity((1024 + guess).min(MAX_PAGE));
    let mut cut = truncated;
    match page.format {
        Format::Html => {
            html_head(&mut out, page);
            for e in entries {
                let before = out.len();
                html_row(&mut out, e);
                if out.len() + TAIL > MAX_PAGE {
                    out.truncate(before);
                    cut = true;
                    break;
                }
            }
            out.push_str("</table>\n");
            if cut {
                out.push_str(
                    "<p>Truncated: this directory has more entries than one listing shows.</p>\n",
                );
            }
            match page.upload {
                Upload::Off => {}
                Upload::Control => {
                    out.push_str(CONTROL);
                    out.push_str("<script>");
                    out.push_str(SCRIPT);
                    out.push_str("</script>\n");
                }
                Upload::SignIn => out.push_str(SIGN_IN),
            }
        }
        Format::Json => {
            out.push_str("{\"path\":");
            json_string(&mut out, page.path);
            let parent = if page.parent { "\"../\"" } else { "null" };
            let _ = write!(
                out,
                ",\"parent\":{parent},\"sort\":\"{}\",\"order\":\"{}\",\"entries\":[",
                page.sort.token(),
                page.order.token()
            );
            for (i, e) in entries.iter().enumerate() {
                let before = out.len();
                if i > 0 {
                    out.push(',');
                }
                json_entry(&mut out, e);
                if out.len() + TAIL > MAX_PAGE {
                    out.truncate(before);
                    cut = true;
                    break;
                }
            }
            let _ = writeln!(out, "],\"truncated\":{cut}}}");
        }
    }
    out.into_bytes()
}

/// The upload control a writer's listing ends with, and its [`SCRIPT`]:
/// each file chosen is sent by `fetch` as a `PUT` of its bytes to its name
/// in this directory, created only (`If-None-Match: *`: an existing name is
/// refused, never overwritten from a browser); no multipart.
const CONTROL: &str = "<form id=\"upload\"><input type=\"file\" id=\"files\" multiple> \
<button>Upload</button> <output id=\"said\"></output></form>\n";

/// The control's script: the same text on every page (nothing of the
/// request or the directory is in it), so [`POLICY`] allows it by its hash.
const SCRIPT: &str = "
document.getElementById('upload').onsubmit = async (e) => {
  e.preventDefault();
  const said = document.getElementById('said');
  for (const f of document.getElementById('files').files) {
    said.value = 'Uploading ' + f.name + '...';
    const r = await fetch(encodeURIComponent(f.name), {method: 'PUT', body: f, headers: {'If-None-Match': '*'}});
    if (!r.ok) { said.value = f.name + ': ' + r.status + ' ' + r.statusText; return; }
  }
  location.reload();
};
";

/// The page's style, allowed by its hash as [`SCRIPT`] is.
const STYLE: &str = "th,td{padding:0 1.5em 0 0;text-align:left}.s{text-align:right}";

/// Where a writer could upload with credentials not shown: a link to this
/// listing's `?sign-in`, which asks for them (`spec/site.md`, "Writes").
const SIGN_IN: &str = "<p><a href=\"?sign-in\">Sign in to upload</a></p>\n";

/// The digests of the inline script and style, computed when the crate
/// is compiled from the very text the page embeds.
const SCRIPT_SHA256: [u8; 32] = sha256(SCRIPT.as_bytes());
const STYLE_SHA256: [u8; 32] = sha256(STYLE.as_bytes());

/// The `Content-Security-Policy` of every HTML listing (`spec/files.md`,
/// "Listings"): nothing but its own script and style, by their hashes (no
/// other inline script, no event handler attribute, nothing from another
/// origin), `fetch` and forms to its own origin only, no `<base>`.
pub(crate) static POLICY: LazyLock<String> = LazyLock::new(|| {
    use crate::text::base64::standard;
    format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; \
         connect-src 'self'; form-action 'self'; base-uri 'none'",
        standard(&SCRIPT_SHA256),
        standard(&STYLE_SHA256)
    )
});

fn html_head(out: &mut String, page: &Page<'_>) {
    let title = html_escape(page.path);
    let _ = write!(
        out,
        "<!doctype html>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width\">\n\
         <title>Index of {title}</title>\n<style>{STYLE}</style>\n\
         <h1>Index of {title}</h1>\n<table>\n<tr>"
    );
    for (sort, label, class) in [
        (Sort::Name, "Name", ""),
        (Sort::Size, "Size", " class=\"s\""),
        (Sort::Mtime, "Modified (UTC)", ""),
    ] {
        let current = sort == page.sort;
        // The column sorted by links to the other order; the others to asc.
        let order = if current && page.order == Order::Asc {
            Order::Desc
        } else {
            Order::Asc
        };
        let mark = match (current, page.order) {
            (false, _) => "",
            (true, Order::Asc) => " ▲",
            (true, Order::Desc) => " ▼",
        };
        let _ = write!(
            out,
            "<th{class}><a href=\"?sort={}&amp;order={}\">{label}</a>{mark}",
            sort.token(),
            order.token()
        );
    }
    out.push_str("</tr>\n");
    if page.parent {
        out.push_str("<tr><td><a href=\"../\">../</a><td><td></tr>\n");
    }
}

fn html_row(out: &mut String, e: &Entry) {
    let href = href(e);
    let name = html_escape(&e.name.to_string_lossy());
    let slash = if e.dir { "/" } else { "" };
    let _ = write!(out, "<tr><td><a href=\"{href}\">{name}{slash}</a>");
    if e.dir {
        out.push_str("<td class=\"s\">-");
    } else {
        let _ = write!(
            out,
            "<td class=\"s\" title=\"{} bytes\">{}",
            e.size,
            human(e.size)
        );
    }
    let (date, time) = utc(e.mtime_ns);
    let _ = writeln!(out, "<td>{date} {time}</tr>");
}

fn json_entry(out: &mut String, e: &Entry) {
    out.push_str("{\"name\":");
    json_string(out, &e.name.to_string_lossy());
    let _ = write!(out, ",\"href\":\"{}\",\"dir\":{}", href(e), e.dir);
    if e.dir {
        out.push_str(",\"size\":null");
    } else {
        let _ = write!(out, ",\"size\":{}", e.size);
    }
    let (date, time) = utc(e.mtime_ns);
    let _ = write!(
        out,
        ",\"mtime\":\"{date}T{time}Z\",\"mtime_ns\":{}}}",
        e.mtime_ns
    );
}

/// The entry's link, relative to the listing: its name's bytes
/// percent-encoded (all but letters, digits and `-._~`), so `%`, `#`, `?`,
/// a newline or a byte that is not UTF-8 open that very name; a
/// directory's ends in `/`. Safe as is in HTML attributes and JSON.
fn href(e: &Entry) -> String {
    let mut href = percent_encode(e.name.as_encoded_bytes(), b"-._~");
    if e.dir {
        href.push('/');
    }
    href
}

/// `4.0 KiB`: bytes below 1 KiB, else one decimal of the largest binary
/// unit that is at least 1.
pub(crate) fn human(size: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if size < 1024 {
        return format!("{size} B");
    }
    let mut value = size as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A time in nanoseconds since the epoch as UTC `YYYY-MM-DD` and `HH:MM:SS`.
fn utc(ns: i64) -> (String, String) {
    let secs = ns.div_euclid(1_000_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    (
        format!("{y:04}-{m:02}-{d:02}"),
        format!("{:02}:{:02}:{:02}", rem / 3600, rem / 60 % 60, rem % 60),
    )
}

/// `s` as a JSON string: `"` and `\` escaped, control characters as
/// `\n`, `\t` or `\u00XX`.
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The listing's strong ETag: a 64-bit FNV-1a hash of everything the
/// page is made from (the layout's version, the format, the sort and
/// order, the path, the parent link, whether entries were left unread, and
/// each entry: name bytes, directory flag, size, mtime in ns). [`render`]
/// makes the same bytes from the same input, so two listings with
/// different bytes differ here; it is computed before rendering, so a 304
/// renders nothing.
pub(crate) fn etag(page: &Page<'_>, entries: &[Entry], truncated: bool) -> String {
    let mut h = Fnv::default();
    // The version of this page's layout: bump it when the bytes change.
    h.bytes(b"nikaia-listing-2");
    h.bytes(match page.format {
        Format::Html => b"h",
        Format::Json => b"j",
    });
    h.bytes(page.sort.token().as_bytes());
    h.bytes(page.order.token().as_bytes());
    h.bytes(page.path.as_bytes());
    let upload: u64 = match page.upload {
        Upload::Off => 0,
        Upload::Control => 1,
        Upload::SignIn => 2,
    };
    h.word(upload << 2 | u64::from(page.parent) << 1 | u64::from(truncated));
    for e in entries {
        let name = e.name.as_encoded_bytes();
        h.word(name.len() as u64);
        h.bytes(name);
        h.word(u64::from(e.dir));
        h.word(e.size);
        h.word(e.mtime_ns as u64);
    }
    format!("\"l{:016x}\"", h.0)
}

/// FNV-1a, 64 bits (no hash of this kind is in the dependency tree; it is
/// a few lines and fast enough: a listing's fields are a few MB at most).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn word(&mut self, w: u64) {
        self.bytes(&w.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_times_for_people() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(1023), "1023 B");
        assert_eq!(human(4096), "4.0 KiB");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(5 << 20), "5.0 MiB");
        assert_eq!(human(u64::MAX), "16.0 EiB");
        assert_eq!(utc(0), ("1970-01-01".into(), "00:00:00".into()));
        assert_eq!(
            utc(1_764_622_851_500_000_000),
            ("2025-12-01".into(), "21:00:51".into())
        );
        assert_eq!(utc(-1), ("1969-12-31".into(), "23:59:59".into()));
    }

    #[test]
    fn json_strings_escape_what_json_must() {
        let mut s = String::new();
        json_string(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, r#""a\"b\\c\nd\u0001é""#);
    }

    #[test]
    fn a_page_stops_at_its_byte_cap_and_says_so() {
        let long = "%".repeat(255);
        let entries: Vec<Entry> = (0..20_000)
            .map(|i| Entry {
                name: format!("{i:05}{}", &long[5..]).into(),
                dir: false,
                size: i,
                mtime_ns: 0,
            })
            .collect();
        for format in [Format::Html, Format::Json] {
            let page = Page {
                path: "/",
                parent: false,
                format,
                sort: Sort::Name,
                order: Order::Asc,
                upload: Upload::Off,
            };
            let out = String::from_utf8(render(&page, &entries, false)).unwrap();
            assert!(out.len() <= MAX_PAGE && out.len() > MAX_PAGE - 4096);
            match format {
                Format::Html => assert!(out.ends_with("</table>\n<p>Truncated: this directory has more entries than one listing shows.</p>\n")),
                Format::Json => assert!(out.ends_with("}],\"truncated\":true}\n"), "{}", &out[out.len() - 100..]),
            }
        }
        // Below the cap: all of them, not truncated.
        let page = Page {
            path: "/",
            parent: false,
            format: Format::Json,
            sort: Sort::Name,
            order: Order::Asc,
            upload: Upload::Off,
        };
        let out = String::from_utf8(render(&page, &entries[..100], false)).unwrap();
        assert!(out.ends_with("],\"truncated\":false}\n"));
        assert_eq!(out.matches("\"href\":").count(), 100);
    }

    /// The text of each `<tag>…</tag>` element of `page`.
    fn elements<'p>(page: &'p str, tag: &str) -> Vec<&'p str> {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        let mut rest = page;
        let mut out = Vec::new();
        while let Some(at) = rest.find(&open) {
            let from = &rest[at + open.len()..];
            let end = from.find(&close).unwrap();
            out.push(&from[..end]);
            rest = &from[end..];
        }
        out
    }

    /// The policy names the hash of every script and style a rendered page
    /// has, recomputed here from the page's bytes by the crypto library
    /// (never a string kept by hand beside them), whatever the path holds;
    /// and the page has nothing else inline the policy would have to allow.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_policy_allows_exactly_the_pages_own_script_and_style() {
        use aws_lc_rs::digest::{digest, SHA256};
        let hash = |text: &str| {
            let digest = digest(&SHA256, text.as_bytes());
            format!(
                "'sha256-{}'",
                crate::text::base64::standard(digest.as_ref())
            )
        };
        let policy: Vec<&str> = POLICY.split("; ").collect();
        let entries = [Entry {
            name: "<script>alert(1)</script>\" onclick=\"x".into(),
            dir: false,
            size: 1,
            mtime_ns: 0,
        }];
        for upload in [Upload::Off, Upload::Control, Upload::SignIn] {
            for path in ["/drop/", "/q\"<b>'&</style></script>/"] {
                let page = Page {
                    path,
                    parent: true,
                    format: Format::Html,
                    sort: Sort::Name,
                    order: Order::Asc,
                    upload,
                };
                let out = String::from_utf8(render(&page, &entries, false)).unwrap();
                let scripts = elements(&out, "script");
                let scripts_len = usize::from(upload == Upload::Control);
                assert_eq!(scripts.len(), scripts_len);
                for script in scripts {
                    assert!(policy.contains(&format!("script-src {}", hash(script)).as_str()));
                }
                let styles = elements(&out, "style");
                assert_eq!(styles.len(), 1);
                assert!(policy.contains(&format!("style-src {}", hash(styles[0])).as_str()));
                // Nothing else inline: no other script or style element,
                // no tag with a handler or a style attribute, no other
                // origin.
                assert_eq!(out.matches("<script").count(), scripts_len);
                assert_eq!(out.matches("<style").count(), 1);
                for tag in out.split('<').skip(1) {
                    let tag = &tag[..tag.find('>').unwrap()];
                    assert!(!tag.contains(" on") && !tag.contains("style="), "<{tag}>");
                }
                assert!(!out.contains("//"), "no other origin: {out}");
            }
        }
        assert_eq!(policy[0], "default-src 'none'");
        for directive in [
            "connect-src 'self'",
            "form-action 'self'",
            "base-uri 'none'",
        ] {
            assert!(policy.contains(&directive), "{directive}");
        }
    }

    #[test]
    fn the_etag_follows_the_entries_and_the_form() {
        let page = |format, sort, order| Page {
            path: "/d/",
            parent: true,
            format,
            sort,
            order,
            upload: Upload::Off,
        };
        let one = |size| Entry {
            name: "a".into(),
            dir: false,
            size,
            mtime_ns: 7,
        };
        let p = page(Format::Html, Sort::Name, Order::Asc);
        let a = etag(&p, &[one(1)], false);
        // What the page offers for writes is in its bytes: in its tag too.
        let offers = [Upload::Control, Upload::SignIn].map(|upload| {
            let p = Page {
                upload,
                ..page(Format::Html, Sort::Name, Order::Asc)
            };
            etag(&p, &[one(1)], false)
        });
        assert!(offers[0] != a && offers[1] != a && offers[0] != offers[1]);
        assert_eq!(a, etag(&p, &[one(1)], false));
        assert_ne!(a, etag(&p, &[one(2)], false));
        assert_ne!(a, etag(&p, &[one(1)], true));
        for other in [
            page(Format::Json, Sort::Name, Order::Asc),
            page(Format::Html, Sort::Size, Order::Asc),
            page(Format::Html, Sort::Name, Order::Desc),
        ] {
            assert_ne!(a, etag(&other, &[one(1)], false));
        }
    }
}
