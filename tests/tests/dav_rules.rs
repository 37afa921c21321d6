//! WebDAV class 1 under a site's rules, tried from the wire as an
//! attacker would (`spec/site.md`, "WebDAV class 1"; issue #49's
//! containment corpus).
//!
//! `nikaia serve` (its routes, `Server::serve_dir`, dot-names hidden) is
//! given a drive, `drive/**`, that alice (and only she) may fill, mount
//! and change with WebDAV (`webdav = true` at the top and on the rule),
//! beside names no write rule covers (`public/`), names under a deny list
//! (`drive/secret/**` 404, `drive/forbidden/**` 403, `*.key` 404,
//! `*.forbid` 403), names behind another users file only bob is in
//! (`other/**`, `drive/coll/bobs/**`), dot-names, links out of the root
//! and to a denied file, and hard links of the runtime file and of the
//! users file inside the drive (the runtime's own files). Next to the
//! served directory lies `outside/`, which nothing may read or change.
//!
//! Each request goes raw over TCP to 127.0.0.1; after every refusal the
//! whole scratch directory (files' bytes, inodes, times; links) must be
//! what it was, and no refusal's body may carry a byte of what it
//! refused.
//!
//! - `destination.rs`: the Destination corpus, for COPY and MOVE;
//! - `sources.rs`: COPY sources the user may not read, and collection
//!   COPYs with such members;
//! - `links.rs`: links as sources, on the way, as members, and a
//!   directory swapped for a link out while COPY and MOVE run;
//! - `xml.rs`: hostile XML bodies;
//! - `props.rs`: dead properties (kept across PUT, COPY, MOVE; 507; live
//!   ones protected);
//! - `propfind.rs`: PROPFIND's depth, what it hides, its ETag, 3 000
//!   members;
//! - `off.rs`: without `webdav`, every method as before; the same answers
//!   over HTTP/1.1 and HTTP/2;
//! - `found.rs`: what an outside tester found in the first build.

use nikaia_std::http::Running;
use nikaia_tests::dav::{self, file};
use nikaia_tests::site::{base64, USERS};
use nikaia_tests::{read_whole, Client, Reply};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

#[path = "dav_rules/destination.rs"]
mod destination;
#[path = "dav_rules/found.rs"]
mod found;
#[path = "dav_rules/links.rs"]
mod links;
#[path = "dav_rules/off.rs"]
mod off;
#[path = "dav_rules/propfind.rs"]
mod propfind;
#[path = "dav_rules/props.rs"]
mod props;
#[path = "dav_rules/sources.rs"]
mod sources;
#[path = "dav_rules/xml.rs"]
mod xml;

/// alice's credentials (`USERS`).
const ALICE: &str = "alice:open sesame";
/// bob's (`USERS`: password `b0b:pass`).
const BOB: &str = "bob:b0b:pass";
/// A users file bob alone is in.
const BOBS: &str = "bob:$2y$05$3Ti.SB88ruvccek7oAgm3e8koIVqVED9LvYhxKKGWocrGZZLjHSu6\n";

/// What every file outside the served directory starts with: no answer
/// and no file in the tree may ever hold it.
const OUTSIDE: &str = "OUTSIDE-BYTES";

/// The drive's rules (see the top of this file).
const RULES: &str = r#"
webdav = true

[[deny]]
match = ["drive/secret/**", "**/*.key"]

[[deny]]
match = ["drive/forbidden/**", "**/*.forbid"]
status = 403

[[auth]]
match = ["other/**", "drive/coll/bobs/**"]
htpasswd = "bobs.htpasswd"
plain-http = true

[[auth]]
match = ["drive/**"]
htpasswd = "users.htpasswd"
plain-http = true

[[write]]
match = ["other/**", "drive/coll/bobs/**"]
writers = ["bob"]
create = true
replace = true
delete = true
delete-dirs = true
webdav = true
plain-http = true
durability = "none"

[[write]]
match = "drive/**"
writers = ["alice"]
create = true
replace = true
delete = true
delete-dirs = true
make-dirs = false
webdav = true
plain-http = true
durability = "none"
"#;

/// The drive ([`dav::Drive`]): `root/` (served), `outside/`, the runtime
/// file and the users files side by side.
struct Drive(dav::Drive);

impl Drive {
    /// The drive with `rules` as its runtime file.
    fn new(tag: &str, rules: &str) -> Drive {
        let prefix = format!("nikaia-dav-{tag}");
        let drive = dav::Drive::under(env!("CARGO_TARGET_TMPDIR"), &prefix, USERS, rules);
        let t = drive.path();
        file(&t.join("outside/keep.txt"), b"OUTSIDE-BYTES keep");
        file(&t.join("outside/victim"), b"OUTSIDE-BYTES victim");
        file(&t.join("outside/sub/deep.txt"), b"OUTSIDE-BYTES deep");
        file(&t.join("bobs.htpasswd"), BOBS.as_bytes());
        let r = t.join("root");
        file(&r.join("index.html"), b"<h1>top</h1>");
        file(&r.join("public/p.txt"), b"public");
        file(&r.join(".well-known/acme-challenge/tok"), b"token");
        file(&r.join("other/o.txt"), b"bob's own");
        let d = r.join("drive");
        file(&d.join("a.txt"), b"drive, a");
        file(&d.join("b.txt"), b"drive, b");
        file(&d.join("m.txt"), b"drive, m (moved)");
        file(&d.join("dir/one.txt"), b"drive, one");
        file(&d.join("dir/sub/two.txt"), b"drive, two");
        file(&d.join(".env"), b"SECRET=hidden-env");
        file(&d.join(".git/config"), b"[core] hidden-git");
        file(&d.join("secret/s.txt"), b"denied-404 secret");
        file(&d.join("forbidden/f.txt"), b"denied-403 forbidden");
        file(&d.join("x.key"), b"denied-404 key");
        file(&d.join("coll/keep.txt"), b"coll, keep");
        file(&d.join("coll/deep/keep2.txt"), b"coll, deep keep");
        file(&d.join("coll/.env"), b"SECRET=coll-hidden-env");
        file(&d.join("coll/x.key"), b"denied-404 coll key");
        file(&d.join("coll/y.forbid"), b"denied-403 coll forbid");
        file(&d.join("coll/bobs/b.txt"), b"bob-only coll");
        file(&d.join("coll/deep/.hid"), b"SECRET=deep-hidden");
        symlink("../../../outside/keep.txt", d.join("coll/link-out")).unwrap();
        symlink("../../outside/keep.txt", d.join("out-link")).unwrap();
        symlink(t.join("outside"), d.join("out-dir")).unwrap();
        symlink("secret/s.txt", d.join("deny-link")).unwrap();
        std::fs::hard_link(t.join("runtime.toml"), d.join("rt-hard")).unwrap();
        std::fs::hard_link(t.join("users.htpasswd"), d.join("pw-hard")).unwrap();
        Drive(drive)
    }

    fn drive(&self) -> PathBuf {
        self.root().join("drive")
    }

    /// `nikaia serve root` (dot-names hidden, listings on) under the
    /// runtime file.
    fn serve(&self) -> Running {
        self.0.serve(None)
    }
}

impl std::ops::Deref for Drive {
    type Target = dav::Drive;

    fn deref(&self) -> &dav::Drive {
        &self.0
    }
}

// ---------------------------------------------------------------------------
// The wire.

/// One request, raw: its method, target, header lines and body, with
/// alice's credentials unless told otherwise.
struct Req {
    method: String,
    target: Vec<u8>,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    auth: Option<&'static str>,
}

fn req(method: &str, target: &str) -> Req {
    Req {
        method: method.to_owned(),
        target: target.as_bytes().to_vec(),
        headers: Vec::new(),
        body: Vec::new(),
        auth: Some(ALICE),
    }
}

impl Req {
    fn h(mut self, name: &str, value: impl AsRef<[u8]>) -> Req {
        self.headers
            .push((name.to_owned(), value.as_ref().to_vec()));
        self
    }

    fn body(mut self, body: impl AsRef<[u8]>) -> Req {
        self.body = body.as_ref().to_vec();
        self
    }

    fn auth(mut self, pair: Option<&'static str>) -> Req {
        self.auth = pair;
        self
    }

    /// Sends it on a connection of its own (`Host` is the server's
    /// address), and reads the answer whole (a chunked body decoded).
    fn send(&self, addr: SocketAddr) -> Reply {
        let mut head = Vec::new();
        head.extend_from_slice(self.method.as_bytes());
        head.push(b' ');
        head.extend_from_slice(&self.target);
        head.extend_from_slice(b" HTTP/1.1\r\nConnection: close\r\n");
        // The address, unless the request names a host of its own.
        if !self
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("host"))
        {
            head.extend_from_slice(format!("Host: {addr}\r\n").as_bytes());
        }
        if let Some(pair) = self.auth {
            head.extend_from_slice(format!("Authorization: Basic {}\r\n", base64(pair)).as_bytes());
        }
        for (n, v) in &self.headers {
            head.extend_from_slice(n.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(v);
            head.extend_from_slice(b"\r\n");
        }
        if !self.body.is_empty() || ["PUT", "PROPPATCH"].contains(&self.method.as_str()) {
            head.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        let mut c = Client::connect(addr);
        c.send(&head);
        if !self.body.is_empty() {
            // The server may answer (413) and close before it has read
            // all of a large body: what it did not take is no failure.
            let stream = c.stream();
            stream
                .set_write_timeout(Some(std::time::Duration::from_secs(10)))
                .unwrap();
            let _ = (&mut &*stream).write_all(&self.body);
        }
        let mut reply = read_whole(c.reader(), self.method == "HEAD").expect("an answer");
        reply
            .headers
            .retain(|(n, _)| !n.eq_ignore_ascii_case("date"));
        reply
    }
}

// ---------------------------------------------------------------------------
// Snapshots of the scratch directory.

/// What a name is: a file's bytes, a directory, a link's target; with its
/// inode and modification time, so a rewrite with the same bytes shows.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    File(Vec<u8>),
    Dir,
    Link(PathBuf),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    kind: Kind,
    ino: u64,
    mtime_ns: i128,
    /// The dead properties (`user.nikaia.dav`), if any.
    dead: Option<Vec<u8>>,
}

type Snapshot = BTreeMap<PathBuf, Entry>;

/// Every name under `top` (relative to it), links not followed.
fn snapshot(top: &Path) -> Snapshot {
    let mut out = Snapshot::new();
    walk(top, Path::new(""), &mut out);
    out
}

fn walk(top: &Path, rel: &Path, out: &mut Snapshot) {
    use std::os::unix::fs::MetadataExt;
    let mut names: Vec<_> = std::fs::read_dir(top.join(rel))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    for name in names {
        let rel = rel.join(&name);
        let path = top.join(&rel);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let kind = if meta.is_symlink() {
            Kind::Link(std::fs::read_link(&path).unwrap())
        } else if meta.is_dir() {
            Kind::Dir
        } else {
            Kind::File(std::fs::read(&path).unwrap())
        };
        let dir = kind == Kind::Dir;
        let dead = match kind {
            Kind::Link(_) => None,
            _ => dead(&path),
        };
        out.insert(
            rel.clone(),
            Entry {
                kind,
                ino: meta.ino(),
                mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                dead,
            },
        );
        if dir {
            walk(top, &rel, out);
        }
    }
}

/// The dead properties' extended attribute of `path` (no link followed).
fn dead(path: &Path) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 70_000];
    match rustix::fs::lgetxattr(path, "user.nikaia.dav", &mut buf) {
        Ok(n) => Some(buf[..n].to_vec()),
        Err(_) => None,
    }
}

/// The names whose entries differ between two snapshots, each described.
fn changes(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let keys: BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
    let show = |e: Option<&Entry>| match e {
        None => "nothing".to_owned(),
        Some(e) => match &e.kind {
            Kind::File(b) => format!("file {:?}", String::from_utf8_lossy(&b[..b.len().min(60)])),
            Kind::Dir => "directory".to_owned(),
            Kind::Link(to) => format!("link to {}", to.display()),
        },
    };
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| {
            format!(
                "{}: {} -> {}",
                k.display(),
                show(before.get(k)),
                show(after.get(k))
            )
        })
        .collect()
}

/// The part of a snapshot outside the served directory.
fn outside_part(s: &Snapshot) -> Snapshot {
    s.iter()
        .filter(|(k, _)| !k.starts_with("root"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The names in the served tree whose bytes came from outside it.
fn outside_bytes_inside(s: &Snapshot) -> Vec<PathBuf> {
    s.iter()
        .filter(|(k, e)| {
            k.starts_with("root")
                && matches!(&e.kind, Kind::File(b) if b.windows(OUTSIDE.len()).any(|w| w == OUTSIDE.as_bytes()))
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// The bytes no refusal's answer may carry: every secret's content.
const SECRETS: [&str; 9] = [
    "hidden-env",
    "hidden-git",
    "denied-404",
    "denied-403",
    "bob-only",
    "bob's own",
    "OUTSIDE",
    "$2y$05$",
    "htpasswd",
];

/// What of [`SECRETS`] `body` carries.
fn leaked(body: &[u8]) -> Vec<&'static str> {
    let text = String::from_utf8_lossy(body);
    SECRETS.into_iter().filter(|s| text.contains(s)).collect()
}

/// The `href`s of a multistatus body, percent-decoded.
fn hrefs(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    let mut out = Vec::new();
    let mut rest = &text[..];
    while let Some(at) = rest.find("href>") {
        rest = &rest[at + 5..];
        let end = rest.find('<').unwrap_or(rest.len());
        let raw = &rest[..end];
        if !raw.is_empty() {
            let raw = raw
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&");
            out.push(decode(&raw));
        }
        rest = &rest[end..];
    }
    out
}

fn decode(raw: &str) -> String {
    let b = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 3 <= b.len() {
            if let Ok(v) = u8::from_str_radix(&raw[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
