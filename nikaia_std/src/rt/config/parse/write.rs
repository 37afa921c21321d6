//! `[[write]]`: who may put files under which names, and how
//! (`spec/site.md`, "Writes").

use super::{Checker, Value, BODY_LIMIT};
use crate::fs::Durability;
use crate::rt::config::site::{AppleDouble, WriteRule};

impl Checker<'_> {
    /// `[[write]]`.
    pub(super) fn write_rules(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<WriteRule>> {
        const KNOWN: &str = "`match`, `writers`, `anyone`, `create`, `replace`, `delete`, \
                             `delete-dirs`, `make-dirs`, `max-size`, `durability`, `trusted`, \
                             `plain-http` and `webdav`";
        self.each_rule(key, value, |this, item, fields| {
            let mut rule = WriteRule::new();
            let mut good = true;
            let (mut matched, mut writers) = (false, false);
            for (field, v) in fields {
                let name: &str = field.get_ref();
                let flag = |this: &mut Self, to: &mut bool| this.boolean(key, v).map(|b| *to = b);
                good &= match name {
                    "match" => {
                        matched = true;
                        this.patterns(key, v).map(|p| rule.patterns = p).is_some()
                    }
                    "writers" => {
                        writers = true;
                        let want = "user names from the htpasswd file, such as [\"alice\"]";
                        let users = this.strings(key, "writers", v, want, |this, item, s| {
                            if s.is_empty() || s.contains(':') {
                                let why = format!("`writers`: \"{s}\" is not a user name");
                                return this.bad(key, item, why);
                            }
                            Some(s.to_owned())
                        });
                        users.map(|u| rule.writers = u).is_some()
                    }
                    "anyone" => flag(this, &mut rule.anyone).is_some(),
                    "create" => flag(this, &mut rule.create).is_some(),
                    "replace" => flag(this, &mut rule.replace).is_some(),
                    "delete" => flag(this, &mut rule.delete).is_some(),
                    "delete-dirs" => flag(this, &mut rule.delete_dirs).is_some(),
                    "make-dirs" => flag(this, &mut rule.make_dirs).is_some(),
                    "trusted" => flag(this, &mut rule.trusted).is_some(),
                    "plain-http" => flag(this, &mut rule.plain_http).is_some(),
                    "webdav" => flag(this, &mut rule.webdav).is_some(),
                    "max-size" => {
                        let size = this.size(key, v, BODY_LIMIT, "100MiB");
                        size.map(|s| rule.max_size = Some(s)).is_some()
                    }
                    "durability" => match this.string(key, v, "\"none\", \"data\" or \"full\"") {
                        Some("none") => {
                            rule.durability = Durability::None;
                            true
                        }
                        Some("data") => {
                            rule.durability = Durability::Data;
                            true
                        }
                        Some("full") => {
                            rule.durability = Durability::Full;
                            true
                        }
                        Some(other) => {
                            let why = format!(
                                "`durability`: expected \"none\", \"data\" or \"full\", found \"{other}\""
                            );
                            this.bad(key, v, why).unwrap_or(false)
                        }
                        None => false,
                    },
                    other => this.unknown_field(key, field.span().start, other, KNOWN),
                };
            }
            if good && !matched {
                this.bad::<()>(key, item, "a write rule needs `match`".into());
                good = false;
            }
            // Who writes is said, never assumed: no writers and no
            // `anyone` would be a rule nobody can use, or (read the other
            // way) one everybody can.
            if good && writers == rule.anyone {
                let why = match rule.anyone {
                    true => "a write rule has `writers` or `anyone = true`, not both",
                    false => {
                        "a write rule needs `writers` (users of the [[auth]] rule that protects \
                         its names) or `anyone = true`"
                    }
                };
                this.bad::<()>(key, item, why.into());
                good = false;
            }
            if good && rule.writers.is_empty() && !rule.anyone {
                this.bad::<()>(key, item, "`writers` is empty: name at least one user".into());
                good = false;
            }
            if good && !(rule.create || rule.replace || rule.delete || rule.delete_dirs) {
                let why = "a write rule that allows nothing (`create`, `replace`, `delete` and \
                           `delete-dirs` all false)";
                this.bad::<()>(key, item, why.into());
                good = false;
            }
            good.then_some(rule)
        })
    }

    /// `apple-double`: `"refuse"` or `"discard"`.
    pub(super) fn apple_double(&mut self, key: &str, value: &Value<'_>) -> Option<AppleDouble> {
        match self.string(key, value, "\"refuse\" or \"discard\"")? {
            "refuse" => Some(AppleDouble::Refuse),
            "discard" => Some(AppleDouble::Discard),
            other => {
                let why = format!("expected \"refuse\" or \"discard\", found \"{other}\"");
                self.bad(key, value, why)
            }
        }
    }
}
