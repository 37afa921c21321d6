//! From the text of a runtime file to a [`Runtime`], or to every problem in it.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

mod listen;
mod pages;
mod site;

use super::units::{format_duration, format_size, parse_duration, parse_size};
use super::units::{DURATION_FORMS, SIZE_FORMS};
use super::{
    available_cores, AccessLogFormat, Coding, ConfigError, LogTarget, Runtime, SendFile, KEYS,
};

/// Parses and validates `text`, the contents of the runtime file `file`.
pub(super) fn parse(text: &str, file: &Path) -> Result<Runtime, Vec<ConfigError>> {
    let mut checker = Checker {
        text,
        file,
        base: base_dir(file),
        errors: Vec::new(),
    };
    let (table, syntax_errors) = DeTable::parse_recoverable(text);
    if !syntax_errors.is_empty() {
        // What the parser recovered may be half a file; checking keys in it
        // would report problems the operator did not write.
        for error in syntax_errors {
            let offset = error.span().map_or(0, |span| span.start);
            let message = error.message().trim().replace('\n', "; ");
            // A duplicate key's span is the key: name it like other errors do.
            let key = error
                .span()
                .filter(|_| message.starts_with("duplicate key"))
                .and_then(|span| text.get(span))
                .map(|key| key.trim().trim_matches('"'));
            checker.error(offset, key, format!("invalid TOML: {message}"));
        }
        return Err(checker.finish());
    }
    let runtime = checker.runtime(table.get_ref());
    if checker.errors.is_empty() {
        Ok(runtime)
    } else {
        Err(checker.finish())
    }
}

/// The directory relative paths are resolved against: the runtime file's,
/// made absolute so it does not depend on a later change of directory.
fn base_dir(file: &Path) -> PathBuf {
    let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    file.parent().map(Path::to_path_buf).unwrap_or_default()
}

type Value<'i> = Spanned<DeValue<'i>>;

// The allowed ranges (spec/runtime-file.md, "Keys").
const WORKERS: RangeInclusive<u64> = 0..=1024;
const IO_THREADS: RangeInclusive<u64> = 1..=256;
const SEND_FILE_MAX_CHUNK: RangeInclusive<u64> = 4 << 10..=1 << 30;
const STATIC_CACHE: RangeInclusive<u64> = 0..=1_000_000;
const STATIC_CACHE_BYTES: RangeInclusive<u64> = 0..=64 << 30;
const MAX_CONNECTIONS: RangeInclusive<u64> = 1..=1_000_000;
const MAX_HEADER_BYTES: RangeInclusive<u64> = 1 << 10..=1 << 20;
const HTTP2_MAX_REQUESTS: RangeInclusive<u64> = 1..=1 << 30;
const HOUR: Duration = Duration::from_secs(3600);

const fn millis(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `workers = 0` means one per available core.
fn resolve_workers(n: u64) -> usize {
    match n {
        0 => available_cores(),
        n => n as usize,
    }
}

struct Checker<'a> {
    text: &'a str,
    file: &'a Path,
    base: PathBuf,
    errors: Vec<ConfigError>,
}

impl Checker<'_> {
    /// Builds the runtime from the top-level table, recording every problem.
    fn runtime(&mut self, table: &DeTable<'_>) -> Runtime {
        let mut rt = Runtime::default();
        let mut entries: Vec<_> = table.iter().collect();
        entries.sort_by_key(|(key, _)| key.span().start);
        let given = |k: &str| entries.iter().any(|(key, _)| *key.get_ref() == *k);
        let pair = given("tls-cert") && given("tls-key");
        for &(key, value) in &entries {
            let name: &str = key.get_ref();
            match name {
                "listen" => put(&mut rt.listen, self.listen(name, value, pair)),
                "workers" => {
                    let workers = self.integer(name, value, WORKERS);
                    put(&mut rt.workers, workers.map(resolve_workers));
                }
                "io-threads" => put(&mut rt.io_threads, self.count(name, value, IO_THREADS)),
                "send-file" => put(&mut rt.send_file, self.send_file(name, value)),
                "send-file-max-chunk" => {
                    let bytes = self.size(name, value, SEND_FILE_MAX_CHUNK, "2MiB");
                    put(&mut rt.send_file_max_chunk, bytes);
                }
                "static-cache" => put(&mut rt.static_cache, self.count(name, value, STATIC_CACHE)),
                "static-cache-bytes" => {
                    let bytes = self.size(name, value, STATIC_CACHE_BYTES, "64MiB");
                    put(&mut rt.static_cache_bytes, bytes);
                }
                "precompressed" => put(&mut rt.precompressed, self.codings(name, value)),
                "compress" => put(&mut rt.compress, self.boolean(name, value)),
                "compress-cache-bytes" => {
                    let bytes = self.size(name, value, STATIC_CACHE_BYTES, "32MiB");
                    put(&mut rt.compress_cache_bytes, bytes);
                }
                "header-timeout" => {
                    let timeout = self.duration(name, value, millis(1)..=HOUR);
                    put(&mut rt.header_timeout, timeout);
                }
                "keepalive-timeout" => {
                    let timeout = self.duration(name, value, Duration::ZERO..=HOUR);
                    put(&mut rt.keepalive_timeout, timeout);
                }
                "send-timeout" => {
                    let timeout = self.duration(name, value, millis(1)..=HOUR);
                    put(&mut rt.send_timeout, timeout);
                }
                "max-connections" => {
                    let connections = self.count(name, value, MAX_CONNECTIONS);
                    put(&mut rt.max_connections, connections);
                }
                "max-header-bytes" => {
                    let bytes = self.size(name, value, MAX_HEADER_BYTES, "32KiB");
                    put(&mut rt.max_header_bytes, bytes.map(|n| n as usize));
                }
                "http2" => put(&mut rt.http2, self.boolean(name, value)),
                "http2-max-requests" => {
                    let n = self.integer(name, value, HTTP2_MAX_REQUESTS);
                    put(&mut rt.http2_max_requests, n.map(|n| n as u32));
                }
                "access-log" => put(&mut rt.access_log, self.log(name, value, true)),
                "access-log-format" => {
                    put(&mut rt.access_log_format, self.log_format(name, value));
                }
                "error-log" => put(&mut rt.error_log, self.log(name, value, false)),
                "stats-socket" => rt.stats_socket = self.path(name, value),
                "tls-cert" => rt.tls_cert = self.path(name, value),
                "tls-key" => rt.tls_key = self.path(name, value),
                "cache-control" => put(&mut rt.cache_control, self.cache_control(name, value)),
                "not-found" => rt.not_found = self.served_name(name, value),
                "fallback" => rt.fallback = self.served_name(name, value),
                "fallback-for" => put(&mut rt.fallback_for, self.fallback_for(name, value)),
                "index" => put(&mut rt.index, self.index_names(name, value)),
                "list" => put(&mut rt.list, self.boolean(name, value)),
                "headers" => put(&mut rt.site.headers, self.header_rules(name, value)),
                "security-headers" => {
                    put(
                        &mut rt.site.security_headers,
                        self.security_headers(name, value),
                    );
                }
                "cors" => rt.site.cors = self.cors(name, value),
                "trusted-proxies" => {
                    put(
                        &mut rt.site.trusted_proxies,
                        self.trusted_proxies(name, value),
                    );
                }
                "auth" => put(&mut rt.site.auth, self.auth_rules(name, value)),
                "deny" => put(&mut rt.site.deny, self.deny_rules(name, value)),
                _ => self.unknown_key(key),
            }
        }
        self.tls_pair(&entries);
        self.proxy_protocol_trust(&entries, &rt);
        rt
    }

    fn unknown_key(&mut self, key: &Spanned<std::borrow::Cow<'_, str>>) {
        let name: &str = key.get_ref();
        let message = match suggest(name) {
            Some(known) if name.contains('_') && known == name.replace('_', "-") => {
                format!("unknown key; did you mean `{known}`? (keys are written with `-`, not `_`)")
            }
            Some(known) => format!("unknown key; did you mean `{known}`?"),
            None => format!("unknown key; the keys are {}", KEYS.join(", ")),
        };
        self.error(key.span().start, Some(name), message);
    }

    /// `tls-cert` and `tls-key` come together or not at all.
    fn tls_pair(&mut self, entries: &[(&Spanned<std::borrow::Cow<'_, str>>, &Value<'_>)]) {
        let find = |name: &str| entries.iter().find(|(key, _)| *key.get_ref() == *name);
        match (find("tls-cert"), find("tls-key")) {
            (Some((key, _)), None) => self.error(
                key.span().start,
                Some("tls-cert"),
                "given without `tls-key`; give both `tls-cert` and `tls-key`, or neither".into(),
            ),
            (None, Some((key, _))) => self.error(
                key.span().start,
                Some("tls-key"),
                "given without `tls-cert`; give both `tls-cert` and `tls-key`, or neither".into(),
            ),
            _ => {}
        }
    }

    /// A listener with `proxy-protocol` needs someone to trust.
    fn proxy_protocol_trust(
        &mut self,
        entries: &[(&Spanned<std::borrow::Cow<'_, str>>, &Value<'_>)],
        rt: &Runtime,
    ) {
        let wants = rt.listen.iter().any(|l| l.proxy_protocol);
        if !wants || !rt.site.trusted_proxies.is_empty() {
            return;
        }
        if let Some((_, value)) = entries.iter().find(|(k, _)| *k.get_ref() == "listen") {
            let message = "`proxy-protocol` takes the header only from a trusted proxy, and \
                           `trusted-proxies` is empty; list the proxies' addresses there"
                .to_string();
            self.bad::<()>("listen", value, message);
        }
    }

    fn send_file(&mut self, key: &str, value: &Value<'_>) -> Option<SendFile> {
        const WANT: &str = "\"auto\", \"never\", or a size such as \"1MiB\" \
                            (send with sendfile at or above it)";
        match value.get_ref() {
            DeValue::String(s) if s == "auto" => Some(SendFile::Auto),
            DeValue::String(s) if s == "never" => Some(SendFile::Never),
            DeValue::String(s) if !s.starts_with(|c: char| c.is_ascii_digit() || c == '-') => {
                self.bad(key, value, format!("expected {WANT}, found \"{s}\""))
            }
            DeValue::String(s) => match parse_size(s) {
                Ok(bytes) => Some(SendFile::AtLeast(bytes)),
                Err(why) => self.bad(key, value, why),
            },
            DeValue::Integer(_) => self.bytes(key, value).map(SendFile::AtLeast),
            other => self.bad(key, value, format!("expected {WANT}, found {}", a(other))),
        }
    }

    /// `precompressed`: an array of distinct codings, in order of preference.
    fn codings(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<Coding>> {
        const WANT: &str = "an array of \"br\", \"zstd\" and \"gzip\" in order of preference, \
                            such as [\"br\", \"zstd\", \"gzip\"] ([] serves no sidecars)";
        let DeValue::Array(items) = value.get_ref() else {
            let found = a(value.get_ref());
            return self.bad(key, value, format!("expected {WANT}, found {found}"));
        };
        let mut codings = Vec::new();
        let mut problems = Vec::new();
        for item in items {
            let DeValue::String(token) = item.get_ref() else {
                let found = a(item.get_ref());
                problems.push((item, format!("expected {WANT}, found {found} in it")));
                continue;
            };
            let lower = token.to_ascii_lowercase();
            match Coding::ALL.into_iter().find(|c| c.token() == token) {
                Some(coding) if codings.contains(&coding) => problems.push((
                    item,
                    format!("\"{token}\" is named twice; name each coding once"),
                )),
                Some(coding) => codings.push(coding),
                None => {
                    let hint = Coding::ALL
                        .into_iter()
                        .find(|c| c.extension() == lower || c.token() == lower)
                        .map_or(String::new(), |c| {
                            format!("; did you mean \"{}\"?", c.token())
                        });
                    problems.push((
                        item,
                        format!(
                            "unknown coding \"{token}\"{hint} \
                             (the codings are \"br\", \"zstd\" and \"gzip\")"
                        ),
                    ));
                }
            }
        }
        let ok = problems.is_empty();
        for (item, message) in problems {
            self.bad::<()>(key, item, message);
        }
        ok.then_some(codings)
    }

    /// An integer key that counts something, as `usize`.
    fn boolean(&mut self, key: &str, value: &Value<'_>) -> Option<bool> {
        match value.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            DeValue::String(s) if *s == "true" || *s == "false" => self.bad(
                key,
                value,
                format!(
                    "expected true or false, found the string \"{s}\"; write it without quotes"
                ),
            ),
            other => self.bad(
                key,
                value,
                format!("expected true or false, found {}", a(other)),
            ),
        }
    }

    fn count(&mut self, key: &str, value: &Value<'_>, range: RangeInclusive<u64>) -> Option<usize> {
        self.integer(key, value, range).map(|n| n as usize)
    }

    fn integer(&mut self, key: &str, value: &Value<'_>, range: RangeInclusive<u64>) -> Option<u64> {
        let want = format!("an integer from {} to {}", range.start(), range.end());
        match value.get_ref() {
            DeValue::Integer(_) => match integer_of(value) {
                Some(n) if n >= 0 && range.contains(&(n as u64)) => Some(n as u64),
                n => {
                    let found = n.map_or_else(|| "a larger integer".to_string(), |n| n.to_string());
                    self.bad(key, value, format!("expected {want}, found {found}"))
                }
            },
            DeValue::String(s) if s.parse::<u64>().is_ok() => self.bad(
                key,
                value,
                format!("expected {want}, found a string; write it without quotes"),
            ),
            other => self.bad(key, value, format!("expected {want}, found {}", a(other))),
        }
    }

    /// A TOML integer used as a byte count: any value from 0 up.
    fn bytes(&mut self, key: &str, value: &Value<'_>) -> Option<u64> {
        let n = integer_of(value)?;
        match u64::try_from(n) {
            Ok(bytes) => Some(bytes),
            Err(_) if n < 0 => {
                self.bad(key, value, format!("a size cannot be negative, found {n}"))
            }
            Err(_) => self.bad(key, value, format!("the size {n} is too large")),
        }
    }

    fn size(
        &mut self,
        key: &str,
        value: &Value<'_>,
        range: RangeInclusive<u64>,
        example: &str,
    ) -> Option<u64> {
        let (lo, hi) = (format_size(*range.start()), format_size(*range.end()));
        let bytes = match value.get_ref() {
            DeValue::Integer(_) => self.bytes(key, value)?,
            DeValue::String(s) => match parse_size(s) {
                Ok(bytes) => bytes,
                Err(why) => return self.bad(key, value, why),
            },
            other => {
                let message = format!(
                    "expected a size from {lo} to {hi} such as \"{example}\" ({SIZE_FORMS}), found {}",
                    a(other)
                );
                return self.bad(key, value, message);
            }
        };
        if range.contains(&bytes) {
            Some(bytes)
        } else {
            let found = format_size(bytes);
            self.bad(
                key,
                value,
                format!("expected a size from {lo} to {hi}, found {found}"),
            )
        }
    }

    fn duration(
        &mut self,
        key: &str,
        value: &Value<'_>,
        range: RangeInclusive<Duration>,
    ) -> Option<Duration> {
        let (lo, hi) = (
            format_duration(*range.start()),
            format_duration(*range.end()),
        );
        let duration = match value.get_ref() {
            DeValue::String(s) => match parse_duration(s) {
                Ok(d) => d,
                Err(why) => return self.bad(key, value, why),
            },
            DeValue::Integer(_) => {
                let n = integer_of(value).unwrap_or_default();
                let message = format!(
                    "a duration needs a unit: write \"{n}s\" or \"{n}ms\", not {n} (units: ms, s, m, h)"
                );
                return self.bad(key, value, message);
            }
            other => {
                let message = format!(
                    "expected a duration from {lo} to {hi} such as \"10s\" ({DURATION_FORMS}), found {}",
                    a(other)
                );
                return self.bad(key, value, message);
            }
        };
        if range.contains(&duration) {
            Some(duration)
        } else {
            let found = format_duration(duration);
            self.bad(
                key,
                value,
                format!("expected a duration from {lo} to {hi}, found {found}"),
            )
        }
    }

    fn log(&mut self, key: &str, value: &Value<'_>, may_be_off: bool) -> Option<LogTarget> {
        let want = if may_be_off {
            "a file path, \"stderr\" or \"off\""
        } else {
            "a file path or \"stderr\""
        };
        match self.string(key, value, want)? {
            "stderr" => Some(LogTarget::Stderr),
            "off" if may_be_off => Some(LogTarget::Off),
            "off" => self.bad(
                key,
                value,
                format!("cannot be \"off\": errors must be written somewhere; expected {want}"),
            ),
            "" => self.bad(
                key,
                value,
                format!("expected {want}, found an empty string"),
            ),
            path => Some(LogTarget::File(self.base.join(path))),
        }
    }

    fn log_format(&mut self, key: &str, value: &Value<'_>) -> Option<AccessLogFormat> {
        const WANT: &str = "\"combined\" (nginx's format) or \"json\"";
        match self.string(key, value, WANT)? {
            "combined" => Some(AccessLogFormat::Combined),
            "json" => Some(AccessLogFormat::Json),
            other => self.bad(key, value, format!("expected {WANT}, found \"{other}\"")),
        }
    }

    fn path(&mut self, key: &str, value: &Value<'_>) -> Option<PathBuf> {
        match self.string(key, value, "a file path")? {
            "" => self.bad(
                key,
                value,
                "expected a file path, found an empty string".into(),
            ),
            path => Some(self.base.join(path)),
        }
    }

    /// A header value: printable ASCII and spaces, not empty; never CR or LF.
    fn header_value(&mut self, key: &str, value: &Value<'_>, s: &str) -> Option<String> {
        if s.contains(['\r', '\n']) {
            return self.bad(
                key,
                value,
                "a header value cannot contain a line break (CR or LF)".into(),
            );
        }
        if s.trim().is_empty() {
            return self.bad(
                key,
                value,
                "expected a header value such as \"no-cache\", found an empty string".into(),
            );
        }
        if let Some(c) = s
            .chars()
            .find(|&c| !(c == ' ' || c == '\t' || c.is_ascii_graphic()))
        {
            return self.bad(
                key,
                value,
                format!("a header value is printable ASCII; found {c:?}"),
            );
        }
        Some(s.trim().to_owned())
    }

    /// The value as a string, or an error saying `want`.
    fn string<'v>(&mut self, key: &str, value: &'v Value<'_>, want: &str) -> Option<&'v str> {
        match value.get_ref() {
            DeValue::String(s) => Some(s),
            other => self.bad(key, value, format!("expected {want}, found {}", a(other))),
        }
    }

    /// Records a problem with `key`'s value; always `None`, for `return`.
    fn bad<T>(&mut self, key: &str, value: &Value<'_>, message: String) -> Option<T> {
        self.error(value.span().start, Some(key), message);
        None
    }

    fn error(&mut self, offset: usize, key: Option<&str>, message: String) {
        let (line, column) = line_column(self.text, offset);
        self.errors.push(ConfigError {
            file: self.file.to_path_buf(),
            line,
            column,
            key: key.map(str::to_string),
            message,
        });
    }

    /// The errors in file order.
    fn finish(mut self) -> Vec<ConfigError> {
        self.errors.sort_by_key(|e| (e.line, e.column));
        self.errors
    }
}

/// The number a TOML integer value holds (TOML integers fit in `i64`).
fn integer_of(value: &Value<'_>) -> Option<i128> {
    match value.get_ref() {
        DeValue::Integer(int) => i128::from_str_radix(int.as_str(), int.radix()).ok(),
        _ => None,
    }
}

fn put<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

/// The type of a TOML value with its article: "a string", "an array".
fn a(value: &DeValue<'_>) -> String {
    let kind = value.type_str();
    let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind}")
}

/// 1-based line and column (in characters) of a byte offset in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The known key an unknown `key` most likely meant: the same key written
/// with `_` or capitals, or one at most 2 edits away (3 for keys of 10
/// characters or more).
fn suggest(key: &str) -> Option<&'static str> {
    let normal = key.to_ascii_lowercase().replace('_', "-");
    KEYS.iter()
        .map(|&known| (edit_distance(&normal, known), known))
        .filter(|&(distance, known)| distance <= if known.len() >= 10 { 3 } else { 2 })
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, known)| known)
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_characters() {
        let text = "a = 1\né = \"x\"\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        let value = text.find('"').unwrap();
        assert_eq!(line_column(text, value), (2, 5));
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("send-fil"), Some("send-file"));
        assert_eq!(suggest("send_file"), Some("send-file"));
        assert_eq!(suggest("IO_THREADS"), Some("io-threads"));
        assert_eq!(suggest("keepalive"), None);
        assert_eq!(suggest("keep-alive-timeout"), Some("keepalive-timeout"));
        assert_eq!(suggest("colour"), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
