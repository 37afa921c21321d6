//! The tus endpoint under test (`tests/tests/resumable*.rs`): `nikaia
//! serve`'s routes with `[resumable]`, an auth rule and write rules, and a
//! raw HTTP/1.1 client that speaks tus to it (sending a request again
//! while it is 423, as tus clients do).

use crate::serve::serve_dir;
use crate::uploads::{basic, Site};
use crate::{Client, Reply};
use std::path::PathBuf;
use std::time::Duration;

pub const RULES: &str = r#"
[resumable]
dir = "partial"
max-pending-per-user = 2
max-pending = 3
max-pending-bytes = "10MiB"

[[auth]]
match = ["in/**", "once/**"]
htpasswd = "users.htpasswd"
plain-http = true

[[deny]]
match = "in/secret*"
status = 403

[[write]]
match = "in/**"
writers = ["alice", "bob"]
make-dirs = true
max-size = "8MiB"
plain-http = true

[[write]]
match = "once/*"
writers = ["alice"]
replace = false
plain-http = true
"#;

pub struct Tus {
    pub site: Site,
    pub running: nikaia_std::http::Running,
}

impl Tus {
    pub fn new(extra: &str) -> Tus {
        let site = Site::new();
        for dir in ["in", "once"] {
            std::fs::create_dir_all(site.root.join(dir)).unwrap();
        }
        let rt = site.runtime(&format!("{RULES}{extra}"));
        let running = serve_dir(&site.root, rt, false, false);
        Tus { site, running }
    }

    pub fn partial(&self) -> PathBuf {
        self.site.tmp.path().join("partial")
    }

    pub fn port(&self) -> u16 {
        self.running.local_addr().port()
    }

    /// One request with `headers` (`Name: value` lines) and `body`, sent
    /// again while it is 423 (a writer thread is at the upload's bytes),
    /// as tus clients do.
    pub fn ask(&self, method: &str, path: &str, headers: &[String], body: &[u8]) -> Reply {
        for _ in 0..100 {
            let reply = self.ask_once(method, path, headers, body);
            if reply.status != 423 {
                return reply;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("{method} {path}: 423 a hundred times");
    }

    pub fn ask_once(&self, method: &str, path: &str, headers: &[String], body: &[u8]) -> Reply {
        let mut c = Client::connect(([127, 0, 0, 1], self.port()).into());
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: t\r\nTus-Resumable: 1.0.0\r\n");
        for h in headers {
            head.push_str(h);
            head.push_str("\r\n");
        }
        if method == "PATCH" || !body.is_empty() {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        c.send(head);
        c.send(body);
        c.read_reply(method == "HEAD").unwrap()
    }

    /// A creation of `name`, `length` bytes long, by `user`.
    pub fn create(&self, user: &str, name: &str, length: u64) -> Reply {
        let meta = format!("Upload-Metadata: filename {},filetype dGV4dA==", b64(name));
        let auth = format!("Authorization: Basic {}", basic(user));
        let length = format!("Upload-Length: {length}");
        self.ask("POST", "/.tus/", &[auth, meta, length], b"")
    }

    pub fn created(&self, user: &str, name: &str, length: u64) -> String {
        let r = self.create(user, name, length);
        assert_eq!(r.status, 201, "{}", r.text());
        let at = r.header("location").unwrap().to_owned();
        assert!(at.starts_with("/.tus/") && at.len() == 6 + 32, "{at}");
        at
    }

    pub fn patch(
        &self,
        user: &str,
        at: &str,
        offset: u64,
        bytes: &[u8],
        extra: &[String],
    ) -> Reply {
        let mut headers = vec![
            format!("Authorization: Basic {}", basic(user)),
            "Content-Type: application/offset+octet-stream".to_owned(),
            format!("Upload-Offset: {offset}"),
        ];
        headers.extend_from_slice(extra);
        self.ask("PATCH", at, &headers, bytes)
    }

    pub fn head(&self, user: &str, at: &str) -> Reply {
        let auth = format!("Authorization: Basic {}", basic(user));
        self.ask("HEAD", at, &[auth], b"")
    }

    pub fn offset(&self, user: &str, at: &str) -> u64 {
        let r = self.head(user, at);
        assert_eq!(r.status, 200, "{r:?}");
        r.header("upload-offset").unwrap().parse().unwrap()
    }

    pub fn report(&self) -> nikaia_std::rt::ResumableReport {
        self.running
            .report()
            .resumable
            .expect("[resumable] counted")
    }
}

/// Standard base64, as tus writes metadata and checksums.
pub fn b64(text: &str) -> String {
    b64_bytes(text.as_bytes())
}

pub fn b64_bytes(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = (chunk.iter().enumerate()).fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            match i <= chunk.len() {
                true => out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char),
                false => out.push('='),
            }
        }
    }
    out
}

/// Bytes of a pattern that tells where each one was.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 9) as u8)
        .collect()
}
