//! nikaia_std's public surface, read from its Rust source with `syn` (no
//! build of the crate, no nightly): the exported items of its public
//! modules, their inherent methods, fields and variants, the body rows
//! (`impl IntoResponse for T`), each with the targets its `cfg`s allow.
//! The rules are in `spec/stubs.md`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;
use syn::{
    Attribute, FnArg, GenericArgument, Generics, ImplItem, Item as SynItem, Meta, Pat,
    PathArguments, ReturnType, Signature, Type, TypeParamBound, UseTree, Visibility,
};

use super::{Item, ItemKind, Place, ALL_TARGETS, LINUX, WASM32};

mod surface;
mod syntax;
mod types;

use syntax::{cfg_mask, doc_hidden, has_audit_marker, is_pub, item_attrs, item_ident, use_leaves};
use types::{map_return, map_ty, type_name, Bounds, Idents};

/// The trait whose impls are the body table's rows, and the module that
/// exports it.
const BODY_TRAIT: &str = "IntoResponse";
const BODY_MODULE: &str = "http";
/// The Rust side of the `@audit` marker: `#[doc(alias = "nikaia-audit")]`.
pub const AUDIT_ALIAS: &str = "nikaia-audit";

struct Module {
    /// The module's path in the crate (`fs::map`).
    path: Vec<String>,
    /// Shown source file.
    file: String,
    items: Vec<SynItem>,
    /// Targets its `cfg`s (and its parents') allow.
    mask: u8,
    parent: Option<usize>,
    children: Vec<(String, usize)>,
    public: bool,
}

/// The parsed crate.
pub struct Crate {
    modules: Vec<Module>,
    shim_traits: HashSet<String>,
}

/// What a `pub use` or a name resolves to.
#[derive(Clone, Copy)]
enum Def {
    Item(usize, usize),
    External,
    Module,
}

impl Crate {
    /// Reads `<dir>/src/lib.rs` and every module file it declares.
    pub fn read(dir: &Path) -> Result<Crate, String> {
        let shown = dir.display().to_string();
        let shown = shown.trim_end_matches('/');
        let src = dir.join("src");
        let mut krate = Crate {
            modules: Vec::new(),
            shim_traits: HashSet::new(),
        };
        let lib = src.join("lib.rs");
        let items = parse(&lib, &format!("{shown}/src/lib.rs"))?;
        krate.load(
            items,
            format!("{shown}/src/lib.rs"),
            &src,
            Vec::new(),
            ALL_TARGETS,
            None,
            true,
            &format!("{shown}/src"),
        )?;
        // A shim is a trait that carries a diagnostic and that nothing
        // implements: naming it can only ever be a compile-time error. A
        // trait with a diagnostic and implementations (IntoResponse) is
        // a real item whose error message is merely better.
        let implemented: HashSet<String> = krate
            .modules
            .iter()
            .flat_map(|m| &m.items)
            .filter_map(|item| match item {
                SynItem::Impl(i) => i
                    .trait_
                    .as_ref()?
                    .0
                    .segments
                    .last()
                    .map(|s| s.ident.to_string()),
                _ => None,
            })
            .collect();
        for m in &krate.modules {
            for item in &m.items {
                if let SynItem::Trait(t) = item {
                    let diagnostic = t.attrs.iter().any(|a| {
                        a.path()
                            .segments
                            .last()
                            .is_some_and(|s| s.ident == "on_unimplemented")
                    });
                    if diagnostic && !implemented.contains(&t.ident.to_string()) {
                        krate.shim_traits.insert(t.ident.to_string());
                    }
                }
            }
        }
        Ok(krate)
    }

    #[allow(clippy::too_many_arguments)]
    fn load(
        &mut self,
        items: Vec<SynItem>,
        file: String,
        dir: &Path,
        path: Vec<String>,
        mask: u8,
        parent: Option<usize>,
        public: bool,
        shown_dir: &str,
    ) -> Result<usize, String> {
        let index = self.modules.len();
        self.modules.push(Module {
            path: path.clone(),
            file: file.clone(),
            items: Vec::new(),
            mask,
            parent,
            children: Vec::new(),
            public,
        });
        for item in &items {
            let SynItem::Mod(m) = item else { continue };
            let child_mask = mask & cfg_mask(&m.attrs);
            if child_mask == 0 {
                continue;
            }
            let name = m.ident.to_string();
            let child_public =
                public && matches!(m.vis, Visibility::Public(_)) && !doc_hidden(&m.attrs);
            let mut child_path = path.clone();
            child_path.push(name.clone());
            let child = if let Some((_, content)) = &m.content {
                self.load(
                    content.clone(),
                    file.clone(),
                    &dir.join(&name),
                    child_path,
                    child_mask,
                    Some(index),
                    child_public,
                    &format!("{shown_dir}/{name}"),
                )?
            } else {
                let flat = dir.join(format!("{name}.rs"));
                let (child_file, child_dir, child_shown, child_shown_dir) = if flat.is_file() {
                    (
                        flat,
                        dir.join(&name),
                        format!("{shown_dir}/{name}.rs"),
                        format!("{shown_dir}/{name}"),
                    )
                } else {
                    (
                        dir.join(&name).join("mod.rs"),
                        dir.join(&name),
                        format!("{shown_dir}/{name}/mod.rs"),
                        format!("{shown_dir}/{name}"),
                    )
                };
                let child_items = parse(&child_file, &child_shown)?;
                self.load(
                    child_items,
                    child_shown,
                    &child_dir,
                    child_path,
                    child_mask,
                    Some(index),
                    child_public,
                    &child_shown_dir,
                )?
            };
            self.modules[index].children.push((name, child));
        }
        self.modules[index].items = items;
        Ok(index)
    }

    /// Each public module's path and its file, for places in errors.
    pub fn module_files(&self) -> HashMap<String, String> {
        self.modules
            .iter()
            .filter(|m| m.public)
            .map(|m| (m.path.join("::"), m.file.clone()))
            .collect()
    }

    fn child(&self, module: usize, name: &str) -> Option<usize> {
        self.modules[module]
            .children
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, i)| *i)
    }

    /// Each name a `use` tree in module `from` brings in: (the path it
    /// names, the name). A glob (`pub use crate::backend::*`) brings in the
    /// names of the module it names, in every module of that name (one per
    /// target, each under its own `cfg`).
    fn leaves(&self, from: usize, tree: &UseTree) -> Vec<(Vec<String>, String)> {
        let mut out = Vec::new();
        for (path, name) in use_leaves(tree) {
            if name != "*" {
                out.push((path, name));
                continue;
            }
            for module in self.modules_at(from, &path) {
                for item in &self.modules[module].items {
                    let names = match item {
                        SynItem::Use(u) if matches!(u.vis, Visibility::Public(_)) => {
                            use_leaves(&u.tree).into_iter().map(|(_, n)| n).collect()
                        }
                        item if is_pub(item) => item_ident(item).into_iter().collect(),
                        _ => Vec::new(),
                    };
                    for n in names.into_iter().filter(|n| n != "*") {
                        let mut full = path.clone();
                        full.push(n.clone());
                        out.push((full, n));
                    }
                }
            }
        }
        out
    }

    /// The modules `segments` names as a module path seen from `from`
    /// (several when modules of one name stand under different `cfg`s).
    fn modules_at(&self, from: usize, segments: &[String]) -> Vec<usize> {
        let mut at = vec![from];
        for (i, seg) in segments.iter().enumerate() {
            at = match seg.as_str() {
                "crate" if i == 0 => vec![0],
                "self" if i == 0 => at,
                "super" => at.iter().filter_map(|&m| self.modules[m].parent).collect(),
                name => at
                    .iter()
                    .flat_map(|&m| {
                        self.modules[m]
                            .children
                            .iter()
                            .filter(move |(n, _)| n == name)
                            .map(|(_, c)| *c)
                    })
                    .collect(),
            };
        }
        at
    }

    /// What `segments` names, seen from `from`, with the targets of each
    /// definition.
    fn resolve(&self, from: usize, segments: &[String], depth: usize) -> Vec<(Def, u8)> {
        if depth > 16 || segments.is_empty() {
            return Vec::new();
        }
        let (mut module, rest) = match segments[0].as_str() {
            "crate" => (0, &segments[1..]),
            "self" => (from, &segments[1..]),
            "super" => match self.modules[from].parent {
                Some(p) => (p, &segments[1..]),
                None => return Vec::new(),
            },
            first => match self.child(from, first) {
                Some(c) if segments.len() > 1 => (c, &segments[1..]),
                Some(_) => return vec![(Def::Module, ALL_TARGETS)],
                None if segments.len() == 1 => (from, segments),
                None => return vec![(Def::External, ALL_TARGETS)],
            },
        };
        let Some((last, between)) = rest.split_last() else {
            return vec![(Def::Module, ALL_TARGETS)];
        };
        for seg in between {
            match seg.as_str() {
                "super" => match self.modules[module].parent {
                    Some(p) => module = p,
                    None => return Vec::new(),
                },
                name => match self.child(module, name) {
                    Some(c) => module = c,
                    None => return vec![(Def::External, ALL_TARGETS)],
                },
            }
        }
        let m = &self.modules[module];
        if self.child(module, last).is_some() {
            return vec![(Def::Module, m.mask)];
        }
        let mut out = Vec::new();
        for (i, item) in m.items.iter().enumerate() {
            if let Some(ident) = item_ident(item) {
                if ident == *last {
                    out.push((Def::Item(module, i), m.mask & cfg_mask(item_attrs(item))));
                }
            } else if let SynItem::Use(u) = item {
                let use_mask = m.mask & cfg_mask(&u.attrs);
                for (path, name) in self.leaves(module, &u.tree) {
                    if name == *last {
                        for (def, mask) in self.resolve(module, &path, depth + 1) {
                            out.push((def, mask & use_mask));
                        }
                    }
                }
            }
        }
        out
    }
}

fn parse(path: &PathBuf, shown: &str) -> Result<Vec<SynItem>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: error: {e}"))?;
    syn::parse_file(&text).map(|f| f.items).map_err(|e| {
        let at = e.span().start();
        format!("{shown}:{}:{}: error: {e}", at.line, at.column + 1)
    })
}

/// Definitions of one key on several targets become one item whose targets
/// are their union; the first available definition gives the signature.
fn merge(items: Vec<Item>) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::new();
    for item in items {
        match out.iter_mut().find(|i| i.key == item.key) {
            Some(existing) => {
                if existing.targets == 0 && item.targets != 0 {
                    let targets = item.targets;
                    *existing = item;
                    existing.targets = targets;
                } else {
                    existing.targets |= item.targets;
                    existing.audit |= item.audit;
                }
            }
            None => out.push(item),
        }
    }
    out.retain(|i| i.targets != 0);
    out
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}::{name}")
    }
}
