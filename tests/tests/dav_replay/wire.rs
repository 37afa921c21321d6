//! The drive under test and a raw HTTP/1.1 client over TLS that sends
//! what the replayed clients send and reads what the server answers
//! (chunked bodies included).

use nikaia_std::http::Running;
use nikaia_tests::{dav, read_whole, Reply, TestPki, TlsClient};
use std::path::{Path, PathBuf};

/// The user of `tests/dav_clients.rs`: `dav`, password `dav-pass-49`.
pub(crate) const USERS: &str = "dav:$2b$05$oAEZLNMowttTKZghSTmwquNiiZ8NkBY1GbhT8exMShcPoeCAxBep2\n";
/// `dav:dav-pass-49` in base64.
pub(crate) const BASIC: &str = "Basic ZGF2OmRhdi1wYXNzLTQ5";

/// spec/site.md's drive: everything behind the password, the one writer
/// may create, replace, delete files and directories, WebDAV on; LOCKS
/// is `[webdav-locks]` (class 2) or nothing (class 1).
pub(crate) const DRIVE: &str = r#"
webdav = true
APPLE

[[auth]]
match = ["**"]
htpasswd = "users.htpasswd"

[[write]]
match = ["**"]
writers = ["dav"]
create = true
replace = true
delete = true
delete-dirs = true
make-dirs = false
webdav = true
LOCKS
"#;

pub(crate) const WIN_UA: &str = "Microsoft-WebDAV-MiniRedir/10.0.17134";
pub(crate) const MAC_UA: &str = "WebDAVFS/3.0.0 (03008000) Darwin/23.4.0 (arm64)";

pub(crate) const DAV: &[u8] = b"DAV:";
pub(crate) const MS: &[u8] = b"urn:schemas-microsoft-com:";
pub(crate) const APPLE: &[u8] = b"http://www.apple.com/webdav_fs/props/";

/// A drive served over TLS (the server stops before the directories go).
pub(crate) struct Drive {
    pub(crate) running: Running,
    pub(crate) root: PathBuf,
    pub(crate) pki: TestPki,
    _drive: dav::Drive,
}

impl Drive {
    /// A class-2 drive: `[webdav-locks]` with its `dir` in the test's
    /// temporary directory (`spec/site.md`, "WebDAV class 2: locks").
    /// `apple`: the `apple-double` line of the runtime file ("" for the
    /// default, `refuse`).
    pub(crate) fn new(apple: &str) -> Drive {
        Drive::with(apple, true)
    }

    /// A class-1 drive: no `[webdav-locks]`, so `DAV: 1` and LOCK/UNLOCK
    /// answered 405.
    pub(crate) fn class1(apple: &str) -> Drive {
        Drive::with(apple, false)
    }

    fn with(apple: &str, locks: bool) -> Drive {
        let table = if locks {
            "\n[webdav-locks]\ndir = \"{TMP}/locks\"\n"
        } else {
            ""
        };
        let text = DRIVE.replace("APPLE", apple).replace("LOCKS", table);
        let drive = dav::Drive::new(USERS, &text);
        if locks {
            std::fs::create_dir(drive.path().join("locks")).unwrap();
        }
        let pki = TestPki::new();
        let running = drive.serve(Some(&pki));
        Drive {
            running,
            root: drive.root(),
            pki,
            _drive: drive,
        }
    }

    pub(crate) fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.running.local_addr().port())
    }

    pub(crate) fn client(&self, agent: &'static str) -> Dav<'_> {
        Dav {
            drive: self,
            conn: None,
            agent,
            log: Vec::new(),
        }
    }
}

/// An answer as read off the wire, its body de-chunked.
pub(crate) type Answer = Reply;

/// One client: a kept-alive TLS connection (reopened when the server
/// closes it, as both clients do), its User-Agent, and what it sent and
/// got so far (for the failure messages).
pub(crate) struct Dav<'d> {
    pub(crate) drive: &'d Drive,
    pub(crate) conn: Option<TlsClient>,
    pub(crate) agent: &'static str,
    pub(crate) log: Vec<String>,
}

impl Dav<'_> {
    /// Sends `method path` with `headers` (Host and User-Agent added, as
    /// both clients send them) and `body`; returns the answer. `body` is
    /// sent as is: the caller writes `Content-Length` or chunks.
    pub(crate) fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        for (n, v) in headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str(&format!(
            "User-Agent: {}\r\nHost: {}\r\n\r\n",
            self.agent,
            self.drive.authority()
        ));
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        let addr = self.drive.running.local_addr();
        let conn = self
            .conn
            .get_or_insert_with(|| TlsClient::connect_tls(addr, self.drive.pki.client_config()));
        conn.send(&bytes);
        let answer = read_whole(conn.reader(), method == "HEAD").unwrap_or_else(|e| {
            panic!(
                "{method} {path}: no answer ({e}); before it: {:#?}",
                self.log
            )
        });
        let closes = answer
            .tokens("connection")
            .iter()
            .any(|t| t.eq_ignore_ascii_case("close"));
        if closes {
            self.conn = None;
        }
        self.log
            .push(format!("{method} {path} -> {}", answer.status));
        answer
    }

    /// `send` that asserts the status, with the exchange so far.
    pub(crate) fn expect(
        &mut self,
        status: u16,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Answer {
        let a = self.send(method, path, headers, body);
        assert_eq!(
            a.status,
            status,
            "{method} {path} ({}): answered {} {:?}\n{}\nexchange so far: {:#?}",
            self.agent,
            a.status,
            a.headers,
            a.text(),
            self.log
        );
        a
    }
}

/// A chunked body: `data` in chunks of `size` bytes, then the last chunk.
pub(crate) fn chunked(data: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for c in data.chunks(size) {
        out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        out.extend_from_slice(c);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// A 405 for a lock method: with `Allow`, which lists what the name
/// takes and neither LOCK nor UNLOCK (class 1).
pub(crate) fn assert_lock_refused(a: &Answer, what: &str) {
    assert_eq!(a.status, 405, "{what}: {} {:?}", a.status, a.headers);
    let allow = a.tokens("allow");
    assert!(
        !allow.is_empty(),
        "{what}: a 405 says Allow: {:?}",
        a.headers
    );
    for m in ["GET", "HEAD", "OPTIONS", "PROPFIND"] {
        assert!(
            allow.iter().any(|t| t == m),
            "{what}: Allow {allow:?} lacks {m}"
        );
    }
    for m in ["LOCK", "UNLOCK"] {
        assert!(
            !allow.iter().any(|t| t == m),
            "{what}: Allow {allow:?} offers {m}"
        );
    }
}

/// OPTIONS as both clients read it: `DAV` with class 1, and class 2
/// exactly when `class` is 2 (F1's `network_mount`: without 2 Finder
/// mounts read-only), `MS-Author-Via: DAV`, an `Allow` with `methods`
/// (what the name takes: the served directory itself is never written,
/// so `/` lists no PUT, DELETE, PROPPATCH or LOCK — spec/site.md,
/// "`OPTIONS` and 405"); on a class-1 drive neither LOCK nor UNLOCK.
pub(crate) fn assert_options(a: &Answer, class: u8, methods: &[&str]) {
    assert!(
        (200..300).contains(&a.status),
        "OPTIONS: {} {:?}",
        a.status,
        a.headers
    );
    let dav = a.tokens("dav");
    assert!(
        dav.iter().any(|t| t == "1"),
        "DAV: {dav:?} ({:?})",
        a.headers
    );
    assert_eq!(
        dav.iter().any(|t| t == "2"),
        class == 2,
        "DAV: {dav:?} on a class-{class} drive"
    );
    assert_eq!(a.header("ms-author-via"), Some("DAV"), "{:?}", a.headers);
    let allow = a.tokens("allow");
    for m in methods {
        assert!(allow.iter().any(|t| t == m), "Allow {allow:?} lacks {m}");
    }
    if class == 1 {
        for m in ["LOCK", "UNLOCK"] {
            assert!(!allow.iter().any(|t| t == m), "Allow {allow:?} offers {m}");
        }
    }
}

/// What `/` allows: reads and PROPFIND.
pub(crate) const ROOT_ALLOWS: [&str; 4] = ["GET", "HEAD", "OPTIONS", "PROPFIND"];
/// What a file or folder under the writer's rule allows.
pub(crate) const NAME_ALLOWS: [&str; 8] = [
    "GET",
    "HEAD",
    "OPTIONS",
    "PUT",
    "DELETE",
    "PROPFIND",
    "PROPPATCH",
    "MOVE",
];
/// What a file or folder under the writer's rule allows on a class-2 drive.
pub(crate) const NAME_ALLOWS_LOCKS: [&str; 10] = [
    "GET",
    "HEAD",
    "OPTIONS",
    "PUT",
    "DELETE",
    "PROPFIND",
    "PROPPATCH",
    "MOVE",
    "LOCK",
    "UNLOCK",
];

/// A granted LOCK (RFC 4918 §9.10.1): `status` (200 on a name that
/// existed, 201 on one the LOCK made), a `Lock-Token: <…>` header, and
/// a `<D:prop><D:lockdiscovery>` body whose activelock carries that token
/// — what neon (litmus, davfs2) and WebDAVFS read the token from. Returns
/// the token without its angle brackets and the activelock.
pub(crate) fn assert_lock_granted(
    a: &Answer,
    status: u16,
    what: &str,
) -> (String, super::xml::ActiveLock) {
    assert_eq!(
        a.status,
        status,
        "{what}: {} {:?}\n{}",
        a.status,
        a.headers,
        a.text()
    );
    let header = a
        .header("lock-token")
        .unwrap_or_else(|| panic!("{what}: no Lock-Token in {:?}", a.headers));
    let token = header
        .strip_prefix('<')
        .and_then(|t| t.strip_suffix('>'))
        .unwrap_or_else(|| panic!("{what}: Lock-Token {header:?} is not a Coded-URL"))
        .to_owned();
    let ctype = a.header("content-type").unwrap_or("");
    assert!(
        ctype.starts_with("application/xml") || ctype.starts_with("text/xml"),
        "{what}: Content-Type {ctype:?}"
    );
    let locks = super::xml::activelocks(a);
    let lock = locks
        .iter()
        .find(|l| l.token == token)
        .unwrap_or_else(|| panic!("{what}: no activelock with {token} in\n{}", a.text()))
        .clone();
    (token, lock)
}

/// A write refused for a lock whose token was not submitted: 423 with
/// `<D:error><D:lock-token-submitted>` naming `root` (RFC 4918 §16).
pub(crate) fn assert_locked(a: &Answer, root: &str, what: &str) {
    assert_eq!(
        a.status,
        423,
        "{what}: {} {:?}\n{}",
        a.status,
        a.headers,
        a.text()
    );
    let (name, hrefs) = super::xml::error_condition(a);
    assert_eq!(name, "lock-token-submitted", "{what}: {}", a.text());
    assert!(
        hrefs
            .iter()
            .any(|h| super::xml::path_of(h) == super::xml::path_of(root)),
        "{what}: {hrefs:?} does not name {root}"
    );
}

/// The `Second-N` of a `<D:timeout>`, as neon and WebDAVFS parse it.
pub(crate) fn seconds(timeout: &str) -> u64 {
    timeout
        .strip_prefix("Second-")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("timeout {timeout:?} is not Second-N"))
}

pub(crate) fn on_disk(root: &Path) -> Vec<String> {
    nikaia_tests::names(root)
}
