//! The directory handler's one name for a request (`spec/site.md`, "One
//! name for every rule"): what every rule matches and what is opened.

/// The name under the served directory for a route's tail (already
/// percent-decoded once, as bytes: a name need not be UTF-8): empty
/// segments merged, a trailing `/` kept; `None` when a segment is `.` or
/// `..`. A tail that is already a name (the usual case) is borrowed, not
/// copied.
pub(crate) fn normalise(tail: &[u8]) -> Option<Cow<'_, [u8]>> {
    if tail.split(|&b| b == b'/').any(|s| s == b"." || s == b"..") {
        return None;
    }
    // Only a leading `/` or a `//` makes an empty segment to merge: one at
    // the end is the trailing `/`, which stays.
    let merged = tail.first() == Some(&b'/') || tail.windows(2).any(|w| w == b"//");
    if !merged {
        return Some(Cow::Borrowed(tail));
    }
    let mut name = Vec::with_capacity(tail.len());
    for segment in tail.split(|&b| b == b'/').filter(|s| !s.is_empty()) {
        if !name.is_empty() {
            name.push(b'/');
        }
        name.extend_from_slice(segment);
    }
    if tail.ends_with(b"/") && !name.is_empty() {
        name.push(b'/');
    }
    Some(Cow::Owned(name))
}

/// The names a deny or auth rule is matched against for a request of
/// `name`: the name without its trailing `/`, the index inside a
/// directory (each of the `index` list), and the name without a coding's
/// extension (a sidecar asked for by name).
pub(crate) struct Candidates<'a> {
    names: Vec<Cow<'a, str>>,
}

impl<'a> Candidates<'a> {
    pub(crate) fn of(name: &'a str, index: &[String]) -> Candidates<'a> {
        let bare = name.strip_suffix('/').unwrap_or(name);
        let mut out = Candidates {
            names: Vec::with_capacity(2 + index.len()),
        };
        out.push(Cow::Borrowed(bare));
        if name.is_empty() || name.ends_with('/') {
            for index in index {
                out.push(Cow::Owned(format!("{name}{index}")));
            }
        }
        let original = [".br", ".zst", ".gz"]
            .iter()
            .find_map(|ext| bare.strip_suffix(ext).filter(|o| !o.is_empty()));
        if let Some(original) = original {
            out.push(Cow::Borrowed(original));
        }
        out
    }

    fn push(&mut self, name: Cow<'a, str>) {
        self.names.push(name);
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(|n| &**n)
    }
}

use std::borrow::Cow;

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
            let (tail, name) = (tail.as_bytes(), name.as_bytes());
            assert_eq!(normalise(tail).as_deref(), Some(name), "{tail:?}");
            let borrowed = matches!(normalise(tail), Some(Cow::Borrowed(_)));
            assert_eq!(
                borrowed,
                tail == name,
                "{tail:?} is copied only when it changes"
            );
        }
        for tail in ["..", "a/../b", "./a", "a/.", "a/./b", "a/..", "//../x"] {
            assert_eq!(normalise(tail.as_bytes()), None, "{tail:?}");
        }
    }

    #[test]
    fn names_that_are_not_utf8_keep_their_bytes() {
        for (tail, name) in [
            (&b"caf\xe9.txt"[..], &b"caf\xe9.txt"[..]),
            (b"d\xff/", b"d\xff/"),
            (b"//d\xff//x\x80", b"d\xff/x\x80"),
            (b"\xc0\xaf/", b"\xc0\xaf/"),
            (b"..\xff/.\xfe", b"..\xff/.\xfe"),
        ] {
            assert_eq!(normalise(tail).as_deref(), Some(name), "{tail:?}");
        }
        for tail in [&b"d\xff/../x"[..], b"\xff/.", b"./\xe9"] {
            assert_eq!(normalise(tail), None, "{tail:?}");
        }
    }

    #[test]
    fn rules_see_the_index_and_the_sidecars_original() {
        let index = ["index.html".to_string()];
        let both = ["index.html".to_string(), "index.htm".to_string()];
        let names = |n: &str, i: &[String]| {
            Candidates::of(n, i)
                .iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("staging/", &index), ["staging", "staging/index.html"]);
        assert_eq!(names("", &index), ["", "index.html"]);
        assert_eq!(
            names("docs/", &both),
            ["docs", "docs/index.html", "docs/index.htm"]
        );
        assert_eq!(
            names("secret.txt.gz", &index),
            ["secret.txt.gz", "secret.txt"]
        );
        assert_eq!(names("a.br", &[]), ["a.br", "a"]);
        assert_eq!(names(".gz", &[]), [".gz"]);
    }
}
