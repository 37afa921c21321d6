//! A small file system to fill: a tmpfs mounted for one test (CI runs as
//! root and mounts; elsewhere the tests that need one say they skipped).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A tmpfs mounted at a directory, unmounted when dropped.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`"8m"`) at `at`; `None` where this
    /// process may not (mounting needs CAP_SYS_ADMIN).
    pub fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
            .then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The bytes free for an unprivileged writer on `at`'s file system.
pub fn free_bytes(at: &Path) -> u64 {
    let st = rustix::fs::statvfs(at).unwrap();
    st.f_bavail * st.f_frsize
}
