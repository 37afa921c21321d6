//! `nikaia serve` as a user runs it: the real binary, a real directory.

mod common;

use common::{get, request, spawn_serve, start_serve, Serving};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

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

#[test]
fn a_directory_without_index_html_is_said_to_answer_404_at_start() {
    use std::io::BufRead;
    let start = |dir: &std::path::Path, list: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
        cmd.arg("serve")
            .arg(dir)
            .args(["--listen", "127.0.0.1:0"])
            .args(list.then_some("--list"))
            .env("NIKAIA_RUNTIME", "")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut child = common::Served::from(cmd.spawn().unwrap());
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        assert!(first.starts_with("Serving "), "{first}");
        let addr = first
            .split("://")
            .nth(1)
            .unwrap()
            .split('/')
            .next()
            .unwrap();
        let status = get(addr, "/").0;
        drop(child); // stdout closes: what it said is all there is
        let mut rest = String::new();
        out.read_to_string(&mut rest).unwrap();
        (status, rest)
    };
    let empty = tempfile::tempdir().unwrap();
    let (status, said) = start(empty.path(), false);
    assert_eq!(status, 404);
    assert_eq!(
        said,
        format!(
            "{} has no index.html, so / answers 404 Not Found; --list lists the directory instead\n",
            empty.path().display()
        )
    );
    // Listed, or with a page: nothing more is said.
    let (status, said) = start(empty.path(), true);
    assert_eq!((status, &*said), (200, ""));
    let dir = site();
    let (status, said) = start(dir.path(), false);
    assert_eq!((status, &*said), (200, ""));
}
