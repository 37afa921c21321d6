//! WebDAV class 2 (`spec/site.md`, "WebDAV class 2: locks"; issue #50,
//! "Tests") driven from the wire: `nikaia serve`'s routes
//! (`Server::serve_dir`) under a runtime file with `[webdav-locks]`, two
//! writers (alice and bob, bcrypt in `users.htpasswd`), raw HTTP/1.1 over
//! TCP to 127.0.0.1, curl for HTTP/2, real files under a scratch
//! directory. No assertion is about time: statuses, bodies, files and the
//! counters `nikaia explain` shows (the report's JSON, which the stats
//! socket sends).
//!
//! - `flood.rs`: 10 000 LOCKs against `max-locks-per-user` and
//!   `max-locks`: 503 past them, no file made by a refusal, the server
//!   serving on; LOCKs racing for the last place (ignored: a server bug,
//!   a refusal's file left behind);
//! - `lifecycle.rs`: a lock and its token across SIGHUP, SIGUSR2 (a new
//!   process) and a restart (`dav_server`, a program serving as `nikaia
//!   serve` does);
//! - `users.rs`: another user's token refused everywhere;
//! - `tus.rs`: a tus upload that meets a lock mid-way keeps its bytes
//!   (its HEAD meanwhile: ignored, a server bug, 423 for the offset);
//! - `collections.rs`: depth-infinity locks, a locked member under
//!   DELETE, MOVE taking no lock along;
//! - `cond.rs`: `If:` evaluated (ETags, malformed, twice, another host)
//!   and a lock that expires;
//! - `h2.rs`: the same answers over HTTP/2 as over HTTP/1.1;
//! - `found.rs`: what an outside tester found (an owner bounded as it is
//!   kept, members' locks gone with a Destination replaced whole, a locks
//!   file edited by hand, a token opening only what its lock covers).

use nikaia_std::http::Running;
use nikaia_tests::dav::{self, file};
use nikaia_tests::site::{base64, USERS};
use nikaia_tests::{read_whole, Client, Reply};
use std::net::SocketAddr;

#[path = "dav_locks/collections.rs"]
mod collections;
#[path = "dav_locks/cond.rs"]
mod cond;
#[path = "dav_locks/flood.rs"]
mod flood;
#[path = "dav_locks/found.rs"]
mod found;
#[path = "dav_locks/h2.rs"]
mod h2;
#[path = "dav_locks/lifecycle.rs"]
mod lifecycle;
#[path = "dav_locks/tus.rs"]
mod tus;
#[path = "dav_locks/users.rs"]
mod users;

/// alice's credentials (`USERS`).
pub const ALICE: &str = "alice:open sesame";
/// bob's (`USERS`).
pub const BOB: &str = "bob:b0b:pass";

/// The drive: everything under auth, alice and bob both writers with
/// WebDAV; `[webdav-locks]` with `locks` (the table's own keys) beside
/// the runtime file, and `extra` (other top-level tables) before the
/// rules.
pub fn rules(locks: &str, extra: &str) -> String {
    format!(
        r#"webdav = true

[webdav-locks]
dir = "locks"
{locks}

{extra}

[[auth]]
match = ["**"]
htpasswd = "users.htpasswd"
plain-http = true

[[write]]
match = ["**"]
writers = ["alice", "bob"]
create = true
replace = true
delete = true
delete-dirs = true
make-dirs = false
webdav = true
plain-http = true
durability = "none"
"#
    )
}

/// The drive ([`dav::Drive`]): `root/` (served), the runtime file, the
/// users file, and the locks directory beside them.
pub struct Drive(dav::Drive);

impl Drive {
    /// The drive with `rules` as its runtime file and `f.txt` (and
    /// `dir/a.txt`) in it.
    pub fn new(tag: &str, rules: &str) -> Drive {
        let prefix = format!("nikaia-locks-{tag}");
        let d = dav::Drive::under(env!("CARGO_TARGET_TMPDIR"), &prefix, USERS, rules);
        file(&d.root().join("f.txt"), b"f, first");
        file(&d.root().join("dir/a.txt"), b"dir, a");
        Drive(d)
    }

    /// `nikaia serve root` (listings on) under the runtime file.
    pub fn serve(&self) -> Running {
        self.0.serve(None)
    }
}

impl std::ops::Deref for Drive {
    type Target = dav::Drive;

    fn deref(&self) -> &dav::Drive {
        &self.0
    }
}

/// The `"locks"` object of the server's report, as `nikaia explain
/// --json` prints it.
pub fn locks_report(server: &Running) -> serde_json::Value {
    let report: serde_json::Value = serde_json::from_str(&server.report().to_json()).unwrap();
    let locks = report["locks"].clone();
    assert!(locks.is_object(), "no locks in the report: {report}");
    locks
}

/// A counter of [`locks_report`].
pub fn counter(server: &Running, key: &str) -> u64 {
    let locks = locks_report(server);
    locks[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key:?} in {locks}"))
}

// ---------------------------------------------------------------------------
// The wire.

/// One request: its method, target, header lines and body, with alice's
/// credentials unless told otherwise.
#[derive(Clone)]
pub struct Req {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    auth: Option<&'static str>,
}

pub fn req(method: &str, target: &str) -> Req {
    Req {
        method: method.to_owned(),
        target: target.to_owned(),
        headers: Vec::new(),
        body: Vec::new(),
        auth: Some(ALICE),
    }
}

impl Req {
    pub fn h(mut self, name: &str, value: impl Into<String>) -> Req {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    pub fn body(mut self, body: impl AsRef<[u8]>) -> Req {
        self.body = body.as_ref().to_vec();
        self
    }

    pub fn auth(mut self, pair: &'static str) -> Req {
        self.auth = Some(pair);
        self
    }

    /// Its bytes; `close` asks for the connection to close after it.
    pub fn bytes(&self, addr: SocketAddr, close: bool) -> Vec<u8> {
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {addr}\r\n",
            self.method, self.target
        );
        if close {
            head.push_str("Connection: close\r\n");
        }
        if let Some(pair) = self.auth {
            head.push_str(&format!("Authorization: Basic {}\r\n", base64(pair)));
        }
        for (n, v) in &self.headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        if !self.body.is_empty() || ["PUT", "PROPPATCH", "PATCH"].contains(&self.method.as_str()) {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("\r\n");
        let mut all = head.into_bytes();
        all.extend_from_slice(&self.body);
        all
    }

    /// Sends it on a connection of its own and reads the answer whole.
    pub fn send(&self, addr: SocketAddr) -> Reply {
        let mut c = Client::connect(addr);
        c.send(self.bytes(addr, true));
        read_whole(c.reader(), self.method == "HEAD").expect("an answer")
    }
}

/// A keep-alive connection that sends request after request (connecting
/// again where the server closed it after an answer).
pub struct Wire {
    addr: SocketAddr,
    conn: Option<Client>,
}

impl Wire {
    pub fn new(addr: SocketAddr) -> Wire {
        Wire { addr, conn: None }
    }

    pub fn send(&mut self, r: &Req) -> Reply {
        let c = self.conn.get_or_insert_with(|| Client::connect(self.addr));
        c.send(r.bytes(self.addr, false));
        let reply = read_whole(c.reader(), r.method == "HEAD").expect("an answer");
        let closes = reply
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        if closes {
            self.conn = None;
        }
        reply
    }
}

// ---------------------------------------------------------------------------
// WebDAV's locks, asked.

/// A `lockinfo` body: an exclusive (or shared) write lock, owned by
/// `owner`.
pub fn lockinfo(shared: bool, owner: &str) -> String {
    let scope = if shared { "shared" } else { "exclusive" };
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:lockinfo xmlns:D=\"DAV:\">\
         <D:lockscope><D:{scope}/></D:lockscope><D:locktype><D:write/></D:locktype>\
         <D:owner><D:href>{owner}</D:href></D:owner></D:lockinfo>"
    )
}

/// A new exclusive `LOCK` of `target` by `user`, `Depth` and `Timeout`
/// given.
pub fn lock_req(target: &str, user: &'static str, depth: &str, timeout: &str) -> Req {
    req("LOCK", target)
        .auth(user)
        .h("Depth", depth)
        .h("Timeout", timeout)
        .h("Content-Type", "application/xml")
        .body(lockinfo(false, user.split(':').next().unwrap()))
}

/// The token of a `LOCK`'s answer (its `Lock-Token`, the `<>` off),
/// checked to be the one its body shows.
pub fn token(r: &Reply) -> String {
    let header = r
        .header("lock-token")
        .unwrap_or_else(|| panic!("no Lock-Token: {} {}", r.status, r.text()));
    let t = header
        .strip_prefix('<')
        .and_then(|t| t.strip_suffix('>'))
        .unwrap_or_else(|| panic!("Lock-Token not a Coded-URL: {header:?}"));
    assert!(t.starts_with("urn:uuid:"), "{t}");
    assert!(
        r.text().contains(t),
        "the body shows another token: {}",
        r.text()
    );
    t.to_owned()
}

/// Takes an exclusive lock of `target` for `user` (201 or 200) and
/// returns its token.
pub fn locked(addr: SocketAddr, target: &str, user: &'static str, depth: &str) -> String {
    let r = lock_req(target, user, depth, "Second-600").send(addr);
    assert!(
        [200, 201].contains(&r.status),
        "LOCK {target}: {} {}",
        r.status,
        r.text()
    );
    token(&r)
}

/// `PROPFIND` of `lockdiscovery` (Depth 0) by `user`: the body of the 207.
pub fn discovery(addr: SocketAddr, target: &str, user: &'static str) -> String {
    let body = "<?xml version=\"1.0\" encoding=\"utf-8\"?><D:propfind xmlns:D=\"DAV:\">\
                <D:prop><D:lockdiscovery/></D:prop></D:propfind>";
    let r = req("PROPFIND", target)
        .auth(user)
        .h("Depth", "0")
        .h("Content-Type", "application/xml")
        .body(body)
        .send(addr);
    assert_eq!(r.status, 207, "PROPFIND {target}: {}", r.text());
    r.text()
}

/// The number of `activelock`s a `lockdiscovery` shows.
pub fn active_locks(text: &str) -> usize {
    text.matches("activelock>").count() / 2
}

/// `If: (<token>)`.
pub fn submit(token: &str) -> String {
    format!("(<{token}>)")
}

/// A `PUT` of `bytes` to `target` by `user`.
pub fn put(target: &str, user: &'static str, bytes: &[u8]) -> Req {
    req("PUT", target).auth(user).body(bytes)
}

/// Asserts a 423 whose body is `lock-token-submitted` naming `root`.
#[track_caller]
pub fn assert_locked(r: &Reply, root: &str, what: &str) {
    let text = r.text();
    assert_eq!(r.status, 423, "{what}: {text}");
    assert!(
        text.contains("lock-token-submitted") && text.contains(&format!("href>{root}</")),
        "{what}: 423 without lock-token-submitted naming {root}: {text}"
    );
}

/// The body of `/path` as a GET by alice reads it.
pub fn get(addr: SocketAddr, target: &str) -> Reply {
    req("GET", target).send(addr)
}
