//! `nikaia --trust`: every site in a program that constructs
//! `fs::Root::Anywhere`, the audited way around the root check.
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

/// The sites in one source text, by language.
pub fn scan(language: Language, source: &str) -> Result<Vec<Found>, ScanError> {
    match language {
        Language::Rust => rust::scan(source),
        Language::Nikaia => nk::scan(source),
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
    pub json: bool,
    pub deny: bool,
}

/// Scans the files under `roots` (each a directory or a file).
/// The second value is true when a root itself could not be read.
pub fn audit(roots: &[PathBuf]) -> (Report, bool) {
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
        scan_file(&shown, &path, &mut report);
    }
    (report, bad_operand)
}

fn scan_file(shown: &str, path: &Path, report: &mut Report) {
    let Some(language) = language(path) else {
        return;
    };
    let source = match std::fs::read(path).map(String::from_utf8) {
        Ok(Ok(source)) => source,
        Ok(Err(_)) => return error(report, shown, "not valid UTF-8".into()),
        Err(e) => return error(report, shown, e.to_string()),
    };
    match scan(language, &source) {
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
    let (report, bad_operand) = audit(&paths);
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
