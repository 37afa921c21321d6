//! The name patterns of `cache-control` (spec/runtime-file.md, "Name
//! patterns"): `*` and `?` within a path component, `**` across components,
//! `[...]` classes. A pattern without a `/` matches the file's own name at
//! any depth; one with a `/` matches the whole name from the served root.

use std::fmt;

/// A name pattern, checked when the runtime file is read.
#[derive(Clone, PartialEq, Eq)]
pub struct Glob {
    text: String,
    /// Matches the whole name (the pattern has a `/`), not its last component.
    whole: bool,
    /// The components of the pattern.
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    /// `**`: zero or more components.
    Any,
    /// One component.
    One(Vec<Token>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Char(char),
    /// `?`
    One,
    /// `*`
    Star,
    /// `[...]`: ranges (a single character is `c..=c`), negated by `!` or `^`.
    Class(bool, Vec<(char, char)>),
}

impl Glob {
    /// Checks and compiles `text`; the error says what is wrong, one line.
    pub fn new(text: &str) -> Result<Glob, String> {
        if text.is_empty() {
            return Err("a pattern cannot be empty".into());
        }
        if text.ends_with('/') {
            return Err(format!(
                "\"{text}\" ends with `/`; a pattern names files (write \"{text}**\" for everything under it)"
            ));
        }
        let whole = text.contains('/');
        let body = text.strip_prefix('/').unwrap_or(text);
        let mut parts = Vec::new();
        for component in body.split('/') {
            if component.is_empty() {
                return Err(format!("\"{text}\" has an empty path component (`//`)"));
            }
            if component == "**" {
                parts.push(Part::Any);
                continue;
            }
            if component.contains("**") {
                return Err(format!(
                    "\"{text}\": `**` must be a whole path component (`a/**/b`); use `*` within one"
                ));
            }
            parts.push(Part::One(tokens(text, component)?));
        }
        Ok(Glob {
            text: text.to_owned(),
            whole,
            parts,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `name` (a name under the served root, `/`-separated, without
    /// a leading `/`) matches. Allocates nothing: it runs on every answer a
    /// rule may apply to.
    pub fn matches(&self, name: &str) -> bool {
        let components = || name.split('/').filter(|c| !c.is_empty() && *c != ".");
        if self.whole {
            parts_match(&self.parts, components())
        } else {
            components()
                .next_back()
                .is_some_and(|last| parts_match(&self.parts, std::iter::once(last)))
        }
    }
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Glob({:?})", self.text)
    }
}

fn tokens(text: &str, component: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = component.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(match c {
            '*' => Token::Star,
            '?' => Token::One,
            '\\' => match chars.next() {
                Some(c) => Token::Char(c),
                None => return Err(format!("\"{text}\" ends with a lone `\\`")),
            },
            '[' => {
                let negated = chars.next_if(|&c| c == '!' || c == '^').is_some();
                let mut ranges = Vec::new();
                let mut closed = false;
                // A `]` first is a member, as in shell patterns.
                let mut first = true;
                while let Some(c) = chars.next() {
                    if c == ']' && !first {
                        closed = true;
                        break;
                    }
                    first = false;
                    let lo = if c == '\\' {
                        chars.next().unwrap_or('\\')
                    } else {
                        c
                    };
                    let hi = if chars.peek() == Some(&'-') {
                        chars.next();
                        match chars.next() {
                            Some(']') => {
                                // `[a-]`: the `-` is a member.
                                ranges.push(('-', '-'));
                                closed = true;
                                lo
                            }
                            Some(hi) => hi,
                            None => break,
                        }
                    } else {
                        lo
                    };
                    if hi < lo {
                        return Err(format!("\"{text}\": the range `{lo}-{hi}` is backwards"));
                    }
                    ranges.push((lo, hi));
                    if closed {
                        break;
                    }
                }
                if !closed {
                    return Err(format!("\"{text}\" has a `[` without its `]`"));
                }
                Token::Class(negated, ranges)
            }
            c => Token::Char(c),
        });
    }
    Ok(out)
}

fn parts_match<'n>(parts: &[Part], mut names: impl Iterator<Item = &'n str> + Clone) -> bool {
    match parts.split_first() {
        None => names.next().is_none(),
        Some((Part::Any, rest)) => loop {
            if parts_match(rest, names.clone()) {
                return true;
            }
            if names.next().is_none() {
                return false;
            }
        },
        Some((Part::One(tokens), rest)) => match names.next() {
            Some(name) => tokens_match(tokens, name) && parts_match(rest, names),
            None => false,
        },
    }
}

/// Iterative wildcard matching with one backtrack point per `*`: linear in
/// practice, at worst pattern × name, never exponential. Positions in
/// `name` are byte offsets at character boundaries.
fn tokens_match(tokens: &[Token], name: &str) -> bool {
    let (mut t, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while let Some(c) = name[n..].chars().next() {
        match tokens.get(t) {
            Some(Token::Star) => {
                star = Some((t, n));
                t += 1;
                continue;
            }
            Some(token) if one_matches(token, c) => {
                t += 1;
                n += c.len_utf8();
                continue;
            }
            _ => {}
        }
        match star {
            Some((st, sn)) => {
                // The star takes one more character.
                let next = sn + name[sn..].chars().next().map_or(1, char::len_utf8);
                t = st + 1;
                n = next;
                star = Some((st, next));
            }
            None => return false,
        }
    }
    tokens[t..].iter().all(|t| *t == Token::Star)
}

fn one_matches(token: &Token, c: char) -> bool {
    match token {
        Token::Char(x) => *x == c,
        Token::One => true,
        Token::Class(negated, ranges) => {
            ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c)) != *negated
        }
        Token::Star => false,
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;

    fn m(pattern: &str, name: &str) -> bool {
        Glob::new(pattern).unwrap().matches(name)
    }

    #[test]
    fn a_pattern_without_a_slash_matches_the_file_name_at_any_depth() {
        assert!(m("*.html", "index.html"));
        assert!(m("*.html", "docs/guide/index.html"));
        assert!(!m("*.html", "index.htm"));
        assert!(!m("*.html", "a.html/b"));
        assert!(m("?.txt", "a/b.txt"));
        assert!(!m("?.txt", "ab.txt"));
    }

    #[test]
    fn a_pattern_with_a_slash_matches_from_the_root() {
        let p = "assets/*-[0-9a-f]*.*";
        assert!(m(p, "assets/app-3fa9c1.js"));
        assert!(!m(p, "assets/app.js"));
        assert!(!m(p, "assets/app-xyz.js"));
        assert!(!m(p, "x/assets/app-3fa9c1.js"));
        assert!(
            !m(p, "assets/sub/app-3fa9c1.js"),
            "`*` stays in one component"
        );
        assert!(m("/*.html", "index.html"));
        assert!(!m("/*.html", "docs/index.html"));
        assert!(m("assets/**", "assets/a/b/c.js"));
        assert!(m("assets/**", "assets/c.js"));
        assert!(m("**/x.js", "x.js"));
        assert!(m("a/**/b.js", "a/b.js"));
        assert!(m("a/**/b.js", "a/x/y/b.js"));
        assert!(!m("a/**/b.js", "b/x/b.js"));
    }

    #[test]
    fn classes_and_escapes() {
        assert!(m("[!a]*", "b"));
        assert!(!m("[!a]*", "abc"));
        assert!(m("[]x]", "]"));
        assert!(m("[a-]", "-"));
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("*a*b*c", "xxaxxbxxc"));
        assert!(!m("*a*b*c", "xxaxxbxx"));
        assert!(m("*", "é"));
    }

    #[test]
    fn bad_patterns() {
        for bad in [
            "", "a/", "a**", "a/**b/c", "[a-", "x[", "a//b", "\\", "[z-a]",
        ] {
            assert!(Glob::new(bad).is_err(), "{bad}");
        }
    }
}
