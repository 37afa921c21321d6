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
    default_storage, format_duration, format_size, format_utc, reserved_header, AccessLogFormat,
    Acme, AcmeNames, AppleDouble, AuthRule, CacheControl, CertFiles, CertSummary, ChallengeKind,
    Coding, ConfigError, Cors, DenyRule, Eab, FallbackFor, Finding, Glob, HeaderRule, Http3Retry,
    HttpsRedirect, KeyType, Listen, ListenAddr, LogTarget, Net, Origins, Resumable, Runtime,
    SecurityHeaders, SendFile, Site, TrustedProxies, Users, WebdavLocks, WriteRule,
    DEFAULT_RESUMABLE_ENDPOINT, KEYS, LETS_ENCRYPT, LETS_ENCRYPT_STAGING, RUNTIME_ENV, UNIX_MODE,
};
pub use stats::{
    BodiesReport, CertReport, CompressedReport, H2Report, H3Report, LocksReport, ProducedReport,
    Report, ResumableReport, TlsReport, WritesReport,
};
pub(crate) use vehicle::Vehicle;
