//! `[webdav-locks]`: the locks' directory, longest timeout and bounds
//! (`spec/site.md`, "WebDAV class 2: locks").

use super::tables::fields;
use super::{Checker, Value};
use crate::rt::config::locks::WebdavLocks;
use std::time::Duration;

/// The most either bound may say.
const MAX_COUNT: std::ops::RangeInclusive<u64> = 1..=1_000_000;

impl Checker<'_> {
    /// `[webdav-locks]`.
    pub(super) fn webdav_locks(&mut self, key: &str, value: &Value<'_>) -> Option<WebdavLocks> {
        const KNOWN: &str = "`dir`, `max-timeout`, `max-locks` and `max-locks-per-user`";
        let table = self.table(key, value, KNOWN)?;
        let mut l = WebdavLocks::new(Default::default());
        let (mut ok, mut dir) = (true, false);
        for (field, v) in fields(table) {
            let name: &str = field.get_ref();
            ok &= match name {
                "dir" => {
                    dir = true;
                    self.path(key, v).map(|p| l.dir = p).is_some()
                }
                "max-timeout" => {
                    let range = Duration::from_secs(1)..=Duration::from_secs(7 * 24 * 3600);
                    let d = self.duration(key, v, range);
                    d.map(|d| l.max_timeout = d).is_some()
                }
                "max-locks" => {
                    let n = self.count(key, v, MAX_COUNT);
                    n.map(|n| l.max_locks = n).is_some()
                }
                "max-locks-per-user" => {
                    let n = self.count(key, v, MAX_COUNT);
                    n.map(|n| l.max_locks_per_user = n).is_some()
                }
                other => self.unknown_field(key, field.span().start, other, KNOWN),
            };
        }
        if ok && !dir {
            let why = "`[webdav-locks]` needs `dir`: where the locks file is kept, outside the \
                       served directory";
            return self.bad(key, value, why.into());
        }
        ok.then_some(l)
    }
}
