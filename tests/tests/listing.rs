//! Directory listings (`spec/files.md`, "Listings") over real sockets, real
//! files and real symbolic links: entries with size and mtime, directories
//! first, every sort and order, HTML and JSON (by `Accept` or `?format=`),
//! hostile and non-UTF-8 names escaped and linked byte-exact, hidden names
//! and links out of the root left out, the ETag and its 304, `Vary:
//! Accept`, the entry cap, and the read done on the io pool.

use nikaia_std::fs::Root;
use nikaia_std::http::{dir_handler, Running, Server};
use nikaia_tests::{start, test_runtime, Client, Reply};
use serde_json::Value;
use std::ffi::OsStr;
use std::fs::{File, FileTimes};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `nikaia serve DIR --list` (with `--hidden` when `hidden`).
fn serve(root: &Path, hidden: bool) -> Running {
    let root = Root::dir(root).unwrap();
    start(Server::with_runtime(test_runtime()).route("/*path", dir_handler(root, hidden, true)))
}

fn get(server: &Running, path: &str, headers: &[&str]) -> Reply {
    let mut c = Client::connect(server.local_addr());
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    c.send(req);
    c.reply().expect("a reply")
}

fn json(server: &Running, path: &str) -> Value {
    let r = get(server, path, &["Accept: application/json"]);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{path}: {e}: {}", r.text()))
}

fn names(v: &Value) -> Vec<String> {
    v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A file of `len` bytes whose mtime is `secs` after the epoch.
fn file(path: &Path, len: usize, secs: u64) {
    std::fs::write(path, vec![b'x'; len]).unwrap();
    let t = UNIX_EPOCH + Duration::from_secs(secs);
    let f = File::options().write(true).open(path).unwrap();
    f.set_times(FileTimes::new().set_modified(t).set_accessed(t))
        .unwrap();
}

/// Percent-decodes a link's bytes.
fn decode(href: &str) -> Vec<u8> {
    let b = href.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Every `href="…"` of an HTML page, in order.
fn hrefs(page: &str) -> Vec<String> {
    page.split("href=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_owned())
        .collect()
}

#[test]
fn entries_have_size_and_mtime_directories_first_in_every_sort_and_order() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    std::fs::create_dir_all(d.join("zdir")).unwrap();
    std::fs::create_dir_all(d.join("adir")).unwrap();
    file(&d.join("b.txt"), 4096, 1_700_000_300);
    file(&d.join("a.txt"), 10, 1_700_000_200);
    file(&d.join("c.txt"), 2_000_000, 1_700_000_100);
    let server = serve(tmp.path(), false);

    let v = json(&server, "/d/");
    assert_eq!(v["path"], "/d/");
    assert_eq!(v["parent"], "../");
    assert_eq!(v["truncated"], false);
    assert_eq!(
        (v["sort"].as_str(), v["order"].as_str()),
        (Some("name"), Some("asc"))
    );
    assert_eq!(names(&v), ["adir", "zdir", "a.txt", "b.txt", "c.txt"]);
    let b = &v["entries"][3];
    assert_eq!(b["href"], "b.txt");
    assert_eq!(b["dir"], false);
    assert_eq!(b["size"], 4096);
    assert_eq!(b["mtime"], "2023-11-14T22:18:20Z");
    assert_eq!(b["mtime_ns"], 1_700_000_300_000_000_000i64);
    let adir = &v["entries"][0];
    assert_eq!(
        (&adir["href"], &adir["dir"]),
        (&"adir/".into(), &true.into())
    );
    assert!(adir["size"].is_null());

    let cases = [
        (
            "sort=name&order=asc",
            ["adir", "zdir", "a.txt", "b.txt", "c.txt"],
        ),
        (
            "sort=name&order=desc",
            ["zdir", "adir", "c.txt", "b.txt", "a.txt"],
        ),
        ("sort=size", ["adir", "zdir", "a.txt", "b.txt", "c.txt"]),
        (
            "sort=size&order=desc",
            ["zdir", "adir", "c.txt", "b.txt", "a.txt"],
        ),
        ("sort=mtime&order=asc", ["", "", "c.txt", "a.txt", "b.txt"]),
        ("sort=mtime&order=desc", ["", "", "b.txt", "a.txt", "c.txt"]),
        // Unknown values are the defaults, never an error.
        (
            "sort=colour&order=sideways",
            ["adir", "zdir", "a.txt", "b.txt", "c.txt"],
        ),
        ("order=desc", ["zdir", "adir", "c.txt", "b.txt", "a.txt"]),
    ];
    for (query, want) in cases {
        let got = names(&json(&server, &format!("/d/?{query}")));
        // The two directories' mtimes are whatever mkdir gave them.
        let dirs = &got[..2];
        assert!(dirs.contains(&"adir".to_owned()) && dirs.contains(&"zdir".to_owned()));
        for (g, w) in got.iter().zip(want) {
            if !w.is_empty() {
                assert_eq!(g, w, "{query}: {got:?}");
            }
        }
    }

    // The HTML page: the same order, sizes for people and exact, the
    // parent link, sort links in the column heads (plain hrefs).
    let r = get(&server, "/d/?sort=size&order=desc", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let page = r.text();
    assert!(!page.contains("<script"), "{page}");
    assert_eq!(
        hrefs(&page),
        [
            "?sort=name&amp;order=asc",
            "?sort=size&amp;order=asc",
            "?sort=mtime&amp;order=asc",
            "../",
            "zdir/",
            "adir/",
            "c.txt",
            "b.txt",
            "a.txt"
        ]
    );
    assert!(page.contains("title=\"4096 bytes\">4.0 KiB"), "{page}");
    assert!(page.contains("title=\"2000000 bytes\">1.9 MiB"), "{page}");
    assert!(page.contains("title=\"10 bytes\">10 B"), "{page}");
    assert!(page.contains("2023-11-14 22:18:20"), "{page}");

    // At the root of the served tree there is no parent link.
    let top = json(&server, "/");
    assert!(top["parent"].is_null());
    assert_eq!(names(&top), ["d"]);
    assert!(!hrefs(&get(&server, "/", &[]).text()).contains(&"../".to_owned()));
}

#[test]
fn the_format_follows_accept_and_the_query() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("f.txt"), b"f").unwrap();
    let server = serve(tmp.path(), false);
    let kind = |path: &str, headers: &[&str]| {
        let r = get(&server, path, headers);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("vary"), Some("Accept"), "{path} {headers:?}");
        r.header("content-type").unwrap().to_owned()
    };
    let (html, json) = ("text/html; charset=utf-8", "application/json");
    assert_eq!(kind("/", &[]), html);
    assert_eq!(kind("/", &["Accept: application/json"]), json);
    assert_eq!(
        kind("/", &["Accept: application/json, text/plain, */*"]),
        json
    );
    assert_eq!(
        kind("/", &["Accept: text/html;q=0.4, application/json;q=0.9"]),
        json
    );
    assert_eq!(
        kind("/", &["Accept: text/html, application/json;q=0.9"]),
        html
    );
    assert_eq!(
        kind("/", &["Accept: text/html,application/xhtml+xml,*/*;q=0.8"]),
        html
    );
    assert_eq!(kind("/", &["Accept: */*"]), html);
    assert_eq!(kind("/", &["Accept: application/json;q=0"]), html);
    assert_eq!(kind("/?format=json", &[]), json);
    assert_eq!(kind("/?format=html", &["Accept: application/json"]), html);
    assert_eq!(kind("/?format=yaml", &[]), html);
}

#[test]
fn hostile_and_non_utf8_names_are_escaped_and_linked_byte_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let hostile: &[&[u8]] = &[
        b"<script>alert(1)<\\script>",
        b"say \"hi\"",
        b"it's",
        b"100%",
        b"a#b",
        b"why?x=1",
        b"new\nline",
        b"a&b",
        b"sp ace",
        b"caf\xe9",
    ];
    for name in hostile {
        std::fs::write(d.join(OsStr::from_bytes(name)), name).unwrap();
    }
    let server = serve(d, false);

    let page = get(&server, "/", &[]).text();
    assert!(!page.contains("<script>alert"), "{page}");
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;\\script&gt;"),
        "{page}"
    );
    assert!(page.contains("say &quot;hi&quot;"), "{page}");
    assert!(page.contains("it&#39;s"), "{page}");
    assert!(page.contains("a&amp;b"), "{page}");
    assert!(page.contains("caf\u{fffd}"), "{page}");
    let links: Vec<Vec<u8>> = hrefs(&page)
        .iter()
        .filter(|h| !h.starts_with('?'))
        .map(|h| {
            assert!(
                h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)),
                "{h}"
            );
            decode(h)
        })
        .collect();
    let mut want: Vec<Vec<u8>> = hostile.iter().map(|n| n.to_vec()).collect();
    want.sort();
    assert_eq!(links, want);

    let v = json(&server, "/");
    for e in v["entries"].as_array().unwrap() {
        let href = e["href"].as_str().unwrap();
        let bytes = decode(href);
        assert_eq!(
            e["name"].as_str().unwrap(),
            String::from_utf8_lossy(&bytes),
            "{href}"
        );
        // The link opens that very file, a name that is not UTF-8 too.
        let r = get(&server, &format!("/{href}"), &[]);
        assert_eq!((r.status, &r.body), (200, &bytes), "{href}");
    }
    assert_eq!(v["entries"].as_array().unwrap().len(), hostile.len());
}

#[test]
fn hidden_names_and_links_out_of_the_root_are_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("inner")).unwrap();
    std::fs::write(
        tmp.path().join("secret.txt"),
        b"outside, 29 bytes of secret!!",
    )
    .unwrap();
    std::fs::write(root.join("target.txt"), b"twelve bytes").unwrap();
    std::fs::write(root.join(".env"), b"SECRET=1").unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    let link = |to: &str, at: &str| std::os::unix::fs::symlink(to, root.join(at)).unwrap();
    link("../secret.txt", "out_rel");
    link(tmp.path().join("secret.txt").to_str().unwrap(), "out_abs");
    link("..", "up");
    link("missing.txt", "broken");
    link("target.txt", "in_file");
    link("inner", "in_dir");
    link("in_file", "chain");
    let server = serve(&root, false);

    let v = json(&server, "/");
    assert_eq!(
        names(&v),
        ["in_dir", "inner", "chain", "in_file", "target.txt"]
    );
    for e in v["entries"].as_array().unwrap() {
        if e["name"] == "in_file" || e["name"] == "chain" {
            assert_eq!(e["size"], 12, "the target's size: {e}");
        }
        if e["name"] == "in_dir" {
            assert_eq!((&e["dir"], &e["href"]), (&true.into(), &"in_dir/".into()));
        }
    }
    let page = get(&server, "/", &[]).text();
    for gone in ["out_rel", "out_abs", "up", "broken", ".env", ".git"] {
        assert!(!page.contains(gone), "{gone}: {page}");
    }

    // --hidden shows the dot-names; links out stay out.
    let shown = serve(&root, true);
    assert_eq!(
        names(&json(&shown, "/")),
        [
            ".git",
            "in_dir",
            "inner",
            ".env",
            "chain",
            "in_file",
            "target.txt"
        ]
    );
}

#[test]
fn the_etag_follows_the_entries_and_answers_304() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("log.txt"), b"one line\n").unwrap();
    std::fs::write(d.join("other.txt"), b"other").unwrap();
    let server = serve(d, false);

    let first = get(&server, "/?format=json", &[]);
    let etag = first.header("etag").unwrap().to_owned();
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "strong: {etag}"
    );
    assert!(first.header("last-modified").is_none());
    assert_eq!(
        get(&server, "/?format=json", &[]).header("etag"),
        Some(&*etag),
        "stable"
    );
    let inm = format!("If-None-Match: {etag}");
    let not_modified = get(&server, "/?format=json", &[&inm]);
    assert_eq!(not_modified.status, 304);
    assert_eq!(not_modified.header("etag"), Some(&*etag));
    assert_eq!(not_modified.header("vary"), Some("Accept"));
    assert!(not_modified.body.is_empty());
    // Another format, another sort, another order: other bytes, other tags.
    let mut tags = vec![etag.clone()];
    for path in ["/", "/?format=json&sort=size", "/?format=json&order=desc"] {
        let r = get(&server, path, &[&inm]);
        assert_eq!(r.status, 200, "{path}");
        tags.push(r.header("etag").unwrap().to_owned());
    }
    tags.sort();
    tags.dedup();
    assert_eq!(tags.len(), 4, "{tags:?}");

    // A file grown in place (the directory's own mtime does not change).
    let dir_mtime = std::fs::metadata(d).unwrap().modified().unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(d.join("log.txt"))
        .unwrap()
        .write_all_at_end(b"two lines\n");
    assert_eq!(std::fs::metadata(d).unwrap().modified().unwrap(), dir_mtime);
    let grown = get(&server, "/?format=json", &[&inm]);
    assert_eq!(grown.status, 200);
    let new = grown.header("etag").unwrap();
    assert_ne!(new, etag);
    let v: Value = serde_json::from_slice(&grown.body).unwrap();
    assert_eq!(v["entries"][0]["size"], 19);
    assert_eq!(
        get(
            &server,
            "/?format=json",
            &[&format!("If-None-Match: {new}")]
        )
        .status,
        304
    );
}

trait AppendAll {
    fn write_all_at_end(self, bytes: &[u8]);
}

impl AppendAll for File {
    fn write_all_at_end(mut self, bytes: &[u8]) {
        std::io::Write::write_all(&mut self, bytes).unwrap();
    }
}

#[test]
fn a_directory_of_100_000_entries_is_listed_and_one_more_is_truncated() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("many");
    std::fs::create_dir(&d).unwrap();
    for i in 0..100_000 {
        File::create(d.join(format!("f{i:06}"))).unwrap();
    }
    let mut rt = test_runtime();
    rt.workers = 1;
    let root = Root::dir(tmp.path()).unwrap();
    let server = start(Server::with_runtime(rt).route("/*path", dir_handler(root, false, true)));

    let before = server.report().pool_opens;
    let started = SystemTime::now();
    let v = json(&server, "/many/");
    let entries = v["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 100_000);
    assert_eq!(v["truncated"], false);
    assert_eq!(entries[0]["name"], "f000000");
    assert_eq!(entries[99_999]["name"], "f099999");
    // The directory was read on the io pool, not on the worker (D9).
    assert!(server.report().pool_opens > before);
    eprintln!(
        "100 000 entries as JSON in {:?}",
        started.elapsed().unwrap()
    );

    File::create(d.join("f100000")).unwrap();
    let v = json(&server, "/many/");
    assert_eq!(v["entries"].as_array().unwrap().len(), 100_000);
    assert_eq!(v["truncated"], true);
    let page = get(&server, "/many/", &[]).text();
    assert!(
        page.contains("<p>Truncated"),
        "{}",
        &page[page.len() - 300..]
    );
    assert_eq!(page.matches("<tr><td><a href=\"f").count(), 100_000);
}
