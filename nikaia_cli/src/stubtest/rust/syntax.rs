//! Reading `syn`'s items: visibility, names, attributes (`doc(hidden)`,
//! the audit marker) and the targets a `cfg` allows.

use super::*;

pub(super) fn is_pub(item: &SynItem) -> bool {
    let vis = match item {
        SynItem::Fn(i) => &i.vis,
        SynItem::Struct(i) => &i.vis,
        SynItem::Enum(i) => &i.vis,
        SynItem::Type(i) => &i.vis,
        SynItem::Union(i) => &i.vis,
        SynItem::Trait(i) => &i.vis,
        SynItem::Const(i) => &i.vis,
        SynItem::Static(i) => &i.vis,
        _ => return false,
    };
    matches!(vis, Visibility::Public(_))
}

pub(super) fn item_ident(item: &SynItem) -> Option<String> {
    Some(match item {
        SynItem::Fn(i) => i.sig.ident.to_string(),
        SynItem::Struct(i) => i.ident.to_string(),
        SynItem::Enum(i) => i.ident.to_string(),
        SynItem::Type(i) => i.ident.to_string(),
        SynItem::Union(i) => i.ident.to_string(),
        SynItem::Trait(i) => i.ident.to_string(),
        SynItem::Const(i) => i.ident.to_string(),
        SynItem::Static(i) => i.ident.to_string(),
        _ => return None,
    })
}

pub(super) fn item_attrs(item: &SynItem) -> &[Attribute] {
    match item {
        SynItem::Fn(i) => &i.attrs,
        SynItem::Struct(i) => &i.attrs,
        SynItem::Enum(i) => &i.attrs,
        SynItem::Type(i) => &i.attrs,
        SynItem::Union(i) => &i.attrs,
        SynItem::Trait(i) => &i.attrs,
        SynItem::Const(i) => &i.attrs,
        SynItem::Static(i) => &i.attrs,
        SynItem::Use(i) => &i.attrs,
        SynItem::Mod(i) => &i.attrs,
        SynItem::Impl(i) => &i.attrs,
        _ => &[],
    }
}

/// Each name a `use` tree brings in: (the path it names, the name).
pub(super) fn use_leaves(tree: &UseTree) -> Vec<(Vec<String>, String)> {
    fn walk(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                walk(&p.tree, prefix, out);
                prefix.pop();
            }
            UseTree::Name(n) => {
                let name = n.ident.to_string();
                if name == "self" {
                    if let Some(last) = prefix.last() {
                        out.push((prefix.clone(), last.clone()));
                    }
                } else {
                    let mut path = prefix.clone();
                    path.push(name.clone());
                    out.push((path, name));
                }
            }
            UseTree::Rename(r) => {
                let mut path = prefix.clone();
                path.push(r.ident.to_string());
                out.push((path, r.rename.to_string()));
            }
            // Expanded by `Crate::leaves`, which knows the modules.
            UseTree::Glob(_) => out.push((prefix.clone(), "*".to_owned())),
            UseTree::Group(g) => {
                for t in &g.items {
                    walk(t, prefix, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut Vec::new(), &mut out);
    out
}

pub(super) fn doc_hidden(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("doc")
            && matches!(&a.meta, Meta::List(l) if l.tokens.to_string().trim() == "hidden")
    })
}

/// `#[doc(alias = "nikaia-audit")]`.
pub(super) fn has_audit_marker(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("doc")
            && matches!(&a.meta, Meta::List(l) if {
                let t = l.tokens.to_string();
                t.contains("alias") && t.contains(&format!("{AUDIT_ALIAS:?}"))
            })
    })
}

/// The targets an item's `#[cfg(…)]`s allow.
pub(super) fn cfg_mask(attrs: &[Attribute]) -> u8 {
    let mut mask = ALL_TARGETS;
    for a in attrs {
        if a.path().is_ident("cfg") {
            if let Meta::List(l) = &a.meta {
                let tts: Vec<TokenTree> = l.tokens.clone().into_iter().collect();
                mask &= cfg_predicate(&tts);
            }
        }
    }
    mask
}

pub(super) fn split_commas(stream: TokenStream) -> Vec<Vec<TokenTree>> {
    let mut out = vec![Vec::new()];
    for tt in stream {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => out.push(Vec::new()),
            _ => out.last_mut().expect("one part").push(tt),
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

/// One `cfg` predicate for the two targets: `target_os = "linux"` and
/// `unix` hold on Linux only, `target_arch = "wasm32"` and
/// `target_family = "wasm"` on wasm32 only, `test` and `feature = …`
/// nowhere; anything else on both.
pub(super) fn cfg_predicate(tts: &[TokenTree]) -> u8 {
    match tts {
        [TokenTree::Ident(op), TokenTree::Group(g)] => {
            let parts: Vec<u8> = split_commas(g.stream())
                .iter()
                .map(|p| cfg_predicate(p))
                .collect();
            match op.to_string().as_str() {
                "all" => parts.iter().fold(ALL_TARGETS, |a, b| a & b),
                "any" => parts.iter().fold(0, |a, b| a | b),
                "not" => ALL_TARGETS & !parts.first().copied().unwrap_or(0),
                _ => ALL_TARGETS,
            }
        }
        [TokenTree::Ident(key), TokenTree::Punct(eq), TokenTree::Literal(value)]
            if eq.as_char() == '=' =>
        {
            let value = value.to_string();
            let value = value.trim_matches('"');
            match key.to_string().as_str() {
                "target_os" => {
                    if value == "linux" {
                        LINUX
                    } else {
                        0
                    }
                }
                "target_arch" => {
                    if value == "wasm32" {
                        WASM32
                    } else {
                        LINUX
                    }
                }
                "target_family" => match value {
                    "unix" => LINUX,
                    "wasm" => WASM32,
                    _ => 0,
                },
                "feature" => 0,
                _ => ALL_TARGETS,
            }
        }
        [TokenTree::Ident(flag)] => match flag.to_string().as_str() {
            "unix" => LINUX,
            "test" | "windows" => 0,
            _ => ALL_TARGETS,
        },
        _ => ALL_TARGETS,
    }
}
