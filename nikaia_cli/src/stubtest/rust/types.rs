//! Rust's types as the stubs spell them (`spec/stubs.md`, "Types"): the
//! bounds in scope, and the mapping Rust → Nikaia.

use super::*;

pub(super) fn type_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// Every identifier, in order.
#[derive(Default)]
pub(super) struct Idents {
    pub(super) order: Vec<String>,
}

impl Idents {
    pub(super) fn any_in(&self, set: &HashSet<String>) -> bool {
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
pub(super) struct Bounds {
    params: HashMap<String, Vec<TypeParamBound>>,
    pub(super) self_ty: Option<String>,
}

impl Bounds {
    pub(super) fn of(generics: &Generics) -> Bounds {
        let mut b = Bounds::default();
        b.add(generics);
        b
    }

    pub(super) fn add(&mut self, generics: &Generics) {
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

pub(super) fn type_args(args: &PathArguments) -> Vec<&Type> {
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

pub(super) fn is_u8(ty: &Type) -> bool {
    type_name(ty).as_deref() == Some("u8")
}

/// The type mapping of `spec/stubs.md`, Rust → Nikaia.
pub(super) fn map_ty(ty: &Type, b: &Bounds) -> String {
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

pub(super) fn unit_none(s: String) -> String {
    if s == "()" {
        "()".into()
    } else {
        s
    }
}

/// `impl A + B` and `T: A + B`: the first bound that says what the value is
/// (`Send`, `Sync`, `Sized`, `Clone`, `Copy`, `Unpin` and lifetimes say
/// nothing here).
pub(super) fn map_bounds<'a>(
    bounds: impl Iterator<Item = &'a TypeParamBound>,
    b: &Bounds,
) -> String {
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
pub(super) fn map_return(ret: &ReturnType, b: &Bounds) -> (Option<String>, Option<String>) {
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
