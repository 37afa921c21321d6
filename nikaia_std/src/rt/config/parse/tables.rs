//! The shapes every table of the runtime file shares: arrays of tables
//! (`[[auth]]`), their fields in file order, name patterns, lists of
//! strings.

use super::{a, Checker, Value};
use crate::rt::Glob;
use toml::de::{DeTable, DeValue};

pub(super) type Fields<'t, 'i> = Vec<(&'t toml::Spanned<std::borrow::Cow<'i, str>>, &'t Value<'i>)>;

/// The fields of a table in file order.
pub(super) fn fields<'t, 'i>(table: &'t DeTable<'i>) -> Fields<'t, 'i> {
    let mut fields: Vec<_> = table.iter().collect();
    fields.sort_by_key(|(k, _)| k.span().start);
    fields
}

impl Checker<'_> {
    /// The table `value` is (`[key]` or inline), or an error naming the
    /// fields it takes.
    pub(super) fn table<'v, 'i>(
        &mut self,
        key: &str,
        value: &'v Value<'i>,
        known: &str,
    ) -> Option<&'v DeTable<'i>> {
        match value.get_ref() {
            DeValue::Table(table) => Some(table),
            other => self.bad(
                key,
                value,
                format!("expected a table with {known}, found {}", a(other)),
            ),
        }
    }

    /// The tables of an array of tables (`[[headers]]`), or an error.
    pub(super) fn tables<'v, 'i>(
        &mut self,
        key: &str,
        value: &'v Value<'i>,
    ) -> Option<Vec<&'v Value<'i>>> {
        let want = format!("a list of tables, written [[{key}]]");
        match value.get_ref() {
            DeValue::Array(items) => {
                let mut ok = true;
                for item in items {
                    if !matches!(item.get_ref(), DeValue::Table(_)) {
                        let found = a(item.get_ref());
                        self.bad::<()>(key, item, format!("expected {want}, found {found} in it"));
                        ok = false;
                    }
                }
                ok.then(|| items.iter().collect())
            }
            other => self.bad(key, value, format!("expected {want}, found {}", a(other))),
        }
    }

    /// `match`: a pattern or an array of them, not empty.
    pub(super) fn patterns(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<Glob>> {
        const WANT: &str =
            "`match`: expected a name pattern such as \"*.html\" or an array of them";
        let items: Vec<&Value<'_>> = match value.get_ref() {
            DeValue::String(_) => vec![value],
            DeValue::Array(items) if !items.is_empty() => items.iter().collect(),
            DeValue::Array(_) => {
                return self.bad(key, value, format!("{WANT}; an empty list matches nothing"))
            }
            other => return self.bad(key, value, format!("{WANT}, found {}", a(other))),
        };
        let mut globs = Vec::new();
        let mut ok = true;
        for item in items {
            let DeValue::String(text) = item.get_ref() else {
                let found = a(item.get_ref());
                self.bad::<()>(key, item, format!("{WANT}, found {found} in it"));
                ok = false;
                continue;
            };
            match Glob::new(text) {
                Ok(glob) => globs.push(glob),
                Err(why) => {
                    self.bad::<()>(key, item, format!("bad pattern: {why}"));
                    ok = false;
                }
            }
        }
        ok.then_some(globs)
    }

    /// An array of strings, each checked by `each` (which reports).
    pub(super) fn strings(
        &mut self,
        key: &str,
        field: &str,
        value: &Value<'_>,
        want: &str,
        mut each: impl FnMut(&mut Self, &Value<'_>, &str) -> Option<String>,
    ) -> Option<Vec<String>> {
        let DeValue::Array(items) = value.get_ref() else {
            let found = a(value.get_ref());
            return self.bad(
                key,
                value,
                format!("`{field}`: expected {want}, found {found}"),
            );
        };
        let mut out = Vec::new();
        let mut ok = true;
        for item in items {
            let DeValue::String(s) = item.get_ref() else {
                let found = a(item.get_ref());
                self.bad::<()>(
                    key,
                    item,
                    format!("`{field}`: expected {want}, found {found} in it"),
                );
                ok = false;
                continue;
            };
            match each(self, item, s) {
                Some(s) => out.push(s),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// Each table of an array of tables (`[[key]]`) made into a rule by
    /// `rule`, which reports a table's problems and gives `None` for it; the
    /// rules in file order, or `None` when any table had a problem.
    pub(super) fn each_rule<'i, T>(
        &mut self,
        key: &str,
        value: &Value<'i>,
        mut rule: impl for<'t> FnMut(&mut Self, &'t Value<'i>, Fields<'t, 'i>) -> Option<T>,
    ) -> Option<Vec<T>> {
        let mut rules = Vec::new();
        let mut ok = true;
        for item in self.tables(key, value)? {
            let DeValue::Table(table) = item.get_ref() else {
                continue;
            };
            match rule(self, item, fields(table)) {
                Some(r) => rules.push(r),
                None => ok = false,
            }
        }
        ok.then_some(rules)
    }

    pub(super) fn unknown_field(&mut self, key: &str, at: usize, field: &str, known: &str) -> bool {
        let message = format!("unknown field `{field}`; the fields are {known}");
        self.error(at, Some(key), message);
        false
    }
}
