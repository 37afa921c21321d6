//! `nikaia serve` over HTTPS as an operator runs it: a runtime file naming
//! the pair, SIGHUP, `nikaia check`, `nikaia explain`, and the memory a
//! slow reader may hold.

mod common;

use common::{nikaia, spawn_serve, Served};
use nikaia_tests::{TestPki, TlsClient};
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

/// Deterministic bytes of any length.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2654435761).to_le_bytes()[1] ^ seed)
        .collect()
}

/// A site, and a runtime file serving it over HTTPS with `pki`'s pair.
fn setup(pki: &TestPki, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("site")).unwrap();
    std::fs::write(dir.path().join("site/index.html"), "<h1>home</h1>").unwrap();
    std::fs::write(
        dir.path().join("runtime.toml"),
        format!(
            "listen = \"127.0.0.1:0\"\nworkers = 1\naccess-log = \"off\"\n\
             tls-cert = \"{}\"\ntls-key = \"{}\"\n{extra}",
            pki.cert.display(),
            pki.key.display()
        ),
    )
    .unwrap();
    dir
}

fn serve(dir: &Path) -> (Served, std::net::SocketAddr) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
    cmd.arg("serve")
        .arg(dir.join("site"))
        .arg("--runtime")
        .arg(dir.join("runtime.toml"));
    let (child, addr) = spawn_serve(cmd);
    (child, addr.parse().unwrap())
}

fn signal(child: &Child, signal: rustix::process::Signal) {
    rustix::process::kill_process(rustix::process::Pid::from_child(child), signal).unwrap();
}

fn stop(mut child: Served) {
    signal(&child, rustix::process::Signal::TERM);
    assert!(child.wait().unwrap().success());
}

fn subject_has(c: &TlsClient, name: &str) -> bool {
    let der = c.session().peer_certificates().unwrap()[0].to_vec();
    der.windows(name.len()).any(|w| w == name.as_bytes())
}

#[test]
fn serve_speaks_https_and_sighup_reloads_the_pair() {
    let mut pki = TestPki::new();
    let dir = setup(&pki, "error-log = \"error.log\"\n");
    let (child, addr) = serve(dir.path());
    let config = pki.client_config();
    let mut before = TlsClient::connect_tls(addr, config.clone());
    assert_eq!(before.get("/").text(), "<h1>home</h1>");
    assert!(subject_has(&before, "server one"));

    pki.issue("server two");
    signal(&child, rustix::process::Signal::HUP);
    let log = dir.path().join("error.log");
    let mut waited = 0;
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("reloaded")
    {
        std::thread::sleep(Duration::from_millis(20));
        waited += 1;
        assert!(waited < 250, "no reload logged");
    }
    // A new client (a resumed session would show the certificate of the
    // session it resumed).
    let mut after = TlsClient::connect_tls(addr, pki.client_config());
    assert!(subject_has(&after, "server two"));
    assert_eq!(after.get("/").status, 200);
    // The connection made before the reload is still served.
    assert_eq!(before.get("/").status, 200);
    stop(child);
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
        .unwrap()
}

#[test]
fn slow_https_readers_hold_bounded_memory_and_stall_no_one() {
    let pki = TestPki::new();
    let dir = setup(&pki, "");
    {
        let mut f = std::fs::File::create(dir.path().join("site/big.bin")).unwrap();
        let chunk = pattern(1 << 20, 7);
        for _ in 0..64 {
            f.write_all(&chunk).unwrap();
        }
    }
    let (child, addr) = serve(dir.path());
    let config = pki.client_config();
    let before = rss_kib(child.id());
    // Twenty clients ask for 64 MiB each and read nothing.
    let stalled: Vec<TlsClient> = (0..20)
        .map(|_| {
            let mut c = TlsClient::connect_tls(addr, config.clone());
            c.send("GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // The one worker still answers everyone else.
    for _ in 0..20 {
        let mut c = TlsClient::connect_tls(addr, config.clone());
        assert_eq!(c.get("/").text(), "<h1>home</h1>");
    }
    let grown = rss_kib(child.id()).saturating_sub(before);
    // Unbounded, this would be 20 × 64 MiB. Each stalled send holds one
    // read buffer and the session's outgoing records (64 KiB each).
    assert!(
        grown < 16 << 10,
        "RSS grew by {grown} KiB for 20 stalled readers"
    );
    drop(stalled);
    stop(child);
}

#[test]
fn check_refuses_a_key_that_does_not_match_and_warns_of_expiry() {
    let pki = TestPki::new();
    let dir = setup(&pki, "");
    let out = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");

    // Another certificate's key.
    let (_, other_key) = pki.make("someone else", 2100);
    let wrong = dir.path().join("wrong-key.pem");
    std::fs::write(&wrong, other_key).unwrap();
    let rt = std::fs::read_to_string(dir.path().join("runtime.toml")).unwrap();
    let key_line = format!("tls-key = \"{}\"", pki.key.display());
    std::fs::write(
        dir.path().join("mismatch.toml"),
        rt.replace(&key_line, &format!("tls-key = \"{}\"", wrong.display())),
    )
    .unwrap();
    let out = nikaia(dir.path(), &["check", "mismatch.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error: key `tls-key`"), "{err}");
    assert!(err.contains("wrong-key.pem"), "{err}");
    assert!(err.contains("does not match the certificate"), "{err}");
    // The server refuses to start with it too.
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(dir.path().join("site"))
        .arg("--runtime")
        .arg(dir.path().join("mismatch.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not match"));

    // An expired certificate: a warning, status 0.
    let (cert, key) = pki.make("expired", 2021);
    std::fs::write(&pki.cert, cert).unwrap();
    std::fs::write(&pki.key, key).unwrap();
    let out = nikaia(dir.path(), &["check", "runtime.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("warning: key `tls-cert`"), "{err}");
    assert!(err.contains("expired on Fri, 01 Jan 2021"), "{err}");

    // Not PEM at all.
    std::fs::write(&pki.cert, "hello").unwrap();
    let out = nikaia(dir.path(), &["check", "runtime.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error: key `tls-cert`"), "{err}");
}

#[test]
fn explain_shows_handshakes_and_tls_vehicles() {
    let pki = TestPki::new();
    let dir = setup(&pki, "stats-socket = \"stats.sock\"\n");
    let (child, addr) = serve(dir.path());
    let config = pki.client_config();
    for _ in 0..2 {
        let mut c = TlsClient::connect_tls(addr, config.clone());
        for _ in 0..3 {
            assert_eq!(c.get("/").status, 200);
        }
    }
    let out = nikaia(
        dir.path(),
        &["explain", "--runtime", "runtime.toml", "--json"],
    );
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tls = &report["tls"];
    assert_eq!(tls["handshakes_full"], 1, "{report}");
    assert_eq!(tls["handshakes_resumed"], 1, "{report}");
    assert_eq!(tls["failures"], 0, "{report}");
    let requests: u64 = tls["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(requests, 6, "{report}");
    let out = nikaia(dir.path(), &["explain", "--runtime", "runtime.toml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("handshakes: 1 full, 1 resumed, 0 failed"),
        "{text}"
    );
    assert!(text.contains("kept copy"), "{text}");
    let out = nikaia(
        dir.path(),
        &["explain", "--runtime", "runtime.toml", "--prometheus"],
    );
    let prom = common::parse_prometheus(&String::from_utf8(out.stdout).unwrap());
    let sample = |family, labels: &[(&str, &str)]| common::prometheus_sample(&prom, family, labels);
    assert_eq!(sample("nikaia_tls_handshakes", &[("result", "full")]), 1.0);
    assert_eq!(
        sample("nikaia_tls_handshakes", &[("result", "resumed")]),
        1.0
    );
    assert_eq!(
        sample("nikaia_tls_handshakes", &[("result", "failed")]),
        0.0
    );
    assert_eq!(sample("nikaia_responses", &[("class", "2xx")]), 6.0);
    let tls_requests: f64 = prom["nikaia_vehicle_responses"]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s[1]["transport"] == "tls")
        .map(|s| s[2].as_f64().unwrap())
        .sum();
    assert_eq!(tls_requests, 6.0, "{prom}");
    stop(child);
}

#[test]
fn check_lists_each_pair_and_explain_shows_them() {
    let pki = TestPki::new();
    let (b_cert, b_key) = pki.write_pair("b", "pair b", &["b.example", "*.b.example"], 2100);
    let table = format!(
        "stats-socket = \"stats.sock\"\n[[certificate]]\ncert = \"{}\"\nkey = \"{}\"\ndefault = true\n",
        b_cert.display(),
        b_key.display()
    );
    let dir = setup(&pki, &table);
    let out = nikaia(dir.path(), &["check", "runtime.toml"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        listed.contains("# 2 certificate pair(s) load:\n"),
        "{listed}"
    );
    assert!(
        listed.contains(&format!(
            "#   {}: localhost, 127.0.0.1; not after 2100-01-01T00:00:00Z\n",
            pki.cert.display()
        )),
        "{listed}"
    );
    assert!(
        listed.contains(&format!(
            "#   {} (the default): b.example, *.b.example; not after 2100-01-01T00:00:00Z\n",
            b_cert.display()
        )),
        "{listed}"
    );

    // A pair of a table whose key is another's: an error of `certificate`,
    // and the server does not start.
    let (_, stray) = pki.make_for("stray", &["b.example"], 2100);
    let stray_key = dir.path().join("stray.key");
    std::fs::write(&stray_key, stray).unwrap();
    let rt = std::fs::read_to_string(dir.path().join("runtime.toml")).unwrap();
    let mismatch = rt.replace(
        &b_key.display().to_string(),
        &stray_key.display().to_string(),
    );
    std::fs::write(dir.path().join("mismatch.toml"), mismatch).unwrap();
    let out = nikaia(dir.path(), &["check", "mismatch.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error: key `certificate`"), "{err}");
    assert!(
        err.contains("stray.key: the private key does not match"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(dir.path().join("site"))
        .arg("--runtime")
        .arg(dir.path().join("mismatch.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not match"));
    // A certificate that names nothing serves nothing.
    let (bare_cert, bare_key) = pki.write_pair("bare", "no names", &[], 2100);
    let bare = rt
        .replace(
            &b_cert.display().to_string(),
            &bare_cert.display().to_string(),
        )
        .replace(
            &b_key.display().to_string(),
            &bare_key.display().to_string(),
        );
    std::fs::write(dir.path().join("bare.toml"), bare).unwrap();
    let out = nikaia(dir.path(), &["check", "bare.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("names no DNS name or IP address"), "{err}");

    // explain lists the pairs with their names, end and handshakes.
    let (child, addr) = serve(dir.path());
    let config = pki.client_config();
    let mut c = TlsClient::connect_named(addr, config.clone(), "files.b.example").unwrap();
    assert_eq!(c.get("/").status, 200);
    assert_eq!(c.peer_common_name(), "pair b");
    let out = nikaia(
        dir.path(),
        &["explain", "--runtime", "runtime.toml", "--json"],
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let certs = &report["tls"]["certificates"];
    assert_eq!(certs.as_array().unwrap().len(), 2, "{report}");
    assert_eq!(
        certs[1]["names"],
        serde_json::json!(["b.example", "*.b.example"])
    );
    assert_eq!(certs[1]["default"], true);
    assert_eq!(certs[1]["source"], "file");
    assert_eq!(certs[1]["not_after"], 4_102_444_800u64);
    assert_eq!(certs[1]["handshakes"], 1, "{report}");
    assert_eq!(certs[0]["handshakes"], 0, "{report}");
    assert!(certs[1]["expires_in"].as_i64().unwrap() > 0);
    let out = nikaia(dir.path(), &["explain", "--runtime", "runtime.toml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("certificates (2; 0 handshakes refused"),
        "{text}"
    );
    assert!(text.contains("b.example, *.b.example"), "{text}");
    assert!(
        text.contains("not after 2100-01-01T00:00:00Z, in "),
        "{text}"
    );
    assert!(text.contains("(file, the default)"), "{text}");
    let out = nikaia(
        dir.path(),
        &["explain", "--runtime", "runtime.toml", "--prometheus"],
    );
    let prom = common::parse_prometheus(&String::from_utf8(out.stdout).unwrap());
    let b = b_cert.display().to_string();
    let b = [
        ("cert", b.as_str()),
        ("names", "b.example,*.b.example"),
        ("source", "file"),
    ];
    let sample = |family, labels: &[(&str, &str)]| common::prometheus_sample(&prom, family, labels);
    assert_eq!(sample("nikaia_tls_certificate_handshakes", &b), 1.0);
    assert_eq!(
        sample("nikaia_tls_certificate_not_after_seconds", &b),
        4_102_444_800.0
    );
    assert!(sample("nikaia_tls_certificate_expiry_seconds", &b) > 0.0);
    assert_eq!(sample("nikaia_tls_unrecognized_name", &[]), 0.0);
    stop(child);
}
