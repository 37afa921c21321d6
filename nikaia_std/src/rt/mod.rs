//! The runtime: the operator's runtime file, the vehicles' names and the
//! report `nikaia explain` reads. Portable; the backend that uses them
//! lives in `linux/`.

mod config;
pub(crate) mod stats;
mod vehicle;

#[cfg(target_os = "linux")]
pub(crate) use config::available_cores;
pub(crate) use config::{any_matches, canonical};
pub use config::{
    format_duration, format_size, format_utc, reserved_header, AccessLogFormat, AuthRule,
    CacheControl, CertFiles, CertSummary, Coding, ConfigError, Cors, DenyRule, FallbackFor,
    Finding, Glob, HeaderRule, HttpsRedirect, Listen, ListenAddr, LogTarget, Net, Origins, Runtime,
    SecurityHeaders, SendFile, Site, TrustedProxies, Users, KEYS, RUNTIME_ENV, UNIX_MODE,
};
pub use stats::{CertReport, CompressedReport, H2Report, Report, TlsReport};
pub(crate) use vehicle::Vehicle;
