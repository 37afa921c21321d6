//! The Nikaia lexer: comments, doc comments, strings, identifiers, `::`
//! and punctuation. The token syntax is written down in `spec/trust.md`
//! ("What counts as a site in Nikaia") and `spec/stubs.md`.

use super::SyntaxError;

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Ident(String),
    /// `::`
    PathSep,
    Str(String),
    /// Any other single character: `(`, `{`, `.`, `;`, digits, ...
    Punct(char),
    /// A `///` doc comment's text (without the `///` and one space).
    Doc(String),
}

#[derive(Clone, Debug)]
pub struct Token {
    pub kind: Kind,
    pub line: usize,
    pub column: usize,
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
    fn string(&mut self, line: usize, column: usize) -> Result<String, SyntaxError> {
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
    ) -> Result<String, SyntaxError> {
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
    fn block_comment(&mut self, line: usize, column: usize) -> Result<(), SyntaxError> {
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

pub(crate) fn error(message: &str, line: usize, column: usize) -> SyntaxError {
    SyntaxError {
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

/// The tokens of one Nikaia source text, in order.
pub fn lex(source: &str) -> Result<Vec<Token>, SyntaxError> {
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
                let mut text = String::new();
                while let Some(c) = lx.peek().filter(|&c| c != '\n') {
                    text.push(c);
                    lx.bump();
                }
                // `///` (but not `////`) is a doc comment; `//!` and the rest
                // are plain comments.
                match text.strip_prefix("//") {
                    Some(doc) if !doc.starts_with('/') => {
                        let doc = doc.strip_prefix(' ').unwrap_or(doc);
                        Kind::Doc(doc.trim_end().to_string())
                    }
                    _ => continue,
                }
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
