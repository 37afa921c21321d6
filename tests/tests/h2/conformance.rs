//! Conformance: the httpwg suite against h2c.

use super::text;
use nikaia_std::fs::Root;
use nikaia_std::http::{dir_handler, Server};
use nikaia_tests::corpus::write;
use nikaia_tests::{start, test_runtime};
use std::process::Command;

#[test]
fn httpwg_conformance_suite_passes_over_h2c() {
    assert!(
        Command::new("httpwg").arg("-h").output().is_ok(),
        "httpwg is needed (test.sh runs `cargo install httpwg-cli --locked`)"
    );
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("index.html"), b"<h1>index</h1>");
    let root = Root::dir(tmp.path()).unwrap();
    let server = start(
        Server::with_runtime(test_runtime())
            .route("/", |_| "root")
            .method("POST", "/", |req| format!("{} bytes", req.body().len()))
            .route("/*path", dir_handler(root, false, false)),
    );
    let out = Command::new("httpwg")
        .args([
            "-v",
            "-a",
            &format!("127.0.0.1:{}", server.local_addr().port()),
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let log = text(&out.stderr);
    let names = |prefix: &str| -> Vec<String> {
        log.lines()
            .filter_map(|l| l.split_once(prefix).map(|(_, n)| n.trim().to_owned()))
            .collect()
    };
    let ran = names("Running test: ");
    let passed = names("Test passed: ");
    let failed: Vec<&String> = ran.iter().filter(|n| !passed.contains(n)).collect();
    let summary = log
        .lines()
        .find(|l| l.contains("Passed"))
        .unwrap_or("no summary line")
        .replace("\x1b[1;32m", "")
        .replace("\x1b[1;33m", "")
        .replace("\x1b[1;36m", "")
        .replace("\x1b[0m", "");
    assert!(
        out.status.success() && failed.is_empty() && !ran.is_empty(),
        "httpwg: {summary}\nfailed ({}):\n  {}",
        failed.len(),
        failed
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
    let n = ran.len();
    assert!(
        summary.contains(&format!("Passed {n}/{n} tests")),
        "{summary}"
    );
}
