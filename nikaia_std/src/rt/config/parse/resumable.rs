//! `[resumable]`: the tus endpoint's directory, path, expiry and caps
//! (`spec/site.md`, "Resumable uploads").

use super::tables::fields;
use super::{Checker, Value};
use crate::rt::config::resumable::Resumable;
use std::time::Duration;

/// The most any of the caps may say: far past what a disk holds.
const MAX_COUNT: std::ops::RangeInclusive<u64> = 1..=1_000_000;
const MAX_BYTES: std::ops::RangeInclusive<u64> = 1..=1 << 50;

impl Checker<'_> {
    /// `[resumable]`.
    pub(super) fn resumable(&mut self, key: &str, value: &Value<'_>) -> Option<Resumable> {
        const KNOWN: &str = "`dir`, `endpoint`, `expire`, `max-pending`, \
                             `max-pending-per-user`, `max-pending-bytes` and \
                             `max-pending-bytes-per-user`";
        let table = self.table(key, value, KNOWN)?;
        let mut r = Resumable::new(Default::default());
        let (mut ok, mut dir) = (true, false);
        for (field, v) in fields(table) {
            let name: &str = field.get_ref();
            ok &= match name {
                "dir" => {
                    dir = true;
                    self.path(key, v).map(|p| r.dir = p).is_some()
                }
                "endpoint" => self.endpoint(key, v).map(|e| r.endpoint = e).is_some(),
                "expire" => {
                    let range = Duration::from_secs(1)..=Duration::from_secs(90 * 24 * 3600);
                    self.duration(key, v, range).map(|d| r.expire = d).is_some()
                }
                "max-pending" => {
                    let n = self.count(key, v, MAX_COUNT);
                    n.map(|n| r.max_pending = n).is_some()
                }
                "max-pending-per-user" => {
                    let n = self.count(key, v, MAX_COUNT);
                    n.map(|n| r.max_pending_per_user = n).is_some()
                }
                "max-pending-bytes" => {
                    let n = self.size(key, v, MAX_BYTES, "64GiB");
                    n.map(|n| r.max_pending_bytes = n).is_some()
                }
                "max-pending-bytes-per-user" => {
                    let n = self.size(key, v, MAX_BYTES, "16GiB");
                    n.map(|n| r.max_pending_bytes_per_user = n).is_some()
                }
                other => self.unknown_field(key, field.span().start, other, KNOWN),
            };
        }
        if ok && !dir {
            let why = "`[resumable]` needs `dir`: where partial uploads are kept, outside the \
                       served directory and on its file system";
            return self.bad(key, value, why.into());
        }
        ok.then_some(r)
    }

    /// `endpoint`: an absolute path ending in `/`, without dot segments,
    /// empty segments or characters a URL would escape.
    fn endpoint(&mut self, key: &str, value: &Value<'_>) -> Option<String> {
        const WANT: &str = "an absolute path ending in `/` such as \"/.tus/\"";
        let s = self.string(key, value, WANT)?;
        let inner = s.strip_prefix('/').and_then(|s| s.strip_suffix('/'));
        let good = inner.is_some_and(|inner| {
            !inner.is_empty()
                && inner.split('/').all(|c| {
                    !c.is_empty()
                        && c != "."
                        && c != ".."
                        && c.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
                })
        });
        if good {
            Some(s.to_owned())
        } else {
            self.bad(
                key,
                value,
                format!("`endpoint`: expected {WANT}, found \"{s}\""),
            )
        }
    }
}
