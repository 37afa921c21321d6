//! Which files `nikaia --trust` reads.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The languages the scan knows, by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    Rust,
    Nikaia,
}

pub fn language(path: &Path) -> Option<Language> {
    match path.extension()?.to_str()? {
        "rs" => Some(Language::Rust),
        "nk" => Some(Language::Nikaia),
        _ => None,
    }
}

/// A directory the walk does not enter: `target`, and any name starting
/// with `.` (`.git` among them).
fn skipped(name: &str) -> bool {
    name == "target" || name.starts_with('.')
}

/// The `.rs` and `.nk` files under `root` (or `root` itself when it is such a
/// file), in sorted order. Problems reading a directory are returned beside
/// the files found.
pub fn files(root: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<(PathBuf, io::Error)>) {
    let meta = match fs::metadata(root) {
        Ok(meta) => meta,
        Err(e) => {
            errors.push((root.to_path_buf(), e));
            return;
        }
    };
    if meta.is_dir() {
        dir(root, out, errors);
    } else if language(root).is_some() {
        out.push(root.to_path_buf());
    } else {
        errors.push((
            root.to_path_buf(),
            io::Error::other("not a directory, a .rs file or a .nk file"),
        ));
    }
}

fn dir(path: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<(PathBuf, io::Error)>) {
    let entries = match fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) => {
            errors.push((path.to_path_buf(), e));
            return;
        }
    };
    let mut entries: Vec<fs::DirEntry> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            let name = entry.file_name();
            if !skipped(&name.to_string_lossy()) {
                dir(&path, out, errors);
            }
        } else if language(&path).is_some() {
            // A symbolic link is read when it leads to a file; links to
            // directories are not followed (no loops).
            let is_file = if kind.is_symlink() {
                fs::metadata(&path).is_ok_and(|m| m.is_file())
            } else {
                kind.is_file()
            };
            if is_file {
                out.push(path);
            }
        }
    }
}

/// How a walked path is shown: as walked, without a leading `./`.
pub fn display(path: &Path) -> String {
    path.strip_prefix(".")
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}
