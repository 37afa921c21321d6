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

    /// The public surface: every exported item, keyed by its path from the
    /// crate root, definitions on different targets merged.
    pub fn surface(&self) -> Vec<Item> {
        let mut out: Vec<Item> = Vec::new();
        for (mi, m) in self.modules.iter().enumerate() {
            if !m.public {
                continue;
            }
            let prefix = m.path.join("::");
            for (ii, item) in m.items.iter().enumerate() {
                let attrs = item_attrs(item);
                if doc_hidden(attrs) {
                    continue;
                }
                if let SynItem::Use(u) = item {
                    if !matches!(u.vis, Visibility::Public(_)) {
                        continue;
                    }
                    let use_mask = m.mask & cfg_mask(&u.attrs);
                    for (path, name) in self.leaves(mi, &u.tree) {
                        for (def, mask) in self.resolve(mi, &path, 0) {
                            let mask = mask & use_mask;
                            let key = join(&prefix, &name);
                            let place = Place {
                                file: m.file.clone(),
                                line: u.use_token.span.start().line,
                            };
                            self.export(&key, def, mask, place, &mut out);
                        }
                    }
                } else if item_ident(item).is_some() && is_pub(item) {
                    let key = join(&prefix, &item_ident(item).unwrap_or_default());
                    let mask = m.mask & cfg_mask(attrs);
                    self.export(&key, Def::Item(mi, ii), mask, Place::default(), &mut out);
                }
            }
        }
        self.body_rows(&mut out);
        merge(out)
    }

    fn export(&self, key: &str, def: Def, mask: u8, at: Place, out: &mut Vec<Item>) {
        let (mi, ii) = match def {
            Def::Module => return,
            Def::External => {
                out.push(Item::new(key, ItemKind::Type, mask, at));
                return;
            }
            Def::Item(mi, ii) => (mi, ii),
        };
        let m = &self.modules[mi];
        let item = &m.items[ii];
        if doc_hidden(item_attrs(item)) {
            return;
        }
        let place = |line: usize| Place {
            file: m.file.clone(),
            line,
        };
        let audit = has_audit_marker(item_attrs(item));
        match item {
            SynItem::Fn(f) => {
                let mask = if self.mentions_shim_sig(&f.sig) {
                    0
                } else {
                    mask
                };
                let mut it = Item::new(
                    key,
                    ItemKind::Fn,
                    mask,
                    place(f.sig.ident.span().start().line),
                );
                self.signature(&mut it, &f.sig, &Bounds::default(), None);
                it.audit = audit;
                out.push(it);
            }
            SynItem::Struct(s) => {
                out.push(Item {
                    audit,
                    ..Item::new(
                        key,
                        ItemKind::Type,
                        mask,
                        place(s.ident.span().start().line),
                    )
                });
                if let syn::Fields::Named(fields) = &s.fields {
                    for f in &fields.named {
                        if !matches!(f.vis, Visibility::Public(_)) || doc_hidden(&f.attrs) {
                            continue;
                        }
                        let name = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
                        let mut it = Item::new(
                            &join(key, &name),
                            ItemKind::Field,
                            mask & cfg_mask(&f.attrs),
                            place(f.ident.as_ref().map_or(0, |i| i.span().start().line)),
                        );
                        it.result = Some(map_ty(&f.ty, &Bounds::default()));
                        out.push(it);
                    }
                }
                self.methods(key, &s.ident.to_string(), mask, out);
            }
            SynItem::Enum(e) => {
                out.push(Item {
                    audit,
                    ..Item::new(
                        key,
                        ItemKind::Enum,
                        mask,
                        place(e.ident.span().start().line),
                    )
                });
                for v in &e.variants {
                    if doc_hidden(&v.attrs) {
                        continue;
                    }
                    let mut it = Item::new(
                        &join(key, &v.ident.to_string()),
                        ItemKind::Case,
                        mask & cfg_mask(&v.attrs),
                        place(v.ident.span().start().line),
                    );
                    it.audit = has_audit_marker(&v.attrs);
                    match &v.fields {
                        syn::Fields::Unit => {}
                        syn::Fields::Named(f) => {
                            it.has_params = true;
                            for field in &f.named {
                                let name = field.ident.as_ref().map(|i| i.to_string());
                                it.params
                                    .push((name, map_ty(&field.ty, &Bounds::default())));
                            }
                        }
                        syn::Fields::Unnamed(f) => {
                            it.has_params = true;
                            for field in &f.unnamed {
                                it.params
                                    .push((None, map_ty(&field.ty, &Bounds::default())));
                            }
                        }
                    }
                    out.push(it);
                }
                self.methods(key, &e.ident.to_string(), mask, out);
            }
            SynItem::Type(t) => {
                let mut idents = Idents::default();
                idents.visit_type(&t.ty);
                let mask = if idents.any_in(&self.shim_traits) {
                    0
                } else {
                    mask
                };
                out.push(Item {
                    audit,
                    ..Item::new(
                        key,
                        ItemKind::Type,
                        mask,
                        place(t.ident.span().start().line),
                    )
                });
            }
            SynItem::Union(u) => {
                out.push(Item::new(
                    key,
                    ItemKind::Type,
                    mask,
                    place(u.ident.span().start().line),
                ));
            }
            SynItem::Trait(t) => {
                if self.shim_traits.contains(&t.ident.to_string()) {
                    return;
                }
                out.push(Item {
                    audit,
                    ..Item::new(
                        key,
                        ItemKind::Trait,
                        mask,
                        place(t.ident.span().start().line),
                    )
                });
            }
            SynItem::Const(c) => {
                let mut it = Item::new(
                    key,
                    ItemKind::Const,
                    mask,
                    place(c.ident.span().start().line),
                );
                it.result = Some(map_ty(&c.ty, &Bounds::default()));
                out.push(it);
            }
            SynItem::Static(s) => {
                let mut it = Item::new(
                    key,
                    ItemKind::Const,
                    mask,
                    place(s.ident.span().start().line),
                );
                it.result = Some(map_ty(&s.ty, &Bounds::default()));
                out.push(it);
            }
            _ => {}
        }
    }

    /// The `pub fn`s of every inherent `impl NAME` in the crate.
    fn methods(&self, key: &str, name: &str, type_mask: u8, out: &mut Vec<Item>) {
        for m in &self.modules {
            for item in &m.items {
                let SynItem::Impl(imp) = item else { continue };
                if imp.trait_.is_some() || type_name(&imp.self_ty).as_deref() != Some(name) {
                    continue;
                }
                let impl_mask = m.mask & cfg_mask(&imp.attrs) & type_mask;
                let bounds = Bounds::of(&imp.generics);
                for ii in &imp.items {
                    let ImplItem::Fn(f) = ii else { continue };
                    if !matches!(f.vis, Visibility::Public(_)) || doc_hidden(&f.attrs) {
                        continue;
                    }
                    let mut mask = impl_mask & cfg_mask(&f.attrs);
                    if self.mentions_shim_sig(&f.sig) {
                        mask = 0;
                    }
                    let mut it = Item::new(
                        &join(key, &f.sig.ident.to_string()),
                        ItemKind::Fn,
                        mask,
                        Place {
                            file: m.file.clone(),
                            line: f.sig.ident.span().start().line,
                        },
                    );
                    it.audit = has_audit_marker(&f.attrs);
                    self.signature(&mut it, &f.sig, &bounds, Some(name));
                    out.push(it);
                }
            }
        }
    }

    /// `impl IntoResponse for T` anywhere in the crate: `http::body T`.
    fn body_rows(&self, out: &mut Vec<Item>) {
        // The string constants of the whole crate: a row's impl may stand
        // in the backend that has its type and name the body table's
        // constant (`fs::Mapped`'s, in `linux/`).
        let consts: HashMap<String, String> = self
            .modules
            .iter()
            .flat_map(|m| &m.items)
            .filter_map(|item| match item {
                SynItem::Const(c) => match &*c.expr {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) => Some((c.ident.to_string(), s.value())),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        for m in &self.modules {
            for item in &m.items {
                let SynItem::Impl(imp) = item else { continue };
                let Some((path, _)) = &imp.trait_ else {
                    continue;
                };
                if path.segments.last().is_none_or(|s| s.ident != BODY_TRAIT) {
                    continue;
                }
                let bounds = Bounds::of(&imp.generics);
                let row = map_ty(&imp.self_ty, &bounds);
                let row = row
                    .strip_prefix('(')
                    .and_then(|r| r.strip_suffix(')'))
                    .filter(|r| r.contains(" throws "))
                    .map_or(row.clone(), str::to_string);
                let mut it = Item::new(
                    &format!("{BODY_MODULE}::body {row}"),
                    ItemKind::Body,
                    m.mask & cfg_mask(&imp.attrs),
                    Place {
                        file: m.file.clone(),
                        line: imp.impl_token.span.start().line,
                    },
                );
                let mut names = Idents::default();
                names.visit_item_impl(imp);
                it.content_type = names.order.iter().find_map(|n| consts.get(n).cloned());
                out.push(it);
            }
        }
    }

    fn mentions_shim_sig(&self, sig: &Signature) -> bool {
        let mut idents = Idents::default();
        idents.visit_signature(sig);
        idents.any_in(&self.shim_traits)
    }

    fn signature(&self, it: &mut Item, sig: &Signature, outer: &Bounds, self_ty: Option<&str>) {
        let mut bounds = outer.clone();
        bounds.add(&sig.generics);
        bounds.self_ty = self_ty.map(str::to_string).or(outer.self_ty.clone());
        it.has_params = true;
        for arg in &sig.inputs {
            match arg {
                FnArg::Receiver(_) => it.params.push((Some("self".into()), "Self".into())),
                FnArg::Typed(p) => {
                    let name = match &*p.pat {
                        Pat::Ident(i) => i.ident.to_string(),
                        _ => "_".into(),
                    };
                    it.params.push((Some(name), map_ty(&p.ty, &bounds)));
                }
            }
        }
        let (result, throws) = map_return(&sig.output, &bounds);
        it.result = result;
        it.throws = throws;
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

fn is_pub(item: &SynItem) -> bool {
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

fn item_ident(item: &SynItem) -> Option<String> {
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

fn item_attrs(item: &SynItem) -> &[Attribute] {
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
fn use_leaves(tree: &UseTree) -> Vec<(Vec<String>, String)> {
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

fn doc_hidden(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("doc")
            && matches!(&a.meta, Meta::List(l) if l.tokens.to_string().trim() == "hidden")
    })
}

/// `#[doc(alias = "nikaia-audit")]`.
fn has_audit_marker(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("doc")
            && matches!(&a.meta, Meta::List(l) if {
                let t = l.tokens.to_string();
                t.contains("alias") && t.contains(&format!("{AUDIT_ALIAS:?}"))
            })
    })
}

/// The targets an item's `#[cfg(…)]`s allow.
fn cfg_mask(attrs: &[Attribute]) -> u8 {
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

fn split_commas(stream: TokenStream) -> Vec<Vec<TokenTree>> {
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
fn cfg_predicate(tts: &[TokenTree]) -> u8 {
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

fn type_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// Every identifier, in order.
#[derive(Default)]
struct Idents {
    order: Vec<String>,
}

impl Idents {
    fn any_in(&self, set: &HashSet<String>) -> bool {
        self.order.iter().any(|i| set.contains(i))
    }
}

impl<'ast> Visit<'ast> for Idents {
    fn visit_ident(&mut self, i: &'ast proc_macro2::Ident) {
        self.order.push(i.to_string());
    }
}

/// The bounds of the type parameters in scope, and what `Self` is.
#[derive(Clone, Default)]
struct Bounds {
    params: HashMap<String, Vec<TypeParamBound>>,
    self_ty: Option<String>,
}

impl Bounds {
    fn of(generics: &Generics) -> Bounds {
        let mut b = Bounds::default();
        b.add(generics);
        b
    }

    fn add(&mut self, generics: &Generics) {
        for p in generics.type_params() {
            self.params
                .entry(p.ident.to_string())
                .or_default()
                .extend(p.bounds.iter().cloned());
        }
        if let Some(w) = &generics.where_clause {
            for pred in &w.predicates {
                if let syn::WherePredicate::Type(t) = pred {
                    if let Some(name) = type_name(&t.bounded_ty) {
                        self.params
                            .entry(name)
                            .or_default()
                            .extend(t.bounds.iter().cloned());
                    }
                }
            }
        }
    }
}

fn type_args(args: &PathArguments) -> Vec<&Type> {
    match args {
        PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn is_u8(ty: &Type) -> bool {
    type_name(ty).as_deref() == Some("u8")
}

/// The type mapping of `spec/stubs.md`, Rust → Nikaia.
fn map_ty(ty: &Type, b: &Bounds) -> String {
    match ty {
        Type::Reference(r) => map_ty(&r.elem, b),
        Type::Slice(s) if is_u8(&s.elem) => "Bytes".into(),
        Type::Slice(s) => format!("[{}]", map_ty(&s.elem, b)),
        Type::Array(a) => format!("[{}]", map_ty(&a.elem, b)),
        Type::Tuple(t) => format!(
            "({})",
            t.elems
                .iter()
                .map(|t| map_ty(t, b))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Type::ImplTrait(t) => map_bounds(t.bounds.iter(), b),
        Type::TraitObject(t) => map_bounds(t.bounds.iter(), b),
        Type::Paren(p) => map_ty(&p.elem, b),
        Type::Group(g) => map_ty(&g.elem, b),
        Type::Never(_) => "Never".into(),
        Type::Path(p) => {
            let segs = &p.path.segments;
            let Some(last) = segs.last() else {
                return "?".into();
            };
            let name = last.ident.to_string();
            let args = type_args(&last.arguments);
            let before = segs.len().checked_sub(2).map(|i| segs[i].ident.to_string());
            if segs.len() == 1 && p.qself.is_none() {
                if let Some(bounds) = b.params.get(&name) {
                    return map_bounds(bounds.iter(), b);
                }
                if name == "Self" {
                    return b.self_ty.clone().unwrap_or(name);
                }
            }
            let arg = |i: usize| {
                args.get(i)
                    .map_or_else(|| "?".to_string(), |t| map_ty(t, b))
            };
            match name.as_str() {
                "String" | "str" => "String".into(),
                "Cow" => arg(0),
                "PathBuf" | "Path" | "OsString" | "OsStr" => "Path".into(),
                "Bytes" => "Bytes".into(),
                "Vec" if args.first().is_some_and(|t| is_u8(t)) => "Bytes".into(),
                "Vec" => format!("[{}]", arg(0)),
                "bool" => "Bool".into(),
                "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
                    "Int".into()
                }
                "f32" | "f64" => "Float".into(),
                "Option" => format!("{}?", arg(0)),
                "Box" | "Arc" | "Rc" => arg(0),
                "Result" if args.len() == 2 => format!("({} throws {})", unit_none(arg(0)), arg(1)),
                "Result" if before.as_deref() == Some("io") => {
                    format!("({} throws IoError)", unit_none(arg(0)))
                }
                "Error" if before.as_deref() == Some("io") => "IoError".into(),
                _ if args.is_empty() => name,
                _ => format!(
                    "{name}<{}>",
                    args.iter()
                        .map(|t| map_ty(t, b))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
        _ => "?".into(),
    }
}

fn unit_none(s: String) -> String {
    if s == "()" {
        "()".into()
    } else {
        s
    }
}

/// `impl A + B` and `T: A + B`: the first bound that says what the value is
/// (`Send`, `Sync`, `Sized`, `Clone`, `Copy`, `Unpin` and lifetimes say
/// nothing here).
fn map_bounds<'a>(bounds: impl Iterator<Item = &'a TypeParamBound>, b: &Bounds) -> String {
    for bound in bounds {
        let TypeParamBound::Trait(t) = bound else {
            continue;
        };
        let Some(last) = t.path.segments.last() else {
            continue;
        };
        let name = last.ident.to_string();
        match name.as_str() {
            "Send" | "Sync" | "Sized" | "Clone" | "Copy" | "Unpin" => continue,
            "AsRef" | "Into" => {
                if let Some(t) = type_args(&last.arguments).first() {
                    return map_ty(t, b);
                }
            }
            "Display" | "ToString" => return "Display".into(),
            "Fn" | "FnMut" | "FnOnce" => {
                if let PathArguments::Parenthesized(p) = &last.arguments {
                    let args: Vec<String> = p.inputs.iter().map(|t| map_ty(&t.ty, b)).collect();
                    let mut out = format!("fn({})", args.join(", "));
                    if let ReturnType::Type(_, r) = &p.output {
                        out.push_str(" -> ");
                        out.push_str(&map_ty(r, b));
                    }
                    return out;
                }
            }
            "Iterator" => {
                if let PathArguments::AngleBracketed(a) = &last.arguments {
                    for g in &a.args {
                        if let GenericArgument::AssocType(t) = g {
                            return format!("[{}]", map_ty(&t.ty, b));
                        }
                    }
                }
            }
            _ => {}
        }
        return name;
    }
    "Any".into()
}

/// A function's result: `Result<T, E>` is `T throws E`, `io::Result<T>` is
/// `T throws IoError`, `()` is no result.
fn map_return(ret: &ReturnType, b: &Bounds) -> (Option<String>, Option<String>) {
    let ReturnType::Type(_, ty) = ret else {
        return (None, None);
    };
    let none_if_unit = |s: String| (s != "()").then_some(s);
    if let Type::Path(p) = &**ty {
        if let Some(last) = p.path.segments.last().filter(|l| l.ident == "Result") {
            let args = type_args(&last.arguments);
            let ok = args.first().map(|t| map_ty(t, b)).and_then(none_if_unit);
            let err = match args.get(1) {
                Some(e) => map_ty(e, b),
                None => "IoError".to_string(),
            };
            return (ok, Some(err));
        }
    }
    let mapped = map_ty(ty, b);
    (none_if_unit(mapped), None)
}
