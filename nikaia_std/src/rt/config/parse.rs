//! From the text of a runtime file to a [`Runtime`], or to every problem in it.

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

mod acme;
mod certificate;
mod http3;
mod listen;
mod locks;
mod pages;
mod resumable;
mod site;
mod tables;
mod values;
mod write;

use super::{
    available_cores, AccessLogFormat, AcmeNames, Coding, ConfigError, LogTarget, Runtime, SendFile,
    KEYS,
};

/// Parses and validates `text`, the contents of the runtime file `file`,
/// `[acme]`'s names coming from where `names` says.
pub(super) fn parse(
    text: &str,
    file: &Path,
    names: AcmeNames,
) -> Result<Runtime, Vec<ConfigError>> {
    let mut checker = Checker {
        text,
        file,
        base: base_dir(file),
        names,
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
pub(super) const BODY_LIMIT: RangeInclusive<u64> = 0..=1 << 50;
const BODY_MIN_RATE: RangeInclusive<u64> = 0..=1 << 30;
const MAX_WRITES: RangeInclusive<u64> = 1..=100_000;
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
    /// Where `[acme]`'s names come from: what the table must say.
    names: AcmeNames,
    errors: Vec<ConfigError>,
}

impl Checker<'_> {
    /// Builds the runtime from the top-level table, recording every problem.
    fn runtime(&mut self, table: &DeTable<'_>) -> Runtime {
        let mut rt = Runtime {
            source: Some(self.file.to_path_buf()),
            ..Runtime::default()
        };
        let mut entries: Vec<_> = table.iter().collect();
        entries.sort_by_key(|(key, _)| key.span().start);
        let given = |k: &str| entries.iter().any(|(key, _)| *key.get_ref() == *k);
        let pair = (given("tls-cert") && given("tls-key")) || given("certificate") || given("acme");
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
                "body-limit" => put(
                    &mut rt.body_limit,
                    self.size(name, value, BODY_LIMIT, "1MiB"),
                ),
                "stream-limit" => {
                    put(
                        &mut rt.stream_limit,
                        self.size(name, value, BODY_LIMIT, "1GiB"),
                    );
                }
                "body-timeout" => {
                    let timeout = self.duration(name, value, millis(1)..=HOUR * 24);
                    put(&mut rt.body_timeout, timeout);
                }
                "body-idle-timeout" => {
                    let timeout = self.duration(name, value, millis(1)..=HOUR);
                    put(&mut rt.body_idle_timeout, timeout);
                }
                "body-min-rate" => {
                    let rate = self.size(name, value, BODY_MIN_RATE, "240B");
                    put(&mut rt.body_min_rate, rate);
                }
                "body-rate-grace" => {
                    let grace = self.duration(name, value, Duration::ZERO..=HOUR);
                    put(&mut rt.body_rate_grace, grace);
                }
                "max-writes" => {
                    let writes = self.count(name, value, MAX_WRITES);
                    put(&mut rt.max_writes, writes);
                }
                "write-free-floor" => {
                    let floor = self.size(name, value, BODY_LIMIT, "64MiB");
                    put(&mut rt.write_free_floor, floor);
                }
                "http2" => put(&mut rt.http2, self.boolean(name, value)),
                "http2-max-requests" => {
                    let n = self.integer(name, value, HTTP2_MAX_REQUESTS);
                    put(&mut rt.http2_max_requests, n.map(|n| n as u32));
                }
                "http3" => rt.http3 = self.boolean(name, value).or(rt.http3),
                "http3-retry" => put(&mut rt.http3_retry, self.http3_retry(name, value)),
                "http3-gso" => put(&mut rt.http3_gso, self.boolean(name, value)),
                "http3-retry-handshakes" => {
                    let n = self.count(name, value, http3::RETRY_HANDSHAKES);
                    put(&mut rt.http3_retry_handshakes, n);
                }
                "alt-svc-max-age" => {
                    put(&mut rt.alt_svc_max_age, self.alt_svc_max_age(name, value));
                }
                "access-log" => put(&mut rt.access_log, self.log(name, value, true)),
                "access-log-format" => {
                    put(&mut rt.access_log_format, self.log_format(name, value));
                }
                "error-log" => put(&mut rt.error_log, self.log(name, value, false)),
                "stats-socket" => rt.stats_socket = self.path(name, value),
                "tls-cert" => rt.tls_cert = self.path(name, value),
                "tls-key" => rt.tls_key = self.path(name, value),
                "certificate" => put(&mut rt.certificates, self.certificates(name, value)),
                "acme" => rt.acme = self.acme(name, value),
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
                "write" => put(&mut rt.site.write, self.write_rules(name, value)),
                "resumable" => rt.resumable = self.resumable(name, value),
                "webdav" => put(&mut rt.site.webdav, self.boolean(name, value)),
                "apple-double" => {
                    put(&mut rt.site.apple_double, self.apple_double(name, value));
                }
                "webdav-locks" => rt.site.webdav_locks = self.webdav_locks(name, value),
                _ => self.unknown_key(key),
            }
        }
        self.tls_pair(&entries);
        self.proxy_protocol_trust(&entries, &rt);
        self.http3_needs_tls(&entries, &rt, pair);
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
