//! `nikaia serve` as a user runs it: the real binary, a real directory.

mod common;

use common::{get, request, spawn_serve, Served};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

struct Serving {
    child: Served,
    addr: String,
    _dir: tempfile::TempDir,
}

fn site() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("docs/guide")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join(".well-known")).unwrap();
    std::fs::create_dir_all(root.join("empty")).unwrap();
    std::fs::write(root.join("index.html"), "<h1>home</h1>").unwrap();
    std::fs::write(root.join("docs/index.html"), "<h1>docs</h1>").unwrap();
    std::fs::write(root.join("docs/guide/a b.txt"), "spaced").unwrap();
    std::fs::write(root.join(".git/config"), "[core]").unwrap();
    std::fs::write(root.join(".env"), "SECRET=1").unwrap();
    std::fs::write(root.join(".well-known/security.txt"), "Contact: x").unwrap();
    dir
}

/// Starts `nikaia serve ROOT ARGS...` and reads the URL it prints; the
/// returned `Serving` keeps `dir` (which holds ROOT) alive.
fn start_serve(
    dir: tempfile::TempDir,
    root: &std::path::Path,
    args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>,
) -> Serving {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
    cmd.arg("serve").arg(root).args(args);
    let (child, addr) = spawn_serve(cmd);
    Serving {
        child,
        addr,
        _dir: dir,
    }
}

/// Starts `nikaia serve DIR --listen 127.0.0.1:0 ...` over [`site`].
fn serve(extra: &[&str]) -> Serving {
    let dir = site();
    let root = dir.path().to_path_buf();
    let args = ["--listen", "127.0.0.1:0"].iter().chain(extra);
    start_serve(dir, &root, args)
}

fn location(head: &str) -> Option<&str> {
    head.lines()
        .find_map(|l| l.strip_prefix("Location: "))
        .map(str::trim)
}

#[test]
fn serves_index_files_and_redirects_directories_to_their_slash() {
    let s = serve(&[]);
    let (status, head, body) = get(&s.addr, "/");
    assert_eq!((status, &body[..]), (200, &b"<h1>home</h1>"[..]));
    assert!(head.contains("Content-Type: text/html; charset=utf-8"));
    assert_eq!(get(&s.addr, "/docs/").2, b"<h1>docs</h1>");
    let (status, head, _) = get(&s.addr, "/docs");
    assert_eq!(status, 301);
    assert_eq!(location(&head), Some("/docs/"));
    let (status, head, _) = get(&s.addr, "/docs/guide?x=1");
    assert_eq!((status, location(&head)), (301, Some("/docs/guide/?x=1")));
    // No index: 404 (no listing).
    assert_eq!(get(&s.addr, "/docs/guide/").0, 404);
    assert_eq!(get(&s.addr, "/empty/").0, 404);
    assert_eq!(get(&s.addr, "/docs/guide/a%20b.txt").2, b"spaced");
    assert_eq!(get(&s.addr, "/missing.html").0, 404);
}

#[test]
fn list_shows_a_directory_without_an_index() {
    let s = serve(&["--list"]);
    std::fs::write(s._dir.path().join("docs/guide/<b>&x.txt"), "x").unwrap();
    let (status, head, body) = get(&s.addr, "/docs/guide/");
    let page = String::from_utf8(body).unwrap();
    assert_eq!(status, 200);
    assert!(head.contains("Content-Type: text/html; charset=utf-8"));
    assert!(page.contains("<a href=\"a%20b.txt\">a b.txt</a>"), "{page}");
    assert!(
        page.contains("&lt;b&gt;&amp;x.txt"),
        "names are escaped: {page}"
    );
    assert!(!page.contains("<b>"), "{page}");
    // The root lists its directories with a slash and leaves dot-names out.
    let root = String::from_utf8(get(&s.addr, "/empty/").2).unwrap();
    assert!(root.contains("Index of /empty/"), "{root}");
    let (_, _, top) = get(&s.addr, "/docs/");
    assert_eq!(top, b"<h1>docs</h1>", "an index still wins");
    std::fs::remove_file(s._dir.path().join("index.html")).unwrap();
    let top = String::from_utf8(get(&s.addr, "/").2).unwrap();
    assert!(top.contains("<a href=\"docs/\">docs/</a>"), "{top}");
    assert!(!top.contains(".git") && !top.contains(".env"), "{top}");
    // Listing never leaves the root.
    assert_eq!(get(&s.addr, "/%2e%2e/").0, 404);
}

#[test]
fn a_name_that_is_not_utf8_is_served_byte_exact() {
    use std::os::unix::ffi::OsStrExt;
    let s = serve(&[]);
    let name = |b: &[u8]| s._dir.path().join(std::ffi::OsStr::from_bytes(b));
    std::fs::write(name(b"caf\xe9.txt"), "Latin-1").unwrap();
    std::fs::create_dir(name(b"d\xff")).unwrap();
    std::fs::write(name(b"d\xff/index.html"), "<h1>d</h1>").unwrap();
    let out = Command::new("curl")
        .args(["-sS", "-w", " %{http_code}"])
        .arg(format!("http://{}/caf%E9.txt", s.addr))
        .output()
        .expect("curl runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Latin-1 200",
        "{out:?}"
    );
    let (status, head, _) = get(&s.addr, "/d%FF");
    assert_eq!((status, location(&head)), (301, Some("/d%FF/")));
    assert_eq!(get(&s.addr, "/d%FF/").2, b"<h1>d</h1>");
    assert_eq!(get(&s.addr, "/caf%C3%A9.txt").0, 404);
    assert_eq!(get(&s.addr, "/caf%00.txt").0, 400);
}

#[test]
fn a_redirect_never_leaves_the_host() {
    let s = serve(&[]);
    for target in ["//docs", "///docs", "/%2fdocs", "/docs%2f..%2fdocs"] {
        let (status, head, _) = get(&s.addr, target);
        if let Some(loc) = location(&head) {
            assert!(
                loc.starts_with('/') && !loc.starts_with("//"),
                "{target} → {loc}"
            );
        }
        assert!(matches!(status, 301 | 404), "{target}: {status}");
    }
}

#[test]
fn hidden_names_are_not_served_unless_asked() {
    let s = serve(&[]);
    for target in [
        "/.git/config",
        "/.env",
        "/docs/../.env",
        "/%2eenv",
        "/.git/",
    ] {
        let (status, _, body) = get(&s.addr, target);
        assert_eq!(status, 404, "{target}");
        assert!(!String::from_utf8_lossy(&body).contains("SECRET"));
    }
    assert_eq!(get(&s.addr, "/.well-known/security.txt").2, b"Contact: x");
    let s = serve(&["--hidden"]);
    assert_eq!(get(&s.addr, "/.env").2, b"SECRET=1");
}

#[test]
fn without_a_write_rule_nothing_is_written_or_deleted() {
    let s = serve(&[]);
    let before = std::fs::read_dir(s._dir.path()).unwrap().count();
    for (method, target) in [
        ("PUT", "/new.txt"),
        ("PUT", "/index.html"),
        ("DELETE", "/index.html"),
    ] {
        let (status, head, _) = request(&s.addr, method, target, "Content-Length: 0\r\n");
        assert_eq!(status, 405, "{method} {target}");
        assert!(head.contains("Allow: GET, HEAD, OPTIONS\r\n"), "{head}");
    }
    assert_eq!(std::fs::read_dir(s._dir.path()).unwrap().count(), before);
    assert!(s._dir.path().join("index.html").exists());
}

#[test]
fn ctrl_c_stops_it_gracefully() {
    let mut s = serve(&[]);
    assert_eq!(get(&s.addr, "/").0, 200);
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&s.child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let status = s.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_missing_directory_is_an_error_not_a_fallback() {
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .args(["serve", "/definitely/not/here", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/definitely/not/here"));
}

/// CPU jiffies (utime + stime) a process has used.
fn cpu_jiffies(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Asks for `/` on a kept-alive connection and expects a 200.
fn ask(c: &mut TcpStream) {
    c.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut buf = [0u8; 512];
    let n = c.read(&mut buf).unwrap();
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&buf[..n])
    );
}

/// Out of descriptors, the server backs off accepting (no busy loop) and
/// keeps serving the connections it has.
#[test]
fn running_out_of_descriptors_backs_off_and_keeps_serving() {
    let dir = site();
    let mut cmd = Command::new("prlimit");
    cmd.arg("--nofile=48")
        .arg(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(dir.path())
        .args(["--listen", "127.0.0.1:0"]);
    let (child, addr) = spawn_serve(cmd);
    let s = Serving {
        child,
        addr,
        _dir: dir,
    };
    // One keep-alive connection made before the flood.
    let mut kept = TcpStream::connect(&s.addr).unwrap();
    kept.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    ask(&mut kept);
    // In the middle of its next request, so it is not idle: at the limit
    // the server closes idle connections to admit new ones, busy ones never.
    kept.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // More connections than the server has descriptors for.
    let flood: Vec<TcpStream> = (0..80)
        .filter_map(|_| TcpStream::connect(&s.addr).ok())
        .collect();
    assert!(flood.len() > 48);
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_jiffies(s.child.id());
    std::thread::sleep(Duration::from_secs(1));
    let spent = cpu_jiffies(s.child.id()) - before;
    // A loop on a failing accept would burn the whole second (100 jiffies).
    assert!(spent < 30, "the server spun: {spent} jiffies in one second");
    kept.write_all(b"Host: t\r\n\r\n").unwrap();
    let mut buf = [0u8; 512];
    let n = kept.read(&mut buf).unwrap();
    assert!(
        buf[..n].starts_with(b"HTTP/1.1 200"),
        "the busy connection was served"
    );
    drop(flood);
    std::thread::sleep(Duration::from_millis(300));
    // Once descriptors free up, new clients are served again.
    assert_eq!(get(&s.addr, "/").0, 200);
}

/// The descriptor limit lowered under a running server (so `max-connections`
/// no longer fits): `accept` fails with EMFILE; the server logs it, backs
/// off instead of spinning, keeps serving its connections, and accepts
/// again once descriptors are there.
#[test]
fn accept_under_emfile_after_the_limit_is_lowered() {
    use rustix::process::{prlimit, Pid, Resource, Rlimit};
    let dir = site();
    let log = dir.path().join("error.log");
    let runtime = dir.path().join("runtime.toml");
    std::fs::write(
        &runtime,
        format!(
            "listen = \"127.0.0.1:0\"\nworkers = 1\naccess-log = \"off\"\nerror-log = \"{}\"\n",
            log.display()
        ),
    )
    .unwrap();
    let root = dir.path().to_path_buf();
    let s = start_serve(
        dir,
        &root,
        [std::ffi::OsStr::new("--runtime"), runtime.as_os_str()],
    );
    let pid = Pid::from_child(&s.child);
    let mut kept = TcpStream::connect(&s.addr).unwrap();
    kept.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // Asked for again and again, the page is kept (a mapping): answering it
    // needs no new descriptor.
    std::thread::sleep(Duration::from_millis(30));
    for _ in 0..3 {
        ask(&mut kept);
    }
    // Now the process may hold no more descriptors than it has open.
    let open = std::fs::read_dir(format!("/proc/{}/fd", s.child.id()))
        .unwrap()
        .count() as u64;
    // The server raised its soft limit to the hard one it inherited from us.
    let hard = rustix::process::getrlimit(Resource::Nofile).maximum;
    let old = prlimit(
        Some(pid),
        Resource::Nofile,
        Rlimit {
            current: Some(open),
            maximum: hard,
        },
    )
    .unwrap();
    let waiting: Vec<TcpStream> = (0..5)
        .map(|_| TcpStream::connect(&s.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_jiffies(s.child.id());
    std::thread::sleep(Duration::from_secs(1));
    let spent = cpu_jiffies(s.child.id()) - before;
    assert!(spent < 30, "the server spun: {spent} jiffies in one second");
    ask(&mut kept);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("accept: ") && text.contains("pausing new connections"),
        "{text}"
    );
    // Descriptors again: the clients that waited are accepted and served.
    prlimit(Some(pid), Resource::Nofile, old).unwrap();
    for mut c in waiting {
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        ask(&mut c);
    }
}

// ---- cache-control, not-found and fallback from the runtime file ----------

/// A site for the runtime's pages: hashed assets, a 404 page, a dot-file,
/// a symlink out of the root.
fn pages_site() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("site");
    std::fs::create_dir_all(root.join("assets")).unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(tmp.path().join("secret.txt"), "OUTSIDE-SECRET").unwrap();
    std::fs::write(root.join("index.html"), "<h1>app</h1>").unwrap();
    std::fs::write(root.join("docs/index.html"), "<h1>docs</h1>").unwrap();
    std::fs::write(root.join("404.html"), "<h1>not here</h1>").unwrap();
    std::fs::write(root.join("assets/app-3fa9c1.js"), "let app = 1;").unwrap();
    std::fs::write(root.join("assets/logo.png"), "PNG").unwrap();
    std::fs::write(root.join(".env"), "SECRET=1").unwrap();
    std::os::unix::fs::symlink("../secret.txt", root.join("link-out")).unwrap();
    tmp
}

/// `nikaia serve SITE --runtime FILE`, FILE holding `runtime`.
fn serve_with_runtime(runtime: &str) -> Serving {
    let tmp = pages_site();
    let file = tmp.path().join("runtime.toml");
    std::fs::write(&file, runtime).unwrap();
    let root = tmp.path().join("site");
    let listen = ["--listen", "127.0.0.1:0", "--runtime"].map(std::ffi::OsStr::new);
    start_serve(tmp, &root, listen.into_iter().chain([file.as_os_str()]))
}

fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

const CACHE_RULES: &str = r#"
[cache-control]
default = "max-age=60"
"*.html" = "no-cache"
"assets/*-[0-9a-f]*.*" = "public, max-age=31536000, immutable"
"#;

#[test]
fn cache_control_by_pattern_and_default() {
    let s = serve_with_runtime(CACHE_RULES);
    let cc = |target: &str| {
        let (status, head, _) = get(&s.addr, target);
        (status, header(&head, "Cache-Control").map(str::to_owned))
    };
    let immutable = Some("public, max-age=31536000, immutable".to_owned());
    assert_eq!(cc("/"), (200, Some("no-cache".into())), "index.html");
    assert_eq!(cc("/docs/"), (200, Some("no-cache".into())), "at any depth");
    assert_eq!(cc("/assets/app-3fa9c1.js"), (200, immutable.clone()));
    assert_eq!(cc("/assets/logo.png"), (200, Some("max-age=60".into())));
    // Only on file answers: not on a 404, not on a redirect.
    assert_eq!(cc("/missing.js"), (404, None));
    assert_eq!(cc("/.env"), (404, None));
    assert_eq!(cc("/docs"), (301, None));
    // 206 and 304 carry it too.
    let (status, head, body) = request(
        &s.addr,
        "GET",
        "/assets/app-3fa9c1.js",
        "Range: bytes=0-2\r\n",
    );
    assert_eq!((status, &body[..]), (206, &b"let"[..]));
    assert_eq!(header(&head, "Cache-Control").map(str::to_owned), immutable);
    let etag = header(&head, "ETag").unwrap().to_owned();
    let (status, head, _) = request(
        &s.addr,
        "GET",
        "/assets/app-3fa9c1.js",
        &format!("If-None-Match: {etag}\r\n"),
    );
    assert_eq!(status, 304);
    assert_eq!(header(&head, "Cache-Control").map(str::to_owned), immutable);
}

#[test]
fn a_not_found_page_for_missing_hidden_and_outside_names() {
    let s = serve_with_runtime("not-found = \"404.html\"\n");
    for target in [
        "/missing.html",
        "/no/such/dir/",
        "/.env",
        "/%2eenv",
        "/link-out",
        "/docs/../.env",
    ] {
        let (status, head, body) = get(&s.addr, target);
        assert_eq!(status, 404, "{target}");
        assert_eq!(body, b"<h1>not here</h1>", "{target}");
        assert_eq!(
            header(&head, "Content-Type"),
            Some("text/html; charset=utf-8"),
            "{target}"
        );
    }
    // HEAD: the page's head, no body.
    let (status, head, body) = request(&s.addr, "HEAD", "/missing", "");
    assert_eq!(
        (status, header(&head, "Content-Length"), body.len()),
        (404, Some("17"), 0)
    );
    // The page itself is a file like any other; the rest is unchanged.
    assert_eq!(get(&s.addr, "/404.html").0, 200);
    assert_eq!(get(&s.addr, "/").2, b"<h1>app</h1>");
    // A missing not-found page: the plain 404.
    std::fs::remove_file(s._dir.path().join("site/404.html")).unwrap();
    let (status, head, body) = get(&s.addr, "/missing.html");
    assert_eq!((status, &body[..]), (404, &b"404 Not Found\n"[..]));
    assert_eq!(
        header(&head, "Content-Type"),
        Some("text/plain; charset=utf-8")
    );
}

#[test]
fn the_fallback_answers_missing_names_but_never_hidden_or_outside_ones() {
    let runtime = format!("fallback = \"index.html\"\nnot-found = \"404.html\"\n{CACHE_RULES}");
    let s = serve_with_runtime(&runtime);
    for target in ["/some/app/route", "/settings", "/docs/nothing/"] {
        let (status, head, body) = get(&s.addr, target);
        assert_eq!((status, &body[..]), (200, &b"<h1>app</h1>"[..]), "{target}");
        assert_eq!(
            header(&head, "Content-Type"),
            Some("text/html; charset=utf-8")
        );
        // The rule of the file sent: index.html's.
        assert_eq!(header(&head, "Cache-Control"), Some("no-cache"), "{target}");
        // No extension: Accept did not decide.
        assert_eq!(header(&head, "Vary"), Some("Accept-Encoding"), "{target}");
    }
    // A missing asset stays missing (the stale-asset bug: an old page asking
    // for last week's `app.3f2a.js` must not get HTML with 200), whatever a
    // script, a stylesheet or an image accepts.
    for (target, accept) in [
        ("/assets/app.3f2a.js", "*/*"),
        ("/missing.js", "*/*"),
        ("/style.css", "text/css,*/*;q=0.1"),
        ("/logo.png", "image/avif,image/webp,*/*;q=0.8"),
        ("/font.woff2", ""),
    ] {
        let accept = if accept.is_empty() {
            String::new()
        } else {
            format!("Accept: {accept}\r\n")
        };
        let (status, head, body) = request(&s.addr, "GET", target, &accept);
        assert_eq!(
            (status, &body[..]),
            (404, &b"<h1>not here</h1>"[..]),
            "{target}"
        );
        assert_eq!(
            header(&head, "Vary"),
            Some("Accept-Encoding, Accept"),
            "{target}"
        );
    }
    // A navigation whose last segment looks like an extension: a browser
    // names text/html.
    let browser = "Accept: text/html,application/xhtml+xml,*/*;q=0.8\r\n";
    for target in ["/v1.2", "/users/jane.doe"] {
        let (status, head, body) = request(&s.addr, "GET", target, browser);
        assert_eq!((status, &body[..]), (200, &b"<h1>app</h1>"[..]), "{target}");
        assert_eq!(
            header(&head, "Vary"),
            Some("Accept-Encoding, Accept"),
            "{target}"
        );
    }
    // Names that exist are themselves; a directory still gets its slash.
    assert_eq!(get(&s.addr, "/docs/").2, b"<h1>docs</h1>");
    assert_eq!(get(&s.addr, "/docs").0, 301);
    // A dot-name or a symlink out is the 404 page, never the app.
    for target in ["/.env", "/link-out", "/%2e%2e/secret.txt"] {
        let (status, head, body) = get(&s.addr, target);
        assert_eq!(
            (status, &body[..]),
            (404, &b"<h1>not here</h1>"[..]),
            "{target}"
        );
        assert_eq!(header(&head, "Cache-Control"), None, "{target}");
    }
    // `fallback-for = "all"`: every missing name gets the app.
    let all = serve_with_runtime(&format!("fallback-for = \"all\"\n{runtime}"));
    for target in ["/missing.js", "/logo.png", "/settings"] {
        let (status, head, body) = get(&all.addr, target);
        assert_eq!((status, &body[..]), (200, &b"<h1>app</h1>"[..]), "{target}");
        assert_eq!(header(&head, "Vary"), Some("Accept-Encoding"), "{target}");
    }
    // Without the fallback file: the not-found page.
    std::fs::remove_file(s._dir.path().join("site/index.html")).unwrap();
    assert_eq!(get(&s.addr, "/some/app/route").0, 404);
    assert_eq!(get(&s.addr, "/some/app/route").2, b"<h1>not here</h1>");
}

#[test]
fn a_bad_runtime_file_stops_serve_with_positions() {
    let tmp = pages_site();
    let file = tmp.path().join("runtime.toml");
    std::fs::write(
        &file,
        "fallback = \"/srv/app/index.html\"\n[cache-control]\n\"a**\" = \"no-cache\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(tmp.path().join("site"))
        .args(["--listen", "127.0.0.1:0", "--runtime"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("runtime.toml:1:12: error: key `fallback`"),
        "{err}"
    );
    assert!(
        err.contains("runtime.toml:3:1: error: key `cache-control`: bad pattern"),
        "{err}"
    );
}

/// The fallback and the not-found page are files like any other: their
/// precompressed sidecars are sent to a client that accepts them, with
/// the page's own status, type and cache rule.
#[test]
fn the_pages_have_their_sidecars_too() {
    let runtime = format!(
        "precompressed = [\"gzip\"]\nfallback = \"index.html\"\nnot-found = \"404.html\"\n{CACHE_RULES}"
    );
    let s = serve_with_runtime(&runtime);
    let site = s._dir.path().join("site");
    std::fs::write(site.join("index.html.gz"), "GZ-APP").unwrap();
    std::fs::write(site.join("404.html.gz"), "GZ-404").unwrap();
    let gzip = "Accept-Encoding: gzip\r\n";
    let (status, head, body) = request(&s.addr, "GET", "/some/app/route", gzip);
    assert_eq!((status, &body[..]), (200, &b"GZ-APP"[..]));
    assert_eq!(header(&head, "Content-Encoding"), Some("gzip"));
    assert_eq!(header(&head, "Vary"), Some("Accept-Encoding"));
    assert_eq!(header(&head, "Cache-Control"), Some("no-cache"));
    assert_eq!(
        header(&head, "Content-Type"),
        Some("text/html; charset=utf-8")
    );
    for target in ["/.env", "/link-out"] {
        let (status, head, body) = request(&s.addr, "GET", target, gzip);
        assert_eq!((status, &body[..]), (404, &b"GZ-404"[..]), "{target}");
        assert_eq!(header(&head, "Content-Encoding"), Some("gzip"), "{target}");
        assert_eq!(header(&head, "Cache-Control"), None, "{target}");
    }
    // Without Accept-Encoding: the pages themselves.
    let (status, head, body) = get(&s.addr, "/some/app/route");
    assert_eq!((status, &body[..]), (200, &b"<h1>app</h1>"[..]));
    assert_eq!(header(&head, "Content-Encoding"), None);
    let (status, _, body) = get(&s.addr, "/.env");
    assert_eq!((status, &body[..]), (404, &b"<h1>not here</h1>"[..]));
}

/// A program's own `Cache-Control` on `dir_handler`'s response wins over
/// the runtime's.
#[test]
fn a_handler_set_cache_control_wins() {
    use nikaia_std::http::{dir_handler, Server};
    use nikaia_std::rt::Runtime;
    let tmp = pages_site();
    let file = tmp.path().join("runtime.toml");
    std::fs::write(&file, CACHE_RULES).unwrap();
    let mut rt = Runtime::load(&file).unwrap();
    rt.workers = 1;
    rt.listen = vec![std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into()];
    rt.access_log = nikaia_std::rt::LogTarget::Off;
    let root = nikaia_std::fs::Root::dir(tmp.path().join("site")).unwrap();
    let plain = dir_handler(root.clone(), false, false);
    let own = dir_handler(root, false, false);
    let running = Server::with_runtime(rt)
        .route("/own/*path", move |req| {
            own(req).header("Cache-Control", "private, max-age=5")
        })
        .route("/*path", plain)
        .start()
        .unwrap();
    let addr = running.local_addr().to_string();
    let (status, head, body) = get(&addr, "/own/assets/app-3fa9c1.js");
    assert_eq!((status, &body[..]), (200, &b"let app = 1;"[..]));
    let values: Vec<&str> = head
        .lines()
        .filter(|l| l.to_ascii_lowercase().starts_with("cache-control:"))
        .collect();
    assert_eq!(values, ["Cache-Control: private, max-age=5"]);
    let (_, head, _) = get(&addr, "/assets/app-3fa9c1.js");
    assert_eq!(
        header(&head, "Cache-Control"),
        Some("public, max-age=31536000, immutable")
    );
    drop(running);
}

#[test]
fn sigusr1_reopens_the_logs_after_logrotate_moved_them() {
    let dir = site();
    let logs = tempfile::tempdir().unwrap();
    let (access, error) = (
        logs.path().join("access.log"),
        logs.path().join("error.log"),
    );
    let runtime = logs.path().join("runtime.toml");
    std::fs::write(
        &runtime,
        "listen = \"127.0.0.1:0\"\nworkers = 1\naccess-log = \"access.log\"\nerror-log = \"error.log\"\n",
    )
    .unwrap();
    let root = dir.path().to_path_buf();
    let mut s = start_serve(
        dir,
        &root,
        [std::ffi::OsStr::new("--runtime"), runtime.as_os_str()],
    );
    let lines = |p: &std::path::Path| std::fs::read_to_string(p).map_or(0, |t| t.lines().count());
    let until = |what: &dyn Fn() -> bool| {
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while !what() {
            assert!(std::time::Instant::now() < end, "timed out");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    for _ in 0..3 {
        assert_eq!(get(&s.addr, "/").0, 200);
    }
    until(&|| lines(&access) == 3);
    // What logrotate does: move the files, then USR1.
    let (access_1, error_1) = (
        logs.path().join("access.log.1"),
        logs.path().join("error.log.1"),
    );
    std::fs::rename(&access, &access_1).unwrap();
    std::fs::rename(&error, &error_1).unwrap();
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&s.child),
        rustix::process::Signal::USR1,
    )
    .unwrap();
    until(&|| access.exists() && error.exists());
    for _ in 0..2 {
        assert_eq!(get(&s.addr, "/docs/").0, 200);
    }
    until(&|| lines(&access) == 2);
    assert_eq!(lines(&access_1), 3);
    assert!(std::fs::read_to_string(&access_1)
        .unwrap()
        .contains("\"GET / HTTP/1.1\" 200 "));
    assert!(std::fs::read_to_string(&access)
        .unwrap()
        .contains("\"GET /docs/ HTTP/1.1\" 200 "));
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "USR1 does not stop it"
    );
}

/// `index` is a list, tried in order; the first that is a file answers,
/// and past the last the directory is listed (`--list`) or missing.
#[test]
fn index_names_are_tried_in_order() {
    let tmp = pages_site();
    let root = tmp.path().join("site");
    for (dir, files) in [
        ("both", &["index.htm", "home.html"][..]),
        ("home", &["home.html"]),
        ("none", &["other.txt"]),
        ("htm-is-a-dir", &["home.html"]),
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        for f in files {
            std::fs::write(root.join(dir).join(f), format!("{dir}/{f}")).unwrap();
        }
    }
    std::fs::create_dir_all(root.join("htm-is-a-dir/index.htm")).unwrap();
    let file = tmp.path().join("runtime.toml");
    std::fs::write(
        &file,
        "index = [\"index.htm\", \"home.html\"]\n[[deny]]\nmatch = \"secret/home.html\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("secret/home.html"), "SECRET").unwrap();
    let args = ["--listen", "127.0.0.1:0", "--list", "--runtime"].map(std::ffi::OsStr::new);
    let s = start_serve(tmp, &root, args.into_iter().chain([file.as_os_str()]));
    assert_eq!(get(&s.addr, "/both/").2, b"both/index.htm");
    assert_eq!(get(&s.addr, "/home/").2, b"home/home.html");
    assert_eq!(get(&s.addr, "/htm-is-a-dir/").2, b"htm-is-a-dir/home.html");
    // Not in the list: index.html is a name like any other here.
    let (status, _, body) = get(&s.addr, "/docs/");
    assert_eq!(status, 200);
    assert!(
        String::from_utf8_lossy(&body).contains("index.html"),
        "a listing"
    );
    let (status, head, body) = get(&s.addr, "/none/");
    assert_eq!(status, 200);
    assert!(header(&head, "Content-Type")
        .unwrap()
        .starts_with("text/html"));
    assert!(
        String::from_utf8_lossy(&body).contains("other.txt"),
        "a listing"
    );
    assert_eq!(get(&s.addr, "/home").0, 301);
    // A rule on an index name covers the directory asked for.
    let (status, _, body) = get(&s.addr, "/secret/");
    assert_eq!(status, 404);
    assert!(!String::from_utf8_lossy(&body).contains("SECRET"));
}

#[test]
fn a_bad_index_list_is_refused_at_its_element() {
    let tmp = pages_site();
    let file = tmp.path().join("runtime.toml");
    std::fs::write(
        &file,
        "index = [\"index.html\", \"a/b.html\", \"index.html\"]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("check")
        .arg(&file)
        .output()
        .unwrap();
    let err =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("runtime.toml:1:24: error: key `index`"),
        "{err}"
    );
    assert!(err.contains("\"a/b.html\" is not one file name"), "{err}");
    assert!(
        err.contains("runtime.toml:1:36: error: key `index`"),
        "{err}"
    );
    assert!(err.contains("named twice"), "{err}");
}

/// `list = true` in the runtime file lists as `--list` does.
#[test]
fn the_runtime_file_turns_listings_on() {
    let s = serve_with_runtime("list = true\n");
    let site = s._dir.path().join("site");
    std::fs::create_dir_all(site.join("plain")).unwrap();
    std::fs::write(site.join("plain/a.txt"), "a").unwrap();
    std::fs::write(site.join("plain/.hidden"), "h").unwrap();
    let (status, head, body) = get(&s.addr, "/plain/?format=json");
    assert_eq!(status, 200);
    assert_eq!(header(&head, "Content-Type"), Some("application/json"));
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("\"a.txt\""), "{body}");
    assert!(!body.contains(".hidden"), "{body}");
    // No index names at all: every directory is listed, and asked for
    // without its slash, redirected first.
    let none = serve_with_runtime("list = true\nindex = []\n");
    let (status, _, body) = get(&none.addr, "/docs/?format=json");
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("\"index.html\""));
    assert_eq!(get(&none.addr, "/docs").0, 301);
    let off = serve_with_runtime("list = false\n");
    std::fs::create_dir_all(off._dir.path().join("site/plain")).unwrap();
    assert_eq!(get(&off.addr, "/plain/").0, 404);
}
