//! curl as the tests' client: what it saw of an answer.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// What curl saw: status, headers (lowercase names), body.
#[derive(Debug)]
pub struct Seen {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

pub fn curl_output(args: &[&str]) -> Output {
    Command::new("curl")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("curl runs (test.sh installs it)")
}

/// curl `url` with `args`; the head is read from `-D -`.
pub fn curl(url: &str, args: &[&str]) -> Seen {
    let mut all = vec!["-s", "--max-time", "20", "-D", "-", "-o", "-"];
    all.extend_from_slice(args);
    all.push(url);
    let out = curl_output(&all);
    assert!(out.status.success(), "curl {all:?}: {out:?}");
    parse_seen(&out.stdout)
}

pub fn parse_seen(raw: &[u8]) -> Seen {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    // An interim answer (`100 Continue`) comes first: the final one follows.
    let first = raw[..split]
        .split(|&b| b == b' ')
        .nth(1)
        .unwrap_or_default();
    if first.len() == 3 && first[0] == b'1' {
        return parse_seen(&raw[split + 4..]);
    }
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Seen {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

/// What curl saw of an answer, with the HTTP version it spoke: the
/// version (`%{http_version}`: `1.1`, `2`), the final answer's status,
/// its fields in order (names lowercased), the body.
#[derive(Debug)]
pub struct CurlAnswer {
    pub version: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl CurlAnswer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// curl with `args` on `url`, its head and body to files in `dir`.
pub fn curl_answer(dir: &Path, args: &[&str], url: &str) -> CurlAnswer {
    let head = dir.join("head");
    let body = dir.join("body");
    let _ = std::fs::remove_file(&head);
    let _ = std::fs::remove_file(&body);
    let mut all = vec!["-s", "--max-time", "20", "-w", "%{http_version}"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-D", head.to_str().unwrap()]);
    all.extend_from_slice(&["-o", body.to_str().unwrap(), url]);
    let out = curl_output(&all);
    assert!(
        out.status.success(),
        "curl {all:?}: {out:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The final answer's head: an interim one (100 Continue) comes first.
    let seen = parse_seen(&std::fs::read(&head).unwrap());
    CurlAnswer {
        version: String::from_utf8_lossy(&out.stdout).into_owned(),
        status: seen.status,
        headers: seen.headers,
        // With -I, curl writes the head where the body would go.
        body: match args.contains(&"-I") {
            true => Vec::new(),
            false => std::fs::read(&body).unwrap_or_default(),
        },
    }
}
