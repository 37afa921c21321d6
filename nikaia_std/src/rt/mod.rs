//! The runtime: the operator's runtime file, the vehicles' names and the
//! report `nikaia explain` reads. Portable; the backend that uses them
//! lives in `linux/`.

mod config;
pub(crate) mod stats;
mod vehicle;

pub use config::{
    format_duration, format_size, AccessLogFormat, CacheControl, Coding, ConfigError, Finding,
    Glob, HttpsRedirect, Listen, ListenAddr, LogTarget, Runtime, SendFile, KEYS, RUNTIME_ENV,
    UNIX_MODE,
};
pub use stats::{H2Report, Report, TlsReport};
pub(crate) use vehicle::Vehicle;
