//! The Nikaia parser: paths (shared with the `--trust` scan) and the
//! declarations of a stub file (`spec/stubs.md`).

use super::lexer::{error, lex, Kind, Token};
use super::SyntaxError;

/// The identifier at `i`, if the token there is one.
pub fn ident(tokens: &[Token], i: usize) -> Option<&str> {
    match tokens.get(i).map(|t| &t.kind) {
        Some(Kind::Ident(name)) => Some(name),
        _ => None,
    }
}

/// Whether the token at `i` is `kind`.
pub fn is(tokens: &[Token], i: usize, kind: &Kind) -> bool {
    tokens.get(i).is_some_and(|t| &t.kind == kind)
}

/// The identifiers joined by `::` starting at `i`, and the index after them.
pub fn path_at(tokens: &[Token], i: usize) -> (Vec<&str>, usize) {
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

/// What a declaration declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeclKind {
    /// `fn name(…) -> T throws E`, at module level or in a type.
    Fn,
    /// `init(…) -> T throws E` in a type: the type's constructor.
    Init,
    /// `type Name` or `type Name { … }`.
    Type,
    /// `enum Name { case … }`.
    Enum,
    /// `case Name` or `case Name(…)` in an enum.
    Case,
    /// `trait Name`.
    Trait,
    /// `let name: T` in a type: a field.
    Field,
    /// `const NAME: T`.
    Const,
    /// `body T [throws E] ["content type"]`: a row of the body table.
    Body,
    /// `builtin type Name`: a type of the language itself, with no Rust item.
    Builtin,
}

impl DeclKind {
    pub fn word(self) -> &'static str {
        match self {
            DeclKind::Fn => "fn",
            DeclKind::Init => "init",
            DeclKind::Type => "type",
            DeclKind::Enum => "enum",
            DeclKind::Case => "case",
            DeclKind::Trait => "trait",
            DeclKind::Field => "let",
            DeclKind::Const => "const",
            DeclKind::Body => "body",
            DeclKind::Builtin => "builtin type",
        }
    }
}

/// A parameter: its name (absent for a positional case field) and type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: Option<String>,
    pub ty: String,
}

/// One declaration of a stub file.
#[derive(Clone, Debug)]
pub struct Decl {
    pub kind: DeclKind,
    /// The declared name; for a body row, its type.
    pub name: String,
    pub docs: Vec<String>,
    /// `@name` or `@name(a, b)`, in order.
    pub attrs: Vec<(String, Vec<String>)>,
    pub params: Vec<Param>,
    /// Whether a parameter list was written (`case A` has none).
    pub has_params: bool,
    pub result: Option<String>,
    pub throws: Option<String>,
    /// A body row's content type.
    pub content_type: Option<String>,
    pub members: Vec<Decl>,
    pub line: usize,
}

/// A parsed stub file: its declarations (the format version line has been
/// checked).
#[derive(Clone, Debug)]
pub struct StubFile {
    pub decls: Vec<Decl>,
}

/// The format version this parser reads.
pub const FORMAT_VERSION: u32 = 1;

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

type Result<T> = std::result::Result<T, SyntaxError>;

impl Parser {
    fn peek(&self) -> Option<&Kind> {
        self.tokens.get(self.pos).map(|t| &t.kind)
    }

    fn place(&self) -> (usize, usize) {
        match self.tokens.get(self.pos).or(self.tokens.last()) {
            Some(t) => (t.line, t.column),
            None => (1, 1),
        }
    }

    fn fail<T>(&self, message: String) -> Result<T> {
        let (line, column) = self.place();
        Err(error(&message, line, column))
    }

    fn found(&self) -> String {
        match self.peek() {
            None => "the end of the file".into(),
            Some(Kind::Ident(s)) => format!("`{s}`"),
            Some(Kind::Punct(c)) => format!("`{c}`"),
            Some(Kind::PathSep) => "`::`".into(),
            Some(Kind::Str(s)) => format!("the string {s:?}"),
            Some(Kind::Doc(_)) => "a doc comment".into(),
        }
    }

    fn at_punct(&self, c: char) -> bool {
        self.peek() == Some(&Kind::Punct(c))
    }

    fn at_word(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Kind::Ident(w)) if w == word)
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let at = self.at_punct(c);
        if at {
            self.pos += 1;
        }
        at
    }

    fn expect_punct(&mut self, c: char) -> Result<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.fail(format!("expected `{c}`, found {}", self.found()))
        }
    }

    fn name(&mut self) -> Result<String> {
        match self.peek() {
            Some(Kind::Ident(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok(s)
            }
            _ => self.fail(format!("expected a name, found {}", self.found())),
        }
    }

    /// `a::b::C`, as written.
    fn path(&mut self) -> Result<String> {
        let mut out = self.name()?;
        while self.peek() == Some(&Kind::PathSep) {
            self.pos += 1;
            out.push_str("::");
            out.push_str(&self.name()?);
        }
        Ok(out)
    }

    /// A type: `Path`, `Path<T, …>`, `[T]`, `(T, …)`, `fn(T, …) -> T`, any
    /// of them followed by `?`s. Written back in one normal spelling.
    fn ty(&mut self) -> Result<String> {
        let mut out = if self.eat_punct('[') {
            let inner = self.ty()?;
            self.expect_punct(']')?;
            format!("[{inner}]")
        } else if self.at_punct('(') {
            format!("({})", self.types_in_parens()?.join(", "))
        } else if self.at_word("fn") {
            self.pos += 1;
            let args = self.types_in_parens()?;
            let mut out = format!("fn({})", args.join(", "));
            if self.arrow() {
                out.push_str(" -> ");
                out.push_str(&self.ty()?);
            }
            out
        } else {
            let mut out = self.path()?;
            if self.eat_punct('<') {
                let mut args = vec![self.ty()?];
                while self.eat_punct(',') {
                    args.push(self.ty()?);
                }
                self.expect_punct('>')?;
                out = format!("{out}<{}>", args.join(", "));
            }
            out
        };
        while self.eat_punct('?') {
            out.push('?');
        }
        Ok(out)
    }

    fn types_in_parens(&mut self) -> Result<Vec<String>> {
        self.expect_punct('(')?;
        let mut out = Vec::new();
        while !self.eat_punct(')') {
            out.push(self.ty()?);
            if !self.eat_punct(',') {
                self.expect_punct(')')?;
                break;
            }
        }
        Ok(out)
    }

    fn arrow(&mut self) -> bool {
        if self.at_punct('-') && is(&self.tokens, self.pos + 1, &Kind::Punct('>')) {
            self.pos += 2;
            true
        } else {
            false
        }
    }

    /// `(name: T, self, …)`; a case's fields may be positional (`(T, …)`).
    fn params(&mut self, positional: bool) -> Result<Vec<Param>> {
        self.expect_punct('(')?;
        let mut out = Vec::new();
        while !self.eat_punct(')') {
            let named = ident(&self.tokens, self.pos).is_some()
                && is(&self.tokens, self.pos + 1, &Kind::Punct(':'));
            if self.at_word("self") {
                self.pos += 1;
                out.push(Param {
                    name: Some("self".into()),
                    ty: "Self".into(),
                });
            } else if named {
                let name = self.name()?;
                self.expect_punct(':')?;
                out.push(Param {
                    name: Some(name),
                    ty: self.ty()?,
                });
            } else if positional {
                out.push(Param {
                    name: None,
                    ty: self.ty()?,
                });
            } else {
                return self.fail(format!(
                    "expected `name: Type` or `self`, found {}",
                    self.found()
                ));
            }
            if !self.eat_punct(',') {
                self.expect_punct(')')?;
                break;
            }
        }
        Ok(out)
    }

    /// `-> T`, `throws E`, both, or neither.
    fn result(&mut self, decl: &mut Decl) -> Result<()> {
        if self.arrow() {
            decl.result = Some(self.ty()?);
        }
        if self.at_word("throws") {
            self.pos += 1;
            decl.throws = Some(self.ty()?);
        }
        Ok(())
    }

    fn members(&mut self, decl: &mut Decl, allowed: &[DeclKind]) -> Result<()> {
        if !self.eat_punct('{') {
            return Ok(());
        }
        while !self.eat_punct('}') {
            if self.peek().is_none() {
                return self.fail(format!("expected `}}` to close `{}`", decl.name));
            }
            let member = self.decl()?;
            if !allowed.contains(&member.kind) {
                return Err(error(
                    &format!(
                        "`{}` is not allowed inside `{} {}`",
                        member.kind.word(),
                        decl.kind.word(),
                        decl.name
                    ),
                    member.line,
                    1,
                ));
            }
            decl.members.push(member);
        }
        Ok(())
    }

    fn decl(&mut self) -> Result<Decl> {
        let mut docs = Vec::new();
        while let Some(Kind::Doc(text)) = self.peek() {
            docs.push(text.clone());
            self.pos += 1;
        }
        let mut attrs = Vec::new();
        while self.eat_punct('@') {
            let name = self.name()?;
            let mut args = Vec::new();
            if self.eat_punct('(') {
                while !self.eat_punct(')') {
                    args.push(self.name()?);
                    if !self.eat_punct(',') {
                        self.expect_punct(')')?;
                        break;
                    }
                }
            }
            attrs.push((name, args));
        }
        let (line, _) = self.place();
        let word = self.name().map_err(|_| {
            let (line, column) = self.place();
            error(
                &format!("expected a declaration, found {}", self.found()),
                line,
                column,
            )
        })?;
        let mut decl = Decl {
            kind: DeclKind::Fn,
            name: String::new(),
            docs,
            attrs,
            params: Vec::new(),
            has_params: false,
            result: None,
            throws: None,
            content_type: None,
            members: Vec::new(),
            line,
        };
        match word.as_str() {
            "fn" => {
                decl.name = self.name()?;
                decl.params = self.params(false)?;
                decl.has_params = true;
                self.result(&mut decl)?;
            }
            "init" => {
                decl.kind = DeclKind::Init;
                decl.name = "init".into();
                decl.params = self.params(false)?;
                decl.has_params = true;
                self.result(&mut decl)?;
            }
            "type" => {
                decl.kind = DeclKind::Type;
                decl.name = self.name()?;
                self.members(
                    &mut decl,
                    &[
                        DeclKind::Fn,
                        DeclKind::Init,
                        DeclKind::Field,
                        DeclKind::Const,
                    ],
                )?;
            }
            "enum" => {
                decl.kind = DeclKind::Enum;
                decl.name = self.name()?;
                self.members(&mut decl, &[DeclKind::Case, DeclKind::Fn])?;
            }
            "case" => {
                decl.kind = DeclKind::Case;
                decl.name = self.name()?;
                if self.at_punct('(') {
                    decl.params = self.params(true)?;
                    decl.has_params = true;
                }
            }
            "trait" => {
                decl.kind = DeclKind::Trait;
                decl.name = self.name()?;
            }
            "let" | "const" => {
                decl.kind = if word == "let" {
                    DeclKind::Field
                } else {
                    DeclKind::Const
                };
                decl.name = self.name()?;
                self.expect_punct(':')?;
                decl.result = Some(self.ty()?);
            }
            "body" => {
                decl.kind = DeclKind::Body;
                decl.name = self.ty()?;
                if self.at_word("throws") {
                    self.pos += 1;
                    decl.throws = Some(self.ty()?);
                }
                if let Some(Kind::Str(s)) = self.peek() {
                    decl.content_type = Some(s.clone());
                    self.pos += 1;
                }
            }
            "builtin" => {
                if !self.at_word("type") {
                    return self.fail(format!("expected `type`, found {}", self.found()));
                }
                self.pos += 1;
                decl.kind = DeclKind::Builtin;
                decl.name = self.name()?;
            }
            other => {
                return Err(error(
                    &format!("expected a declaration, found `{other}`"),
                    line,
                    1,
                ))
            }
        }
        // Declarations may be separated by `;`.
        self.eat_punct(';');
        Ok(decl)
    }
}

/// Parses a stub file: the version line `stubs 1`, then declarations.
pub fn parse_stubs(source: &str) -> Result<StubFile> {
    let tokens = lex(source)?;
    let mut p = Parser { tokens, pos: 0 };
    if !p.at_word("stubs") {
        return p.fail(format!(
            "expected the format version line `stubs {FORMAT_VERSION}`, found {}",
            p.found()
        ));
    }
    p.pos += 1;
    let mut digits = String::new();
    while let Some(Kind::Punct(c)) = p.peek() {
        if !c.is_ascii_digit() {
            break;
        }
        digits.push(*c);
        p.pos += 1;
    }
    let version: u32 = match digits.parse() {
        Ok(v) => v,
        Err(_) => return p.fail("expected a format version number after `stubs`".into()),
    };
    if version != FORMAT_VERSION {
        return Err(error(
            &format!("format version {version} is not known (this tool reads {FORMAT_VERSION})"),
            1,
            1,
        ));
    }
    let mut decls = Vec::new();
    while p.peek().is_some() {
        decls.push(p.decl()?);
    }
    Ok(StubFile { decls })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_type_with_members_and_attributes() {
        let file = parse_stubs(
            "stubs 1\n\
             /// A root.\n\
             type Root {\n\
               /// Confined.\n\
               fn Dir(path: Path) -> Root throws IoError\n\
               @audit\n\
               fn Anywhere() -> Root\n\
               fn list(self, name: Path) -> [DirEntry] throws Error\n\
             }\n\
             @targets(linux)\n\
             fn map(name: Path, root: Root) -> Mapped throws Error\n\
             body String \"text/plain\"\n",
        )
        .expect("parses");
        assert_eq!(file.decls.len(), 3);
        let root = &file.decls[0];
        assert_eq!(root.docs, ["A root."]);
        assert_eq!(root.members[1].attrs, [("audit".to_string(), vec![])]);
        assert_eq!(root.members[2].result.as_deref(), Some("[DirEntry]"));
        assert_eq!(file.decls[1].attrs[0].1, ["linux"]);
        assert_eq!(file.decls[1].line, 11);
        assert_eq!(file.decls[2].content_type.as_deref(), Some("text/plain"));
    }

    #[test]
    fn the_version_line_is_required() {
        let e = parse_stubs("fn f()").unwrap_err();
        assert!(e.message.contains("stubs 1"), "{}", e.message);
        let e = parse_stubs("stubs 2\n").unwrap_err();
        assert!(e.message.contains("not known"), "{}", e.message);
    }
}
