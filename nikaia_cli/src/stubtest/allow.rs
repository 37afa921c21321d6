//! The stubtest allowlist: the only way to accept a disagreement, one entry
//! a line with its reason; an entry nothing matched is itself an error.

use std::path::Path;

use super::Problem;

struct Entry {
    pattern: String,
    line: usize,
    used: bool,
}

pub struct Allowlist {
    file: String,
    entries: Vec<Entry>,
    /// Entries without a reason, reported with the errors.
    bad: Vec<Problem>,
}

impl Allowlist {
    /// Reads `path`; a missing file is an empty list unless it was named.
    pub fn read(path: &Path, named: bool) -> Result<Allowlist, String> {
        let file = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => String::new(),
            Err(e) => return Err(format!("{file}: error: {e}")),
        };
        let mut list = Allowlist {
            file: file.clone(),
            entries: Vec::new(),
            bad: Vec::new(),
        };
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (pattern, reason) = match line.split_once('#') {
                Some((p, r)) => (p.trim(), r.trim()),
                None => (line, ""),
            };
            if reason.is_empty() || pattern.is_empty() {
                list.bad.push(Problem {
                    kind: "allowlist",
                    item: pattern.to_string(),
                    message: format!(
                        "allowlist entry `{pattern}` needs one item path and a reason: `ITEM  # reason`"
                    ),
                    stub: Some(format!("{file}:{}", i + 1)),
                    rust: None,
                });
                continue;
            }
            list.entries.push(Entry {
                pattern: pattern.to_string(),
                line: i + 1,
                used: false,
            });
        }
        Ok(list)
    }

    /// The problems no entry allows (with the list's own problems), and how
    /// many were allowed.
    pub fn apply(mut self, problems: Vec<Problem>) -> (Vec<Problem>, usize) {
        let mut out = Vec::new();
        let mut allowed = 0;
        for p in problems {
            match self
                .entries
                .iter_mut()
                .find(|e| matches(&e.pattern, &p.item))
            {
                Some(e) => {
                    e.used = true;
                    allowed += 1;
                }
                None => out.push(p),
            }
        }
        for e in self.entries.iter().filter(|e| !e.used) {
            out.push(Problem {
                kind: "unused-allowlist",
                item: e.pattern.clone(),
                message: format!(
                    "allowlist entry `{}` matches no error: remove it",
                    e.pattern
                ),
                stub: Some(format!("{}:{}", self.file, e.line)),
                rust: None,
            });
        }
        out.append(&mut self.bad);
        (out, allowed)
    }
}

/// `a::b` matches the item `a::b`; `a::*` matches every item under `a`
/// (and body rows are `http::body T`).
fn matches(pattern: &str, item: &str) -> bool {
    match pattern.strip_suffix("::*") {
        Some(prefix) => item.starts_with(&format!("{prefix}::")),
        None => pattern == item,
    }
}
