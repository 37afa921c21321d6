//! The runtime: the operator's runtime file, and (later) worker threads, the
//! io pool, stats and logs.

mod config;

pub use config::{ConfigError, Runtime, SendFile};
