//! Finding audited sites (`fs::Root::Anywhere` and any other item the stubs
//! mark `@audit`) in Nikaia source (`*.nk`), over the tokens of the shared
//! front end (`crate::nk`); the accepted syntax is written down in
//! `spec/trust.md`.

use super::{Audited, Found, ScanError};
use crate::nk::{ident, is, lex, path_at, Kind, Token};

/// The sites in one Nikaia source file, in source order.
pub fn scan(source: &str, audited: &[Audited]) -> Result<Vec<Found>, ScanError> {
    let tokens = lex(source)?;
    let mut found = Vec::new();
    // Names brought in by a `use`, each with the owner path it stands for
    // (`use fs::Root as R` → `R` stands for `fs::Root`).
    let mut used: Vec<(String, Vec<String>)> = Vec::new();
    // Contexts with the bracket depth they were opened at, innermost last.
    let mut contexts: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_fn: Option<String> = None;
    // A route whose parentheses just closed before a trailing `fn`:
    // `.route("/path") fn(request) { … }`.
    let mut trailing_route: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i];
        match &token.kind {
            Kind::Ident(word) if word == "use" => {
                let (path, next) = path_at(&tokens, i + 1);
                if let Some(last) = path.last() {
                    let name = match (ident(&tokens, next), ident(&tokens, next + 1)) {
                        (Some("as"), Some(alias)) => alias.to_string(),
                        _ => last.to_string(),
                    };
                    used.push((name, path.iter().map(|s| s.to_string()).collect()));
                }
                i = next;
                continue;
            }
            Kind::Ident(word) if word == "fn" => {
                pending_fn = match ident(&tokens, i + 1) {
                    Some(name) => Some(format!("fn {name}")),
                    None => trailing_route.take(),
                };
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
            Kind::Punct(c @ (')' | ']' | '}')) => {
                depth = depth.saturating_sub(1);
                while contexts.last().is_some_and(|(_, d)| *d >= depth) {
                    let (context, _) = contexts.pop().unwrap_or_default();
                    let anonymous_fn_follows = *c == ')'
                        && ident(&tokens, i + 1) == Some("fn")
                        && ident(&tokens, i + 2).is_none();
                    if anonymous_fn_follows && context.starts_with("route ") {
                        trailing_route = Some(context);
                    }
                }
            }
            Kind::Ident(_) => {
                let after_sep = i > 0 && is(&tokens, i - 1, &Kind::PathSep);
                let (path, next) = path_at(&tokens, i);
                if !after_sep && is_site(&path, &used, audited) {
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

/// `[std::]P` for an audited path `P` (`fs::Root::Anywhere`), or `N::last`
/// where `N` was brought in by `use [std::]owner [as N]` (`owner` being `P`
/// without its last segment, `fs::Root`).
fn is_site(path: &[&str], used: &[(String, Vec<String>)], audited: &[Audited]) -> bool {
    audited.iter().any(|a| {
        let full = &a.nikaia;
        let Some((last, owner)) = full.split_last() else {
            return false;
        };
        let path_is = |p: &[&str]| p.len() == full.len() && p.iter().zip(full).all(|(x, y)| x == y);
        if path_is(path) || (path.first() == Some(&"std") && path_is(&path[1..])) {
            return true;
        }
        match path {
            [name, tail] if tail == last => used.iter().any(|(n, target)| {
                let target = target
                    .strip_prefix(&["std".to_string()][..])
                    .unwrap_or(target);
                n == name && target.ends_with(owner) && !owner.is_empty()
            }),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sites(source: &str) -> Vec<(usize, usize, String)> {
        scan(source, &[Audited::anywhere()])
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
                      /// doc: fs::Root::Anywhere\n\
                      fs::Root::Anywhere";
        assert_eq!(sites(source), [(5, 1, "-".to_string())]);
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
    fn a_trailing_fn_is_named_by_its_route() {
        let source = "app.route(\"/download\") fn(request) {\n\
                      http::File(request.param(\"name\"), fs::Root::Anywhere)\n\
                      }\n\
                      .route(\"/b\") fn { 1 }\n\
                      fs::Root::Anywhere";
        assert_eq!(
            sites(source),
            [
                (2, 35, "route \"/download\"".to_string()),
                (5, 1, "-".to_string()),
            ]
        );
    }

    #[test]
    fn another_audited_item_is_found_by_the_same_rules() {
        let danger = Audited {
            nikaia: vec!["fs".into(), "danger".into()],
            rust: vec!["fs".into(), "danger".into()],
        };
        let found = scan("use fs\nfs::danger()\nfs::Root::Anywhere", &[danger]).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, 2);
    }

    #[test]
    fn unterminated_comment_is_an_error() {
        let error = scan("fn f() {}\n  /* open /* */", &[Audited::anywhere()]).unwrap_err();
        assert_eq!(
            (error.message.as_str(), error.line, error.column),
            ("unterminated block comment", 2, 3)
        );
    }
}
