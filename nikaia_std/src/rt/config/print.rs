//! The effective configuration written back as a runtime file: what
//! `nikaia check` prints (`spec/runtime-file.md`, "The effective
//! configuration").

use super::{
    format_duration, format_size, AccessLogFormat, Acme, CertFiles, FallbackFor, Listen, LogTarget,
    Resumable, Runtime, SendFile,
};
use std::path::Path;
use std::time::Duration;

impl Runtime {
    /// The effective configuration as a runtime file: every key in the order
    /// of the spec, defaults filled in. Keys without a value (`stats-socket`,
    /// `tls-cert`, `tls-key`, `cache-control`, `not-found`, `fallback`, and
    /// `http3` left to its default, when unset) are written as comments. Parsing the
    /// result gives this `Runtime` back.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        let mut line = |key: &str, value: Option<String>| match value {
            Some(value) => out.push_str(&format!("{key} = {value}\n")),
            None => out.push_str(&format!("# {key} is not set\n")),
        };
        let string = |s: &str| toml::Value::String(s.to_string()).to_string();
        let path = |p: &Path| string(&p.to_string_lossy());
        let log = |target: &LogTarget| match target {
            LogTarget::Stderr => string("stderr"),
            LogTarget::Off => string("off"),
            LogTarget::File(p) => path(p),
        };
        let listen: Vec<String> = self.listen.iter().map(Listen::to_toml).collect();
        let listen = match listen.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        line("listen", Some(listen));
        line("workers", Some(self.workers.to_string()));
        line("io-threads", Some(self.io_threads.to_string()));
        let send_file = match self.send_file {
            SendFile::Auto => "auto".to_string(),
            SendFile::Never => "never".to_string(),
            SendFile::AtLeast(bytes) => format_size(bytes),
        };
        line("send-file", Some(string(&send_file)));
        let size = |bytes: u64| string(&format_size(bytes));
        let duration = |d: Duration| string(&format_duration(d));
        line("send-file-max-chunk", Some(size(self.send_file_max_chunk)));
        line("static-cache", Some(self.static_cache.to_string()));
        line("static-cache-bytes", Some(size(self.static_cache_bytes)));
        let codings: Vec<_> = self
            .precompressed
            .iter()
            .map(|c| string(c.token()))
            .collect();
        line("precompressed", Some(format!("[{}]", codings.join(", "))));
        line("compress", Some(self.compress.to_string()));
        line(
            "compress-cache-bytes",
            Some(size(self.compress_cache_bytes)),
        );
        line("header-timeout", Some(duration(self.header_timeout)));
        line("keepalive-timeout", Some(duration(self.keepalive_timeout)));
        line("send-timeout", Some(duration(self.send_timeout)));
        line("max-connections", Some(self.max_connections.to_string()));
        line("max-header-bytes", Some(size(self.max_header_bytes as u64)));
        line("body-limit", Some(size(self.body_limit)));
        line("stream-limit", Some(size(self.stream_limit)));
        line("body-timeout", Some(duration(self.body_timeout)));
        line("body-idle-timeout", Some(duration(self.body_idle_timeout)));
        line("body-min-rate", Some(size(self.body_min_rate)));
        line("body-rate-grace", Some(duration(self.body_rate_grace)));
        line("max-writes", Some(self.max_writes.to_string()));
        line("write-free-floor", Some(size(self.write_free_floor)));
        line("http2", Some(self.http2.to_string()));
        line(
            "http2-max-requests",
            Some(self.http2_max_requests.to_string()),
        );
        // Left out, HTTP/3 is on where its UDP port can be had, which no
        // value of the key says: `nikaia check`'s comments after it do.
        line("http3", self.http3.map(|on| on.to_string()));
        line("http3-retry", Some(string(self.http3_retry.token())));
        line(
            "http3-retry-handshakes",
            Some(self.http3_retry_handshakes.to_string()),
        );
        line("http3-gso", Some(self.http3_gso.to_string()));
        line("alt-svc-max-age", Some(duration(self.alt_svc_max_age)));
        line("access-log", Some(log(&self.access_log)));
        let format = match self.access_log_format {
            AccessLogFormat::Combined => "combined",
            AccessLogFormat::Json => "json",
        };
        line("access-log-format", Some(string(format)));
        line("error-log", Some(log(&self.error_log)));
        line("stats-socket", self.stats_socket.as_deref().map(path));
        line("tls-cert", self.tls_cert.as_deref().map(path));
        line("tls-key", self.tls_key.as_deref().map(path));
        let certificates: Vec<String> = self.certificates.iter().map(CertFiles::to_toml).collect();
        line(
            "certificate",
            (!certificates.is_empty()).then(|| format!("[{}]", certificates.join(", "))),
        );
        line("acme", self.acme.as_ref().map(Acme::to_toml));
        // An inline table, so keys written after it stay top-level.
        let cache_control = (!self.cache_control.is_empty()).then(|| {
            let default = self.cache_control.default.iter().map(|v| ("default", v));
            let rules = (self.cache_control.rules.iter()).map(|(p, v)| (p.as_str(), v));
            let entries: Vec<String> = default
                .chain(rules)
                .map(|(k, v)| match k {
                    "default" => format!("default = {}", string(v)),
                    pattern => format!("{} = {}", string(pattern), string(v)),
                })
                .collect();
            format!("{{ {} }}", entries.join(", "))
        });
        line("cache-control", cache_control);
        line("not-found", self.not_found.as_deref().map(string));
        line("fallback", self.fallback.as_deref().map(string));
        let fallback_for = match self.fallback_for {
            FallbackFor::Navigations => "navigations",
            FallbackFor::All => "all",
        };
        line("fallback-for", Some(string(fallback_for)));
        let index: Vec<_> = self.index.iter().map(|n| string(n)).collect();
        line("index", Some(format!("[{}]", index.join(", "))));
        line("list", Some(self.list.to_string()));
        line("resumable", self.resumable.as_ref().map(Resumable::to_toml));
        out.push_str(&self.site.to_toml());
        out
    }
}
