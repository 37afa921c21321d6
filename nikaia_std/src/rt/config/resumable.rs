//! `[resumable]`: uploads that survive a dropped connection, a restart and
//! an upgrade (`spec/site.md`, "Resumable uploads").

use std::path::PathBuf;
use std::time::Duration;

/// Where the tus endpoint of `nikaia serve` keeps what has arrived of each
/// upload, and how much it keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resumable {
    /// `dir`: the partial uploads, outside the served directory and on its
    /// file system (the complete file is renamed into place).
    pub dir: PathBuf,
    /// `endpoint`: the path the tus requests go to (`/.tus/`).
    pub endpoint: String,
    /// `expire`: an upload no byte reached for this long is removed.
    pub expire: Duration,
    /// `max-pending`: uploads not yet complete, all users together.
    pub max_pending: usize,
    /// `max-pending-per-user`: uploads not yet complete, per user.
    pub max_pending_per_user: usize,
    /// `max-pending-bytes`: the lengths announced by uploads not yet
    /// complete, all users together.
    pub max_pending_bytes: u64,
    /// `max-pending-bytes-per-user`: the same, per user.
    pub max_pending_bytes_per_user: u64,
}

/// The endpoint when the table does not name one: a dot-name, so it hides
/// no file `nikaia serve` would serve without `--hidden`.
pub const DEFAULT_ENDPOINT: &str = "/.tus/";

impl Resumable {
    /// The table's defaults around the directory it must name.
    pub fn new(dir: PathBuf) -> Resumable {
        Resumable {
            dir,
            endpoint: DEFAULT_ENDPOINT.to_owned(),
            expire: Duration::from_secs(24 * 3600),
            max_pending: 256,
            max_pending_per_user: 16,
            max_pending_bytes: 64 << 30,
            max_pending_bytes_per_user: 16 << 30,
        }
    }

    /// The table as one inline table of the runtime file.
    pub(crate) fn to_toml(&self) -> String {
        let string = |s: &str| toml::Value::String(s.to_owned()).to_string();
        let size = |n: u64| string(&super::format_size(n));
        format!(
            "{{ dir = {}, endpoint = {}, expire = {}, max-pending = {}, \
             max-pending-per-user = {}, max-pending-bytes = {}, \
             max-pending-bytes-per-user = {} }}",
            string(&self.dir.to_string_lossy()),
            string(&self.endpoint),
            string(&super::format_duration(self.expire)),
            self.max_pending,
            self.max_pending_per_user,
            size(self.max_pending_bytes),
            size(self.max_pending_bytes_per_user),
        )
    }
}
