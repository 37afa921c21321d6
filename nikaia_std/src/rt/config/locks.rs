//! `[webdav-locks]`: WebDAV class 2 (`spec/site.md`, "WebDAV class 2:
//! locks"): where the locks are kept and how many may be held.

use std::path::PathBuf;
use std::time::Duration;

/// Where `nikaia serve` keeps WebDAV locks, and their bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebdavLocks {
    /// `dir`: the directory of the locks file, outside the served
    /// directory.
    pub dir: PathBuf,
    /// `max-timeout`: the longest a lock lives without a refresh (a
    /// `Timeout` of `Infinite`, or none, gets this).
    pub max_timeout: Duration,
    /// `max-locks`: locks held at once, all users together.
    pub max_locks: usize,
    /// `max-locks-per-user`: locks held at once by one user (the locks
    /// taken under an `anyone` rule count as one user's).
    pub max_locks_per_user: usize,
}

impl WebdavLocks {
    /// The table's defaults around the directory it must name.
    pub fn new(dir: PathBuf) -> WebdavLocks {
        WebdavLocks {
            dir,
            max_timeout: Duration::from_secs(3600),
            max_locks: 10_000,
            max_locks_per_user: 1_000,
        }
    }

    /// The table as one inline table of the runtime file.
    pub(crate) fn to_toml(&self) -> String {
        let string = |s: &str| toml::Value::String(s.to_owned()).to_string();
        format!(
            "{{ dir = {}, max-timeout = {}, max-locks = {}, max-locks-per-user = {} }}",
            string(&self.dir.to_string_lossy()),
            string(&super::format_duration(self.max_timeout)),
            self.max_locks,
            self.max_locks_per_user,
        )
    }
}
