//! The runtime: the operator's runtime file, and (later) worker threads, the
//! io pool, stats and logs.

mod config;

pub use config::{
    format_duration, format_size, ConfigError, LogTarget, Runtime, SendFile, KEYS, RUNTIME_ENV,
};
