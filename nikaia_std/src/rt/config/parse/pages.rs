//! The keys of the directory handler's pages: `cache-control`,
//! `not-found`, `fallback`, `fallback-for` and `index` (`spec/runtime-file.md`,
//! "Headers and pages").

use super::{a, Checker, Value};
use crate::rt::{CacheControl, FallbackFor, Glob};
use toml::de::DeValue;

impl Checker<'_> {
    /// `index`: an array of file names (no `/`), tried in order; `[]` for
    /// none (a directory is then listed, or 404).
    pub(super) fn index_names(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<String>> {
        const WANT: &str = "an array of file names such as [\"index.html\", \"index.htm\"]";
        let DeValue::Array(items) = value.get_ref() else {
            let found = a(value.get_ref());
            return self.bad(key, value, format!("expected {WANT}, found {found}"));
        };
        let mut names: Vec<String> = Vec::with_capacity(items.len());
        let mut ok = true;
        for item in items {
            let DeValue::String(name) = item.get_ref() else {
                let found = a(item.get_ref());
                ok &= self
                    .bad::<()>(key, item, format!("expected {WANT}, found {found}"))
                    .is_some();
                continue;
            };
            let why = if name.is_empty() {
                Some("an empty name".to_string())
            } else if name.contains(['/', '\\', '\0']) {
                Some(format!("\"{name}\" is not one file name (no `/`)"))
            } else if name == "." || name == ".." {
                Some(format!("\"{name}\" is not a file name"))
            } else if names.iter().any(|n| n == name.as_ref()) {
                Some(format!("\"{name}\" is named twice"))
            } else {
                None
            };
            match why {
                Some(why) => {
                    ok &= self
                        .bad::<()>(key, item, format!("expected {WANT}; {why}"))
                        .is_some()
                }
                None => names.push(name.to_string()),
            }
        }
        ok.then_some(names)
    }

    /// `fallback-for`: `"navigations"` or `"all"`.
    pub(super) fn fallback_for(&mut self, key: &str, value: &Value<'_>) -> Option<FallbackFor> {
        const WANT: &str =
            "\"navigations\" (a missing asset stays 404) or \"all\" (every missing name)";
        match value.get_ref() {
            DeValue::String(s) if s == "navigations" => Some(FallbackFor::Navigations),
            DeValue::String(s) if s == "all" => Some(FallbackFor::All),
            DeValue::String(s) => self.bad(key, value, format!("expected {WANT}, found \"{s}\"")),
            other => self.bad(key, value, format!("expected {WANT}, found {}", a(other))),
        }
    }

    /// `cache-control`: a value for every file (a string), or a table of
    /// `"PATTERN" = "VALUE"` rules with an optional `default`.
    pub(super) fn cache_control(&mut self, key: &str, value: &Value<'_>) -> Option<CacheControl> {
        const WANT: &str = "a header value such as \"no-cache\", or a table of \
                            \"PATTERN\" = \"VALUE\" rules and an optional `default`";
        let table = match value.get_ref() {
            DeValue::String(s) => {
                let default = self.header_value(key, value, s)?;
                return Some(CacheControl {
                    default: Some(default),
                    rules: Vec::new(),
                });
            }
            DeValue::Table(table) => table,
            other => return self.bad(key, value, format!("expected {WANT}, found {}", a(other))),
        };
        let mut entries: Vec<_> = table.iter().collect();
        entries.sort_by_key(|(pattern, _)| pattern.span().start);
        let mut out = CacheControl::default();
        let mut ok = true;
        for (pattern, rule) in entries {
            let text: &str = pattern.get_ref();
            let value = match rule.get_ref() {
                DeValue::String(s) => self.header_value(key, rule, s),
                other => self.bad(
                    key,
                    rule,
                    format!(
                        "expected a header value such as \"no-cache\" for \"{text}\", found {}",
                        a(other)
                    ),
                ),
            };
            if text == "default" {
                out.default = value;
                ok &= out.default.is_some();
                continue;
            }
            let glob = match Glob::new(text) {
                Ok(glob) => Some(glob),
                Err(why) => {
                    self.error(
                        pattern.span().start,
                        Some(key),
                        format!("bad pattern: {why}"),
                    );
                    None
                }
            };
            match (glob, value) {
                (Some(glob), Some(value)) => out.rules.push((glob, value)),
                _ => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// `not-found`, `fallback`: a name under the served root, relative and
    /// without `..`, never a host path.
    pub(super) fn served_name(&mut self, key: &str, value: &Value<'_>) -> Option<String> {
        const WANT: &str = "a name under the served directory such as \"404.html\"";
        let name = self.string(key, value, WANT)?;
        let why = if name.is_empty() {
            "found an empty string".to_string()
        } else if name.starts_with(['/', '\\']) || name.get(1..2) == Some(":") {
            format!("found the host path \"{name}\"; write it relative to the served directory")
        } else if name.split('/').any(|c| c == "..") {
            format!("found \"{name}\", which leaves the served directory (`..`)")
        } else if name.contains('\0') {
            "found a NUL character".to_string()
        } else if name.ends_with('/') {
            format!("found \"{name}\", a directory; name the file (\"{name}index.html\")")
        } else {
            return Some(name.to_owned());
        };
        self.bad(key, value, format!("expected {WANT}; {why}"))
    }
}
