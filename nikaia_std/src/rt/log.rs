//! The access log and the error log: each to a file named in the runtime
//! file, or to stderr.
//!
//! Access lines are gathered per worker and written once per loop turn, so a
//! busy worker pays one `write` for many requests; error lines go out at once.

use super::LogTarget;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where one log goes.
pub(crate) enum Sink {
    Stderr,
    File(Mutex<File>),
    Off,
}

impl Sink {
    pub(crate) fn open(target: &LogTarget) -> io::Result<Sink> {
        match target {
            LogTarget::Stderr => Ok(Sink::Stderr),
            LogTarget::Off => Ok(Sink::Off),
            LogTarget::File(p) => open_log(p)
                .map(|f| Sink::File(Mutex::new(f)))
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display()))),
        }
    }

    pub(crate) fn is_on(&self) -> bool {
        !matches!(self, Sink::Off)
    }

    /// Writes whole lines in one call (a failure to log is not worth a crash).
    pub(crate) fn write(&self, bytes: &[u8]) {
        match self {
            Sink::Stderr => {
                let _ = io::stderr().lock().write_all(bytes);
            }
            Sink::File(f) => {
                if let Ok(mut f) = f.lock() {
                    let _ = f.write_all(bytes);
                }
            }
            Sink::Off => {}
        }
    }
}

/// Opens a log file to append to, creating it (mode 0644 less the umask) if
/// it is missing: never truncated, never removed, never renamed (the rule in
/// `spec/runtime-file.md`). Opened nonblocking so a FIFO nobody reads fails
/// at once (ENXIO) instead of stalling the start; writes then block as usual.
fn open_log(path: &std::path::Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    let flags = rustix::fs::fcntl_getfl(&file)?;
    rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)?;
    Ok(file)
}

/// The two logs of a server.
pub(crate) struct Logs {
    pub(crate) access: Sink,
    pub(crate) error: Sink,
}

impl Logs {
    /// Writes one error line now: `time error: message`.
    pub(crate) fn error(&self, message: fmt::Arguments<'_>) {
        let mut line = timestamp();
        line.push_str(" error: ");
        fmt::write(&mut line, message).ok();
        line.push('\n');
        self.error.write(line.as_bytes());
    }
}

/// One request's access line, appended to a worker's batch.
pub(crate) struct AccessEntry<'a> {
    pub peer: SocketAddr,
    pub method: &'a str,
    pub target: &'a str,
    pub version: &'a str,
    pub status: u16,
    pub bytes: u64,
    pub duration: Duration,
}

impl AccessEntry<'_> {
    /// `time peer "METHOD target VERSION" status bytes duration_us`
    pub(crate) fn append_to(&self, out: &mut Vec<u8>) {
        let _ = write!(out, "{} {} \"", timestamp(), self.peer);
        escape_into(out, self.method);
        out.push(b' ');
        escape_into(out, self.target);
        let _ = writeln!(
            out,
            " {}\" {} {} {}us",
            self.version,
            self.status,
            self.bytes,
            self.duration.as_micros()
        );
    }
}

/// Copies text into a log line with quotes, backslashes and anything not
/// printable ASCII escaped, so a request cannot forge log lines.
fn escape_into(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        match b {
            b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            0x21..=0x7e => out.push(b),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
}

/// Now as RFC 3339 UTC with milliseconds: `2026-11-29T23:10:00.123Z`.
pub(crate) fn timestamp() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (y, m, d) = crate::http::date::civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        now.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn a_log_file_is_appended_to_never_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        std::fs::write(&path, "yesterday's line\n").unwrap();
        let sink = Sink::open(&LogTarget::File(path.clone())).unwrap();
        sink.write(b"today's line\n");
        drop(sink);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "yesterday's line\ntoday's line\n"
        );
    }

    #[test]
    fn a_fifo_nobody_reads_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let Err(e) = Sink::open(&LogTarget::File(path.clone())) else {
            panic!("opened a FIFO without a reader");
        };
        assert!(e.to_string().contains("log.fifo"), "{e}");
        assert!(std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_fifo());
    }

    #[test]
    fn access_lines_escape_what_a_client_sent() {
        let mut out = Vec::new();
        AccessEntry {
            peer: "127.0.0.1:9".parse().unwrap(),
            method: "GET",
            target: "/a\"b\\c\u{7f}",
            version: "HTTP/1.1",
            status: 200,
            bytes: 5,
            duration: Duration::from_micros(42),
        }
        .append_to(&mut out);
        let line = String::from_utf8(out).unwrap();
        assert!(
            line.ends_with(" 127.0.0.1:9 \"GET /a\\\"b\\\\c\\x7f HTTP/1.1\" 200 5 42us\n"),
            "{line}"
        );
        assert_eq!(line.lines().count(), 1);
    }
}
