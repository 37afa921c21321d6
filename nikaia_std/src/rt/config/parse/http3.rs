//! HTTP/3's keys: `http3`, `http3-retry`, `http3-retry-handshakes` and
//! `alt-svc-max-age` (`spec/runtime-file.md`, `spec/http3.md`).

use super::{a, Checker, Value};
use crate::rt::config::{Http3Retry, ListenAddr, Runtime};
use std::borrow::Cow;
use std::ops::RangeInclusive;
use std::time::Duration;
use toml::de::DeValue;
use toml::Spanned;

/// `http3-retry-handshakes`: at least one; past `max-connections`'s
/// bound it would never be reached.
pub(super) const RETRY_HANDSHAKES: RangeInclusive<u64> = 1..=1_000_000;
/// `alt-svc-max-age`: up to a year; 0 tells a client to forget the
/// alternative at once.
pub(super) const ALT_SVC_MAX_AGE: RangeInclusive<Duration> =
    Duration::ZERO..=Duration::from_secs(365 * 24 * 3600);

impl Checker<'_> {
    /// `http3-retry`: `"auto"`, `"always"` or `"never"`.
    pub(super) fn http3_retry(&mut self, key: &str, value: &Value<'_>) -> Option<Http3Retry> {
        const WANT: &str = "\"auto\" (Retry once `http3-retry-handshakes` handshakes are in \
                            progress), \"always\" or \"never\"";
        let all = [Http3Retry::Auto, Http3Retry::Always, Http3Retry::Never];
        match value.get_ref() {
            DeValue::String(s) => match all.into_iter().find(|r| r.token() == s) {
                Some(retry) => Some(retry),
                None => self.bad(key, value, format!("expected {WANT}, found \"{s}\"")),
            },
            DeValue::Boolean(b) => {
                let token = if *b { "always" } else { "never" };
                let message = format!("expected {WANT}, found {b}; write \"{token}\"");
                self.bad(key, value, message)
            }
            other => self.bad(key, value, format!("expected {WANT}, found {}", a(other))),
        }
    }

    /// `alt-svc-max-age`: a duration of whole seconds, as `ma` counts.
    pub(super) fn alt_svc_max_age(&mut self, key: &str, value: &Value<'_>) -> Option<Duration> {
        let age = self.duration(key, value, ALT_SVC_MAX_AGE)?;
        if age.subsec_nanos() != 0 {
            let (below, above) = (age.as_secs(), age.as_secs() + 1);
            let message = format!(
                "`Alt-Svc`'s `ma` counts whole seconds; write \"{below}s\" or \"{above}s\""
            );
            return self.bad(key, value, message);
        }
        Some(age)
    }

    /// `http3 = true` needs a TCP listener that speaks TLS (HTTP/3 is
    /// always TLS, and is served on such a listener's UDP port): an error
    /// at the key otherwise. `pair`: the file names a certificate. Not
    /// checked when `listen` was refused (its entries are not known), nor
    /// when `nikaia serve --domain` gives the names (its listeners on 443
    /// speak TLS).
    pub(super) fn http3_needs_tls(
        &mut self,
        entries: &[(&Spanned<Cow<'_, str>>, &Value<'_>)],
        rt: &Runtime,
        pair: bool,
    ) {
        let listen_refused = self
            .errors
            .iter()
            .any(|e| e.key.as_deref() == Some("listen"));
        let tls = rt.listen.iter().any(|l| {
            l.tls.unwrap_or(pair) && !l.proxy_protocol && matches!(l.address, ListenAddr::Tcp(_))
        });
        if rt.http3 != Some(true)
            || tls
            || listen_refused
            || self.names == crate::rt::AcmeNames::CommandLine
        {
            return;
        }
        if let Some((key, _)) = entries.iter().find(|(k, _)| *k.get_ref() == "http3") {
            let message = "HTTP/3 needs TLS, and no TCP listener speaks it (one behind a \
                           PROXY-protocol proxy does not count): name a certificate \
                           (`tls-cert` and `tls-key`, `[[certificate]]` or `[acme]`) for a \
                           listener, or leave `http3` out"
                .to_string();
            self.error(key.span().start, Some("http3"), message);
        }
    }
}
