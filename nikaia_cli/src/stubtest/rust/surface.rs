//! What the crate exports, as the stubs' items: each exported name, its
//! inherent methods, fields and variants, the body table's rows, and each
//! signature mapped to Nikaia's types.

use super::*;

impl Crate {
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

    pub(super) fn export(&self, key: &str, def: Def, mask: u8, at: Place, out: &mut Vec<Item>) {
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
    pub(super) fn methods(&self, key: &str, name: &str, type_mask: u8, out: &mut Vec<Item>) {
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
    pub(super) fn body_rows(&self, out: &mut Vec<Item>) {
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

    pub(super) fn mentions_shim_sig(&self, sig: &Signature) -> bool {
        let mut idents = Idents::default();
        idents.visit_signature(sig);
        idents.any_in(&self.shim_traits)
    }

    pub(super) fn signature(
        &self,
        it: &mut Item,
        sig: &Signature,
        outer: &Bounds,
        self_ty: Option<&str>,
    ) {
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
