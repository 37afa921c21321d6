//! The runtime file: TOML the operator writes to tune the mechanism on the
//! machine the program runs on. Normative text: `spec/runtime-file.md`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// `send-file`: how std may send a file body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendFile {
    /// std chooses per response on this machine (the default).
    Auto,
    /// Never sendfile: kept mapping or read+write.
    Never,
    /// sendfile at or above this many bytes; below it, kept mapping or read.
    AtLeast(u64),
}

/// The effective runtime configuration (the file's values, defaults filled in).
#[derive(Clone, Debug, PartialEq)]
pub struct Runtime {
    pub listen: SocketAddr,
    /// Event-loop threads; 0 in the file means "one per available core" and is
    /// resolved at load time, so this is always at least 1.
    pub workers: usize,
    pub io_threads: usize,
    pub send_file: SendFile,
    pub send_file_max_chunk: u64,
    pub static_cache: usize,
    pub static_cache_bytes: u64,
    pub header_timeout: Duration,
    pub keepalive_timeout: Duration,
    pub send_timeout: Duration,
    pub max_connections: usize,
    pub max_header_bytes: usize,
    /// None: stderr. Some(path): append to the file.
    pub access_log: Option<PathBuf>,
    pub error_log: Option<PathBuf>,
    pub stats_socket: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
}

/// A runtime file that could not be accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub key: Option<String>,
    pub message: String,
}

// STUB below this line: replaced by the runtime-file work (issue 2).
impl Default for Runtime {
    fn default() -> Runtime {
        Runtime {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            io_threads: 4,
            send_file: SendFile::Auto,
            send_file_max_chunk: 2 << 20,
            static_cache: 1024,
            static_cache_bytes: 64 << 20,
            header_timeout: Duration::from_secs(10),
            keepalive_timeout: Duration::from_secs(30),
            send_timeout: Duration::from_secs(30),
            max_connections: 10_000,
            max_header_bytes: 32 << 10,
            access_log: None,
            error_log: None,
            stats_socket: None,
            tls_cert: None,
            tls_key: None,
        }
    }
}

impl Runtime {
    /// Reads and validates a runtime file. Every problem found is returned.
    pub fn load(_path: &std::path::Path) -> Result<Runtime, Vec<ConfigError>> {
        Ok(Runtime::default())
    }

    /// The runtime for a process: `explicit` (from `--runtime`), else the
    /// `NIKAIA_RUNTIME` environment variable, else the defaults.
    pub fn from_args(explicit: Option<&std::path::Path>) -> Result<Runtime, Vec<ConfigError>> {
        match explicit {
            Some(p) => Runtime::load(p),
            None => Ok(Runtime::default()),
        }
    }
}
