//! The operator's runtime file (`spec/runtime-file.md`): defaults, every key,
//! every error an operator can meet, and the effective configuration that
//! `nikaia check` prints.
#![cfg(target_os = "linux")]

#[path = "runtime_file/keys.rs"]
mod keys;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use nikaia_std::rt::{
    AccessLogFormat, CacheControl, Coding, ConfigError, HttpsRedirect, Listen, ListenAddr,
    LogTarget, Runtime, SendFile, RUNTIME_ENV,
};

/// Tests that read or set `NIKAIA_RUNTIME` take this lock: tests run in
/// parallel threads of one process, which share the environment.
static ENV: Mutex<()> = Mutex::new(());

/// The fixed name errors are reported under, so snapshots are stable.
const FILE: &str = "runtime.toml";

fn parse(text: &str) -> Result<Runtime, Vec<ConfigError>> {
    Runtime::parse(text, Path::new(FILE))
}

fn ok(text: &str) -> Runtime {
    match parse(text) {
        Ok(rt) => rt,
        Err(errors) => panic!(
            "expected {text:?} to be accepted, got:\n{}",
            render(&errors)
        ),
    }
}

/// The errors as the program prints them: one line each.
fn errors(text: &str) -> String {
    match parse(text) {
        Ok(rt) => panic!("expected {text:?} to be refused, got {rt:?}"),
        Err(errors) => render(&errors),
    }
}

fn render(errors: &[ConfigError]) -> String {
    errors.iter().map(|e| format!("{e}\n")).collect()
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

// ---- accepted files -------------------------------------------------------

#[test]
fn defaults_when_there_is_no_file() {
    let rt = Runtime::default();
    assert_eq!(
        rt.listen,
        vec![Listen::tcp("127.0.0.1:8080".parse::<SocketAddr>().unwrap())]
    );
    assert_eq!(rt.workers, cores());
    assert!(rt.workers >= 1);
    assert_eq!(rt.io_threads, 4);
    assert_eq!(rt.send_file, SendFile::Auto);
    assert_eq!(rt.send_file_max_chunk, 2 << 20);
    assert_eq!(rt.static_cache, 1024);
    assert_eq!(rt.static_cache_bytes, 64 << 20);
    assert_eq!(rt.precompressed, [Coding::Br, Coding::Zstd, Coding::Gzip]);
    assert_eq!(rt.header_timeout, Duration::from_secs(10));
    assert_eq!(rt.keepalive_timeout, Duration::from_secs(30));
    assert_eq!(rt.send_timeout, Duration::from_secs(30));
    assert_eq!(rt.max_connections, 10_000);
    assert_eq!(rt.max_header_bytes, 32 << 10);
    assert_eq!(rt.access_log, LogTarget::Stderr);
    assert_eq!(rt.error_log, LogTarget::Stderr);
    assert_eq!(rt.stats_socket, None);
    assert_eq!(rt.tls_cert, None);
    assert_eq!(rt.tls_key, None);
}

/// The defaults, as read from the test's runtime file (which a runtime
/// remembers: its writes never touch it).
fn defaults() -> Runtime {
    let mut rt = Runtime::default();
    rt.source = Some(PathBuf::from(FILE));
    rt
}

#[test]
fn an_empty_file_is_the_defaults() {
    assert_eq!(ok(""), defaults());
    assert_eq!(ok("# nothing to tune here\n"), defaults());
}

#[test]
fn a_full_file_sets_every_key() {
    let text = r#"
listen = "[::1]:9000"
workers = 3
io-threads = 8
send-file = "1MiB"
send-file-max-chunk = "512KiB"
static-cache = 0
static-cache-bytes = "1GiB"
precompressed = ["gzip", "br"]
compress = false
compress-cache-bytes = "8MiB"
fallback-for = "all"
index = ["index.htm", "home.html"]
list = true
header-timeout = "250ms"
keepalive-timeout = "0s"
send-timeout = "2m"
max-connections = 500
max-header-bytes = 65536
http2 = false
http2-max-requests = 50
access-log = "logs/access.log"
access-log-format = "json"
error-log = "/var/log/nikaia/error.log"
stats-socket = "run/stats.sock"
tls-cert = "tls/cert.pem"
tls-key = "tls/key.pem"
"#;
    let rt = Runtime::parse(text, Path::new("/etc/nikaia/runtime.toml")).unwrap();
    let etc = PathBuf::from("/etc/nikaia");
    assert_eq!(rt, {
        let mut rt = Runtime::default();
        rt.source = Some(etc.join("runtime.toml"));
        rt.listen = vec![Listen::tcp("[::1]:9000".parse().unwrap())];
        rt.workers = 3;
        rt.io_threads = 8;
        rt.send_file = SendFile::AtLeast(1 << 20);
        rt.send_file_max_chunk = 512 << 10;
        rt.static_cache = 0;
        rt.static_cache_bytes = 1 << 30;
        rt.precompressed = vec![Coding::Gzip, Coding::Br];
        rt.compress = false;
        rt.compress_cache_bytes = 8 << 20;
        rt.header_timeout = Duration::from_millis(250);
        rt.keepalive_timeout = Duration::ZERO;
        rt.send_timeout = Duration::from_secs(120);
        rt.max_connections = 500;
        rt.max_header_bytes = 65536;
        rt.http2 = false;
        rt.http2_max_requests = 50;
        rt.access_log = LogTarget::File(etc.join("logs/access.log"));
        rt.access_log_format = AccessLogFormat::Json;
        rt.error_log = LogTarget::File("/var/log/nikaia/error.log".into());
        rt.stats_socket = Some(etc.join("run/stats.sock"));
        rt.tls_cert = Some(etc.join("tls/cert.pem"));
        rt.tls_key = Some(etc.join("tls/key.pem"));
        rt.cache_control = CacheControl::default();
        rt.not_found = None;
        rt.fallback = None;
        rt.fallback_for = nikaia_std::rt::FallbackFor::All;
        rt.index = vec!["index.htm".to_owned(), "home.html".to_owned()];
        rt.list = true;
        rt.site = Default::default();
        rt
    });
}

#[test]
fn bad_cache_control() {
    insta::assert_snapshot!(errors(
        r#"[cache-control]
default = "no-cache\r\nSet-Cookie: a=b"
"assets/**.js" = "max-age=60"
"[a-" = "max-age=60"
"docs/" = "max-age=60"
"*.css" = 60
"*.js" = ""
"*.txt" = "café"
"#
    ));
    insta::assert_snapshot!(
        "cache_control_of_a_wrong_type",
        errors("cache-control = [\"no-cache\"]\n")
    );
}

#[test]
fn not_found_and_fallback_are_names_under_the_served_root() {
    insta::assert_snapshot!(errors(
        "not-found = \"/var/www/404.html\"\nfallback = \"../app/index.html\"\n"
    ));
    insta::assert_snapshot!(
        "not_found_empty_or_a_directory",
        errors("not-found = \"\"\nfallback = \"app/\"\n")
    );
}

#[test]
fn relative_paths_are_resolved_against_the_file_directory() {
    let rt = Runtime::parse("access-log = \"a.log\"", Path::new("conf/runtime.toml")).unwrap();
    let expected = std::env::current_dir().unwrap().join("conf").join("a.log");
    assert_eq!(rt.access_log, LogTarget::File(expected));
}

#[test]
fn every_size_form() {
    let chunk = |value: &str| ok(&format!("send-file-max-chunk = {value}")).send_file_max_chunk;
    assert_eq!(chunk("4096"), 4096);
    assert_eq!(chunk("0x1000"), 4096);
    assert_eq!(chunk("1_048_576"), 1 << 20);
    assert_eq!(chunk("\"8192\""), 8192);
    assert_eq!(chunk("\"8192B\""), 8192);
    assert_eq!(chunk("\"64KiB\""), 64 << 10);
    assert_eq!(chunk("\"2MiB\""), 2 << 20);
    assert_eq!(chunk("\"1GiB\""), 1 << 30);
    assert_eq!(ok("static-cache-bytes = \"0\"").static_cache_bytes, 0);
    assert_eq!(ok("static-cache-bytes = 0").static_cache_bytes, 0);
}

#[test]
fn every_send_file_form() {
    let send_file = |value: &str| ok(&format!("send-file = {value}")).send_file;
    assert_eq!(send_file("\"auto\""), SendFile::Auto);
    assert_eq!(send_file("\"never\""), SendFile::Never);
    assert_eq!(send_file("\"0\""), SendFile::AtLeast(0));
    assert_eq!(send_file("\"512KiB\""), SendFile::AtLeast(512 << 10));
    assert_eq!(send_file("\"1MiB\""), SendFile::AtLeast(1 << 20));
    assert_eq!(send_file("65536"), SendFile::AtLeast(65536));
}

#[test]
fn every_duration_form() {
    let timeout = |value: &str| ok(&format!("header-timeout = \"{value}\"")).header_timeout;
    assert_eq!(timeout("1ms"), Duration::from_millis(1));
    assert_eq!(timeout("250ms"), Duration::from_millis(250));
    assert_eq!(timeout("10s"), Duration::from_secs(10));
    assert_eq!(timeout("2m"), Duration::from_secs(120));
    assert_eq!(timeout("1h"), Duration::from_secs(3600));
    assert_eq!(timeout("3600s"), Duration::from_secs(3600));
    assert_eq!(
        ok("keepalive-timeout = \"0s\"").keepalive_timeout,
        Duration::ZERO
    );
    assert_eq!(
        ok("keepalive-timeout = \"0ms\"").keepalive_timeout,
        Duration::ZERO
    );
}

#[test]
fn workers_zero_means_one_per_core() {
    assert_eq!(ok("workers = 0").workers, cores());
    assert_eq!(ok("workers = 1024").workers, 1024);
}

#[test]
fn access_log_can_be_off_or_stderr() {
    assert_eq!(ok("access-log = \"off\"").access_log, LogTarget::Off);
    assert_eq!(ok("access-log = \"stderr\"").access_log, LogTarget::Stderr);
    assert_eq!(ok("error-log = \"stderr\"").error_log, LogTarget::Stderr);
}

#[test]
fn access_log_format_is_combined_or_json() {
    assert_eq!(ok("").access_log_format, AccessLogFormat::Combined);
    let json = ok("access-log-format = \"json\"");
    assert_eq!(json.access_log_format, AccessLogFormat::Json);
    let text = errors("access-log-format = \"common\"\n");
    assert!(
        text.contains("1:21: error: key `access-log-format`: expected \"combined\" (nginx's format) or \"json\", found \"common\""),
        "{text}"
    );
}

#[test]
fn listen_refuses_what_cannot_be_served() {
    insta::assert_snapshot!(errors(
        r#"listen = [
  "0.0.0.0:80",
  "0.0.0.0:80",
  { address = "127.0.0.1:1", tls = true },
  { address = "127.0.0.1:2", https-redirect = true },
  { address = "127.0.0.1:3", mode = "0600" },
  { address = "unix:/x.sock", mode = "0999" },
  { address = "unix:/y.sock", port = 1 },
  { tls = false },
  { address = "127.0.0.1:4", name = "a:b" },
  "unix:",
  "localhost:80",
  7,
]
"#
    ));
    insta::assert_snapshot!("listen_empty_list", errors("listen = []\n"));
    // Without `tls = false` an entry speaks TLS when the pair is set; the
    // names an upgrade gives are taken.
    insta::assert_snapshot!(
        "listen_redirect_on_tls_by_default",
        errors(concat!(
            "tls-cert = \"c\"\ntls-key = \"k\"\nlisten = [\"127.0.0.1:443\", ",
            "{ address = \"127.0.0.1:80\", https-redirect = true }, ",
            "{ address = \"127.0.0.1:81\", name = \"nikaia\", tls = false }]\n"
        ))
    );
    insta::assert_snapshot!(
        "listen_redirect_on_tls",
        errors(
            "tls-cert = \"c\"\ntls-key = \"k\"\nlisten = [{ address = \"127.0.0.1:1\", https-redirect = true, tls = true }]\n"
        )
    );
}

// ---- the effective configuration --------------------------------------------

#[test]
fn to_toml_of_the_defaults() {
    let mut rt = Runtime::default();
    rt.workers = 8; // the default depends on the machine
    insta::assert_snapshot!(rt.to_toml());
}

#[test]
fn to_toml_round_trips() {
    let defaults = defaults();
    assert_eq!(ok(&defaults.to_toml()), defaults);

    let text = r#"
listen = "[::1]:9000"
workers = 3
send-file = "1536"
send-file-max-chunk = "4100"
static-cache-bytes = 0
precompressed = []
header-timeout = "1500ms"
keepalive-timeout = "0s"
send-timeout = "45m"
access-log = "off"
error-log = "logs/it's \"quoted\".log"
stats-socket = "/run/nikaia.sock"
tls-cert = "cert.pem"
tls-key = "key.pem"
certificate = [{ cert = "a/fullchain.pem", key = "a/privkey.pem" }, { cert = "/etc/b.pem", key = "/etc/b.key", default = true }]
cache-control = { default = "no-cache", "assets/*-[0-9a-f]*.*" = "public, max-age=31536000, immutable" }
not-found = "404.html"
fallback = "app/index.html"
security-headers = { hsts-max-age = "2h" }
trusted-proxies = ["10.0.0.0/8", "::1", "unix"]
cors = { origins = ["https://a.example"], credentials = true, headers = ["Range"] }
headers = [{ match = ["*.html", "docs/**"], set = { "X-Frame-Options" = "DENY", "it's" = "a \"quoted\" value" }, remove = ["X-Powered-By"] }, { match = "**", add = { Link = "</s.css>; rel=preload" }, always = true }]
deny = [{ match = "*.bak" }, { match = ["private/**"], status = 403 }]
resumable = { dir = "partial", endpoint = "/up/", expire = "2h", max-pending = 3, max-pending-bytes-per-user = "1GiB" }
write = [{ match = "drop/**", writers = ["alice", "ci"], delete = true, make-dirs = true, max-size = "2GiB", durability = "full" }, { match = "inbox/*", anyone = true, replace = false, plain-http = true, trusted = true }]
"#;
    let file = Path::new("/srv/site/runtime.toml");
    let rt = Runtime::parse(text, file).unwrap();
    let printed = rt.to_toml();
    assert_eq!(Runtime::parse(&printed, file), Ok(rt.clone()));
    // Every key is there, in the order of the spec.
    let keys: Vec<&str> = printed
        .lines()
        .map(|line| line.trim_start_matches("# ").split(' ').next().unwrap())
        .collect();
    assert_eq!(keys, nikaia_std::rt::KEYS);
    insta::assert_snapshot!(printed);
}

// ---- where the file comes from --------------------------------------------

#[test]
fn from_args_prefers_the_flag_then_the_environment_then_the_defaults() {
    let _env = ENV.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("flag.toml");
    let env = dir.path().join("env.toml");
    std::fs::write(&flag, "io-threads = 1\n").unwrap();
    std::fs::write(&env, "io-threads = 2\n").unwrap();

    runtime_env(None);
    assert_eq!(Runtime::from_args(None), Ok(Runtime::default()));
    assert_eq!(Runtime::from_args(Some(&flag)).unwrap().io_threads, 1);

    runtime_env(Some(env.as_os_str()));
    assert_eq!(Runtime::from_args(None).unwrap().io_threads, 2);
    assert_eq!(Runtime::from_args(Some(&flag)).unwrap().io_threads, 1);

    runtime_env(Some("".as_ref()));
    assert_eq!(Runtime::from_args(None), Ok(Runtime::default()));

    runtime_env(Some(dir.path().join("missing.toml").as_os_str()));
    assert!(Runtime::from_args(None).is_err());

    runtime_env(None);
}

/// Sets `NIKAIA_RUNTIME` to `value`, or removes it (`None`); the caller
/// holds `ENV`.
fn runtime_env(value: Option<&std::ffi::OsStr>) {
    // SAFETY: every test that touches the environment holds `ENV`, and no
    // other thread reads it meanwhile.
    unsafe {
        match value {
            Some(v) => std::env::set_var(RUNTIME_ENV, v),
            None => std::env::remove_var(RUNTIME_ENV),
        }
    }
}

#[test]
fn load_reads_the_file_and_names_it_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runtime.toml");
    std::fs::write(&path, "workers = 2\naccess-log = \"access.log\"\n").unwrap();
    let rt = Runtime::load(&path).unwrap();
    assert_eq!(rt.workers, 2);
    assert_eq!(
        rt.access_log,
        LogTarget::File(dir.path().join("access.log"))
    );

    std::fs::write(&path, "workers = -2\n").unwrap();
    let errors = Runtime::load(&path).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].file, path);
    assert_eq!((errors[0].line, errors[0].column), (1, 11));
}

// ---- refused files: what the operator reads ------------------------------------

#[test]
fn unknown_key_with_a_suggestion() {
    insta::assert_snapshot!(errors("send-fil = \"auto\"\n"));
}

#[test]
fn unknown_key_without_a_close_match() {
    insta::assert_snapshot!(errors("workers = 2\ncolour = \"blue\"\n"));
}

#[test]
fn underscore_instead_of_dash() {
    insta::assert_snapshot!(errors(
        "send_file = \"never\"\nmax_header_bytes = \"64KiB\"\n"
    ));
}

#[test]
fn wrong_type_string_for_integer() {
    insta::assert_snapshot!(errors("workers = \"four\"\nio-threads = \"4\"\n"));
}

#[test]
fn wrong_type_integer_for_string() {
    insta::assert_snapshot!(errors("listen = 8080\naccess-log = 1\n"));
}

#[test]
fn wrong_type_table() {
    insta::assert_snapshot!(errors("[send-file]\nmode = \"auto\"\n"));
}

#[test]
fn wrong_type_array() {
    insta::assert_snapshot!(errors("static-cache-bytes = [64, \"MiB\"]\n"));
}

#[test]
fn precompressed_codings() {
    assert_eq!(ok("precompressed = []").precompressed, []);
    assert_eq!(
        ok("precompressed = [\"zstd\"]").precompressed,
        [Coding::Zstd]
    );
    insta::assert_snapshot!(errors("precompressed = \"br\"\nprecompressed-x = 1\n"));
}

#[test]
fn bad_precompressed_codings() {
    insta::assert_snapshot!(errors(
        "precompressed = [\"br\", \"gz\", 1, \"deflate\", \"br\"]\n"
    ));
}

#[test]
fn wrong_type_float_and_boolean() {
    insta::assert_snapshot!(errors("io-threads = 4.0\nsend-file = true\n"));
}

#[test]
fn bad_size_unit() {
    insta::assert_snapshot!(errors(
        "send-file-max-chunk = \"2MB\"\nstatic-cache-bytes = \"64mib\"\nmax-header-bytes = \"32 KiB\"\n"
    ));
}

#[test]
fn negative_size() {
    insta::assert_snapshot!(errors("static-cache-bytes = -1\nsend-file = \"-1MiB\"\n"));
}

#[test]
fn bad_send_file() {
    insta::assert_snapshot!(errors("send-file = \"always\"\n"));
}

#[test]
fn bad_duration() {
    insta::assert_snapshot!(errors(
        "header-timeout = \"10sec\"\nsend-timeout = \"1.5s\"\nkeepalive-timeout = \"soon\"\n"
    ));
}

#[test]
fn bare_integer_duration() {
    insta::assert_snapshot!(errors(
        "header-timeout = 10\nkeepalive-timeout = \"30\"\nsend-timeout = 0x10\n"
    ));
}

#[test]
fn out_of_range_values() {
    insta::assert_snapshot!(errors(
        r#"workers = 2000
io-threads = 0
send-file-max-chunk = "1KiB"
static-cache = 2_000_000
static-cache-bytes = "65GiB"
header-timeout = "0s"
keepalive-timeout = "2h"
send-timeout = "61m"
max-connections = 0
max-header-bytes = "2MiB"
"#
    ));
}

#[test]
fn error_log_cannot_be_off() {
    insta::assert_snapshot!(errors("error-log = \"off\"\nstats-socket = \"\"\n"));
}

#[test]
fn bad_listen_address() {
    insta::assert_snapshot!(errors("listen = \"localhost:8080\"\n"));
    insta::assert_snapshot!("listen_without_port", errors("listen = \"::1\"\n"));
}

#[test]
fn tls_cert_without_tls_key() {
    insta::assert_snapshot!(errors(
        "listen = \"0.0.0.0:443\"\ntls-cert = \"cert.pem\"\n"
    ));
    insta::assert_snapshot!(
        "tls_key_without_tls_cert",
        errors("tls-key = \"key.pem\"\n")
    );
}

#[test]
fn toml_syntax_error() {
    insta::assert_snapshot!(errors("workers = 4\nio-threads = \nsend-file = \"auto\n"));
}

#[test]
fn duplicate_key() {
    insta::assert_snapshot!(errors("workers = 4\nworkers = 8\n"));
}

#[test]
fn several_errors_are_all_reported_in_file_order() {
    let text = r#"# a runtime file with one mistake per line
tls-key = "key.pem"
listen = "127.0.0.1"
workers = -1
send_file = "auto"
static-cache-bytes = "64MB"
header-timeout = 10
access-log = "off"
"#;
    let found = parse(text).unwrap_err();
    let lines: Vec<usize> = found.iter().map(|e| e.line).collect();
    assert_eq!(lines, [2, 3, 4, 5, 6, 7]);
    insta::assert_snapshot!(render(&found));
}

#[test]
fn columns_count_characters_not_bytes() {
    insta::assert_snapshot!(errors("\"ключ\" = 1\n\"größe\" = 2\n"));
}

#[test]
fn a_missing_file() {
    let errors = Runtime::load(Path::new("does/not/exist/runtime.toml")).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        (errors[0].line, errors[0].column, errors[0].key.as_deref()),
        (0, 0, None)
    );
    insta::assert_snapshot!(render(&errors));
}

/// The example in `spec/runtime-file.md`, "Errors", is what the code prints.
#[test]
fn the_spec_example_is_what_the_operator_reads() {
    let spec = include_str!("../../spec/runtime-file.md");
    let example = spec.split("An example. This file").nth(1).unwrap();
    let mut blocks = example.split("```").skip(1).step_by(2);
    let file = blocks.next().unwrap().strip_prefix("toml\n").unwrap();
    let printed = blocks.next().unwrap().trim_start_matches('\n');
    assert_eq!(errors(file), printed);
}
