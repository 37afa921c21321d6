//! The same answer over HTTP/1.1, HTTP/2 and HTTP/3 for every case of the
//! corpus (`nikaia_tests::corpus`), on servers with `http3 = true`: curl
//! speaks h1 and h2 (both carrying `Alt-Svc`), h3client.py h3 on one
//! connection.

use super::{comparable, h3_get, sha256, H3Answer, H3Request};
use nikaia_std::http::Running;
use nikaia_std::rt::Runtime;
use nikaia_tests::corpus::{case, cases, servers, site, Case, Site, Validators};
use nikaia_tests::curl::{curl_answer, CurlAnswer};
use nikaia_tests::TestPki;
use std::path::{Path, PathBuf};

/// A runtime from runtime-file text over TLS with `pki`'s pair and HTTP/3
/// on (loopback, port 0, two workers, no access log).
fn runtime_from(toml: &str, pki: &TestPki) -> Runtime {
    let mut rt = nikaia_tests::corpus::runtime_from(toml, Some(pki));
    rt.http3 = Some(true);
    rt
}

/// The corpus's site and its three servers, over TLS with HTTP/3.
struct Corpus {
    _site: Site,
    pki: TestPki,
    /// The rows app, the fallback site, the site's rules.
    servers: [Running; 3],
    work: PathBuf,
}

impl Corpus {
    fn new() -> Corpus {
        let s = site();
        let pki = TestPki::new();
        let servers = servers(&s, |toml| runtime_from(toml, &pki));
        let work = s.tmp.path().join("curl");
        std::fs::create_dir(&work).unwrap();
        Corpus {
            _site: s,
            pki,
            servers,
            work,
        }
    }

    /// curl over HTTP/1.1 with `args`.
    fn curl(&self, server: usize, path: &str, args: &[&str]) -> CurlAnswer {
        let port = self.servers[server].local_addr().port();
        let mut all = vec!["--http1.1", "--cacert", self.pki.ca_pem.to_str().unwrap()];
        all.extend_from_slice(args);
        curl_answer(&self.work, &all, &format!("https://localhost:{port}{path}"))
    }

    /// The validators of the conditional cases, read over HTTP/1.1.
    fn validators(&self) -> Validators {
        Validators::read(|server, path, args| self.curl(server, path, args))
    }
}

/// The request curl sends for a case's `args`, for h3client.py: the same
/// method, path, fields and body.
pub fn h3_request(path: &str, args: &[String]) -> H3Request {
    let mut r = H3Request::get(path)
        .header("user-agent", "curl/7.88.1")
        .header("accept", "*/*");
    let mut method = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-I" => method = Some("HEAD".to_owned()),
            "-X" => method = Some(args.next().unwrap().clone()),
            "--path-as-is" => {}
            "-H" => {
                let (name, value) = args.next().unwrap().split_once(':').unwrap();
                let name = name.trim().to_ascii_lowercase();
                match r.headers.iter_mut().find(|(n, _)| *n == name) {
                    Some(field) => field.1 = value.trim().to_owned(),
                    None => r.headers.push((name, value.trim().to_owned())),
                }
            }
            "-u" => {
                let credentials = nikaia_tests::site::base64(args.next().unwrap());
                let field = ("authorization".into(), format!("Basic {credentials}"));
                r.headers.insert(0, field);
            }
            "-d" | "--data-binary" => {
                let data = args.next().unwrap();
                let data = match data.strip_prefix('@') {
                    Some(file) => std::fs::read(file).unwrap(),
                    None => data.as_bytes().to_vec(),
                };
                method.get_or_insert_with(|| "POST".to_owned());
                r.headers
                    .push(("content-length".into(), data.len().to_string()));
                let form = "application/x-www-form-urlencoded";
                r.headers.push(("content-type".into(), form.into()));
                r.body = data;
            }
            "-T" => {
                let data = std::fs::read(args.next().unwrap()).unwrap();
                method.get_or_insert_with(|| "PUT".to_owned());
                r.headers
                    .push(("content-length".into(), data.len().to_string()));
                r.body = data;
            }
            other => panic!("a curl argument the corpus does not use: {other}"),
        }
    }
    r.method = method.unwrap_or_else(|| "GET".into());
    r
}

/// Runs `cases` on `server` over the three protocols: curl for HTTP/1.1
/// and HTTP/2 (one connection a request), then h3client.py for them all,
/// one after the other on one QUIC connection; each answer must be the
/// same ([`compare`]). The statuses HTTP/1.1 answered.
pub fn run(server: &Running, pki: &TestPki, work: &Path, cases: &[&Case]) -> Vec<u16> {
    let port = server.local_addr().port();
    let seen: Vec<(CurlAnswer, CurlAnswer)> = (cases.iter())
        .map(|c| {
            let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
            let url = format!("https://localhost:{port}{}", c.path);
            (
                curl_over("1.1", pki, work, &args, &url),
                curl_over("2", pki, work, &args, &url),
            )
        })
        .collect();
    let requests: Vec<H3Request> = cases.iter().map(|c| h3_request(c.path, &c.args)).collect();
    let (three, stderr) = h3_get(port, &pki.ca_pem, &["--serial"], &requests);
    let mut failures = Vec::new();
    for ((c, (one, two)), three) in cases.iter().zip(&seen).zip(&three) {
        let wrong = compare(port, c.status, one, two, three);
        if !wrong.is_empty() {
            failures.push(c.failure(&wrong));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}\nh3client: {stderr}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    let h3 = server.report().h3;
    assert_eq!(h3.connections, 1, "{h3:?}");
    assert_eq!(h3.streams, cases.len() as u64, "{h3:?}");
    seen.iter().map(|(one, _)| one.status).collect()
}

/// curl over `version` ("1.1" or "2"), trusting `pki`'s CA.
pub fn curl_over(
    version: &str,
    pki: &TestPki,
    work: &Path,
    args: &[&str],
    url: &str,
) -> CurlAnswer {
    let flag = if version == "2" {
        "--http2"
    } else {
        "--http1.1"
    };
    let mut all = vec![flag, "--cacert", pki.ca_pem.to_str().unwrap()];
    all.extend_from_slice(args);
    curl_answer(work, &all, url)
}

/// What differs between the answers to one request over HTTP/1.1, HTTP/2
/// and HTTP/3 from a server on `port`, and HTTP/1.1's status if not
/// `status`. They must agree on the status, the fields less `date`,
/// `alt-svc` and `connection` (names, order, values), and the bytes of the
/// body. HTTP/1.1 and HTTP/2 answers carry `Alt-Svc` for the port, HTTP/3
/// answers none.
pub fn compare(
    port: u16,
    status: u16,
    one: &CurlAnswer,
    two: &CurlAnswer,
    three: &H3Answer,
) -> Vec<String> {
    let alt_svc = format!("h3=\":{port}\"; ma=86400");
    let mut wrong = Vec::new();
    if one.version != "1.1" || two.version != "2" {
        let (v1, v2) = (&one.version, &two.version);
        wrong.push(format!("curl spoke {v1:?} and {v2:?}, not 1.1 and 2"));
    }
    if one.status != status {
        wrong.push(format!("HTTP/1.1 status {}, not {status}", one.status));
    }
    // Refusals (a request that never reaches the pipeline) too:
    // alt_svc_is_on_refusals_too below.
    for (label, a) in [("HTTP/1.1", one), ("HTTP/2", two)] {
        if a.header("alt-svc") != Some(&alt_svc) {
            wrong.push(format!("{label} alt-svc {:?}", a.header("alt-svc")));
        }
    }
    if three.header("alt-svc").is_some() {
        wrong.push("HTTP/3 carries alt-svc".into());
    }
    if let Some(e) = &three.error {
        wrong.push(format!("HTTP/3: {e}"));
    }
    let statuses = [one.status, two.status, three.status];
    if statuses.iter().any(|&s| s != one.status) {
        wrong.push(format!("statuses (h1, h2, h3): {statuses:?}"));
    }
    let fields = [&one.headers, &two.headers, &three.headers].map(|h| comparable(h));
    if fields.iter().any(|f| *f != fields[0]) {
        wrong.push(format!(
            "fields:\n      HTTP/1.1 {:?}\n      HTTP/2   {:?}\n      HTTP/3   {:?}",
            fields[0], fields[1], fields[2]
        ));
    }
    if one.body != two.body
        || three.body_len != two.body.len() as u64
        || three.sha256 != sha256(&two.body)
    {
        wrong.push(format!(
            "body: HTTP/1.1 {} bytes, HTTP/2 {} bytes {:?}, HTTP/3 {} bytes",
            one.body.len(),
            two.body.len(),
            String::from_utf8_lossy(&two.body[..two.body.len().min(80)]),
            three.body_len,
        ));
    }
    wrong
}

/// The cases of one of the corpus's servers.
fn run_corpus(server: usize) -> Vec<u16> {
    let corpus = Corpus::new();
    let all = cases(&corpus.validators(), true);
    let mine: Vec<&Case> = all.iter().filter(|c| c.server == server).collect();
    run(&corpus.servers[server], &corpus.pki, &corpus.work, &mine)
}

/// Every row of the body table, `http::File`, files (empty, small, large,
/// kept), ranges, conditionals, HEAD, listings, kept and sidecar variants,
/// errors.
#[test]
fn the_rows_app_answers_the_same_over_h1_h2_and_h3() {
    let statuses = run_corpus(0);
    for want in [200, 201, 204, 206, 301, 304, 400, 404, 405, 412, 416, 500] {
        assert!(statuses.contains(&want), "{want} not in {statuses:?}");
    }
}

/// `not-found`, `fallback`, `index` and `cache-control` of a runtime file.
#[test]
fn the_fallback_site_answers_the_same_over_h1_h2_and_h3() {
    let statuses = run_corpus(1);
    for want in [200, 206, 404] {
        assert!(statuses.contains(&want), "{want} not in {statuses:?}");
    }
}

/// Site rules: headers, deny, CORS preflights, Basic auth's 401.
#[test]
fn the_site_rules_answer_the_same_over_h1_h2_and_h3() {
    let statuses = run_corpus(2);
    for want in [200, 204, 206, 301, 304, 401, 403, 404] {
        assert!(statuses.contains(&want), "{want} not in {statuses:?}");
    }
}

/// The corpus of `tests/tests/tls.rs` (plain HTTP against HTTPS), on its
/// site: every row, `http::File` with its index, ranges, conditionals,
/// HEAD, redirects, refusals. Its request without a Host has no HTTP/3
/// form (`:authority` is always sent) and is left out.
#[test]
fn the_tls_corpus_answers_the_same_over_h1_h2_and_h3() {
    let s = nikaia_tests::https::site();
    let pki = TestPki::new();
    let server = nikaia_tests::https::app(super::h3_runtime(&pki), &s.root);
    let work = s.tmp.path().join("curl");
    std::fs::create_dir(&work).unwrap();
    let port = server.local_addr().port();
    let args = ["--http1.1", "--cacert", pki.ca_pem.to_str().unwrap()];
    let url = format!("https://localhost:{port}/f/file.bin");
    let first = curl_answer(&work, &args, &url);
    let inm = format!("If-None-Match: {}", first.header("etag").unwrap());
    let cases = [
        case("html::Raw", 0, "/html", &[], 200),
        case("&'static str", 0, "/text", &[], 200),
        case("String", 0, "/string", &[], 200),
        case("Bytes", 0, "/bytes", &[], 200),
        case("fs::Mapped", 0, "/mapped", &[], 200),
        case("Response", 0, "/response", &[], 201),
        case("Result Err", 0, "/fails", &[], 500),
        case("no route", 0, "/nowhere", &[], 404),
        case("a file", 0, "/f/file.bin", &[], 200),
        case("a small file", 0, "/f/small.css", &[], 200),
        case("a small file, kept", 0, "/f/small.css", &[], 200),
        case("a small file, a kept hit", 0, "/f/small.css", &[], 200),
        case(
            "a range",
            0,
            "/f/file.bin",
            &["-H", "Range: bytes=10-19"],
            206,
        ),
        case(
            "a suffix",
            0,
            "/f/file.bin",
            &["-H", "Range: bytes=-7"],
            206,
        ),
        case(
            "past the end",
            0,
            "/f/file.bin",
            &["-H", "Range: bytes=999999-"],
            416,
        ),
        case("If-None-Match", 0, "/f/file.bin", &["-H", &inm], 304),
        case(
            "If-Match",
            0,
            "/f/file.bin",
            &["-H", "If-Match: \"other\""],
            412,
        ),
        case("HEAD", 0, "/f/file.bin", &["-I"], 200),
        case("a directory without slash", 0, "/f/docs", &[], 301),
        case("its index", 0, "/f/docs/", &[], 200),
        case("a listing", 0, "/f/sub/", &[], 200),
        case("missing", 0, "/f/missing", &[], 404),
        case("a symlink out", 0, "/f/out", &[], 404),
        case("an encoded slash", 0, "/f/..%2fsecret.txt", &[], 404),
        case("POST to a file", 0, "/f/file.bin", &["-d", ""], 405),
    ];
    let cases: Vec<&Case> = cases.iter().collect();
    let statuses = run(&server, &pki, &work, &cases);
    for want in [200, 201, 206, 301, 304, 404, 405, 412, 416, 500] {
        assert!(statuses.contains(&want), "{want} not in {statuses:?}");
    }
}

/// `Alt-Svc` goes on every HTTP/1.1 and HTTP/2 answer of a listener whose
/// port serves HTTP/3 (`spec/runtime-file.md`, `alt-svc-max-age`): the
/// refusals made before the answer pipeline too (a path with an encoded
/// NUL, a bad escape: 400).
#[test]
fn alt_svc_is_on_refusals_too() {
    let s = nikaia_tests::https::site();
    let pki = TestPki::new();
    let server = nikaia_tests::https::app(super::h3_runtime(&pki), &s.root);
    let port = server.local_addr().port();
    let want = format!("h3=\":{port}\"; ma=86400");
    let mut missing = Vec::new();
    for version in ["--http1.1", "--http2"] {
        for path in ["/f/caf%00.txt", "/f/%zz"] {
            let args = [version, "--cacert", pki.ca_pem.to_str().unwrap()];
            let a = curl_answer(
                s.tmp.path(),
                &args,
                &format!("https://localhost:{port}{path}"),
            );
            assert_eq!(a.status, 400, "{version} {path}");
            if a.header("alt-svc") != Some(&want[..]) {
                missing.push(format!("{version} {path}: {:?}", a.headers));
            }
        }
    }
    assert!(missing.is_empty(), "no Alt-Svc:\n{}", missing.join("\n"));
}
