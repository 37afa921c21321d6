//! Which missing names the runtime's `fallback` answers (`fallback-for`,
//! `spec/files.md`): under `"navigations"`, a browser's navigation to a
//! route of a single-page app gets the app, and a missing asset stays 404.

use crate::http::coding::element;
use crate::http::request::Request;
use crate::rt::FallbackFor;

/// How the fallback rule decided for a GET or HEAD of a missing name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    /// The fallback answers.
    pub fall_back: bool,
    /// The request's `Accept` decided it (the name has an extension), so
    /// the answer, either way, carries `Vary: Accept`.
    pub by_accept: bool,
}

/// Under `"all"`, every missing name falls back. Under `"navigations"`, a
/// name whose last segment has no extension (`/users/42`, `/about`, a
/// directory's `/docs/`) falls back whatever it accepts; one with an
/// extension (`app.3f2a.js`, `logo.png`, `/v1.2`) only when `Accept`
/// names `text/html` itself with q > 0, as a browser's navigation does
/// and a script's fetch or an `<img>` does not.
pub(crate) fn decide(req: &Request, rule: FallbackFor) -> Decision {
    if rule == FallbackFor::All || !has_extension(req.path_bytes()) {
        return Decision {
            fall_back: true,
            by_accept: false,
        };
    }
    Decision {
        fall_back: names_html(req),
        by_accept: true,
    }
}

/// Whether the last segment of a path has a `.` after its first byte.
fn has_extension(path: &[u8]) -> bool {
    let last = path.rsplit(|&b| b == b'/').next().unwrap_or_default();
    last.iter().skip(1).any(|&b| b == b'.')
}

/// Whether some `Accept` line names `text/html` (not only through `*/*` or
/// `text/*`) with a weight above 0.
fn names_html(req: &Request) -> bool {
    req.headers()
        .filter(|(name, _)| name.eq_ignore_ascii_case("accept"))
        .flat_map(|(_, value)| std::str::from_utf8(value).unwrap_or("").split(','))
        .filter_map(element)
        .any(|(range, weight)| range.eq_ignore_ascii_case("text/html") && weight > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(path: &str, accept: Option<&str>, rule: FallbackFor) -> (bool, bool) {
        let mut head = format!("GET {path} HTTP/1.1\r\nHost: t\r\n");
        if let Some(a) = accept {
            head.push_str(&format!("Accept: {a}\r\n"));
        }
        head.push_str("\r\n");
        let req = crate::http::h1::parse::test_request(&head);
        let d = decide(&req, rule);
        (d.fall_back, d.by_accept)
    }

    #[test]
    fn navigations_get_the_app_and_assets_stay_missing() {
        use FallbackFor::{All, Navigations as N};
        let browser = Some("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8");
        let img = Some("image/avif,image/webp,image/apng,image/*,*/*;q=0.8");
        // No extension: a route, whatever is accepted.
        assert_eq!(ask("/users/42", None, N), (true, false));
        assert_eq!(ask("/about", Some("*/*"), N), (true, false));
        assert_eq!(ask("/docs/", img, N), (true, false));
        assert_eq!(ask("/", None, N), (true, false));
        assert_eq!(ask("/.well-known", None, N), (true, false));
        // An extension: Accept decides, and says so.
        assert_eq!(ask("/assets/app.3f2a.js", Some("*/*"), N), (false, true));
        assert_eq!(ask("/logo.png", img, N), (false, true));
        assert_eq!(
            ask("/style.css", Some("text/css,*/*;q=0.1"), N),
            (false, true)
        );
        assert_eq!(ask("/app.js", None, N), (false, true));
        assert_eq!(ask("/v1.2", browser, N), (true, true));
        assert_eq!(ask("/page.html", Some("TEXT/HTML"), N), (true, true));
        assert_eq!(ask("/x.js", Some("text/html;q=0"), N), (false, true));
        assert_eq!(ask("/x.js", Some("text/*"), N), (false, true));
        assert_eq!(ask("/a.b/c", None, N), (true, false));
        // `all`: every missing name.
        assert_eq!(ask("/app.js", Some("*/*"), All), (true, false));
    }
}
