//! The runtime: the operator's runtime file, the io pool, logs, and the
//! counters `nikaia explain` reads.

mod config;
#[cfg(target_os = "linux")]
pub(crate) mod log;
#[cfg(target_os = "linux")]
pub(crate) mod pool;
pub(crate) mod stats;
#[cfg(target_os = "linux")]
pub(crate) mod stats_socket;

pub use config::{
    format_duration, format_size, AccessLogFormat, CacheControl, Coding, ConfigError, Finding,
    Glob, LogTarget, Runtime, SendFile, KEYS, RUNTIME_ENV,
};
pub use stats::{Report, TlsReport};
