//! Headless Chromium forced onto QUIC for the server's origin
//! (`--origin-to-force-quic-on`), trusting the test certificate by its key
//! (`--ignore-certificate-errors-spki-list`: Chromium's QUIC does not take
//! `--ignore-certificate-errors`), with `localhost` mapped to 127.0.0.1
//! (Chromium tries ::1 first, where nothing listens). A page of 100
//! images loads over h3 and reports back, by a POST over h3 too, what the
//! browser saw.

use super::h3_runtime;
use nikaia_std::fs::Root;
use nikaia_std::html::Raw;
use nikaia_std::http::{dir_handler, Response, Server};
use nikaia_tests::{start, TestPki};
use rcgen::PublicKeyData;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// A 1×1 transparent PNG.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/// The page: 100 images, then (once every one has loaded or failed) a
/// report of each image and of each resource's `nextHopProtocol` and
/// status.
fn page() -> String {
    let images: String = (0..100)
        .map(|i| format!("<img src=\"/img/{i}.png\" width=1 height=1>"))
        .collect();
    format!(
        r#"<!doctype html>
<body>{images}
<script>
window.addEventListener('load', () => {{
  const imgs = [...document.images];
  const report = {{
    images: imgs.length,
    loaded: imgs.filter((i) => i.complete && i.naturalWidth === 1).length,
    page: performance.getEntriesByType('navigation').map((e) => e.nextHopProtocol),
    resources: performance.getEntriesByType('resource')
      .map((e) => [e.name, e.nextHopProtocol, e.responseStatus]),
  }};
  fetch('/report', {{method: 'POST', body: JSON.stringify(report)}});
}});
</script>
"#
    )
}

/// The base64 SHA-256 of the server certificate's SubjectPublicKeyInfo, as
/// `--ignore-certificate-errors-spki-list` takes it.
fn spki_hash(pki: &TestPki) -> String {
    let key = rcgen::KeyPair::from_pem(&std::fs::read_to_string(&pki.key).unwrap()).unwrap();
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &key.subject_public_key_info());
    nikaia_tests::site::base64_bytes(d.as_ref())
}

#[test]
fn headless_chromium_loads_a_page_of_100_images_over_h3() {
    let tmp = tempfile::tempdir().unwrap();
    let png = super::base64_decode(PNG);
    for i in 0..100 {
        nikaia_tests::corpus::write(&tmp.path().join(format!("img/{i}.png")), &png);
    }
    let pki = TestPki::new();
    let (report_tx, reports) = mpsc::channel::<String>();
    let report_tx = Mutex::new(report_tx);
    let html = Raw::new(page());
    let server = start(
        Server::with_runtime(h3_runtime(&pki))
            .route("/", move |_| html.clone())
            .method("POST", "/report", move |req| {
                let text = String::from_utf8_lossy(req.body()).into_owned();
                let _ = report_tx.lock().unwrap().send(text);
                Response::new(204)
            })
            .route(
                "/img/*name",
                dir_handler(Root::dir(tmp.path().join("img")).unwrap(), false, false),
            ),
    );
    let port = server.local_addr().port();
    let profile = tempfile::tempdir().unwrap();
    let mut chromium = Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--origin-to-force-quic-on=localhost:{port}"))
        .arg(format!(
            "--ignore-certificate-errors-spki-list={}",
            spki_hash(&pki)
        ))
        .arg("--host-resolver-rules=MAP localhost 127.0.0.1")
        .arg(format!("https://localhost:{port}/"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium runs (test.sh installs it)");
    let report = reports.recv_timeout(Duration::from_secs(60));
    let _ = chromium.kill();
    let _ = chromium.wait();
    let report: Value = serde_json::from_str(&report.expect("the page reported back")).unwrap();
    assert_eq!(report["images"], 100, "{report}");
    assert_eq!(report["loaded"], 100, "every image loaded: {report}");
    assert_eq!(report["page"], serde_json::json!(["h3"]), "{report}");
    let resources = report["resources"].as_array().unwrap();
    let images: Vec<&Value> = (resources.iter())
        .filter(|r| r[0].as_str().unwrap().contains("/img/"))
        .collect();
    assert_eq!(images.len(), 100, "{report}");
    assert!(images.iter().all(|r| r[2] == 200), "{report}");
    let not_h3: Vec<&Value> = resources.iter().filter(|r| r[1] != "h3").collect();
    assert!(not_h3.is_empty(), "resources not over h3: {not_h3:?}");
    let h3 = server.report().h3;
    // The page, 100 images and the report, at least.
    assert!(h3.streams >= 102, "{h3:?}");
    assert!(h3.connections >= 1, "{h3:?}");
}
