//! The runtime: the operator's runtime file, logs, and the counters
//! `nikaia explain` reads.

mod config;
pub(crate) mod log;

pub use config::{
    format_duration, format_size, ConfigError, LogTarget, Runtime, SendFile, KEYS, RUNTIME_ENV,
};
