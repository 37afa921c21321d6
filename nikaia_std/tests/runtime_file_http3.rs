//! HTTP/3's runtime keys (`spec/runtime-file.md`, `spec/http3.md`):
//! `http3`, `http3-retry`, `http3-retry-handshakes`, `alt-svc-max-age`,
//! the TLS listener `http3` needs, and `Alt-Svc` kept out of `[[headers]]`.
#![cfg(target_os = "linux")]

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use nikaia_std::rt::{AcmeNames, ConfigError, Http3Retry, Listen, Runtime};

const FILE: &str = "runtime.toml";

/// A pair named (the paths are not read here), so listeners speak TLS.
const PAIR: &str = "tls-cert = \"cert.pem\"\ntls-key = \"key.pem\"\n";

fn parse(text: &str) -> Result<Runtime, Vec<ConfigError>> {
    Runtime::parse(text, Path::new(FILE))
}

fn ok(text: &str) -> Runtime {
    parse(text).unwrap_or_else(|e| panic!("expected {text:?} to be accepted, got:\n{e:?}"))
}

/// The errors as the program prints them: one line each.
fn errors(text: &str) -> String {
    match parse(text) {
        Ok(rt) => panic!("expected {text:?} to be refused, got {rt:?}"),
        Err(errors) => errors.iter().map(|e| format!("{e}\n")).collect(),
    }
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn on_by_default_with_retry_on_a_crowd_and_a_day_of_alt_svc() {
    let rt = Runtime::default();
    assert_eq!(rt.http3, None);
    assert!(rt.http3_on());
    assert_eq!(rt.http3_retry, Http3Retry::Auto);
    assert_eq!(rt.http3_retry_handshakes, 64);
    assert!(rt.http3_gso);
    assert_eq!(rt.alt_svc_max_age, Duration::from_secs(86_400));
    let printed = rt.to_toml();
    for line in [
        "\n# http3 is not set\n",
        "\nhttp3-retry = \"auto\"\n",
        "\nhttp3-retry-handshakes = 64\n",
        "\nhttp3-gso = true\n",
        "\nalt-svc-max-age = \"24h\"\n",
    ] {
        assert!(printed.contains(line), "{line:?} missing from:\n{printed}");
    }
    // The order of the spec: right after HTTP/2's keys.
    let at = |key: &str| printed.find(&format!("\n{key} ")).unwrap();
    let http3 = printed.find("\n# http3 is not set\n").unwrap();
    assert!(at("http2-max-requests") < http3);
    assert!(http3 < at("http3-retry"));
    assert!(at("http3-retry-handshakes") < at("alt-svc-max-age"));
    assert!(at("alt-svc-max-age") < at("access-log"));
    // Left out, it stays left out when the printed file is read back.
    assert_eq!(ok(&printed).http3, None);
}

#[test]
fn left_out_http3_is_on_beside_a_tls_listener_and_nowhere_else() {
    // A TLS listener: its address, as with `true`.
    let text = format!("{PAIR}listen = \"127.0.0.1:8443\"\n");
    let rt = ok(&text);
    assert_eq!(rt.http3, None);
    assert_eq!(rt.http3_addresses(), [addr("127.0.0.1:8443")]);
    // No TLS listener: no HTTP/3, and nothing to refuse.
    let rt = ok("listen = \"127.0.0.1:8080\"\n");
    assert_eq!(rt.http3_addresses(), []);
    // `false` is kept apart from left out, and printed back.
    let rt = ok(&format!("{text}http3 = false\n"));
    assert_eq!(rt.http3, Some(false));
    assert_eq!(rt.http3_addresses(), []);
    assert!(rt.to_toml().contains("\nhttp3 = false\n"));
    assert_eq!(ok(&rt.to_toml()), rt);
}

#[test]
fn every_key_is_read_and_printed_back() {
    let text = format!(
        "{PAIR}listen = \"127.0.0.1:8443\"\nhttp3 = true\nhttp3-retry = \"always\"\n\
         http3-retry-handshakes = 1\nhttp3-gso = false\nalt-svc-max-age = \"0s\"\n"
    );
    let rt = ok(&text);
    assert_eq!(rt.http3, Some(true));
    assert_eq!(rt.http3_retry, Http3Retry::Always);
    assert_eq!(rt.http3_retry_handshakes, 1);
    assert!(!rt.http3_gso);
    assert_eq!(rt.alt_svc_max_age, Duration::ZERO);
    assert_eq!(ok(&rt.to_toml()), rt);

    for (value, retry) in [
        ("auto", Http3Retry::Auto),
        ("always", Http3Retry::Always),
        ("never", Http3Retry::Never),
    ] {
        assert_eq!(
            ok(&format!("http3-retry = \"{value}\"\n")).http3_retry,
            retry
        );
    }
    for (value, secs) in [
        ("\"90s\"", 90),
        ("\"30m\"", 1800),
        ("\"8760h\"", 31_536_000),
    ] {
        let rt = ok(&format!("alt-svc-max-age = {value}\n"));
        assert_eq!(rt.alt_svc_max_age, Duration::from_secs(secs), "{value}");
        assert_eq!(ok(&rt.to_toml()).alt_svc_max_age, rt.alt_svc_max_age);
    }
    assert_eq!(
        ok("http3-retry-handshakes = 1000000\n").http3_retry_handshakes,
        1_000_000
    );
}

#[test]
fn bad_values_are_refused_at_their_place() {
    assert_eq!(
        errors("http3 = \"true\"\nhttp3-retry = \"sometimes\"\nalt-svc-max-age = 86400\n"),
        "runtime.toml:1:9: error: key `http3`: expected true or false, found the string \"true\"; write it without quotes\n\
         runtime.toml:2:15: error: key `http3-retry`: expected \"auto\" (Retry once `http3-retry-handshakes` handshakes are in progress), \"always\" or \"never\", found \"sometimes\"\n\
         runtime.toml:3:19: error: key `alt-svc-max-age`: a duration needs a unit: write \"86400s\" or \"86400ms\", not 86400 (units: ms, s, m, h)\n"
    );
    assert_eq!(
        errors("http3 = 1\nhttp3-retry = true\nhttp3-retry-handshakes = 0\n"),
        "runtime.toml:1:9: error: key `http3`: expected true or false, found an integer\n\
         runtime.toml:2:15: error: key `http3-retry`: expected \"auto\" (Retry once `http3-retry-handshakes` handshakes are in progress), \"always\" or \"never\", found true; write \"always\"\n\
         runtime.toml:3:26: error: key `http3-retry-handshakes`: expected an integer from 1 to 1000000, found 0\n"
    );
    assert_eq!(
        errors(
            "http3-retry-handshakes = \"64\"\nalt-svc-max-age = \"1500ms\"\n\
             alt-svc-max-age-x = 1\nhttp3-retry = \"Never\"\n"
        ),
        "runtime.toml:1:26: error: key `http3-retry-handshakes`: expected an integer from 1 to 1000000, found a string; write it without quotes\n\
         runtime.toml:2:19: error: key `alt-svc-max-age`: `Alt-Svc`'s `ma` counts whole seconds; write \"1s\" or \"2s\"\n\
         runtime.toml:3:1: error: key `alt-svc-max-age-x`: unknown key; did you mean `alt-svc-max-age`?\n\
         runtime.toml:4:15: error: key `http3-retry`: expected \"auto\" (Retry once `http3-retry-handshakes` handshakes are in progress), \"always\" or \"never\", found \"Never\"\n"
    );
    assert_eq!(
        errors("alt-svc-max-age = \"8761h\"\nhttp3_retry = \"auto\"\n"),
        "runtime.toml:1:19: error: key `alt-svc-max-age`: expected a duration from 0s to 8760h, found 8761h\n\
         runtime.toml:2:1: error: key `http3_retry`: unknown key; did you mean `http3-retry`? (keys are written with `-`, not `_`)\n"
    );
}

const NEEDS_TLS: &str = "error: key `http3`: HTTP/3 needs TLS, and no TCP listener speaks it \
                         (one behind a PROXY-protocol proxy does not count): \
                         name a certificate (`tls-cert` and `tls-key`, `[[certificate]]` or \
                         `[acme]`) for a listener, or leave `http3` out\n";

#[test]
fn http3_without_a_tls_listener_is_refused_at_the_key() {
    // No certificate: the default listener is plain.
    assert_eq!(
        errors("workers = 1\n  http3 = true\n"),
        format!("runtime.toml:2:3: {NEEDS_TLS}")
    );
    // A certificate, but every TCP listener says it is plain.
    let text = format!(
        "{PAIR}http3 = true\nlisten = [{{ address = \"127.0.0.1:80\", tls = false }}, \
         {{ address = \"unix:/run/site.sock\" }}]\n"
    );
    assert_eq!(errors(&text), format!("runtime.toml:3:1: {NEEDS_TLS}"));
    // Nothing else is said when `listen` itself is refused.
    let text = "http3 = true\nlisten = { address = \"127.0.0.1:443\", tls = true }\n";
    let refused = errors(text);
    assert!(!refused.contains("key `http3`"), "{refused}");
    assert!(refused.contains("key `listen`"), "{refused}");
    // Off, or left out, a plain server is fine.
    assert_eq!(ok("http3 = false\n").http3, Some(false));
    assert_eq!(ok("workers = 1\n").http3, None);
}

#[test]
fn http3_is_served_beside_each_tcp_tls_listener() {
    let text = format!(
        "{PAIR}http3 = true\nlisten = [\"127.0.0.1:8443\", \
         {{ address = \"0.0.0.0:80\", tls = false, https-redirect = true }}, \
         \"unix:/run/site.sock\", \"[::1]:0\", {{ address = \"127.0.0.2:443\", tls = true }}]\n"
    );
    let rt = ok(&text);
    assert_eq!(
        rt.http3_addresses(),
        [
            addr("127.0.0.1:8443"),
            addr("[::1]:0"),
            addr("127.0.0.2:443")
        ]
    );
    let mut off = rt.clone();
    off.http3 = Some(false);
    assert_eq!(off.http3_addresses(), []);

    // A program's own runtime: TLS decided the same way.
    let mut rt = Runtime::default();
    rt.http3 = Some(true);
    assert_eq!(
        rt.http3_addresses(),
        [],
        "no certificate: nothing speaks TLS"
    );
    let mut tls = Listen::tcp(addr("[::]:443"));
    tls.tls = Some(true);
    rt.listen.push(tls);
    assert_eq!(rt.http3_addresses(), [addr("[::]:443")]);
}

#[test]
fn http3_with_names_from_the_command_line_needs_no_tls_in_the_file() {
    // `nikaia serve --domain NAME` listens on 443 with TLS whatever the
    // file says; the file alone (`nikaia check` without `--domain`) is
    // refused.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(FILE);
    std::fs::write(&file, "http3 = true\n").unwrap();
    let rt = Runtime::load_with(&file, AcmeNames::CommandLine).unwrap();
    assert_eq!(rt.http3, Some(true));
    let refused = Runtime::load_with(&file, AcmeNames::FileOrCommandLine).unwrap_err();
    assert_eq!(refused.len(), 1);
    assert_eq!(
        (
            refused[0].line,
            refused[0].column,
            refused[0].key.as_deref()
        ),
        (1, 1, Some("http3"))
    );
}

#[test]
fn header_rules_may_not_set_alt_svc() {
    let text = r#"[[headers]]
match = "**"
set = { Alt-Svc = 'h3=":443"' }
add = { ALT-SVC = "clear", X-Ok = "yes" }
remove = ["alt-svc"]
"#;
    let why = "is the server's own header: it advertises HTTP/3 where this process serves it \
               (`http3`, `alt-svc-max-age`); a rule may not set, add or remove it";
    assert_eq!(
        errors(text),
        format!(
            "runtime.toml:3:9: error: key `headers`: `Alt-Svc` {why}\n\
             runtime.toml:4:9: error: key `headers`: `ALT-SVC` {why}\n\
             runtime.toml:5:11: error: key `headers`: `alt-svc` {why}\n"
        )
    );
    assert!(nikaia_std::rt::reserved_header("Alt-Svc"));
}
