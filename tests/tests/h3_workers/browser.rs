//! Headless Chromium over HTTP/3 with 4 workers and with 2, driven over
//! `--remote-debugging-pipe` (the DevTools protocol, JSON messages ended by
//! NUL on its fds 3 and 4), the test CA trusted the way a user trusts a
//! private CA on Linux: in the NSS database under `$HOME/.pki/nssdb`
//! (a temporary HOME, filled by `certutil` from libnss3-tools), never
//! with `--ignore-certificate-errors`.
//!
//! What Chromium does with such a CA, found here (Chromium 156): over TCP
//! the certificate verifies (status 0), but its QUIC refuses any
//! certificate whose root is not in its built-in public store
//! (`is_issued_by_known_root` false: the handshake fails "certificate
//! unknown", ERR_QUIC_CERT_ROOT_NOT_KNOWN, and the Alt-Svc entry is marked
//! broken), so a site on a private CA never gets HTTP/3 from an unmodified
//! Chromium, whatever the server does. The one switch that lifts the rule
//! is `--origin-to-force-quic-on`: the hosts it names (their ports
//! ignored) may use unknown roots. Naming `localhost:1`, a port where
//! nothing listens, lifts it for `localhost` without forcing QUIC on the
//! server's port: the first page then comes over HTTP/2, and HTTP/3
//! follows by Alt-Svc, as a user with a public certificate meets it.
//!
//! `localhost` is mapped to 127.0.0.1 (`--host-resolver-rules`): Chromium
//! resolves it to ::1 first, and where nothing listens on ::1 its TCP
//! falls back to 127.0.0.1 but its QUIC does not (the datagram is refused,
//! the Alt-Svc entry marked broken).

use super::h3_runtime;
use nikaia_std::http::Running;
use nikaia_std::rt::LogTarget;
use nikaia_tests::chromium::DevTools;
use nikaia_tests::TestPki;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A 1×1 grey PNG.
const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x01\0\0\0\x01\x08\x04\0\0\0\xb5\x1c\x0c\x02\
    \0\0\0\x0bIDATx\xdacd`\0\0\0\x06\0\x020\x81\xd0/\0\0\0\0IEND\xaeB`\x82";

/// What the page says of itself: its images, how many loaded, and the
/// protocol of the page and of each image.
const REPORT: &str = "JSON.stringify({
  images: document.images.length,
  loaded: [...document.images].filter((i) => i.complete && i.naturalWidth > 0).length,
  page: performance.getEntriesByType('navigation').map((e) => e.nextHopProtocol),
  resources: performance.getEntriesByType('resource').map((e) => [e.name, e.nextHopProtocol]),
})";

/// A site of one page with 100 images, as `nikaia serve` would serve it.
fn site(dir: &Path) {
    let images: String = (0..100)
        .map(|i| format!("<img src=\"/img/{i}.png\" width=1 height=1>"))
        .collect();
    nikaia_tests::corpus::write(
        &dir.join("index.html"),
        format!("<!doctype html><title>100 images</title><body>{images}\n").as_bytes(),
    );
    for i in 0..100 {
        nikaia_tests::corpus::write(&dir.join(format!("img/{i}.png")), PNG);
    }
}

/// A HOME whose NSS database trusts the test CA for TLS servers.
fn nss_home(pki: &TestPki) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join(".pki/nssdb");
    std::fs::create_dir_all(&db).unwrap();
    let db = format!("sql:{}", db.display());
    let certutil = |args: &[&str]| {
        let out = Command::new("certutil")
            .args(args)
            .output()
            .expect("certutil runs (test.sh installs libnss3-tools)");
        assert!(out.status.success(), "certutil {args:?}: {out:?}");
    };
    certutil(&["-d", &db, "-N", "--empty-password"]);
    let ca = pki.ca_pem.to_str().unwrap();
    certutil(&[
        "-d",
        &db,
        "-A",
        "-n",
        "nikaia test CA",
        "-t",
        "C,,",
        "-i",
        ca,
    ]);
    home
}

/// Chromium and its DevTools session on one page, with its own profile,
/// counting the page's loads.
struct Chromium {
    dev: DevTools,
    loads: u64,
    _profile: tempfile::TempDir,
}

impl Chromium {
    fn start(home: &Path, flags: &[String]) -> Chromium {
        let profile = tempfile::tempdir().unwrap();
        let mut flags = flags.to_vec();
        flags.push("--host-resolver-rules=MAP localhost 127.0.0.1".into());
        let dev = DevTools::start(profile.path(), &flags, Some(home), |_, _| {});
        let mut browser = Chromium {
            dev,
            loads: 0,
            _profile: profile,
        };
        browser.page("Page.enable", json!({}));
        browser.page("Network.enable", json!({}));
        // Every navigation asks the server again, page and images.
        browser.page("Network.setCacheDisabled", json!({"cacheDisabled": true}));
        browser
    }

    /// Sends a command to the page and waits for its result, counting the
    /// loads that come meanwhile.
    fn page(&mut self, method: &str, params: Value) -> Value {
        let session = self.dev.session.clone();
        let loads = &mut self.loads;
        self.dev
            .call(Some(&session), method, params, &mut |_, value| {
                *loads += u64::from(value["method"] == "Page.loadEventFired");
            })
    }

    /// Loads `url`, waits for its load event, and returns what the page
    /// says of itself (`REPORT`).
    fn open(&mut self, url: &str) -> Value {
        let loads = self.loads;
        self.page("Page.navigate", json!({"url": url}));
        while self.loads == loads {
            let value = self.dev.recv("Page.loadEventFired");
            self.loads += u64::from(value["method"] == "Page.loadEventFired");
        }
        let result = self.page(
            "Runtime.evaluate",
            json!({"expression": REPORT, "returnByValue": true}),
        );
        serde_json::from_str(result["result"]["value"].as_str().unwrap()).unwrap()
    }
}

/// The 100-image site served as `nikaia serve` serves it on `workers`
/// workers, over HTTPS and HTTP/3 with the test pair, its access log in a
/// file; and a HOME whose NSS database trusts the test CA.
fn served(workers: usize) -> (tempfile::TempDir, PathBuf, Running, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("site");
    site(&root);
    let pki = TestPki::new();
    let log = tmp.path().join("access.log");
    let mut rt = h3_runtime(&pki, workers);
    rt.access_log = LogTarget::File(log.clone());
    let server = nikaia_tests::serve::serve_dir(&root, rt, false, false);
    let home = nss_home(&pki);
    (tmp, log, server, home)
}

/// The access log's requests for `/`, in order: the protocol of each.
fn page_protocols(log: &str) -> Vec<&str> {
    log.lines()
        .filter_map(|l| l.split("\"GET / ").nth(1))
        .map(|rest| rest.split('"').next().unwrap())
        .collect()
}

/// Forced onto QUIC for the server's origin (`--origin-to-force-quic-on`,
/// which also lets that host's certificate chain to the CA the NSS
/// database trusts), Chromium loads the page of 100 images from
/// `nikaia serve`'s routes on 4 workers: every image decoded (the DOM's
/// `naturalWidth`), the page and every image over h3, and the access log
/// writes each of them `HTTP/3.0`.
#[test]
fn chromium_forced_onto_quic_loads_100_images_from_4_workers() {
    let (_tmp, log, server, home) = served(4);
    let port = server.local_addr().port();
    let mut browser = Chromium::start(
        home.path(),
        &[format!("--origin-to-force-quic-on=localhost:{port}")],
    );
    let report = browser.open(&format!("https://localhost:{port}/"));
    drop(browser);
    assert_eq!(report["images"], 100, "{report}");
    assert_eq!(report["loaded"], 100, "every image decoded: {report}");
    assert_eq!(report["page"], json!(["h3"]), "{report}");
    let resources = report["resources"].as_array().unwrap();
    let images = (resources.iter())
        .filter(|r| r[0].as_str().unwrap().contains("/img/"))
        .count();
    assert_eq!(images, 100, "{report}");
    assert!(resources.iter().all(|r| r[1] == "h3"), "{report}");
    let h3 = server.report().h3;
    assert!(h3.streams >= 101, "{h3:?}");
    server.shutdown();
    server.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    let images: Vec<&str> = text.lines().filter(|l| l.contains("GET /img/")).collect();
    assert_eq!(images.len(), 100, "{text}");
    assert!(
        images.iter().all(|l| l.contains(" HTTP/3.0\" 200 ")),
        "{text}"
    );
    assert_eq!(page_protocols(&text), ["HTTP/3.0"], "{text}");
}

/// As users meet it: Chromium that trusts the test CA through NSS loads
/// the page over HTTP/2 first (it knows of no HTTP/3 yet), learns
/// `Alt-Svc: h3` from the answers, and loads the page again over HTTP/3
/// within a few navigations — every image decoded each time, and the
/// access log shows `GET /` over `HTTP/2.0` first, then `HTTP/3.0`.
#[test]
fn chromium_trusting_the_ca_through_nss_moves_from_h2_to_h3_by_alt_svc() {
    let (_tmp, log, server, home) = served(2);
    let port = server.local_addr().port();
    // Unknown roots allowed for localhost, QUIC forced on no port of ours
    // (see the header): the first request goes over TCP.
    let mut browser = Chromium::start(
        home.path(),
        &["--origin-to-force-quic-on=localhost:1".into()],
    );
    let url = format!("https://localhost:{port}/");
    let first = browser.open(&url);
    assert_eq!(first["page"], json!(["h2"]), "{first}");
    assert_eq!(first["loaded"], 100, "{first}");
    let mut seen = vec![first];
    while seen.last().unwrap()["page"] != json!(["h3"]) && seen.len() < 6 {
        let report = browser.open(&url);
        assert_eq!(report["loaded"], 100, "{report}");
        seen.push(report);
    }
    drop(browser);
    let pages: Vec<&Value> = seen.iter().map(|r| &r["page"]).collect();
    assert_eq!(
        seen.last().unwrap()["page"],
        json!(["h3"]),
        "never over h3 after Alt-Svc: {pages:?}"
    );
    server.shutdown();
    server.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    let protocols = page_protocols(&text);
    assert_eq!(protocols.len(), seen.len(), "{text}");
    assert_eq!(protocols.first(), Some(&"HTTP/2.0"), "{text}");
    assert_eq!(protocols.last(), Some(&"HTTP/3.0"), "{text}");
}
