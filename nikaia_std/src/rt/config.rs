//! The runtime file: TOML the operator writes to tune the mechanism on the
//! machine the program runs on. Normative text: `spec/runtime-file.md`.

mod acme;
mod certificate;
mod glob;
mod htpasswd;
mod listen;
mod locks;
mod parse;
mod print;
mod resumable;
mod site;
mod units;

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use acme::{
    default_storage, Acme, AcmeNames, ChallengeKind, Eab, KeyType, LETS_ENCRYPT,
    LETS_ENCRYPT_STAGING,
};
pub use certificate::{format_utc, CertFiles, CertSummary};
pub use glob::Glob;
pub use htpasswd::Users;
pub use listen::{HttpsRedirect, Listen, ListenAddr, UNIX_MODE};
pub use locks::WebdavLocks;
pub use resumable::{Resumable, DEFAULT_ENDPOINT as DEFAULT_RESUMABLE_ENDPOINT};
pub(crate) use site::{any_matches, canonical};
pub use site::{
    reserved_header, AppleDouble, AuthRule, Cors, DenyRule, HeaderRule, Net, Origins,
    SecurityHeaders, Site, TrustedProxies, WriteRule,
};
pub use units::{format_duration, format_size};

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

/// `http3-retry`: when a QUIC handshake's address is validated by a Retry
/// before the server keeps any state for it (`spec/http3.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Http3Retry {
    /// Once `http3-retry-handshakes` handshakes are in progress at once
    /// (the default): a flood pays a round trip, a quiet server none.
    #[default]
    Auto,
    /// Every handshake.
    Always,
    /// No handshake.
    Never,
}

impl Http3Retry {
    /// The value in the runtime file: `auto`, `always`, `never`.
    pub fn token(self) -> &'static str {
        match self {
            Http3Retry::Auto => "auto",
            Http3Retry::Always => "always",
            Http3Retry::Never => "never",
        }
    }
}

/// Which missing names `fallback` answers (`fallback-for`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FallbackFor {
    /// A navigation: a last segment without an extension, or `Accept`
    /// naming `text/html` (`spec/files.md`).
    #[default]
    Navigations,
    /// Every missing name (a missing asset then gets the app too).
    All,
}

/// A content coding a precompressed sidecar may hold (`precompressed`):
/// `NAME.br`, `NAME.zst` or `NAME.gz` beside `NAME` (`spec/files.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Coding {
    Br,
    Zstd,
    Gzip,
}

impl Coding {
    /// Every coding, in the default order of preference.
    pub const ALL: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];

    /// The token in `Accept-Encoding`, `Content-Encoding` and the runtime
    /// file: `br`, `zstd`, `gzip`.
    pub fn token(self) -> &'static str {
        match self {
            Coding::Br => "br",
            Coding::Zstd => "zstd",
            Coding::Gzip => "gzip",
        }
    }

    /// The sidecar's extension, without the dot: `br`, `zst`, `gz`.
    pub fn extension(self) -> &'static str {
        match self {
            Coding::Br => "br",
            Coding::Zstd => "zst",
            Coding::Gzip => "gz",
        }
    }
}

/// The effective runtime configuration (the file's values, defaults filled in).
///
/// Each field is the key of the same name with `_` for `-`; the keys' meaning,
/// defaults and ranges are in `spec/runtime-file.md`.
///
/// A program builds one from the defaults and sets what it needs, so a key
/// added later is not a breaking change (the struct is `non_exhaustive`):
///
/// ```
/// # use nikaia_std::rt::{LogTarget, Runtime};
/// let mut rt = Runtime::default();
/// rt.listen = vec!["127.0.0.1:8443".parse::<std::net::SocketAddr>().unwrap().into()];
/// rt.workers = 2;
/// rt.access_log = LogTarget::Off;
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Runtime {
    /// `listen`: every listener, in the file's order (`spec/listeners.md`).
    pub listen: Vec<Listen>,
    /// Event-loop threads; 0 in the file means "one per available core" and is
    /// resolved at load time, so this is always at least 1.
    pub workers: usize,
    pub io_threads: usize,
    pub send_file: SendFile,
    pub send_file_max_chunk: u64,
    pub static_cache: usize,
    pub static_cache_bytes: u64,
    /// The sidecar codings served, in the server's order of preference;
    /// empty: sidecars are never looked for.
    pub precompressed: Vec<Coding>,
    /// `compress`: a compressible file without a sidecar is compressed once,
    /// off the workers, and the result kept (`spec/files.md`).
    pub compress: bool,
    /// `compress-cache-bytes`: the bound on the compressed variants kept.
    pub compress_cache_bytes: u64,
    pub header_timeout: Duration,
    pub keepalive_timeout: Duration,
    pub send_timeout: Duration,
    pub max_connections: usize,
    pub max_header_bytes: usize,
    /// `body-limit`: a whole body's limit, for a route that declares none.
    pub body_limit: u64,
    /// `stream-limit`: a streamed body's limit, for a route that declares
    /// none.
    pub stream_limit: u64,
    /// `body-timeout`: how long a whole body may take to arrive, from the
    /// end of its head.
    pub body_timeout: Duration,
    /// `body-idle-timeout`: the longest pause while a streamed body arrives.
    pub body_idle_timeout: Duration,
    /// `body-min-rate`: bytes per second a streamed body must keep up,
    /// counted from `body-rate-grace` after its head; 0: no floor.
    pub body_min_rate: u64,
    pub body_rate_grace: Duration,
    /// `max-writes`: bodies being written to files at once; past it, 503
    /// from the head.
    pub max_writes: usize,
    /// `write-free-floor`: the free space a body written to a file may not
    /// take the file system below (507).
    pub write_free_floor: u64,
    /// `http2`: HTTP/2 is offered (ALPN `h2` on TLS, h2c by prior
    /// knowledge on plain listeners).
    pub http2: bool,
    /// `http2-max-requests`: streams one HTTP/2 connection may open before
    /// it is sent GOAWAY (nginx's `keepalive_requests`).
    pub http2_max_requests: u32,
    /// `http3`: HTTP/3 on the UDP port of every TCP listener that speaks
    /// TLS ([`Runtime::http3_addresses`]). `None` (the key left out, the
    /// default): served where it can be — an address whose UDP socket
    /// cannot be had has none, with a notice, and no TLS listener means
    /// no HTTP/3. `Some(true)`: served on every such address, or the
    /// start is refused; needs a TLS listener. `Some(false)`: not served,
    /// and the TLS listeners answer `Alt-Svc: clear`.
    pub http3: Option<bool>,
    /// `http3-retry`: when a handshake is sent a Retry first.
    pub http3_retry: Http3Retry,
    /// `http3-retry-handshakes`: under [`Http3Retry::Auto`], the handshakes
    /// in progress at once from which Retry is sent; at least 1.
    pub http3_retry_handshakes: usize,
    /// `http3-gso`: datagrams sent in batches the kernel cuts (GSO).
    pub http3_gso: bool,
    /// `alt-svc-max-age`: the `ma` of `Alt-Svc: h3=":PORT"; ma=SECONDS`
    /// (whole seconds; 0 sends `ma=0`).
    pub alt_svc_max_age: Duration,
    /// Where the access log goes; `Off` only for this log.
    pub access_log: LogTarget,
    /// How each access line is written.
    pub access_log_format: AccessLogFormat,
    /// Where errors are logged; never `Off`.
    pub error_log: LogTarget,
    pub stats_socket: Option<PathBuf>,
    /// `tls-cert` and `tls-key`: one certificate pair, written the short
    /// way; it is one of [`Runtime::pairs`].
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// `[[certificate]]`: more pairs, in the file's order; a TLS handshake
    /// gets the one that covers the name it asks for (`spec/tls.md`).
    pub certificates: Vec<CertFiles>,
    /// `[acme]`: certificates the server obtains and renews itself
    /// (`spec/tls.md`, "Automatic HTTPS").
    pub acme: Option<Acme>,
    /// `cache-control`: the header `http::dir_handler` puts on file answers.
    pub cache_control: CacheControl,
    /// `not-found`: a name under the served root answered with 404 for a
    /// name that is missing, hidden or outside.
    pub not_found: Option<String>,
    /// `fallback`: a name under the served root answered with 200 for a GET
    /// or HEAD of a missing name (single-page apps).
    pub fallback: Option<String>,
    /// `fallback-for`: which missing names the `fallback` answers.
    pub fallback_for: FallbackFor,
    /// `index`: the names tried, in order, for a directory `dir_handler`
    /// is asked for.
    pub index: Vec<String>,
    /// `list`: a directory without an index is listed (as `--list`).
    pub list: bool,
    /// `[resumable]`: the tus endpoint of `nikaia serve` and where it keeps
    /// partial uploads (`spec/site.md`, "Resumable uploads"); none by
    /// default.
    pub resumable: Option<Resumable>,
    /// A site's rules (`spec/site.md`): the keys `headers`,
    /// `security-headers`, `cors`, `trusted-proxies`, `auth`, `deny` and
    /// `write`.
    pub site: Site,
    /// The runtime file these values were read from (`None`: the
    /// defaults, or a program's own): never writable by a write rule.
    pub source: Option<PathBuf>,
}

/// `cache-control`: the `Cache-Control` value for a file `http::dir_handler`
/// answers with, by its name under the served root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheControl {
    /// The value when no rule matches; `None`: no header.
    pub default: Option<String>,
    /// The rules in file order; the first whose pattern matches wins.
    pub rules: Vec<(Glob, String)>,
}

impl CacheControl {
    /// The value for the file `name` (under the served root), if any.
    pub fn value_for(&self, name: &str) -> Option<&str> {
        self.rules
            .iter()
            .find(|(pattern, _)| pattern.matches(name))
            .map(|(_, value)| value.as_str())
            .or(self.default.as_deref())
    }

    /// Whether nothing is set: no rule, no default.
    pub fn is_empty(&self) -> bool {
        self.default.is_none() && self.rules.is_empty()
    }
}

/// Where a log goes (`access-log`, `error-log`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogTarget {
    /// The process's standard error (the default).
    Stderr,
    /// Not written at all (`access-log = "off"`; not allowed for `error-log`).
    Off,
    /// Appended to this file (absolute: resolved against the runtime file's
    /// directory).
    File(PathBuf),
}

/// `access-log-format`: how each access line is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AccessLogFormat {
    /// nginx's `combined` format (the default): what goaccess, awstats and
    /// most log tools read without configuration.
    #[default]
    Combined,
    /// One JSON object per line.
    Json,
}

/// A runtime file that could not be accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The runtime file, as it was named.
    pub file: PathBuf,
    /// 1-based line; 0 when the problem has no place in the file (it could not
    /// be read).
    pub line: usize,
    /// 1-based column, counted in characters; 0 together with `line`.
    pub column: usize,
    /// The key the problem is about, if any (syntax errors have none).
    pub key: Option<String>,
    /// What is wrong and what is allowed, one line.
    pub message: String,
}

/// The environment variable naming the runtime file when `--runtime` is not
/// given.
pub const RUNTIME_ENV: &str = "NIKAIA_RUNTIME";

/// Every key of the runtime file, in the order `to_toml` writes them.
pub const KEYS: [&str; 55] = [
    "listen",
    "workers",
    "io-threads",
    "send-file",
    "send-file-max-chunk",
    "static-cache",
    "static-cache-bytes",
    "precompressed",
    "compress",
    "compress-cache-bytes",
    "header-timeout",
    "keepalive-timeout",
    "send-timeout",
    "max-connections",
    "max-header-bytes",
    "body-limit",
    "stream-limit",
    "body-timeout",
    "body-idle-timeout",
    "body-min-rate",
    "body-rate-grace",
    "max-writes",
    "write-free-floor",
    "http2",
    "http2-max-requests",
    "http3",
    "http3-retry",
    "http3-retry-handshakes",
    "http3-gso",
    "alt-svc-max-age",
    "access-log",
    "access-log-format",
    "error-log",
    "stats-socket",
    "tls-cert",
    "tls-key",
    "certificate",
    "acme",
    "cache-control",
    "not-found",
    "fallback",
    "fallback-for",
    "index",
    "list",
    "resumable",
    "security-headers",
    "trusted-proxies",
    "webdav",
    "apple-double",
    "webdav-locks",
    "cors",
    "headers",
    "auth",
    "deny",
    "write",
];

impl Default for Runtime {
    fn default() -> Runtime {
        Runtime {
            listen: vec![Listen::tcp(SocketAddr::from(([127, 0, 0, 1], 8080)))],
            workers: available_cores(),
            io_threads: 4,
            send_file: SendFile::Auto,
            send_file_max_chunk: 2 << 20,
            static_cache: 1024,
            static_cache_bytes: 64 << 20,
            precompressed: Coding::ALL.to_vec(),
            compress: true,
            compress_cache_bytes: 32 << 20,
            header_timeout: Duration::from_secs(10),
            keepalive_timeout: Duration::from_secs(30),
            send_timeout: Duration::from_secs(30),
            max_connections: 10_000,
            max_header_bytes: 32 << 10,
            body_limit: 1 << 20,
            stream_limit: 1 << 30,
            body_timeout: Duration::from_secs(60),
            body_idle_timeout: Duration::from_secs(30),
            body_min_rate: 240,
            body_rate_grace: Duration::from_secs(5),
            max_writes: 64,
            write_free_floor: 64 << 20,
            http2: true,
            http2_max_requests: 1000,
            http3: None,
            http3_retry: Http3Retry::Auto,
            http3_retry_handshakes: 64,
            http3_gso: true,
            alt_svc_max_age: Duration::from_secs(86_400),
            access_log: LogTarget::Stderr,
            access_log_format: AccessLogFormat::Combined,
            error_log: LogTarget::Stderr,
            stats_socket: None,
            tls_cert: None,
            tls_key: None,
            certificates: Vec::new(),
            acme: None,
            cache_control: CacheControl::default(),
            not_found: None,
            fallback: None,
            fallback_for: FallbackFor::Navigations,
            index: vec!["index.html".to_owned()],
            list: false,
            resumable: None,
            site: Site::default(),
            source: None,
        }
    }
}

/// What `workers = 0` (and the default) resolves to.
pub(crate) fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Runtime {
    /// Whether the listener `entry` speaks TLS: its `tls`, or when left out,
    /// whether this runtime names a certificate.
    pub fn speaks_tls(&self, entry: &Listen) -> bool {
        entry.tls.unwrap_or(self.has_certificates())
    }

    /// Whether any certificate is named (`tls-cert`/`tls-key` or a
    /// `[[certificate]]`) or obtained (`[acme]`).
    pub fn has_certificates(&self) -> bool {
        (self.tls_cert.is_some() && self.tls_key.is_some())
            || !self.certificates.is_empty()
            || self.acme.is_some()
    }

    /// Every certificate pair: `tls-cert`/`tls-key` first (not a default),
    /// then the `[[certificate]]` tables in the file's order.
    pub fn pairs(&self) -> Vec<CertFiles> {
        let short = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(CertFiles::new(cert, key)),
            _ => None,
        };
        short
            .into_iter()
            .chain(self.certificates.iter().cloned())
            .collect()
    }

    /// Whether HTTP/3 is on: `http3` left out (the default) or `true`.
    pub fn http3_on(&self) -> bool {
        self.http3 != Some(false)
    }

    /// The UDP addresses HTTP/3 is served on: unless `http3 = false`,
    /// each TCP listener's that speaks TLS (not behind a PROXY-protocol
    /// proxy: its clients reach it through the proxy, which speaks TCP),
    /// the same IP and port, in `listen`'s order (a port-0 listener's UDP
    /// socket takes the port its TCP one is given); none with `http3 =
    /// false`. With `http3` left out, a start may leave out an address
    /// whose UDP port is busy.
    pub fn http3_addresses(&self) -> Vec<SocketAddr> {
        if !self.http3_on() {
            return Vec::new();
        }
        (self.listen.iter())
            .filter(|l| self.speaks_tls(l) && !l.proxy_protocol && l.https_redirect.is_none())
            .filter_map(|l| match l.address {
                ListenAddr::Tcp(addr) => Some(addr),
                ListenAddr::Unix(_) => None,
            })
            .collect()
    }

    /// The first TCP listener's address, if any (what a single-address
    /// program and its tests connect to).
    pub fn first_tcp(&self) -> Option<SocketAddr> {
        self.listen.iter().find_map(|l| match l.address {
            ListenAddr::Tcp(addr) => Some(addr),
            ListenAddr::Unix(_) => None,
        })
    }

    /// Reads and validates a runtime file. Every problem found is returned, in
    /// file order.
    pub fn load(path: &Path) -> Result<Runtime, Vec<ConfigError>> {
        Runtime::load_with(path, AcmeNames::File)
    }

    /// [`Runtime::load`], `[acme]`'s names coming from where `names` says.
    pub fn load_with(path: &Path, names: AcmeNames) -> Result<Runtime, Vec<ConfigError>> {
        let unreadable = |message: String| {
            vec![ConfigError {
                file: path.to_path_buf(),
                line: 0,
                column: 0,
                key: None,
                message,
            }]
        };
        let bytes = std::fs::read(path)
            .map_err(|e| unreadable(format!("cannot read the runtime file: {e}")))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| unreadable("the runtime file is not valid UTF-8".to_string()))?;
        parse::parse(&text, path, names)
    }

    /// Validates the text of a runtime file; `file` names it in errors, and
    /// relative paths in it are resolved against `file`'s directory.
    pub fn parse(text: &str, file: &Path) -> Result<Runtime, Vec<ConfigError>> {
        parse::parse(text, file, AcmeNames::File)
    }

    /// The runtime for a process: `explicit` (from `--runtime`), else the file
    /// named by `NIKAIA_RUNTIME` (an empty value counts as unset), else the
    /// defaults.
    pub fn from_args(explicit: Option<&Path>) -> Result<Runtime, Vec<ConfigError>> {
        if let Some(path) = explicit {
            return Runtime::load(path);
        }
        match std::env::var_os(RUNTIME_ENV) {
            Some(path) if !path.is_empty() => Runtime::load(Path::new(&path)),
            _ => Ok(Runtime::default()),
        }
    }
}

/// Something about the machine, not the file's text, that a server started
/// with a runtime would run into: found by `Runtime::preflight` (Linux).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finding {
    /// The key whose value leads to it.
    pub key: &'static str,
    /// What is wrong, one line.
    pub message: String,
    /// `false`: a server would refuse to start. `true`: it would start, but
    /// the operator should know (`nikaia check` exits 0).
    pub warning: bool,
}

/// `FILE:LINE:COL: error: key `KEY`: MESSAGE`, one line; the position is left
/// out when there is none (line 0), the key when there is none.
impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        write!(f, ": error: ")?;
        if let Some(key) = &self.key {
            write!(f, "key `{key}`: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for ConfigError {}
