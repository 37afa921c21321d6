//! Finding `fs::Root::Anywhere` sites in Nikaia source (`*.nk`).
//!
//! A small lexer (comments, strings, identifiers, `::`, punctuation) and a
//! scan over its tokens; the accepted syntax is written down in
//! `spec/trust.md`.

use super::{Found, ScanError};

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Ident(String),
    /// `::`
    PathSep,
    Str(String),
    /// Any other single character: `(`, `{`, `.`, `;`, digits, ...
    Punct(char),
}

#[derive(Clone, Debug)]
struct Token {
    kind: Kind,
    line: usize,
    column: usize,
}

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: usize,
    column: usize,
}

impl Lexer<'_> {
    fn peek(&mut self) -> Option<char> {
        self.chars.peek().copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    /// After an opening `"`: the string's value, through its closing `"`.
    fn string(&mut self, line: usize, column: usize) -> Result<String, ScanError> {
        let mut value = String::new();
        loop {
            match self.bump() {
                None => return Err(error("unterminated string literal", line, column)),
                Some('"') => return Ok(value),
                Some('\\') => match self.bump() {
                    None => return Err(error("unterminated string literal", line, column)),
                    Some(c) => value.push(c),
                },
                Some(c) => value.push(c),
            }
        }
    }

    /// After `r`, `#`s and `"`: the raw string's value, through `"` and as
    /// many `#`s.
    fn raw_string(
        &mut self,
        hashes: usize,
        line: usize,
        column: usize,
    ) -> Result<String, ScanError> {
        let mut value = String::new();
        loop {
            match self.bump() {
                None => return Err(error("unterminated raw string literal", line, column)),
                Some('"') => {
                    let mut seen = 0;
                    while seen < hashes && self.peek() == Some('#') {
                        self.bump();
                        seen += 1;
                    }
                    if seen == hashes {
                        return Ok(value);
                    }
                    value.push('"');
                    value.extend(std::iter::repeat_n('#', seen));
                }
                Some(c) => value.push(c),
            }
        }
    }

    /// After `/*`: through the matching `*/`, nesting counted.
    fn block_comment(&mut self, line: usize, column: usize) -> Result<(), ScanError> {
        let mut depth = 1;
        while depth > 0 {
            match self.bump() {
                None => return Err(error("unterminated block comment", line, column)),
                Some('/') if self.peek() == Some('*') => {
                    self.bump();
                    depth += 1;
                }
                Some('*') if self.peek() == Some('/') => {
                    self.bump();
                    depth -= 1;
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

fn error(message: &str, line: usize, column: usize) -> ScanError {
    ScanError {
        message: message.to_string(),
        line,
        column,
    }
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn lex(source: &str) -> Result<Vec<Token>, ScanError> {
    let mut lx = Lexer {
        chars: source.chars().peekable(),
        line: 1,
        column: 1,
    };
    let mut tokens = Vec::new();
    while let Some(c) = lx.peek() {
        let (line, column) = (lx.line, lx.column);
        if c.is_whitespace() {
            lx.bump();
            continue;
        }
        lx.bump();
        let kind = match c {
            '/' if lx.peek() == Some('/') => {
                while lx.peek().is_some_and(|c| c != '\n') {
                    lx.bump();
                }
                continue;
            }
            '/' if lx.peek() == Some('*') => {
                lx.bump();
                lx.block_comment(line, column)?;
                continue;
            }
            '"' => Kind::Str(lx.string(line, column)?),
            ':' if lx.peek() == Some(':') => {
                lx.bump();
                Kind::PathSep
            }
            'r' if matches!(lx.peek(), Some('"' | '#')) => {
                let mut hashes = 0;
                while lx.peek() == Some('#') {
                    lx.bump();
                    hashes += 1;
                }
                if lx.bump() != Some('"') {
                    return Err(error("expected `\"` to open a raw string", line, column));
                }
                Kind::Str(lx.raw_string(hashes, line, column)?)
            }
            c if is_ident_start(c) => {
                let mut name = c.to_string();
                while let Some(c) = lx.peek().filter(|&c| is_ident_continue(c)) {
                    name.push(c);
                    lx.bump();
                }
                Kind::Ident(name)
            }
            c => Kind::Punct(c),
        };
        tokens.push(Token { kind, line, column });
    }
    Ok(tokens)
}

fn ident(tokens: &[Token], i: usize) -> Option<&str> {
    match tokens.get(i).map(|t| &t.kind) {
        Some(Kind::Ident(name)) => Some(name),
        _ => None,
    }
}

fn is(tokens: &[Token], i: usize, kind: &Kind) -> bool {
    tokens.get(i).is_some_and(|t| &t.kind == kind)
}

/// The identifiers joined by `::` starting at `i`, and the index after them.
fn path_at(tokens: &[Token], i: usize) -> (Vec<&str>, usize) {
    let mut segments = Vec::new();
    let mut j = i;
    while let Some(name) = ident(tokens, j) {
        segments.push(name);
        if is(tokens, j + 1, &Kind::PathSep) && ident(tokens, j + 2).is_some() {
            j += 2;
        } else {
            j += 1;
            break;
        }
    }
    (segments, j)
}

/// The sites in one Nikaia source file, in source order.
pub fn scan(source: &str) -> Result<Vec<Found>, ScanError> {
    let tokens = lex(source)?;
    let mut found = Vec::new();
    // Names that stand for `fs::Root` after a `use`.
    let mut root_names: Vec<String> = Vec::new();
    // Contexts with the bracket depth they were opened at, innermost last.
    let mut contexts: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_fn: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i];
        match &token.kind {
            Kind::Ident(word) if word == "use" => {
                let (path, next) = path_at(&tokens, i + 1);
                let ends_in_root = path.len() >= 2 && path[path.len() - 2..] == ["fs", "Root"];
                if ends_in_root {
                    let name = match (ident(&tokens, next), ident(&tokens, next + 1)) {
                        (Some("as"), Some(alias)) => alias.to_string(),
                        _ => "Root".to_string(),
                    };
                    root_names.push(name);
                }
                i = next;
                continue;
            }
            Kind::Ident(word) if word == "fn" => {
                pending_fn = ident(&tokens, i + 1).map(|name| format!("fn {name}"));
            }
            Kind::Punct('.')
                if ident(&tokens, i + 1) == Some("route")
                    && is(&tokens, i + 2, &Kind::Punct('(')) =>
            {
                if let Some(Token {
                    kind: Kind::Str(path),
                    ..
                }) = tokens.get(i + 3)
                {
                    contexts.push((format!("route {path:?}"), depth));
                }
            }
            Kind::Punct(';') => pending_fn = None,
            Kind::Punct('(' | '[') => depth += 1,
            Kind::Punct('{') => {
                if let Some(name) = pending_fn.take() {
                    contexts.push((name, depth));
                }
                depth += 1;
            }
            Kind::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                while contexts.last().is_some_and(|(_, d)| *d >= depth) {
                    contexts.pop();
                }
            }
            Kind::Ident(_) => {
                let after_sep = i > 0 && is(&tokens, i - 1, &Kind::PathSep);
                let (path, next) = path_at(&tokens, i);
                if !after_sep && is_site(&path, &root_names) {
                    found.push(Found {
                        line: token.line,
                        column: token.column,
                        context: contexts
                            .last()
                            .map_or_else(|| "-".to_string(), |(c, _)| c.clone()),
                    });
                }
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(found)
}

/// `[std::]fs::Root::Anywhere`, or `R::Anywhere` where `R` was brought in by
/// `use [std::]fs::Root [as R]`.
fn is_site(path: &[&str], root_names: &[String]) -> bool {
    match path {
        ["fs", "Root", "Anywhere"] | ["std", "fs", "Root", "Anywhere"] => true,
        [name, "Anywhere"] => root_names.iter().any(|r| r == name),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sites(source: &str) -> Vec<(usize, usize, String)> {
        scan(source)
            .expect("scans")
            .into_iter()
            .map(|f| (f.line, f.column, f.context))
            .collect()
    }

    #[test]
    fn nested_block_comments_and_escapes_hide_mentions() {
        let source = "/* a /* b */ fs::Root::Anywhere */\n\
                      let s = \"\\\" fs::Root::Anywhere\"\n\
                      let r = r##\"\"# fs::Root::Anywhere\"##\n\
                      fs::Root::Anywhere";
        assert_eq!(sites(source), [(4, 1, "-".to_string())]);
    }

    #[test]
    fn use_must_come_first_and_may_rename() {
        let source = "Root::Anywhere\nuse std::fs::Root as R\nR::Anywhere\nRoot::Anywhere";
        assert_eq!(sites(source), [(3, 1, "-".to_string())]);
    }

    #[test]
    fn contexts_end_with_their_brackets() {
        let source = "fn outer() {\n\
                      app.route(\"/a\", fn { fs::Root::Anywhere })\n\
                      fs::Root::Anywhere\n\
                      }\n\
                      fs::Root::Anywhere";
        assert_eq!(
            sites(source),
            [
                (2, 22, "route \"/a\"".to_string()),
                (3, 1, "fn outer".to_string()),
                (5, 1, "-".to_string()),
            ]
        );
    }

    #[test]
    fn unterminated_comment_is_an_error() {
        let error = scan("fn f() {}\n  /* open /* */").unwrap_err();
        assert_eq!(
            (error.message.as_str(), error.line, error.column),
            ("unterminated block comment", 2, 3)
        );
    }
}
