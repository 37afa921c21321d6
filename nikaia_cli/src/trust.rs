//! `nikaia --trust`: every site in a program that constructs
//! `fs::Root::Anywhere`, the audited way around the root check, or any other
//! item the stubs (`spec/std/*.nk`) mark `@audit`.
//! Normative text: `spec/trust.md`.

mod nk;
mod rust;
mod walk;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use walk::{language, Language};

/// One site found in a file: 1-based line and column (in characters), and the
/// enclosing context (`fn name`, `route "/path"`, or `-`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub line: usize,
    pub column: usize,
    pub context: String,
}

/// A file that could not be scanned, with the place the scanner names.
pub type ScanError = crate::nk::SyntaxError;

/// An audited item: its path in Nikaia (`fs::Root::Anywhere`) and in Rust
/// (`fs::Root::anywhere`), both relative to std. The list comes from the
/// stubs' `@audit` marker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Audited {
    pub nikaia: Vec<String>,
    pub rust: Vec<String>,
}

impl Audited {
    #[cfg(test)]
    pub fn anywhere() -> Audited {
        let path = |p: &[&str]| p.iter().map(|s| s.to_string()).collect();
        Audited {
            nikaia: path(&["fs", "Root", "Anywhere"]),
            rust: path(&["fs", "Root", "anywhere"]),
        }
    }
}

/// The sites in one source text, by language.
pub fn scan(
    language: Language,
    source: &str,
    audited: &[Audited],
) -> Result<Vec<Found>, ScanError> {
    match language {
        Language::Rust => rust::scan(source, audited),
        Language::Nikaia => nk::scan(source, audited),
    }
}

#[derive(Serialize, Debug)]
pub struct Site {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub context: String,
    pub source: String,
}

#[derive(Serialize, Debug)]
pub struct FileError {
    pub path: String,
    pub message: String,
}

#[derive(Serialize, Debug, Default)]
pub struct Report {
    pub sites: Vec<Site>,
    pub files_with_sites: usize,
    pub errors: Vec<FileError>,
}

/// What `--trust` was asked for.
pub struct Options {
    pub paths: Vec<PathBuf>,
    /// The stubs to take the audited items from (default: those built in).
    pub stubs: Option<PathBuf>,
    pub json: bool,
    pub deny: bool,
}

/// Scans the files under `roots` (each a directory or a file).
/// The second value is true when a root itself could not be read.
pub fn audit(roots: &[PathBuf], audited: &[Audited]) -> (Report, bool) {
    let mut files = Vec::new();
    let mut walk_errors = Vec::new();
    for root in roots {
        walk::files(root, &mut files, &mut walk_errors);
    }
    let bad_operand = walk_errors.iter().any(|(p, _)| roots.contains(p));
    let mut report = Report::default();
    for (path, error) in walk_errors {
        report.errors.push(FileError {
            path: walk::display(&path),
            message: error.to_string(),
        });
    }
    let mut files: Vec<(String, PathBuf)> =
        files.into_iter().map(|p| (walk::display(&p), p)).collect();
    files.sort();
    files.dedup();
    for (shown, path) in files {
        scan_file(&shown, &path, audited, &mut report);
    }
    (report, bad_operand)
}

fn scan_file(shown: &str, path: &Path, audited: &[Audited], report: &mut Report) {
    let Some(language) = language(path) else {
        return;
    };
    let source = match std::fs::read(path).map(String::from_utf8) {
        Ok(Ok(source)) => source,
        Ok(Err(_)) => return error(report, shown, "not valid UTF-8".into()),
        Err(e) => return error(report, shown, e.to_string()),
    };
    match scan(language, &source, audited) {
        Ok(found) => {
            if !found.is_empty() {
                report.files_with_sites += 1;
            }
            let lines: Vec<&str> = source.lines().collect();
            for f in found {
                let line = lines.get(f.line.wrapping_sub(1)).copied().unwrap_or("");
                report.sites.push(Site {
                    path: shown.to_string(),
                    line: f.line,
                    column: f.column,
                    context: f.context,
                    source: line.trim().to_string(),
                });
            }
        }
        Err(e) => error(
            report,
            shown,
            format!("{} ({}:{})", e.message, e.line, e.column),
        ),
    }
}

fn error(report: &mut Report, path: &str, message: String) {
    report.errors.push(FileError {
        path: path.to_string(),
        message,
    });
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Report {
    /// The text form: one line per site, then the count.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for s in &self.sites {
            let _ = writeln!(
                out,
                "{}:{}:{}  {}  {}",
                s.path, s.line, s.column, s.context, s.source
            );
        }
        let _ = writeln!(
            out,
            "{} in {}",
            plural(self.sites.len(), "Anywhere site", "Anywhere sites"),
            plural(self.files_with_sites, "file", "files")
        );
        out
    }

    pub fn json(&self) -> String {
        let mut out = serde_json::to_string_pretty(self).unwrap_or_default();
        out.push('\n');
        out
    }
}

/// Runs `nikaia --trust`; returns the exit status.
pub fn run(options: Options) -> u8 {
    let paths = if options.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        options.paths
    };
    let stubs = match &options.stubs {
        Some(dir) => crate::stubtest::stubs::Stubs::read_dir(dir),
        None => crate::stubtest::stubs::Stubs::built_in(),
    };
    let stubs = match stubs {
        Ok(stubs) => stubs,
        Err(errors) => {
            for e in errors {
                eprintln!("{e}");
            }
            return 2;
        }
    };
    let (report, bad_operand) = audit(&paths, &stubs.audited());
    for e in &report.errors {
        eprintln!("{}: error: {}", e.path, e.message);
    }
    if options.json {
        print!("{}", report.json());
    } else {
        print!("{}", report.text());
    }
    if bad_operand {
        2
    } else if options.deny && !report.sites.is_empty() {
        1
    } else {
        0
    }
}
