//! The stubs (`spec/std/*.nk`) as items keyed by their Rust path.

use std::path::Path;

use super::{Item, ItemKind, Place, ALL_TARGETS, TARGETS};
use crate::nk::{parse_stubs, Decl, DeclKind};
use crate::trust::Audited;

/// The stubs built into the binary: `spec/std/*.nk` when it was compiled.
const BUILT_IN: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/stubs.rs"));

/// Every declaration of every stub file, with its place.
pub struct Stubs {
    pub items: Vec<Item>,
    /// Each module's stub file: (module, shown path).
    pub files: Vec<(String, String)>,
}

/// The module a stub file declares: its name without `.nk`; `prelude` is the
/// crate root.
fn module_of(file_name: &str) -> String {
    let stem = file_name.strip_suffix(".nk").unwrap_or(file_name);
    if stem == "prelude" {
        String::new()
    } else {
        stem.to_string()
    }
}

/// `fs::Root` → `Root` throughout a type: types compare by their last
/// segment.
pub fn unqualified(ty: &str) -> String {
    let mut out = String::new();
    let mut chars = ty.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            while out.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                out.pop();
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `Dir` → `dir`, `NotFound` → `not_found`.
fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}::{name}")
    }
}

impl Stubs {
    pub fn built_in() -> Result<Stubs, Vec<String>> {
        let sources = BUILT_IN
            .iter()
            .map(|(name, text)| {
                (
                    name.to_string(),
                    format!("spec/std/{name}"),
                    text.to_string(),
                )
            })
            .collect();
        Stubs::from_sources(sources)
    }

    /// The `*.nk` files of `dir`, in name order.
    pub fn read_dir(dir: &Path) -> Result<Stubs, Vec<String>> {
        let shown_dir = dir.display().to_string();
        let entries =
            std::fs::read_dir(dir).map_err(|e| vec![format!("{shown_dir}: error: {e}")])?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".nk"))
            .collect();
        names.sort();
        let mut sources = Vec::new();
        let mut errors = Vec::new();
        for name in names {
            let shown = format!("{}/{name}", shown_dir.trim_end_matches('/'));
            match std::fs::read_to_string(dir.join(&name)) {
                Ok(text) => sources.push((name, shown, text)),
                Err(e) => errors.push(format!("{shown}: error: {e}")),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Stubs::from_sources(sources)
    }

    /// (file name, shown path, text) for each stub file.
    pub fn from_sources(sources: Vec<(String, String, String)>) -> Result<Stubs, Vec<String>> {
        let mut stubs = Stubs {
            items: Vec::new(),
            files: Vec::new(),
        };
        let mut errors = Vec::new();
        for (name, shown, text) in sources {
            let module = module_of(&name);
            match parse_stubs(&text) {
                Ok(file) => {
                    stubs.files.push((module.clone(), shown.clone()));
                    let scope = Scope {
                        module: &module,
                        owner: None,
                        targets: ALL_TARGETS,
                        file: &shown,
                    };
                    for decl in &file.decls {
                        if let Err(e) = scope.add(decl, &mut stubs.items) {
                            errors.push(e);
                        }
                    }
                }
                Err(e) => errors.push(format!(
                    "{shown}:{}:{}: error: {}",
                    e.line, e.column, e.message
                )),
            }
        }
        if errors.is_empty() {
            Ok(stubs)
        } else {
            Err(errors)
        }
    }

    /// The items marked `@audit`, for `--trust`.
    pub fn audited(&self) -> Vec<Audited> {
        let split = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
        self.items
            .iter()
            .filter(|i| i.audit)
            .map(|i| Audited {
                nikaia: split(&i.shown),
                rust: split(&i.key),
            })
            .collect()
    }
}

struct Scope<'a> {
    module: &'a str,
    /// The enclosing type or enum: (Nikaia name, Rust name).
    owner: Option<(&'a str, &'a str)>,
    targets: u8,
    file: &'a str,
}

impl Scope<'_> {
    fn add(&self, decl: &Decl, out: &mut Vec<Item>) -> Result<(), String> {
        let at = |message: String| format!("{}:{}: error: {message}", self.file, decl.line);
        let mut targets = self.targets;
        let mut audit = false;
        for (name, args) in &decl.attrs {
            match name.as_str() {
                "audit" if args.is_empty() => audit = true,
                "targets" if !args.is_empty() => {
                    let mut mask = 0;
                    for a in args {
                        match TARGETS.iter().find(|(n, _)| n == a) {
                            Some((_, bit)) => mask |= bit,
                            None => {
                                return Err(at(format!(
                                    "unknown target `{a}` (known: linux, wasm32)"
                                )))
                            }
                        }
                    }
                    targets &= mask;
                }
                _ => {
                    return Err(at(format!(
                        "unknown attribute `@{name}` (known: @targets(…), @audit)"
                    )))
                }
            }
        }
        let (kind, rust_name) = match decl.kind {
            DeclKind::Builtin => return Ok(()),
            DeclKind::Fn if self.owner.is_some() && decl.name.starts_with(char::is_uppercase) => {
                (ItemKind::Fn, snake_case(&decl.name))
            }
            DeclKind::Fn => (ItemKind::Fn, decl.name.clone()),
            DeclKind::Init => (ItemKind::Fn, "new".to_string()),
            DeclKind::Type => (ItemKind::Type, decl.name.clone()),
            DeclKind::Enum => (ItemKind::Enum, decl.name.clone()),
            DeclKind::Case => (ItemKind::Case, decl.name.clone()),
            DeclKind::Trait => (ItemKind::Trait, decl.name.clone()),
            DeclKind::Field => (ItemKind::Field, decl.name.clone()),
            DeclKind::Const => (ItemKind::Const, decl.name.clone()),
            DeclKind::Body => {
                let mut row = unqualified(&decl.name);
                if let Some(e) = &decl.throws {
                    row = format!("{row} throws {}", unqualified(e));
                }
                (ItemKind::Body, format!("body {row}"))
            }
        };
        let (shown_prefix, key_prefix) = match self.owner {
            Some((n, r)) => (join(self.module, n), join(self.module, r)),
            None => (self.module.to_string(), self.module.to_string()),
        };
        let shown_name = if decl.kind == DeclKind::Body {
            rust_name.clone()
        } else {
            decl.name.clone()
        };
        let item = Item {
            key: join(&key_prefix, &rust_name),
            shown: join(&shown_prefix, &shown_name),
            kind,
            params: decl
                .params
                .iter()
                .map(|p| (p.name.clone(), unqualified(&p.ty)))
                .collect(),
            has_params: decl.has_params,
            result: decl.result.as_deref().map(unqualified),
            throws: if decl.kind == DeclKind::Body {
                None
            } else {
                decl.throws.as_deref().map(unqualified)
            },
            content_type: decl.content_type.clone(),
            targets,
            audit,
            place: Place {
                file: self.file.to_string(),
                line: decl.line,
            },
            documented: !decl.docs.is_empty(),
        };
        out.push(item);
        if !decl.members.is_empty() {
            let scope = Scope {
                module: self.module,
                owner: Some((&decl.name, &rust_name)),
                targets,
                file: self.file,
            };
            for m in &decl.members {
                scope.add(m, out)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_stubs_parse_and_mark_anywhere() {
        let stubs = Stubs::built_in().expect("the built-in stubs parse");
        let audited = stubs.audited();
        assert!(audited.iter().any(
            |a| a.nikaia == ["fs", "Root", "Anywhere"] && a.rust == ["fs", "Root", "anywhere"]
        ));
    }

    #[test]
    fn names_map_to_rust() {
        let stubs = Stubs::from_sources(vec![(
            "fs.nk".into(),
            "fs.nk".into(),
            "stubs 1\n/// r\ntype Root {\n/// d\nfn Dir(path: fs::Path) -> Root\n/// n\ninit()\n}\n".into(),
        )])
        .expect("parses");
        let keys: Vec<&str> = stubs.items.iter().map(|i| i.key.as_str()).collect();
        assert_eq!(keys, ["fs::Root", "fs::Root::dir", "fs::Root::new"]);
        assert_eq!(stubs.items[1].params[0].1, "Path");
        assert_eq!(snake_case("NotAFile"), "not_a_file");
    }
}
