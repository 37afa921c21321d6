//! Finding audited sites (`Root::anywhere()` and any other item the stubs
//! mark `@audit`) in Rust source, with `syn`.
//!
//! The file is parsed into a full syntax tree and walked with a visitor. Names
//! are resolved through the `use` items of the module (and of the blocks) they
//! appear in, pragmatically: see `spec/trust.md` for the exact rule.

use std::collections::HashMap;

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Expr, Item, Lit, Token, UseTree};

use super::{Audited, Found, ScanError};

/// The sites in one Rust source file, in source order.
pub fn scan(source: &str, audited: &[Audited]) -> Result<Vec<Found>, ScanError> {
    let file = syn::parse_file(source).map_err(|e| {
        let start = e.span().start();
        ScanError {
            message: e.to_string(),
            line: start.line,
            column: start.column + 1,
        }
    })?;
    let mut scanner = Scanner {
        audited: audited.to_vec(),
        ..Scanner::default()
    };
    scanner
        .scopes
        .push(Scope::of_items(file.items.iter(), true));
    for item in &file.items {
        scanner.visit_item(item);
    }
    let mut found = scanner.found;
    found.sort_by_key(|f| (f.line, f.column));
    found.dedup_by_key(|f| (f.line, f.column));
    Ok(found)
}

/// The names a module or a block brings into scope.
#[derive(Default)]
struct Scope {
    /// A module's scope ends name lookup; a block's does not.
    module: bool,
    /// Name → the full path it stands for.
    names: HashMap<String, Vec<String>>,
}

/// Stands for "defined right here" in a resolved path.
const LOCAL: &str = "<local>";

impl Scope {
    fn of_items<'a>(items: impl Iterator<Item = &'a Item>, module: bool) -> Scope {
        let mut scope = Scope {
            module,
            names: HashMap::new(),
        };
        for item in items {
            let defined = match item {
                Item::Use(u) => {
                    scope.add_use(Vec::new(), &u.tree);
                    None
                }
                Item::Struct(s) => Some(&s.ident),
                Item::Enum(e) => Some(&e.ident),
                Item::Type(t) => Some(&t.ident),
                Item::Union(u) => Some(&u.ident),
                Item::Mod(m) => Some(&m.ident),
                _ => None,
            };
            if let Some(ident) = defined {
                let name = ident.to_string();
                scope
                    .names
                    .insert(name.clone(), vec![LOCAL.to_string(), name]);
            }
        }
        scope
    }

    fn add_use(&mut self, prefix: Vec<String>, tree: &UseTree) {
        match tree {
            UseTree::Path(p) => {
                let mut prefix = prefix;
                prefix.push(p.ident.to_string());
                self.add_use(prefix, &p.tree);
            }
            UseTree::Name(n) => {
                let name = n.ident.to_string();
                if name == "self" {
                    if let Some(last) = prefix.last() {
                        self.names.insert(last.clone(), prefix.clone());
                    }
                } else {
                    let mut path = prefix;
                    path.push(name.clone());
                    self.names.insert(name, path);
                }
            }
            UseTree::Rename(r) => {
                let name = r.ident.to_string();
                let mut path = prefix;
                if name != "self" {
                    path.push(name);
                }
                self.names.insert(r.rename.to_string(), path);
            }
            // A glob brings in names we cannot see; a bare `Root` counts
            // anyway (see `is_site`), so globs need no entry.
            UseTree::Glob(_) => {}
            UseTree::Group(g) => {
                for tree in &g.items {
                    self.add_use(prefix.clone(), tree);
                }
            }
        }
    }
}

#[derive(Default)]
struct Scanner {
    /// The audited items, from the stubs' `@audit` marker.
    audited: Vec<Audited>,
    scopes: Vec<Scope>,
    /// The enclosing `mod` names.
    mods: Vec<String>,
    /// The enclosing `impl` or `trait` type name, if any.
    self_ty: Vec<Option<String>>,
    /// Enclosing contexts, innermost last.
    contexts: Vec<String>,
    found: Vec<Found>,
}

impl Scanner {
    fn lookup(&self, name: &str) -> Option<&Vec<String>> {
        for scope in self.scopes.iter().rev() {
            if let Some(path) = scope.names.get(name) {
                return Some(path);
            }
            if scope.module {
                break;
            }
        }
        None
    }

    /// Whether a path written in the source names an audited item, such as
    /// `fs::Root::anywhere` (or its Nikaia spelling `fs::Root::Anywhere`).
    fn is_site(&self, segments: &[String]) -> bool {
        let Some(first) = segments.first() else {
            return false;
        };
        let mut resolved: Vec<String> = match self.lookup(first) {
            Some(target) => target.clone(),
            None => vec![first.clone()],
        };
        resolved.extend(segments[1..].iter().cloned());
        while resolved
            .first()
            .is_some_and(|s| s == "crate" || s == "self" || s == "super")
        {
            resolved.remove(0);
        }
        let n = resolved.len();
        if n < 2 {
            return false;
        }
        let (function, owner) = (&resolved[n - 1], &resolved[n - 2]);
        self.audited.iter().any(|a| {
            let p = &a.rust;
            let k = p.len();
            if k < 2 || owner != &p[k - 2] {
                return false;
            }
            if function != &p[k - 1] && Some(function) != a.nikaia.last() {
                return false;
            }
            // `owner::f` where `owner` is a type (`Root::anywhere`): a bare
            // owner counts, else the module before it must match.
            k == 2 || n == 2 || resolved[n - 3] == p[k - 3]
        })
    }

    fn record(&mut self, span: Span) {
        let start = span.start();
        self.found.push(Found {
            line: start.line,
            column: start.column + 1,
            context: self.contexts.last().cloned().unwrap_or_else(|| "-".into()),
        });
    }

    fn fn_context(&self, name: &str) -> String {
        let mut parts: Vec<&str> = self.mods.iter().map(String::as_str).collect();
        if let Some(Some(ty)) = self.self_ty.last() {
            parts.push(ty);
        }
        parts.push(name);
        format!("fn {}", parts.join("::"))
    }

    fn in_fn(&mut self, name: &syn::Ident, walk: impl FnOnce(&mut Self)) {
        let context = self.fn_context(&name.to_string());
        self.contexts.push(context);
        walk(self);
        self.contexts.pop();
    }

    /// Macro bodies: comma-separated expressions when they parse so, else a
    /// scan of the tokens for paths.
    fn scan_macro_tokens(&mut self, tokens: &TokenStream) {
        let parser = Punctuated::<Expr, Token![,]>::parse_terminated;
        match parser.parse2(tokens.clone()) {
            Ok(exprs) => {
                for expr in &exprs {
                    self.visit_expr(expr);
                }
            }
            Err(_) => self.scan_tokens(tokens),
        }
    }

    fn scan_tokens(&mut self, tokens: &TokenStream) {
        let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => {
                    // `#[doc = "..."]` inside a macro body is an attribute, not code.
                    let is_punct = |k: usize, c: char| matches!(trees.get(k), Some(TokenTree::Punct(p)) if p.as_char() == c);
                    let is_attr = g.delimiter() == Delimiter::Bracket
                        && i > 0
                        && (is_punct(i - 1, '#')
                            || (i > 1 && is_punct(i - 1, '!') && is_punct(i - 2, '#')));
                    if !is_attr {
                        self.scan_tokens(&g.stream());
                    }
                    i += 1;
                }
                TokenTree::Ident(first) => {
                    let mut segments = vec![first.to_string()];
                    let mut j = i + 1;
                    while j + 1 < trees.len() && is_path_sep(&trees[j], &trees[j + 1]) {
                        match trees.get(j + 2) {
                            Some(TokenTree::Ident(next)) => {
                                segments.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    if self.is_site(&segments) {
                        self.record(first.span());
                    }
                    i = j.max(i + 1);
                }
                _ => i += 1,
            }
        }
    }
}

fn is_path_sep(a: &TokenTree, b: &TokenTree) -> bool {
    matches!((a, b), (TokenTree::Punct(x), TokenTree::Punct(y))
        if x.as_char() == ':' && y.as_char() == ':' && x.spacing() == proc_macro2::Spacing::Joint)
}

fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

impl<'ast> Visit<'ast> for Scanner {
    // Attributes (doc comments among them) are not code.
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}

    fn visit_item_mod(&mut self, node: &'ast syn::ItemMod) {
        let Some((_, items)) = &node.content else {
            return;
        };
        self.mods.push(node.ident.to_string());
        self.scopes.push(Scope::of_items(items.iter(), true));
        self.self_ty.push(None);
        for item in items {
            self.visit_item(item);
        }
        self.self_ty.pop();
        self.scopes.pop();
        self.mods.pop();
    }

    fn visit_block(&mut self, node: &'ast syn::Block) {
        let items = node.stmts.iter().filter_map(|s| match s {
            syn::Stmt::Item(item) => Some(item),
            _ => None,
        });
        self.scopes.push(Scope::of_items(items, false));
        visit::visit_block(self, node);
        self.scopes.pop();
    }

    fn visit_item_fn(&mut self, node: &'ast syn::ItemFn) {
        // A fn nested in a fn is not in an impl.
        self.self_ty.push(None);
        self.in_fn(&node.sig.ident, |s| visit::visit_item_fn(s, node));
        self.self_ty.pop();
    }

    fn visit_item_impl(&mut self, node: &'ast syn::ItemImpl) {
        self.self_ty.push(type_name(&node.self_ty));
        visit::visit_item_impl(self, node);
        self.self_ty.pop();
    }

    fn visit_item_trait(&mut self, node: &'ast syn::ItemTrait) {
        self.self_ty.push(Some(node.ident.to_string()));
        visit::visit_item_trait(self, node);
        self.self_ty.pop();
    }

    fn visit_impl_item_fn(&mut self, node: &'ast syn::ImplItemFn) {
        self.in_fn(&node.sig.ident, |s| visit::visit_impl_item_fn(s, node));
    }

    fn visit_trait_item_fn(&mut self, node: &'ast syn::TraitItemFn) {
        self.in_fn(&node.sig.ident, |s| visit::visit_trait_item_fn(s, node));
    }

    fn visit_expr_method_call(&mut self, node: &'ast syn::ExprMethodCall) {
        let route = match node.args.first() {
            Some(Expr::Lit(syn::ExprLit {
                lit: Lit::Str(path),
                ..
            })) if node.method == "route" => Some(path.value()),
            _ => None,
        };
        let Some(route) = route else {
            visit::visit_expr_method_call(self, node);
            return;
        };
        self.visit_expr(&node.receiver);
        self.contexts.push(format!("route {route:?}"));
        for arg in &node.args {
            self.visit_expr(arg);
        }
        self.contexts.pop();
    }

    fn visit_expr_path(&mut self, node: &'ast syn::ExprPath) {
        if node.qself.is_none() {
            let segments: Vec<String> = node
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            if self.is_site(&segments) {
                let span = match node.path.leading_colon {
                    Some(colon) => colon.spans[0],
                    None => node.path.segments[0].ident.span(),
                };
                self.record(span);
            }
        }
        visit::visit_expr_path(self, node);
    }

    // A pattern `fs::Root::Anywhere` matches a root; it does not make one.
    fn visit_pat(&mut self, node: &'ast syn::Pat) {
        if !matches!(node, syn::Pat::Path(_)) {
            visit::visit_pat(self, node);
        }
    }

    fn visit_item_macro(&mut self, node: &'ast syn::ItemMacro) {
        match &node.ident {
            Some(name) => {
                self.contexts.push(format!("macro {name}"));
                visit::visit_item_macro(self, node);
                self.contexts.pop();
            }
            None => visit::visit_item_macro(self, node),
        }
    }

    fn visit_macro(&mut self, node: &'ast syn::Macro) {
        self.scan_macro_tokens(&node.tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sites(source: &str) -> Vec<(usize, usize, String)> {
        scan(source, &[Audited::anywhere()])
            .expect("parses")
            .into_iter()
            .map(|f| (f.line, f.column, f.context))
            .collect()
    }

    #[test]
    fn self_and_group_imports() {
        let source = "use nikaia_std::{fs::{self as files}, http};\n\
                      fn f() { files::Root::anywhere(); }";
        assert_eq!(sites(source), [(2, 10, "fn f".to_string())]);
    }

    #[test]
    fn match_patterns_are_not_sites() {
        let source = "fn f(r: Root) { match r { fs::Root::Anywhere => {} _ => {} } }";
        assert_eq!(sites(source), []);
    }

    #[test]
    fn a_module_does_not_see_its_parents_imports() {
        let source = "use other::Root;\n\
                      mod m { fn f() { Root::anywhere(); } }";
        assert_eq!(sites(source), [(2, 18, "fn m::f".to_string())]);
    }

    #[test]
    fn trait_default_methods_and_crate_paths() {
        let source = "trait T { fn f() { crate::fs::Root::anywhere(); } }";
        assert_eq!(sites(source), [(1, 20, "fn T::f".to_string())]);
    }

    #[test]
    fn attributes_in_unparsed_macro_bodies_are_skipped() {
        let source = "macro_rules! m {\n\
                      () => { #![doc = \"x\"] #[cfg(fs::Root::anywhere)] fs::Root::anywhere() };\n\
                      }";
        assert_eq!(sites(source), [(2, 50, "macro m".to_string())]);
    }

    #[test]
    fn an_imported_function_name() {
        let source = "use nikaia_std::fs::Root::anywhere as yolo;\nfn f() { yolo(); }";
        assert_eq!(sites(source), [(2, 10, "fn f".to_string())]);
    }
}
