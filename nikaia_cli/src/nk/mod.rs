//! The Nikaia front end shared by `nikaia --trust` (the `.nk` site scan) and
//! `nikaia stubtest` (the stubs under `spec/std/`): one lexer, one parser.
//!
//! The token syntax is in `spec/trust.md`; the declaration grammar of the
//! stubs in `spec/stubs.md`.

mod lexer;
mod parser;

pub use lexer::{lex, Kind, Token};
pub use parser::{ident, is, parse_stubs, path_at, Decl, DeclKind};

/// A lexing or parsing error at a 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}
