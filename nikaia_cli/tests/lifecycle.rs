//! Listeners and the server's life (`spec/listeners.md`): several listeners
//! at once (TCP v4 and v6, a Unix socket through curl), IPv6 only on `[::]`,
//! socket activation with `systemd-socket-activate` as the parent, the HTTPS
//! redirect with its ACME exception, SIGHUP under load (a changed, a broken
//! and a restart-only file), and an upgrade by SIGUSR2 under a load of new
//! and kept-alive connections: none refused, none reset, every response
//! whole.

mod common;

use common::{alive, request, Served};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A served directory and a runtime file beside it.
struct Site {
    dir: tempfile::TempDir,
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join(".well-known/acme-challenge")).unwrap();
        std::fs::write(root.join("index.html"), "the index\n").unwrap();
        std::fs::write(root.join("404a.html"), "missing, page a\n").unwrap();
        std::fs::write(root.join("404b.html"), "missing, page b\n").unwrap();
        std::fs::write(root.join("big.bin"), pattern(300_000)).unwrap();
        std::fs::write(
            root.join(".well-known/acme-challenge/token-1"),
            "token-1.thumbprint",
        )
        .unwrap();
        Site { dir }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn runtime(&self) -> PathBuf {
        self.path("runtime.toml")
    }

    /// Writes the runtime file: `text` after the lines every test wants.
    fn write_runtime(&self, text: &str) {
        std::fs::write(
            self.runtime(),
            format!("workers = 2\naccess-log = \"access.log\"\nerror-log = \"error.log\"\n{text}"),
        )
        .unwrap();
    }

    fn error_log(&self) -> String {
        std::fs::read_to_string(self.path("error.log")).unwrap_or_default()
    }

    /// `nikaia serve ROOT --runtime FILE`, and the URLs of its `Serving`
    /// line.
    fn serve(&self) -> (Served, Vec<String>) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
        cmd.arg("serve")
            .arg(self.root())
            .arg("--runtime")
            .arg(self.runtime());
        start(cmd)
    }

    /// Waits until the error log holds `text`.
    fn wait_for_log(&self, text: &str) -> String {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let log = self.error_log();
            if log.contains(text) {
                return log;
            }
            assert!(Instant::now() < end, "no {text:?} in the error log:\n{log}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

/// Spawns a `nikaia serve` command and reads its `Serving … at URL, URL (…)`
/// line: the child and the addresses.
fn start(cmd: Command) -> (Served, Vec<String>) {
    let (child, line) = common::spawn_serving(cmd);
    let at = line
        .split(" at ")
        .nth(1)
        .and_then(|rest| rest.split(" (").next())
        .unwrap_or_else(|| panic!("no addresses in {line:?}"));
    (child, at.split(", ").map(str::to_owned).collect())
}

/// Starts `systemd-socket-activate … nikaia serve …`, which runs nikaia
/// once a first connection arrives on one of its sockets: that first
/// request is a GET of `/` at `first`, whose answer is returned too.
fn start_activated(cmd: Command, first: String) -> (Served, Vec<String>, (u16, String, Vec<u8>)) {
    let poke = std::thread::spawn(move || {
        // The listening sockets exist once the parent runs.
        let end = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(&first).is_err() {
            assert!(
                Instant::now() < end,
                "systemd-socket-activate never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        request(&first, "GET", "/", "")
    });
    let (server, urls) = start(cmd);
    (server, urls, poke.join().unwrap())
}

/// Everything the server answers to `bytes` sent on a new connection, up
/// to its close.
fn raw(addr: &str, bytes: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(bytes.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

/// The `HOST:PORT` of an `http://HOST:PORT/` URL.
fn host_port(url: &str) -> String {
    let rest = url.split("://").nth(1).unwrap();
    rest.trim_end_matches('/').to_owned()
}

fn signal(child: &Served, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends SIGTERM and waits for the process to end.
fn stop(mut child: Served) {
    signal(&child, rustix::process::Signal::TERM);
    let end = Instant::now() + Duration::from_secs(40);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < end, "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn curl_unix(socket: &Path, target: &str) -> (String, String) {
    let out = Command::new("curl")
        .args(["-sS", "-D", "-", "--max-time", "10", "--unix-socket"])
        .arg(socket)
        .arg(format!("http://site{target}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

fn ipv6_loopback() -> bool {
    TcpListener::bind("[::1]:0").is_ok()
}

#[test]
fn two_tcp_listeners_and_a_unix_one_at_once() {
    let site = Site::new();
    let sock = site.path("http.sock");
    let v6 = ipv6_loopback();
    let second = if v6 { "[::1]:0" } else { "127.0.0.2:0" };
    site.write_runtime(&format!(
        "listen = [\"127.0.0.1:0\", \"{second}\", {{ address = \"unix:http.sock\", mode = \"0600\" }}]\n"
    ));
    let (server, urls) = site.serve();
    assert_eq!(urls.len(), 3, "{urls:?}");
    assert_eq!(urls[2], format!("unix:{}", sock.display()));
    for url in &urls[..2] {
        let (status, _, body) = request(&host_port(url), "GET", "/", "");
        assert_eq!(
            (status, body.as_slice()),
            (200, &b"the index\n"[..]),
            "{url}"
        );
    }
    let (head, body) = curl_unix(&sock, "/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, "the index\n");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    stop(server);
    // The access log names a Unix peer as nginx does.
    let access = std::fs::read_to_string(site.path("access.log")).unwrap();
    assert!(
        access.lines().any(|l| l.starts_with("unix: - - [")),
        "{access}"
    );
    // Ours, not handed on: removed at shutdown.
    assert!(!sock.exists(), "the socket path was left behind");
}

#[test]
fn a_unix_path_that_is_not_ours_refuses_the_start_untouched() {
    let site = Site::new();
    std::fs::write(site.path("http.sock"), "the operator's file").unwrap();
    site.write_runtime("listen = [\"127.0.0.1:0\", \"unix:http.sock\"]\n");
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(site.root())
        .arg("--runtime")
        .arg(site.runtime())
        .env("NIKAIA_RUNTIME", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a regular file is there, not a socket"),
        "{err}"
    );
    let kept = std::fs::read_to_string(site.path("http.sock")).unwrap();
    assert_eq!(kept, "the operator's file");
    // `nikaia check` says the same, as an error.
    let check = common::nikaia(site.dir.path(), &["check", "runtime.toml"]);
    assert_eq!(check.status.code(), Some(1));
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(
        err.contains("key `listen`: listener unix:") && err.contains("a regular file"),
        "{err}"
    );
}

#[test]
fn an_ipv6_wildcard_is_ipv6_only() {
    if !ipv6_loopback() {
        eprintln!("no IPv6 loopback on this machine: nothing to check");
        return;
    }
    let site = Site::new();
    site.write_runtime("listen = \"[::]:0\"\n");
    let (server, urls) = site.serve();
    let port: u16 = host_port(&urls[0])
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (status, _, _) = request(&format!("[::1]:{port}"), "GET", "/", "");
    assert_eq!(status, 200);
    // With IPV6_V6ONLY the IPv4 side of the port is free: a dual-stack
    // socket would hold it, whatever the sysctl says.
    let v4 = TcpListener::bind(("0.0.0.0", port));
    assert!(v4.is_ok(), "[::] also took IPv4: {v4:?}");
    drop(v4);
    stop(server);
}

#[test]
fn systemd_socket_activate_passes_the_listeners() {
    let site = Site::new();
    let (plain, redirect) = (free_port(), free_port());
    // The entry named `redir` is matched by its name, not by its address.
    site.write_runtime(
        "listen = [\"127.0.0.1:9\", { address = \"127.0.0.1:10\", name = \"redir\", tls = false, https-redirect = 8443 }]\n",
    );
    let mut cmd = Command::new("systemd-socket-activate");
    cmd.arg(format!("--listen=127.0.0.1:{plain}"))
        .arg(format!("--listen=127.0.0.1:{redirect}"))
        .arg("--fdname=web:redir")
        .arg(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(site.root())
        .arg("--runtime")
        .arg(site.runtime());
    let (server, urls, (status, _, body)) = start_activated(cmd, format!("127.0.0.1:{plain}"));
    assert_eq!(
        urls,
        [
            format!("http://127.0.0.1:{plain}/"),
            format!("http://127.0.0.1:{redirect}/")
        ]
    );
    // The connection that woke the parent is answered by nikaia.
    assert_eq!((status, body.as_slice()), (200, &b"the index\n"[..]));
    let (status, head, _) = request(&format!("127.0.0.1:{redirect}"), "GET", "/x?y", "");
    assert_eq!(status, 308);
    assert!(head.contains("Location: https://t:8443/x?y\r\n"), "{head}");
    // Nothing was bound: the entry for port 9 names no passed socket.
    let log = site.wait_for_log("notice: `listen` entry 127.0.0.1:9 was not passed");
    assert!(log.contains("socket activation passed 127.0.0.1:"), "{log}");
    stop(server);
}

#[test]
fn systemd_socket_activate_with_no_runtime_file_serves_the_defaults() {
    let site = Site::new();
    let port = free_port();
    let mut cmd = Command::new("systemd-socket-activate");
    cmd.arg(format!("--listen=127.0.0.1:{port}"))
        .arg(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(site.root());
    let (server, urls, (status, _, body)) = start_activated(cmd, format!("127.0.0.1:{port}"));
    assert_eq!(urls, [format!("http://127.0.0.1:{port}/")]);
    assert_eq!((status, body.as_slice()), (200, &b"the index\n"[..]));
    let (status, _, _) = request(&format!("127.0.0.1:{port}"), "GET", "/index.html", "");
    assert_eq!(status, 200);
    // Nothing else was bound (the default address is no listener here).
    stop(server);
}

#[test]
fn a_plain_listener_redirects_to_https_except_acme_challenges() {
    let site = Site::new();
    site.write_runtime(
        "listen = [{ address = \"127.0.0.1:0\", https-redirect = 8443 }, { address = \"127.0.0.1:0\", https-redirect = 443 }]\n",
    );
    let (server, urls) = site.serve();
    let (to_8443, to_443) = (host_port(&urls[0]), host_port(&urls[1]));
    let location = |addr: &str, method: &str, target: &str, extra: &str| {
        let (status, head, body) = request(addr, method, target, extra);
        let loc = head
            .lines()
            .find_map(|l| l.strip_prefix("Location: "))
            .map(str::to_owned);
        (status, loc, body)
    };
    let (status, loc, body) = location(&to_8443, "GET", "/a/b%2Fc?x=1&y=%20", "");
    assert_eq!(status, 308);
    assert_eq!(loc.as_deref(), Some("https://t:8443/a/b%2Fc?x=1&y=%20"));
    assert!(String::from_utf8_lossy(&body).contains("https://t:8443/a/b%2Fc"));
    // The port is left out for 443; the client's port is not kept.
    let (_, loc, _) = location(&to_443, "POST", "/form", "Content-Length: 0\r\n");
    assert_eq!(loc.as_deref(), Some("https://t/form"));
    let answer = raw(
        &to_443,
        "GET /p?q HTTP/1.1\r\nHost: example.com:80\r\nConnection: close\r\n\r\n",
    );
    assert!(
        answer.contains("Location: https://example.com/p?q\r\n"),
        "{answer}"
    );
    // HTTP/1.0 without a host: the listener's IP.
    let answer = raw(&to_443, "GET /p HTTP/1.0\r\n\r\n");
    assert!(
        answer.contains("Location: https://127.0.0.1/p\r\n"),
        "{answer}"
    );
    // A host that is not a name cannot steer the Location.
    let answer = raw(
        &to_443,
        "GET /p HTTP/1.1\r\nHost: evil.example@x\r\nConnection: close\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    // The ACME challenge is served from the root; nothing else is.
    let (status, _, body) = request(&to_8443, "GET", "/.well-known/acme-challenge/token-1", "");
    assert_eq!((status, body.as_slice()), (200, &b"token-1.thumbprint"[..]));
    let (status, _, _) = request(&to_8443, "GET", "/.well-known/acme-challenge/nothing", "");
    assert_eq!(status, 404);
    for target in [
        "/",
        "/index.html",
        "/.well-known/acme-challenge",
        "/big.bin",
    ] {
        let (status, loc, _) = location(&to_8443, "GET", target, "");
        assert_eq!(status, 308, "{target}");
        assert_eq!(loc, Some(format!("https://t:8443{target}")));
    }
    // HTTP/2 (h2c) is redirected the same way.
    let out = Command::new("nghttp")
        .args(["-v", "--no-dep"])
        .arg(format!("http://{to_8443}/h2?z"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(":status: 308"), "{text}");
    assert!(
        text.contains(&format!(
            "location: https://{}:8443/h2?z",
            to_8443.split(':').next().unwrap()
        )),
        "{text}"
    );
    stop(server);
}

/// Requests in a loop until `stop`: each thread alternates a kept-alive
/// connection and new ones; counts answers and errors, and keeps the last
/// `Cache-Control` and 404 body seen.
struct Load {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicU64>,
    errors: Arc<std::sync::Mutex<Vec<String>>>,
    seen: Arc<std::sync::Mutex<(String, String)>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(addr: String, threads: usize, keep_alive: bool) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::new(std::sync::Mutex::new((String::new(), String::new())));
        let threads = (0..threads)
            .map(|n| {
                let (stop, answered, errors, seen, addr) = (
                    stop.clone(),
                    answered.clone(),
                    errors.clone(),
                    seen.clone(),
                    addr.clone(),
                );
                std::thread::spawn(move || {
                    let expected = pattern(300_000);
                    let mut i = n;
                    while !stop.load(Ordering::Relaxed) {
                        i += 1;
                        let result = if keep_alive && n % 2 == 0 {
                            kept_alive(&addr, &stop, &answered, &seen)
                        } else {
                            one_request(&addr, i, &expected, &seen)
                        };
                        match result {
                            Ok(()) => {
                                answered.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => {
                                let mut errors = errors.lock().unwrap();
                                errors.push(e);
                                if errors.len() >= 20 {
                                    return;
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        Load {
            stop,
            answered,
            errors,
            seen,
            threads,
        }
    }

    fn seen(&self) -> (String, String) {
        self.seen.lock().unwrap().clone()
    }

    /// Stops the clients; none may have seen an error, and more than
    /// `at_least` answers must have come.
    fn finish_cleanly(self, at_least: u64) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().unwrap();
        }
        let errors = self.errors.lock().unwrap().clone();
        let first = errors.first();
        assert!(
            errors.is_empty(),
            "{} errors, first: {first:?}",
            errors.len()
        );
        let answered = self.answered.load(Ordering::Relaxed);
        assert!(answered > at_least, "only {answered} answers");
    }
}

/// One request on a new connection: the index, a big file or a missing
/// name; the answer must be whole.
fn one_request(
    addr: &str,
    n: usize,
    big: &[u8],
    seen: &std::sync::Mutex<(String, String)>,
) -> Result<(), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let target = ["/index.html", "/big.bin", "/missing"][n % 3];
    s.write_all(
        format!("GET {target} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .map_err(|e| format!("write: {e}"))?;
    let mut all = Vec::new();
    s.read_to_end(&mut all)
        .map_err(|e| format!("read {target}: {e}"))?;
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("{target}: no head in {} bytes", all.len()))?
        + 4;
    let head = String::from_utf8_lossy(&all[..split]).into_owned();
    let body = &all[split..];
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("{target}: no length in {head}"))?;
    if body.len() != length {
        return Err(format!("{target}: {} of {length} bytes", body.len()));
    }
    match target {
        "/big.bin" if body != big => return Err("big.bin: wrong bytes".into()),
        "/index.html" => {
            let cc = head
                .lines()
                .find_map(|l| l.strip_prefix("Cache-Control: "))
                .unwrap_or("")
                .to_owned();
            seen.lock().unwrap().0 = cc;
        }
        "/missing" => seen.lock().unwrap().1 = String::from_utf8_lossy(body).into_owned(),
        _ => {}
    }
    Ok(())
}

/// Requests on one kept-alive connection until the server closes it
/// between two answers (allowed: it is idle then) or `stop`.
fn kept_alive(
    addr: &str,
    stop: &AtomicBool,
    answered: &AtomicU64,
    seen: &std::sync::Mutex<(String, String)>,
) -> Result<(), String> {
    let s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    while !stop.load(Ordering::Relaxed) {
        w.write_all(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n")
            .map_err(|e| format!("kept-alive write: {e}"))?;
        let mut head = String::new();
        loop {
            let mut line = String::new();
            let n = reader
                .read_line(&mut line)
                .map_err(|e| format!("kept-alive read: {e}"))?;
            if n == 0 {
                return Err(format!("kept-alive: closed in an answer after {head:?}"));
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader
            .read_exact(&mut body)
            .map_err(|e| format!("kept-alive body: {e}"))?;
        if let Some(cc) = head.lines().find_map(|l| l.strip_prefix("Cache-Control: ")) {
            seen.lock().unwrap().0 = cc.to_owned();
        }
        answered.fetch_add(1, Ordering::Relaxed);
        if head.contains("Connection: close") {
            return Ok(());
        }
    }
    Ok(())
}

#[test]
fn sighup_reloads_the_whole_file_under_load() {
    let site = Site::new();
    site.write_runtime(
        "listen = \"127.0.0.1:0\"\ncache-control = \"no-cache\"\nnot-found = \"404a.html\"\nstatic-cache = 64\n",
    );
    let (server, urls) = site.serve();
    let addr = host_port(&urls[0]);
    let load = Load::start(addr.clone(), 4, true);
    let wait_seen = |want: (&str, &str)| {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let seen = load.seen();
            if (seen.0.as_str(), seen.1.as_str()) == want {
                return;
            }
            assert!(Instant::now() < end, "still {seen:?}, waiting for {want:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_seen(("no-cache", "missing, page a\n"));

    // A good file: new answers after the signal.
    site.write_runtime(
        "listen = \"127.0.0.1:0\"\ncache-control = \"public, max-age=60\"\nnot-found = \"404b.html\"\nstatic-cache = 1\n",
    );
    signal(&server, rustix::process::Signal::HUP);
    site.wait_for_log("notice: SIGHUP:");
    wait_seen(("public, max-age=60", "missing, page b\n"));

    // A broken file: refused whole, with its place; the answers stay.
    site.write_runtime(
        "listen = \"127.0.0.1:0\"\ncache-control = \"no-store\"\nsend-timeout = 5\n",
    );
    signal(&server, rustix::process::Signal::HUP);
    let log = site.wait_for_log("refused; the running configuration stays");
    assert!(
        log.contains("runtime.toml:6:16: error: key `send-timeout`"),
        "{log}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        load.seen(),
        (
            "public, max-age=60".to_owned(),
            "missing, page b\n".to_owned()
        )
    );

    // A changed `listen`: reported as needing a restart; the rest applies.
    site.write_runtime(
        "listen = \"127.0.0.1:1\"\ncache-control = \"private\"\nnot-found = \"404b.html\"\n",
    );
    signal(&server, rustix::process::Signal::HUP);
    site.wait_for_log("`listen` changed; it needs a restart or an upgrade");
    wait_seen(("private", "missing, page b\n"));
    let (status, _, _) = request(&addr, "GET", "/", "");
    assert_eq!(status, 200, "the old listener still serves");

    load.finish_cleanly(100);
    // The only errors logged are the refused file's.
    let log = site.error_log();
    for line in log.lines().filter(|l| l.contains(" error: ")) {
        assert!(line.contains("runtime.toml"), "{line}\n{log}");
    }
    stop(server);
}

/// The pid the upgrade's notice names.
fn new_pid(log: &str) -> i32 {
    log.lines()
        .find_map(|l| l.split("(pid ").nth(1))
        .and_then(|rest| rest.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no new pid in {log}"))
}

#[test]
fn sigusr2_upgrades_without_a_refused_connection() {
    let site = Site::new();
    // Started from a copy that the "package upgrade" below replaces: the
    // new process must run the new file.
    let bin = site.path("nikaia");
    std::fs::copy(env!("CARGO_BIN_EXE_nikaia"), &bin).unwrap();
    site.write_runtime(
        "listen = [\"127.0.0.1:0\", \"unix:http.sock\"]\nstats-socket = \"stats.sock\"\n",
    );
    let mut cmd = Command::new(&bin);
    cmd.arg("serve")
        .arg(site.root())
        .arg("--runtime")
        .arg(site.runtime());
    let (mut server, urls) = start(cmd);
    let addr = host_port(&urls[0]);
    let sock = site.path("http.sock");

    // An upgrade that fails after it took the sockets (a new listener on a
    // port someone holds): the old process keeps serving, on every
    // listener, and says why; the Unix path it still serves on stays.
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = held.local_addr().unwrap();
    site.write_runtime(&format!(
        "listen = [\"127.0.0.1:0\", \"unix:http.sock\", \"{busy}\"]\nstats-socket = \"stats.sock\"\n"
    ));
    signal(&server, rustix::process::Signal::USR2);
    let log = site.wait_for_log("this process keeps serving");
    assert!(log.contains("before it was ready"), "{log}");
    let (status, _, _) = request(&addr, "GET", "/", "");
    assert_eq!(status, 200);
    assert!(
        sock.exists(),
        "the failed process removed the old one's socket"
    );
    let (head, _) = curl_unix(&sock, "/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    drop(held);

    // The package upgrade: a new file at the path, which says it ran.
    let marker = site.path("new-binary-ran");
    let real = site.path("nikaia.real");
    std::fs::copy(env!("CARGO_BIN_EXE_nikaia"), &real).unwrap();
    let script = site.path("nikaia.new");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho $$ > '{}'\nexec '{}' \"$@\"\n",
            marker.display(),
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&script, &bin).unwrap();
    // The same list: its port-0 entry takes the socket the old process got.
    site.write_runtime(
        "listen = [\"127.0.0.1:0\", \"unix:http.sock\"]\nstats-socket = \"stats.sock\"\n",
    );

    // Half the clients make a new connection per request, half keep theirs.
    let load = Load::start(addr.clone(), 6, true);
    std::thread::sleep(Duration::from_millis(300));
    signal(&server, rustix::process::Signal::USR2);
    let log = site.wait_for_log("is ready; this process stops accepting and drains");
    let pid = new_pid(
        log.lines()
            .rfind(|l| l.contains("SIGUSR2: starting"))
            .unwrap(),
    );
    let end = Instant::now() + Duration::from_secs(40);
    while server.try_wait().unwrap().is_none() {
        assert!(Instant::now() < end, "the old process did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.wait().unwrap().code(), Some(0));
    std::thread::sleep(Duration::from_millis(500));
    load.finish_cleanly(50);
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap().trim(),
        pid.to_string(),
        "the new file at the path ran, as the new process"
    );

    // The new process serves every socket, and owns the paths now.
    assert!(alive(pid));
    let (status, _, _) = request(&addr, "GET", "/", "");
    assert_eq!(status, 200);
    let (head, _) = curl_unix(&sock, "/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let explain = common::nikaia(site.dir.path(), &["explain", "--socket", "stats.sock"]);
    assert!(
        explain.status.success(),
        "{}",
        String::from_utf8_lossy(&explain.stderr)
    );
    assert!(sock.exists() && site.path("stats.sock").exists());
    let log = site.error_log();
    assert!(log.contains("upgrade: serving on the sockets"), "{log}");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let end = Instant::now() + Duration::from_secs(40);
    while alive(pid) {
        assert!(Instant::now() < end, "the new process did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert!(!sock.exists(), "the new process removes what it was handed");
    assert!(!site.path("stats.sock").exists());
}
