//! The runtime: the operator's runtime file, logs, and the counters
//! `nikaia explain` reads.

mod config;
pub(crate) mod log;

pub use config::{ConfigError, Runtime, SendFile};
