//! `nikaia stubtest`: the stubs (`spec/std/*.nk`, what the Nikaia compiler
//! type-checks programs against) checked against nikaia_std's Rust source,
//! both ways. Normative text: `spec/stubs.md`.

mod allow;
mod rust;
pub mod stubs;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub const LINUX: u8 = 1;
pub const WASM32: u8 = 2;
pub const ALL_TARGETS: u8 = LINUX | WASM32;
/// The targets by the names attributes use.
pub const TARGETS: [(&str, u8); 2] = [("linux", LINUX), ("wasm32", WASM32)];

/// What an item is; a stub declaration and its Rust item must agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    Fn,
    Type,
    Enum,
    Case,
    Trait,
    Field,
    Const,
    Body,
}

impl ItemKind {
    fn word(self) -> &'static str {
        match self {
            ItemKind::Fn => "fn",
            ItemKind::Type => "type",
            ItemKind::Enum => "enum",
            ItemKind::Case => "case",
            ItemKind::Trait => "trait",
            ItemKind::Field => "let",
            ItemKind::Const => "const",
            ItemKind::Body => "body",
        }
    }
}

/// A file and a 1-based line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub line: usize,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One item of the surface, from either side, under the type mapping.
#[derive(Clone, Debug)]
pub struct Item {
    /// The Rust path from the crate root (`fs::Root::anywhere`); body rows
    /// are `http::body T`.
    pub key: String,
    /// The Nikaia path (`fs::Root::Anywhere`); the key on the Rust side.
    pub shown: String,
    pub kind: ItemKind,
    pub params: Vec<(Option<String>, String)>,
    pub has_params: bool,
    pub result: Option<String>,
    pub throws: Option<String>,
    pub content_type: Option<String>,
    pub targets: u8,
    pub audit: bool,
    pub place: Place,
    pub documented: bool,
}

impl Item {
    pub fn new(key: &str, kind: ItemKind, targets: u8, place: Place) -> Item {
        Item {
            key: key.to_string(),
            shown: key.to_string(),
            kind,
            params: Vec::new(),
            has_params: false,
            result: None,
            throws: None,
            content_type: None,
            targets,
            audit: false,
            place,
            documented: true,
        }
    }

    fn params_text(&self) -> String {
        if !self.has_params {
            return String::new();
        }
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(name, ty)| match name.as_deref() {
                Some("self") => "self".to_string(),
                Some(n) => format!("{n}: {ty}"),
                None => ty.clone(),
            })
            .collect();
        format!("({})", params.join(", "))
    }

    fn result_text(&self) -> String {
        let mut out = String::new();
        if let Some(r) = &self.result {
            let arrow = if self.kind == ItemKind::Fn {
                " -> "
            } else {
                ": "
            };
            let _ = write!(out, "{arrow}{r}");
        }
        if let Some(e) = &self.throws {
            let _ = write!(out, " throws {e}");
        }
        out
    }

    /// One line of the normalized surface.
    pub fn normalized(&self) -> String {
        // A body row's path already says `body`: `http::body String`.
        let word = if self.kind == ItemKind::Body {
            String::new()
        } else {
            format!("{} ", self.kind.word())
        };
        let mut out = format!(
            "{word}{}{}{}",
            self.shown,
            self.params_text(),
            self.result_text()
        );
        if let Some(ct) = &self.content_type {
            let _ = write!(out, " {ct:?}");
        }
        if self.targets != ALL_TARGETS {
            let _ = write!(out, " @targets({})", targets_text(self.targets));
        }
        if self.audit {
            out.push_str(" @audit");
        }
        out
    }
}

fn targets_text(mask: u8) -> String {
    let names: Vec<&str> = TARGETS
        .iter()
        .filter(|(_, bit)| mask & bit != 0)
        .map(|(n, _)| *n)
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// One disagreement.
#[derive(Clone, Debug, Serialize)]
pub struct Problem {
    pub kind: &'static str,
    /// The item's Rust path (what allowlist entries match).
    pub item: String,
    pub message: String,
    pub stub: Option<String>,
    pub rust: Option<String>,
}

/// Compares the two sides. `rust_files` gives each module's Rust file,
/// `stub_files` each module's stub file, for items one side lacks.
fn compare(
    stubs: &[Item],
    rust: &[Item],
    stub_files: &[(String, String)],
    rust_files: &std::collections::HashMap<String, String>,
    stubs_dir: &str,
) -> Vec<Problem> {
    let by_key = |items: &[Item]| -> BTreeMap<String, Item> {
        items.iter().map(|i| (i.key.clone(), i.clone())).collect()
    };
    let (s, r) = (by_key(stubs), by_key(rust));
    let mut out = Vec::new();
    let owner_of = |key: &str| -> String {
        let key = key.split(' ').next().unwrap_or(key);
        key.rsplit_once("::")
            .map_or(String::new(), |(o, _)| o.to_string())
    };
    let module_of = |key: &str| -> String {
        let mut owner = owner_of(key);
        while !owner.is_empty() && !rust_files.contains_key(&owner) {
            owner = owner_of(&owner);
        }
        owner
    };
    for (key, stub) in &s {
        let Some(rust) = r.get(key) else {
            let place = r
                .get(&owner_of(key))
                .map(|o| o.place.to_string())
                .or_else(|| rust_files.get(&module_of(key)).map(|f| format!("{f}:1")));
            out.push(Problem {
                kind: "missing-rust",
                item: key.clone(),
                message: format!(
                    "{}: declared in the stub, not present in nikaia_std (looked for {key})",
                    stub.shown
                ),
                stub: Some(stub.place.to_string()),
                rust: place,
            });
            continue;
        };
        let problem = |kind: &'static str, message: String| Problem {
            kind,
            item: key.clone(),
            message: format!("{}: {message}", stub.shown),
            stub: Some(stub.place.to_string()),
            rust: Some(rust.place.to_string()),
        };
        if stub.kind != rust.kind {
            out.push(problem(
                "kind",
                format!(
                    "inconsistent: the stub declares a `{}`, nikaia_std has a `{}`",
                    stub.kind.word(),
                    rust.kind.word()
                ),
            ));
            continue;
        }
        if (stub.has_params || rust.has_params) && stub.params != rust.params {
            out.push(problem(
                "params",
                format!(
                    "parameters differ: stub {}, Rust {}",
                    show_params(stub),
                    show_params(rust)
                ),
            ));
        }
        if stub.result != rust.result || stub.throws != rust.throws {
            let show = |i: &Item| {
                let t = i.result_text();
                if t.is_empty() {
                    "nothing".to_string()
                } else {
                    t.trim_start_matches(" -> ")
                        .trim_start_matches(": ")
                        .trim()
                        .to_string()
                }
            };
            out.push(problem(
                "result",
                format!("result differs: stub {}, Rust {}", show(stub), show(rust)),
            ));
        }
        if stub.kind == ItemKind::Body && stub.content_type != rust.content_type {
            let show =
                |c: &Option<String>| c.as_ref().map_or("none".to_string(), |c| format!("{c:?}"));
            out.push(problem(
                "content-type",
                format!(
                    "content type differs: stub {}, Rust {}",
                    show(&stub.content_type),
                    show(&rust.content_type)
                ),
            ));
        }
        if stub.targets != rust.targets {
            out.push(problem(
                "targets",
                format!(
                    "targets differ: stub {}, Rust {} (by its cfg)",
                    targets_text(stub.targets),
                    targets_text(rust.targets)
                ),
            ));
        }
        if stub.audit != rust.audit {
            let (has, lacks) = if stub.audit {
                (
                    "the stub has @audit",
                    "the Rust item has no #[doc(alias = \"nikaia-audit\")]",
                )
            } else {
                (
                    "the Rust item has #[doc(alias = \"nikaia-audit\")]",
                    "the stub has no @audit",
                )
            };
            out.push(problem(
                "audit",
                format!("audit marker on one side only: {has}, {lacks}"),
            ));
        }
        if !stub.documented {
            out.push(problem(
                "undocumented",
                "the declaration has no doc comment".into(),
            ));
        }
    }
    for (key, rust) in &r {
        if s.contains_key(key) {
            continue;
        }
        let module = module_of(key);
        let place = s
            .get(&owner_of(key))
            .map(|o| o.place.to_string())
            .or_else(|| {
                Some(stub_files.iter().find(|(m, _)| *m == module).map_or_else(
                    || {
                        let name = if module.is_empty() {
                            "prelude"
                        } else {
                            &module
                        };
                        format!("{stubs_dir}/{name}.nk (no such file)")
                    },
                    |(_, f)| format!("{f}:1"),
                ))
            });
        out.push(Problem {
            kind: "missing-stub",
            item: key.clone(),
            message: format!(
                "{key}: exported by nikaia_std, not present in the stubs (Rust: {})",
                rust.normalized()
            ),
            stub: place,
            rust: Some(rust.place.to_string()),
        });
    }
    out
}

fn show_params(i: &Item) -> String {
    if i.has_params {
        i.params_text()
    } else {
        "none".into()
    }
}

/// What `nikaia stubtest` was asked for.
pub struct Options {
    pub stubs: PathBuf,
    pub krate: PathBuf,
    pub allowlist: Option<PathBuf>,
    pub json: bool,
    pub surface: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    errors: &'a [Problem],
    checked: usize,
    allowlisted: usize,
}

/// Runs `nikaia stubtest`; returns the exit status (0 clean, 1 any error,
/// 2 when the stubs or the crate cannot be read).
pub fn run(options: Options) -> u8 {
    let stubs = match stubs::Stubs::read_dir(&options.stubs) {
        Ok(stubs) => stubs,
        Err(errors) => {
            for e in errors {
                eprintln!("{e}");
            }
            return 2;
        }
    };
    if options.surface {
        let mut lines: Vec<String> = stubs.items.iter().map(Item::normalized).collect();
        lines.sort();
        for l in lines {
            println!("{l}");
        }
        return 0;
    }
    let krate = match rust::Crate::read(&options.krate) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let allow_path = options
        .allowlist
        .clone()
        .unwrap_or_else(|| options.stubs.join("stubtest-allowlist.txt"));
    let allowlist = match allow::Allowlist::read(&allow_path, options.allowlist.is_some()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    let rust_items = krate.surface();
    let stubs_dir = options.stubs.display().to_string();
    let problems = compare(
        &stubs.items,
        &rust_items,
        &stubs.files,
        &krate.module_files(),
        stubs_dir.trim_end_matches('/'),
    );
    let (errors, allowlisted) = allowlist.apply(problems);
    let checked = stubs.items.len();
    if options.json {
        let report = Report {
            errors: &errors,
            checked,
            allowlisted,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}", text(&errors, checked, allowlisted, &options.krate));
    }
    u8::from(!errors.is_empty())
}

fn text(errors: &[Problem], checked: usize, allowlisted: usize, krate: &Path) -> String {
    let mut out = String::new();
    for e in errors {
        let _ = writeln!(out, "error[{}]: {}", e.kind, e.message);
        if let Some(s) = &e.stub {
            let _ = writeln!(out, "    stub: {s}");
        }
        if let Some(r) = &e.rust {
            let _ = writeln!(out, "    rust: {r}");
        }
    }
    let crate_name = krate.display();
    if errors.is_empty() {
        let _ = writeln!(
            out,
            "stubtest: no errors ({checked} declarations checked against {crate_name}, {allowlisted} errors allowlisted)"
        );
    } else {
        let _ = writeln!(
            out,
            "stubtest: {} error{} ({checked} declarations checked against {crate_name}, {allowlisted} errors allowlisted)",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" }
        );
    }
    out
}
