//! The runtime file's values: sizes, durations, counts, booleans, paths,
//! log targets, header values; each checked and every problem recorded.

use super::{a, AccessLogFormat, Checker, Coding, LogTarget, SendFile, Value};
use crate::rt::config::units::{format_duration, format_size, parse_duration, parse_size};
use crate::rt::config::units::{DURATION_FORMS, SIZE_FORMS};
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Duration;
use toml::de::DeValue;

impl Checker<'_> {
    pub(super) fn send_file(&mut self, key: &str, value: &Value<'_>) -> Option<SendFile> {
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
    pub(super) fn codings(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<Coding>> {
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
    pub(super) fn boolean(&mut self, key: &str, value: &Value<'_>) -> Option<bool> {
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

    pub(super) fn count(
        &mut self,
        key: &str,
        value: &Value<'_>,
        range: RangeInclusive<u64>,
    ) -> Option<usize> {
        self.integer(key, value, range).map(|n| n as usize)
    }

    pub(super) fn integer(
        &mut self,
        key: &str,
        value: &Value<'_>,
        range: RangeInclusive<u64>,
    ) -> Option<u64> {
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
    pub(super) fn bytes(&mut self, key: &str, value: &Value<'_>) -> Option<u64> {
        let n = integer_of(value)?;
        match u64::try_from(n) {
            Ok(bytes) => Some(bytes),
            Err(_) if n < 0 => {
                self.bad(key, value, format!("a size cannot be negative, found {n}"))
            }
            Err(_) => self.bad(key, value, format!("the size {n} is too large")),
        }
    }

    pub(super) fn size(
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

    pub(super) fn duration(
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

    pub(super) fn log(
        &mut self,
        key: &str,
        value: &Value<'_>,
        may_be_off: bool,
    ) -> Option<LogTarget> {
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

    pub(super) fn log_format(&mut self, key: &str, value: &Value<'_>) -> Option<AccessLogFormat> {
        const WANT: &str = "\"combined\" (nginx's format) or \"json\"";
        match self.string(key, value, WANT)? {
            "combined" => Some(AccessLogFormat::Combined),
            "json" => Some(AccessLogFormat::Json),
            other => self.bad(key, value, format!("expected {WANT}, found \"{other}\"")),
        }
    }

    pub(super) fn path(&mut self, key: &str, value: &Value<'_>) -> Option<PathBuf> {
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
    pub(super) fn header_value(&mut self, key: &str, value: &Value<'_>, s: &str) -> Option<String> {
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
    pub(super) fn string<'v>(
        &mut self,
        key: &str,
        value: &'v Value<'_>,
        want: &str,
    ) -> Option<&'v str> {
        match value.get_ref() {
            DeValue::String(s) => Some(s),
            other => self.bad(key, value, format!("expected {want}, found {}", a(other))),
        }
    }
}

/// The number a TOML integer value holds (TOML integers fit in `i64`).
pub(super) fn integer_of(value: &Value<'_>) -> Option<i128> {
    match value.get_ref() {
        DeValue::Integer(int) => i128::from_str_radix(int.as_str(), int.radix()).ok(),
        _ => None,
    }
}
