//! The same answer over HTTP/1.1 and HTTP/2 for every row and file case
//! of the corpus (`nikaia_tests::corpus`): h2c by prior knowledge on a
//! plain listener, h2 by ALPN on a TLS one.

use super::{base, text, tls_base};
use nikaia_tests::corpus::{cases, keep_variants, runtime_from, servers, site, Validators};
use nikaia_tests::curl::{curl_answer, CurlAnswer};
use nikaia_tests::TestPki;
use std::path::Path;

/// Runs curl with `flags` and `args` on `url`, the head and body to
/// files: what it read, the fields sorted, less `date` and `connection`.
fn curl_seen(dir: &Path, flags: &[&str], args: &[&str], url: &str) -> CurlAnswer {
    let mut all = flags.to_vec();
    all.extend_from_slice(args);
    let mut seen = curl_answer(dir, &all, url);
    seen.headers
        .retain(|(n, _)| n != "date" && n != "connection");
    seen.headers.sort();
    seen
}

#[test]
fn every_row_and_file_answer_is_the_same_over_http_1_1_and_http_2() {
    let s = site();
    let pki = TestPki::new();
    let plain = servers(&s, |toml| runtime_from(toml, None));
    let tls = servers(&s, |toml| runtime_from(toml, Some(&pki)));
    let work = s.tmp.path().join("curl");
    std::fs::create_dir(&work).unwrap();
    let validators = Validators::read(|server, path, args| {
        let url = format!("{}{path}", base(&plain[server]));
        curl_seen(&work, &["--http1.1"], args, &url)
    });
    // The TLS rows app keeps variants of its own, made before the cases
    // are asked too.
    keep_variants(|args| {
        let ca = pki.ca_pem.to_str().unwrap();
        let url = format!("{}/app.js", tls_base(&tls[0]));
        curl_seen(&work, &["--http1.1", "--cacert", ca], args, &url)
    });
    let cases = cases(&validators, false);
    let mut failures = Vec::new();
    let mut statuses = Vec::new();
    for c in &cases {
        let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
        for (transport, servers, h1, h2) in [
            (
                "h2c",
                &plain,
                vec!["--http1.1"],
                vec!["--http2-prior-knowledge"],
            ),
            (
                "h2 over TLS",
                &tls,
                vec!["--http1.1", "--cacert", pki.ca_pem.to_str().unwrap()],
                vec!["--http2", "--cacert", pki.ca_pem.to_str().unwrap()],
            ),
        ] {
            let server = &servers[c.server];
            let url = match transport {
                "h2c" => format!("{}{}", base(server), c.path),
                _ => format!("{}{}", tls_base(server), c.path),
            };
            let one = curl_seen(&work, &h1, &args, &url);
            let two = curl_seen(&work, &h2, &args, &url);
            statuses.push(one.status);
            let mut wrong = Vec::new();
            if one.version != "1.1" || two.version != "2" {
                wrong.push(format!(
                    "versions {:?} and {:?}, not 1.1 and 2",
                    one.version, two.version
                ));
            }
            if one.status != c.status {
                wrong.push(format!(
                    "HTTP/1.1 status {} (expected {})",
                    one.status, c.status
                ));
            }
            if one.status != two.status {
                wrong.push(format!(
                    "status: HTTP/1.1 {}, HTTP/2 {}",
                    one.status, two.status
                ));
            }
            if one.headers != two.headers {
                let only1: Vec<_> = one
                    .headers
                    .iter()
                    .filter(|h| !two.headers.contains(h))
                    .collect();
                let only2: Vec<_> = two
                    .headers
                    .iter()
                    .filter(|h| !one.headers.contains(h))
                    .collect();
                wrong.push(format!(
                    "headers only in HTTP/1.1: {only1:?}; only in HTTP/2: {only2:?}"
                ));
            }
            if one.body != two.body {
                wrong.push(format!(
                    "body: HTTP/1.1 {} bytes {:?}, HTTP/2 {} bytes {:?}",
                    one.body.len(),
                    text(&one.body[..one.body.len().min(80)]),
                    two.body.len(),
                    text(&two.body[..two.body.len().min(80)]),
                ));
            }
            if c.name.contains("hidden")
                || c.name.starts_with("Result Err")
                || c.name.contains("panic")
            {
                for b in [&one.body, &two.body] {
                    let t = text(b);
                    assert!(
                        !t.contains("SECRET")
                            && !t.contains("secret")
                            && !t.contains("handler bug"),
                        "{}: a detail leaked: {t}",
                        c.name
                    );
                }
            }
            if !wrong.is_empty() {
                failures.push(format!("[{transport}] {}", c.failure(&wrong)));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} case×transport pairs differ:\n{}",
        failures.len(),
        cases.len() * 2,
        failures.join("\n")
    );
    for want in [
        200, 201, 204, 206, 301, 304, 400, 401, 403, 404, 405, 412, 416, 500,
    ] {
        assert!(statuses.contains(&want), "{want} not in {statuses:?}");
    }
}
