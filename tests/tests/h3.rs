//! HTTP/3 over QUIC with real clients (`spec/http3.md`): the equality
//! corpora (`nikaia_tests::corpus`, which `tests/tests/h2.rs` asks over
//! HTTP/2, and `tests/tests/tls.rs`'s) answered over h3 as over HTTP/1.1
//! and HTTP/2 (status, headers but `date` and `alt-svc`, bytes), with PyPI
//! aioquic's scripted client (`tests/h3/h3client.py`); uploads, request
//! bodies and an event stream over h3; 0-RTT offered and refused; a
//! program's mapping truncated under an h3 download; the access log's
//! `HTTP/3.0`; Debian's `gtlsclient`; and headless Chromium forced onto
//! QUIC for a page of 100 images. The attacks are elsewhere.

#[path = "h3/bodies.rs"]
mod bodies;
#[path = "h3/browser.rs"]
mod browser;
#[path = "h3/dav.rs"]
mod dav;
#[path = "h3/equality.rs"]
mod equality;
#[path = "h3/quic.rs"]
mod quic;

use nikaia_std::rt::Runtime;
use nikaia_tests::TestPki;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// The scripted client (aioquic; test.sh installs it).
const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/h3/h3client.py");

/// A runtime serving HTTPS with `pki`'s pair and HTTP/3 on the same
/// port (loopback, port 0, two workers, quiet logs).
pub fn h3_runtime(pki: &TestPki) -> Runtime {
    let mut rt = pki.runtime();
    rt.http3 = Some(true);
    rt
}

/// One request as h3client.py sends it: the fields exactly as given, after
/// the four pseudo-header fields.
#[derive(Clone, Debug)]
pub struct H3Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl H3Request {
    pub fn new(method: &str, path: &str) -> H3Request {
        H3Request {
            method: method.into(),
            path: path.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn get(path: &str) -> H3Request {
        H3Request::new("GET", path)
    }

    pub fn header(mut self, name: &str, value: &str) -> H3Request {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn body(mut self, body: &[u8]) -> H3Request {
        self.body = body.to_vec();
        self
    }

    fn json(&self) -> Value {
        json!({
            "method": self.method,
            "path": self.path,
            "headers": self.headers.iter().map(|(n, v)| [n, v]).collect::<Vec<_>>(),
            "body_b64": nikaia_tests::site::base64_bytes(&self.body),
        })
    }
}

/// What h3client.py saw of one answer.
#[derive(Clone, Debug)]
pub struct H3Answer {
    /// 0 when no final answer came.
    pub status: u16,
    /// The fields in order, less `:status`.
    pub headers: Vec<(String, String)>,
    pub body_len: u64,
    /// Hex SHA-256 of the body.
    pub sha256: String,
    /// The body itself, with `--bodies` only.
    pub body: Vec<u8>,
    /// A reset, a close, a timeout.
    pub error: Option<String>,
    /// The whole JSON line.
    pub line: Value,
}

impl H3Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Runs `h3client.py get` against 127.0.0.1:`port` with `:authority`
/// `localhost:PORT` (as curl sends it), trusting `ca`, with `flags`: the
/// answers in the requests' order, and what it wrote on stderr.
pub fn h3_get(
    port: u16,
    ca: &Path,
    flags: &[&str],
    requests: &[H3Request],
) -> (Vec<H3Answer>, String) {
    let mut child = Command::new("python3")
        .arg(CLIENT)
        .arg("get")
        .arg("--connect")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--authority")
        .arg(format!("localhost:{port}"))
        .arg("--cafile")
        .arg(ca)
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs tests/h3/h3client.py (test.sh installs aioquic)");
    let mut input = Vec::new();
    for r in requests {
        serde_json::to_writer(&mut input, &r.json()).unwrap();
        input.push(b'\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&input).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let answers: Vec<H3Answer> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| answer_of(serde_json::from_str(l).expect("a JSON line")))
        .collect();
    assert_eq!(
        answers.len(),
        requests.len(),
        "one line per request: {answers:?}\n{stderr}"
    );
    (answers, stderr)
}

fn answer_of(line: Value) -> H3Answer {
    let fields = |v: &Value| -> Vec<(String, String)> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .map(|f| (f[0].as_str().unwrap().into(), f[1].as_str().unwrap().into()))
                    .collect()
            })
            .unwrap_or_default()
    };
    H3Answer {
        status: line["status"].as_u64().unwrap_or(0) as u16,
        headers: fields(&line["headers"]),
        body_len: line["body_len"].as_u64().unwrap_or(0),
        sha256: line["sha256"].as_str().unwrap_or("").into(),
        body: line["body_b64"]
            .as_str()
            .map(base64_decode)
            .unwrap_or_default(),
        error: line["error"].as_str().map(String::from),
        line,
    }
}

/// Hex SHA-256 of `bytes`, as h3client.py writes it.
pub fn sha256(bytes: &[u8]) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Standard base64 (with padding) decoded.
pub fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for chunk in text.as_bytes().chunks(4) {
        let digits: Vec<u8> = chunk
            .iter()
            .filter(|&&c| c != b'=')
            .map(|&c| value(c))
            .collect();
        let n = digits
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &d)| n | u32::from(d) << (18 - 6 * i));
        out.extend_from_slice(&n.to_be_bytes()[1..digits.len()]);
    }
    out
}

/// `headers` less the fields that differ between protocols by design:
/// `date` (the clock), `alt-svc` (only HTTP/1.1 and HTTP/2 answers
/// advertise HTTP/3), and HTTP/1.1's `connection` and `transfer-encoding`
/// (its framing).
pub fn comparable(headers: &[(String, String)]) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(n, _)| {
            !matches!(
                &n.to_ascii_lowercase()[..],
                "date" | "alt-svc" | "connection" | "transfer-encoding"
            )
        })
        .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
        .collect()
}
