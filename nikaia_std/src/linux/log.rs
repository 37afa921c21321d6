//! The access log and the error log: each to a file named in the runtime
//! file, or to stderr.
//!
//! Access lines are gathered per worker and written once per loop turn, so a
//! busy worker pays one `write` for many requests; error lines go out at once.

use crate::http::Peer;
use crate::rt::{AccessLogFormat, LogTarget};
use crate::text::date::{civil_from_days, MONTHS};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod throttle;
pub(crate) use throttle::{Throttle, Unlogged};

/// Where one log goes; a reload may point it elsewhere.
pub(crate) struct Sink {
    target: Mutex<Target>,
    /// Whether lines are written at all (`access-log = "off"`): read per
    /// response without the lock.
    on: AtomicBool,
}

/// A log target opened by [`Sink::prepare`].
pub(crate) struct Opened(Target);

enum Target {
    Stderr,
    /// A file, and the path it was opened at: [`Sink::reopen`] opens the
    /// path again after the operator moved the file away (SIGUSR1).
    File {
        path: PathBuf,
        file: File,
    },
    Off,
}

impl Target {
    fn open(target: &LogTarget) -> io::Result<Target> {
        Ok(match target {
            LogTarget::Stderr => Target::Stderr,
            LogTarget::Off => Target::Off,
            LogTarget::File(p) => Target::File {
                file: open_log(p)?,
                path: p.clone(),
            },
        })
    }

    fn is(&self, target: &LogTarget) -> bool {
        match (self, target) {
            (Target::Stderr, LogTarget::Stderr) | (Target::Off, LogTarget::Off) => true,
            (Target::File { path, .. }, LogTarget::File(p)) => path == p,
            _ => false,
        }
    }
}

impl Sink {
    pub(crate) fn open(target: &LogTarget) -> io::Result<Sink> {
        Ok(Sink {
            on: AtomicBool::new(*target != LogTarget::Off),
            target: Mutex::new(Target::open(target)?),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Target> {
        self.target.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Writes whole lines in one call (a failure to log is not worth a crash).
    pub(crate) fn write(&self, bytes: &[u8]) {
        match &mut *self.lock() {
            Target::Stderr => {
                let _ = io::stderr().lock().write_all(bytes);
            }
            Target::File { file, .. } => {
                let _ = file.write_all(bytes);
            }
            Target::Off => {}
        }
    }

    /// Opens the file's path again (created if missing, appended to,
    /// never truncated) and writes there from now on: logrotate's
    /// convention, the file moved away and then SIGUSR1. The new file is
    /// opened before the lock is taken and swapped in under it, so each
    /// write goes whole to the old file or whole to the new one, and none
    /// is lost. On an error the old file stays in use.
    pub(crate) fn reopen(&self) -> io::Result<()> {
        let path = match &*self.lock() {
            Target::File { path, .. } => path.clone(),
            _ => return Ok(()),
        };
        let new = open_log(&path)?;
        if let Target::File { file, .. } = &mut *self.lock() {
            drop(std::mem::replace(file, new));
        }
        Ok(())
    }

    /// Opens what `target` names, for [`Sink::install`] (a reload):
    /// `None` when it is where this sink writes already (its open file is
    /// kept).
    pub(crate) fn prepare(&self, target: &LogTarget) -> io::Result<Option<Opened>> {
        if self.lock().is(target) {
            return Ok(None);
        }
        Target::open(target).map(|t| Some(Opened(t)))
    }

    /// Writes to what [`Sink::prepare`] opened from now on.
    pub(crate) fn install(&self, opened: Option<Opened>, target: &LogTarget) {
        if let Some(Opened(new)) = opened {
            let old = std::mem::replace(&mut *self.lock(), new);
            self.on.store(*target != LogTarget::Off, Ordering::Relaxed);
            drop(old);
        }
    }
}

/// Opens a log file to append to, creating it (mode 0644 less the umask) if
/// it is missing: never truncated, never removed, never renamed (the rule in
/// `spec/runtime-file.md`). Opened nonblocking so a FIFO nobody reads fails
/// at once (ENXIO) instead of stalling the start; writes then block as usual.
fn open_log(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = (|| {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o644)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(path)?;
        let flags = rustix::fs::fcntl_getfl(&file)?;
        rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)?;
        Ok::<_, io::Error>(file)
    })();
    opened.map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// The two logs of a server.
pub(crate) struct Logs {
    pub(crate) access: Sink,
    pub(crate) error: Sink,
}

impl Logs {
    /// Writes one error line now: `time error: message`.
    pub(crate) fn error(&self, message: fmt::Arguments<'_>) {
        self.line("error", message);
    }

    /// Writes one warning line now, `time warn: message`: what was taken
    /// but may not be what the operator meant (a runtime file's warning at
    /// SIGHUP), nginx's `[warn]`.
    pub(crate) fn warn(&self, message: fmt::Arguments<'_>) {
        self.line("warn", message);
    }

    /// Writes one notice line now, `time notice: message`: what the server
    /// did that the operator asked for or should know (a reload, an
    /// upgrade's steps, a drain), nginx's `[notice]`.
    pub(crate) fn notice(&self, message: fmt::Arguments<'_>) {
        self.line("notice", message);
    }

    fn line(&self, level: &str, message: fmt::Arguments<'_>) {
        let mut line = timestamp();
        line.push(' ');
        line.push_str(level);
        line.push_str(": ");
        fmt::write(&mut line, message).ok();
        line.push('\n');
        self.error.write(line.as_bytes());
    }

    /// Reopens both log files at their paths (SIGUSR1); each failure is
    /// reported on the error log, whichever file that now is.
    pub(crate) fn reopen(&self) -> io::Result<()> {
        let error = self.error.reopen();
        let access = self.access.reopen();
        if let Err(e) = &error {
            self.error(format_args!(
                "SIGUSR1: error log not reopened, the old file stays: {e}"
            ));
        }
        if let Err(e) = &access {
            self.error(format_args!(
                "SIGUSR1: access log not reopened, the old file stays: {e}"
            ));
        }
        error.and(access)
    }
}

/// What an access line says about the request.
pub(crate) enum RequestLine<'a> {
    /// A request that was parsed and answered.
    Parsed {
        method: &'a [u8],
        target: &'a [u8],
        version: &'static str,
    },
    /// A head refused before it could be parsed: the first line as far as
    /// it arrived (may be empty), and why it was refused.
    Refused { line: &'a [u8], why: &'static str },
}

/// One request's access line, appended to a worker's batch.
pub(crate) struct AccessEntry<'a> {
    /// The request's client (`Request::client`).
    pub peer: &'a Peer,
    /// The user whose credentials were verified, if any.
    pub user: Option<&'a str>,
    pub request: RequestLine<'a>,
    pub status: u16,
    /// Body bytes sent.
    pub bytes: u64,
    /// Body bytes received (JSON only: the combined format stays nginx's).
    pub received: u64,
    pub referer: Option<&'a [u8]>,
    pub user_agent: Option<&'a [u8]>,
    pub duration: Duration,
    /// How the body travelled (`None` for a refused head).
    pub vehicle: Option<&'static str>,
}

/// nginx's `$remote_addr`: the peer's IP, or `unix:` for a Unix socket.
struct RemoteAddr<'a>(&'a Peer);

impl fmt::Display for RemoteAddr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.ip() {
            Some(ip) => ip.fmt(f),
            None => self.0.fmt(f),
        }
    }
}

impl AccessEntry<'_> {
    pub(crate) fn append_to(&self, out: &mut Vec<u8>, format: AccessLogFormat) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        match format {
            AccessLogFormat::Combined => self.combined(out, now),
            AccessLogFormat::Json => self.json(out, now),
        }
    }

    /// nginx's `combined`: `$remote_addr - $remote_user [$time_local]
    /// "$request" $status $body_bytes_sent "$http_referer"
    /// "$http_user_agent"`, time in UTC, `-` for what is missing, text
    /// escaped as nginx does.
    fn combined(&self, out: &mut Vec<u8>, now: Duration) {
        let _ = write!(out, "{} - ", RemoteAddr(self.peer));
        match self.user {
            Some(user) => nginx_escape(out, user.as_bytes()),
            None => out.push(b'-'),
        }
        out.extend_from_slice(b" [");
        time_local(out, now.as_secs());
        out.extend_from_slice(b"] \"");
        match self.request {
            RequestLine::Parsed {
                method,
                target,
                version,
            } => {
                nginx_escape(out, method);
                out.push(b' ');
                nginx_escape(out, target);
                out.push(b' ');
                out.extend_from_slice(version.as_bytes());
            }
            RequestLine::Refused { line: [], .. } => out.push(b'-'),
            RequestLine::Refused { line, .. } => nginx_escape(out, line),
        }
        let _ = write!(out, "\" {} {} \"", self.status, self.bytes);
        or_dash(out, self.referer);
        out.extend_from_slice(b"\" \"");
        or_dash(out, self.user_agent);
        out.extend_from_slice(b"\"\n");
    }

    /// One JSON object; `null` for what is missing.
    fn json(&self, out: &mut Vec<u8>, now: Duration) {
        out.extend_from_slice(b"{\"time\":\"");
        rfc3339(out, now);
        let _ = write!(
            out,
            "\",\"remote_addr\":\"{}\",\"user\":",
            RemoteAddr(self.peer)
        );
        json_or_null(out, self.user.map(str::as_bytes));
        out.extend_from_slice(b",\"method\":");
        let (method, target, protocol, refused) = match self.request {
            RequestLine::Parsed {
                method,
                target,
                version,
            } => (Some(method), Some(target), Some(version.as_bytes()), None),
            RequestLine::Refused { line, why } => (None, Some(line), None, Some(why)),
        };
        json_or_null(out, method);
        out.extend_from_slice(b",\"target\":");
        json_or_null(out, target);
        out.extend_from_slice(b",\"protocol\":");
        json_or_null(out, protocol);
        let _ = write!(
            out,
            ",\"status\":{},\"bytes\":{},\"received\":{},\"referer\":",
            self.status, self.bytes, self.received
        );
        json_or_null(out, self.referer);
        out.extend_from_slice(b",\"user_agent\":");
        json_or_null(out, self.user_agent);
        let _ = write!(
            out,
            ",\"duration_us\":{},\"vehicle\":",
            self.duration.as_micros()
        );
        json_or_null(out, self.vehicle.map(str::as_bytes));
        if let Some(why) = refused {
            out.extend_from_slice(b",\"refused\":");
            json_string(out, why.as_bytes());
        }
        out.extend_from_slice(b"}\n");
    }
}

/// `01/Dec/2026:00:00:00 +0000`: nginx's `$time_local`, in UTC.
fn time_local(out: &mut Vec<u8>, secs: u64) {
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    let _ = write!(
        out,
        "{d:02}/{}/{y:04}:{:02}:{:02}:{:02} +0000",
        MONTHS[(m as usize).clamp(1, 12) - 1],
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    );
}

fn or_dash(out: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        Some(v) if !v.is_empty() => nginx_escape(out, v),
        _ => out.push(b'-'),
    }
}

/// nginx's escaping of a logged variable: `"`, `\\` and every byte outside
/// printable ASCII (controls, DEL, 0x80 and up) as `\xHH`, so a request
/// cannot forge a line or a field.
fn nginx_escape(out: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in s {
        match b {
            0x20..=0x7e if b != b'"' && b != b'\\' => out.push(b),
            _ => out.extend_from_slice(&[
                b'\\',
                b'x',
                HEX[(b >> 4) as usize],
                HEX[(b & 15) as usize],
            ]),
        }
    }
}

fn json_or_null(out: &mut Vec<u8>, value: Option<&[u8]>) {
    match value {
        Some(v) => json_string(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

/// A JSON string of what a client sent: bytes that are not UTF-8 become
/// U+FFFD, controls `\u00XX`.
fn json_string(out: &mut Vec<u8>, v: &[u8]) {
    out.push(b'"');
    for c in String::from_utf8_lossy(v).chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// RFC 3339 UTC with milliseconds: `2026-11-29T23:10:00.123Z`.
fn rfc3339(out: &mut Vec<u8>, now: Duration) {
    let secs = now.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        now.subsec_millis()
    );
}

/// Now as RFC 3339 UTC with milliseconds: `2026-11-29T23:10:00.123Z`.
pub(crate) fn timestamp() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut out = Vec::with_capacity(24);
    rfc3339(&mut out, now);
    String::from_utf8(out).unwrap_or_default()
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

    const PEER: Peer = Peer::Tcp(std::net::SocketAddr::V4(std::net::SocketAddrV4::new(
        std::net::Ipv4Addr::new(127, 0, 0, 1),
        9,
    )));

    fn entry<'a>(target: &'a [u8], referer: Option<&'a [u8]>) -> AccessEntry<'a> {
        AccessEntry {
            peer: &PEER,
            user: None,
            request: RequestLine::Parsed {
                method: b"GET",
                target,
                version: "HTTP/1.1",
            },
            status: 200,
            bytes: 5,
            received: 0,
            referer,
            user_agent: Some(b"curl/8 (x\"y)"),
            duration: Duration::from_micros(42),
            vehicle: Some("sendfile"),
        }
    }

    #[test]
    fn combined_lines_escape_what_a_client_sent_as_nginx_does() {
        let mut out = Vec::new();
        entry(b"/a\"b\\c\x7f\xc3\xa9", None).append_to(&mut out, AccessLogFormat::Combined);
        let line = String::from_utf8(out).unwrap();
        let (head, rest) = line.split_once(" [").unwrap();
        assert_eq!(head, "127.0.0.1 - -");
        assert_eq!(rest.find("] "), Some(26), "{line}");
        assert_eq!(&rest[2..3], "/");
        assert_eq!(&rest[20..26], " +0000");
        assert_eq!(
            &rest[28..],
            "\"GET /a\\x22b\\x5Cc\\x7F\\xC3\\xA9 HTTP/1.1\" 200 5 \"-\" \"curl/8 (x\\x22y)\"\n"
        );
        assert_eq!(line.lines().count(), 1);
    }

    #[test]
    fn time_local_is_nginx_s() {
        let mut out = Vec::new();
        // 2026-12-01T00:00:00Z
        time_local(&mut out, 1_796_083_200);
        assert_eq!(out, b"01/Dec/2026:00:00:00 +0000");
    }

    #[test]
    fn json_lines_are_one_object_each() {
        let mut out = Vec::new();
        entry(b"/\n\"x\xff", Some(b"http://r/")).append_to(&mut out, AccessLogFormat::Json);
        let line = String::from_utf8(out).unwrap();
        assert!(line.ends_with("}\n") && line.lines().count() == 1, "{line}");
        assert!(
            line.contains(
                "\"remote_addr\":\"127.0.0.1\",\"user\":null,\"method\":\"GET\",\"target\":\"/\\u000a\\\"x\u{fffd}\",\"protocol\":\"HTTP/1.1\",\"status\":200,\"bytes\":5,\"received\":0,\"referer\":\"http://r/\",\"user_agent\":\"curl/8 (x\\\"y)\",\"duration_us\":42,\"vehicle\":\"sendfile\"}"
            ),
            "{line}"
        );
    }

    #[test]
    fn reopen_writes_to_a_new_file_at_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let moved = dir.path().join("access.log.1");
        let sink = Sink::open(&LogTarget::File(path.clone())).unwrap();
        sink.write(b"one\n");
        std::fs::rename(&path, &moved).unwrap();
        sink.write(b"two\n");
        sink.reopen().unwrap();
        sink.write(b"three\n");
        assert_eq!(std::fs::read_to_string(&moved).unwrap(), "one\ntwo\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "three\n");
    }
}
