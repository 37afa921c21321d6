//! What a listing request asks for: the format (`?format=`, else
//! `Accept`), the sort key and the order (`?sort=`, `?order=`). Nothing a
//! client sends here is an error: an unknown value is the default.

use crate::http::coding::element;
use crate::http::request::Request;

/// The listing's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Html,
    Json,
}

/// The sort key (directories always come first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sort {
    Name,
    Size,
    Mtime,
}

/// Ascending or descending by the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    Asc,
    Desc,
}

impl Sort {
    pub(crate) fn token(self) -> &'static str {
        match self {
            Sort::Name => "name",
            Sort::Size => "size",
            Sort::Mtime => "mtime",
        }
    }
}

impl Order {
    pub(crate) fn token(self) -> &'static str {
        match self {
            Order::Asc => "asc",
            Order::Desc => "desc",
        }
    }
}

/// The format, sort and order `req` asks for.
pub(crate) fn asked(req: &Request) -> (Format, Sort, Order) {
    let (mut format, mut sort, mut order) = (None, Sort::Name, Order::Asc);
    for pair in req.query().unwrap_or("").split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match (key, value) {
            ("format", "json") => format = Some(Format::Json),
            ("format", "html") => format = Some(Format::Html),
            ("sort", "name") => sort = Sort::Name,
            ("sort", "size") => sort = Sort::Size,
            ("sort", "mtime") => sort = Sort::Mtime,
            ("order", "asc") => order = Order::Asc,
            ("order", "desc") => order = Order::Desc,
            _ => {}
        }
    }
    let accept = req
        .headers()
        .filter(|(n, _)| n.eq_ignore_ascii_case("accept"))
        .filter_map(|(_, v)| std::str::from_utf8(v).ok());
    let format = format.unwrap_or_else(|| negotiate(accept));
    (format, sort, order)
}

/// JSON when `Accept` gives `application/json` a higher weight than
/// `text/html`, or the same weight by a more specific range (an explicit
/// `application/json` beside `*/*`); HTML otherwise (no `Accept` at all, a
/// browser's list, a tie).
fn negotiate<'a>(lines: impl Iterator<Item = &'a str>) -> Format {
    // (q in thousandths, specificity) of the best range matching each.
    let (mut json, mut html) = ((0u16, 0u8), (0u16, 0u8));
    let mut any = false;
    for (media, q) in lines.flat_map(|l| l.split(',')).filter_map(element) {
        any = true;
        let (ty, sub) = media.split_once('/').unwrap_or((media, ""));
        for (want, best) in [
            (("application", "json"), &mut json),
            (("text", "html"), &mut html),
        ] {
            let spec = if ty.eq_ignore_ascii_case(want.0) && sub.eq_ignore_ascii_case(want.1) {
                3
            } else if ty.eq_ignore_ascii_case(want.0) && sub == "*" {
                2
            } else if ty == "*" && sub == "*" {
                1
            } else {
                continue;
            };
            // RFC 9110 §12.5.1: the most specific range decides the weight.
            if spec > best.1 {
                *best = (q, spec);
            }
        }
    }
    if !any {
        return Format::Html;
    }
    if json.0 > 0 && (json.0, json.1) > (html.0, html.1) {
        Format::Json
    } else {
        Format::Html
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(accept: &str) -> Format {
        negotiate(std::iter::once(accept))
    }

    #[test]
    fn accept_is_weighed() {
        assert_eq!(negotiate(std::iter::empty()), Format::Html);
        assert_eq!(n("application/json"), Format::Json);
        assert_eq!(n("application/*"), Format::Json);
        assert_eq!(n("application/json, text/plain, */*"), Format::Json);
        assert_eq!(n("*/*"), Format::Html);
        assert_eq!(
            n("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
            Format::Html
        );
        assert_eq!(n("text/html;q=0.5, application/json"), Format::Json);
        assert_eq!(n("text/html, application/json;q=0.9"), Format::Html);
        assert_eq!(n("application/json;q=0"), Format::Html);
        assert_eq!(n("application/json;q=0.5x"), Format::Html);
        assert_eq!(n("APPLICATION/JSON ; Q=1.0"), Format::Json);
        assert_eq!(n("text/plain"), Format::Html);
        assert_eq!(n("*/*;q=0.1, application/json;q=0.2"), Format::Json);
    }
}
