//! The directory handler's one name for a request (`spec/site.md`, "One
//! name for every rule"): what every rule matches and what is opened.

/// The name under the served directory for a route's tail (already
/// percent-decoded once): empty segments merged, a trailing `/` kept;
/// `None` when a segment is `.` or `..`.
pub(crate) fn normalise(tail: &str) -> Option<String> {
    let mut name = String::with_capacity(tail.len());
    for segment in tail.split('/').filter(|s| !s.is_empty()) {
        if segment == "." || segment == ".." {
            return None;
        }
        if !name.is_empty() {
            name.push('/');
        }
        name.push_str(segment);
    }
    if tail.ends_with('/') && !name.is_empty() {
        name.push('/');
    }
    Some(name)
}

/// The names a deny or auth rule is matched against for a request of
/// `name`: the name without its trailing `/`, the index inside a
/// directory, and the name without a coding's extension (a sidecar asked
/// for by name).
pub(crate) fn candidates<'a>(name: &'a str, index: Option<&str>) -> Vec<std::borrow::Cow<'a, str>> {
    use std::borrow::Cow;
    let bare = name.strip_suffix('/').unwrap_or(name);
    let mut out = vec![Cow::Borrowed(bare)];
    if let Some(index) = index.filter(|_| name.is_empty() || name.ends_with('/')) {
        out.push(Cow::Owned(format!("{name}{index}")));
    }
    for ext in [".br", ".zst", ".gz"] {
        if let Some(original) = bare.strip_suffix(ext).filter(|o| !o.is_empty()) {
            out.push(Cow::Borrowed(original));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_segments_merge_and_dot_segments_refuse() {
        for (tail, name) in [
            ("", ""),
            ("a.txt", "a.txt"),
            ("/a.txt", "a.txt"),
            ("//a.txt", "a.txt"),
            ("docs//x.html", "docs/x.html"),
            ("docs/", "docs/"),
            ("docs//", "docs/"),
            ("/", ""),
            ("a..b/.c", "a..b/.c"),
        ] {
            assert_eq!(normalise(tail).as_deref(), Some(name), "{tail:?}");
        }
        for tail in ["..", "a/../b", "./a", "a/.", "a/./b", "a/..", "//../x"] {
            assert_eq!(normalise(tail), None, "{tail:?}");
        }
    }

    #[test]
    fn rules_see_the_index_and_the_sidecars_original() {
        let names = |n, i| {
            candidates(n, i)
                .into_iter()
                .map(|c| c.into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names("staging/", Some("index.html")),
            ["staging", "staging/index.html"]
        );
        assert_eq!(names("", Some("index.html")), ["", "index.html"]);
        assert_eq!(
            names("secret.txt.gz", Some("index.html")),
            ["secret.txt.gz", "secret.txt"]
        );
        assert_eq!(names("a.br", None), ["a.br", "a"]);
        assert_eq!(names(".gz", None), [".gz"]);
    }
}
