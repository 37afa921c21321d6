//! The entry point of the `.nk` fuzz target (`nikaia_cli/fuzz/`) and of the
//! stable test that replays its corpus (`tests/fuzz_replay.rs`). Panics only
//! when an invariant of the front end breaks; a syntax error is an answer.

use crate::nk::{lex, parse_stubs, Kind, SyntaxError, Token};

/// The lexer and the stub parser on any text:
/// - an error's position lies inside the text (or just past its end);
/// - tokens come in order, each at the position its first character has
///   in the text, and that character is the token's own (`::` at `:`, a
///   string at `"` or `r`, a doc comment at `///`);
/// - the tokens written back (strings quoted again, one space between, doc
///   comments on their own line) lex to the same tokens.
pub fn nk(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines: Vec<Vec<char>> = text.split('\n').map(|l| l.chars().collect()).collect();
    let inside = |e: &SyntaxError| {
        e.line >= 1
            && e.column >= 1
            && lines
                .get(e.line - 1)
                .is_some_and(|l| e.column <= l.len() + 1)
    };
    if let Err(e) = parse_stubs(text) {
        assert!(inside(&e), "{e:?} outside the text");
    }
    let tokens = match lex(text) {
        Ok(tokens) => tokens,
        Err(e) => {
            assert!(inside(&e), "{e:?} outside the text");
            return;
        }
    };
    let mut last = (0, 0);
    for t in &tokens {
        assert!((t.line, t.column) > last, "{t:?} out of order");
        last = (t.line, t.column);
        let at = &lines[t.line - 1][t.column - 1..];
        let starts = |s: &str| at.iter().copied().take(s.chars().count()).eq(s.chars());
        match &t.kind {
            Kind::Ident(name) => assert!(starts(name), "{t:?} is not at its name"),
            Kind::PathSep => assert!(starts("::"), "{t:?}"),
            Kind::Str(_) => assert!(starts("\"") || starts("r"), "{t:?}"),
            Kind::Punct(c) => assert_eq!(at[0], *c, "{t:?}"),
            Kind::Doc(_) => assert!(starts("///"), "{t:?}"),
        }
    }
    let again = lex(&write_back(&tokens)).expect("tokens written back lex again");
    let kinds = |ts: &[Token]| ts.iter().map(|t| t.kind.clone()).collect::<Vec<_>>();
    assert_eq!(kinds(&again), kinds(&tokens), "written back, lexed again");
}

/// Tokens as source text again: one space between, strings quoted with
/// `\` before `"` and `\`, a doc comment on a line of its own.
fn write_back(tokens: &[Token]) -> String {
    let mut out = String::new();
    for t in tokens {
        match &t.kind {
            Kind::Ident(name) => out.push_str(name),
            Kind::PathSep => out.push_str("::"),
            Kind::Str(value) => {
                out.push('"');
                for c in value.chars() {
                    if matches!(c, '"' | '\\') {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push('"');
            }
            Kind::Punct(c) => out.push(*c),
            Kind::Doc(text) => {
                out.push_str("\n/// ");
                out.push_str(text);
                out.push('\n');
            }
        }
        out.push(' ');
    }
    out
}
