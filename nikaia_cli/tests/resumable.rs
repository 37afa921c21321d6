//! A resumable upload survives everything a bad link and an operator do
//! to it (`spec/site.md`, "Resumable uploads"): PyPI `tuspy` uploads
//! 256 MiB to `nikaia serve` through a relay, and at twenty offsets drawn
//! from a fixed seed the client is killed, its connection dropped, the
//! server SIGKILLed and started again, or upgraded by SIGUSR2 — five of
//! each. The client runs again after each (it keeps its upload's URL, as
//! tus clients do) and resumes from the offset the server gives. The file
//! appears only once whole, byte for byte, and never before. No duration
//! is asserted: the order of events, offsets and bytes.

mod common;

use common::{alive, Served};
use std::io::{BufRead, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LEN: u64 = 256 << 20;
const USERS: &str = "alice:$2y$05$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K\n";
/// `alice:open sesame`.
const ALICE: &str = "YWxpY2U6b3BlbiBzZXNhbWU=";

const CLIENT: &str = r#"
import sys
from tusclient import client
from tusclient.storage import filestorage
url, path, store, auth, sums = sys.argv[1:6]
c = client.TusClient(url, headers={"Authorization": "Basic " + auth})
u = c.uploader(path, chunk_size=4 << 20, metadata={"filename": "in/big.bin"},
               upload_checksum=sums == "sums", store_url=True,
               url_storage=filestorage.FileStorage(store))
u.upload()
print("done", u.offset, flush=True)
"#;

/// What is done to the upload at an offset.
#[derive(Clone, Copy, Debug)]
enum Blow {
    KillClient,
    DropConnection,
    KillServer,
    Upgrade,
}

/// A TCP relay between the client and the server that can cut every
/// connection through it at once, as a link that dies does.
struct Relay {
    port: u16,
    live: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    /// A relay to the port `upstream` holds (it moves when the server is
    /// started again).
    fn start(upstream: Arc<AtomicU16>) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let live: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let registry = live.clone();
        std::thread::spawn(move || {
            for down in listener.incoming().flatten() {
                let end = Instant::now() + Duration::from_secs(10);
                let up = loop {
                    match TcpStream::connect(("127.0.0.1", upstream.load(Relaxed))) {
                        // With no listener, a connect to a port of the
                        // ephemeral range can be given that port itself
                        // and connect to itself: that holds the port.
                        Ok(up) if up.local_addr().ok() == up.peer_addr().ok() => {
                            drop(up);
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        Ok(up) => break Some(up),
                        Err(_) if Instant::now() < end => {
                            std::thread::sleep(Duration::from_millis(20))
                        }
                        Err(_) => break None,
                    }
                };
                let Some(up) = up else {
                    continue;
                };
                let mut held = registry.lock().unwrap();
                held.retain(|s: &TcpStream| s.peer_addr().is_ok());
                held.push(down.try_clone().unwrap());
                held.push(up.try_clone().unwrap());
                drop(held);
                pipe(down.try_clone().unwrap(), up.try_clone().unwrap());
                pipe(up, down);
            }
        });
        Relay { port, live }
    }

    /// Cuts every connection through the relay.
    fn drop_all(&self) {
        for s in self.live.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Copies `from` to `to` until either ends; then ends both.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 256 << 10];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// The server: the process started here, or the one an upgrade started.
struct Server {
    dir: PathBuf,
    /// Where it listens (the relay reads it for each connection).
    port: Arc<AtomicU16>,
    child: Option<Served>,
    pid: i32,
    upgrades: usize,
    /// Processes an upgrade replaced, draining: a SIGKILL of the server
    /// ends them too (they may still hold the port).
    draining: Vec<i32>,
}

/// The runtime file, listening on `port`.
fn runtime(dir: &Path, port: u16) {
    let text = format!(
        "listen = \"127.0.0.1:{port}\"\nerror-log = \"error.log\"\naccess-log = \"off\"\n\
         stats-socket = \"stats.sock\"\n\
         [resumable]\ndir = \"partial\"\n\
         [[auth]]\nmatch = \"in/**\"\nhtpasswd = \"users.htpasswd\"\nplain-http = true\n\
         [[write]]\nmatch = \"in/**\"\nwriters = [\"alice\"]\nmax-size = \"512MiB\"\nplain-http = true\n"
    );
    std::fs::write(dir.join("rt.toml"), text).unwrap();
}

/// `nikaia serve site` in `dir`, and its pid, once it says it serves
/// (what it says on stderr goes to `serve.err`).
fn spawn(dir: &Path) -> (Served, i32) {
    let err = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("serve.err"))
        .unwrap();
    let mut child = Served::from(
        Command::new(env!("CARGO_BIN_EXE_nikaia"))
            .current_dir(dir)
            .env("NIKAIA_RUNTIME", "")
            .args(["serve", "site", "--runtime", "rt.toml"])
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let said = std::fs::read_to_string(dir.join("serve.err")).unwrap_or_default();
    if !line.starts_with("Serving ") {
        let ss = Command::new("sh")
            .args([
                "-c",
                "ps -eo pid,ppid,stat,cmd | grep -i [n]ikaia; ss -xlp | grep -i stats; ss -ltnp",
            ])
            .output()
            .unwrap();
        panic!(
            "nikaia serve did not start: {said}\n{}",
            String::from_utf8_lossy(&ss.stdout)
        );
    }
    let pid = child.id() as i32;
    (child, pid)
}

impl Server {
    fn start(dir: &Path) -> Server {
        let port = quiet_port();
        runtime(dir, port);
        let (child, pid) = spawn(dir);
        Server {
            dir: dir.to_path_buf(),
            port: Arc::new(AtomicU16::new(port)),
            child: Some(child),
            pid,
            upgrades: 0,
            draining: Vec::new(),
        }
    }

    /// SIGKILL, then a new process on the same port and directories.
    fn restart(&mut self) {
        self.kill();
        let (child, pid) = spawn(&self.dir);
        self.child = Some(child);
        self.pid = pid;
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    fn kill(&mut self) {
        let mut pids = std::mem::take(&mut self.draining);
        pids.push(self.pid);
        for &pid in &pids {
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        let end = Instant::now() + Duration::from_secs(20);
        while pids.iter().any(|&pid| alive(pid)) {
            assert!(Instant::now() < end, "SIGKILL did not end {pids:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGUSR2: the new process takes the sockets; the old one drains.
    fn upgrade(&mut self) {
        let pid = rustix::process::Pid::from_raw(self.pid).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::USR2).unwrap();
        let ready = "is ready; this process stops accepting and drains";
        let end = Instant::now() + Duration::from_secs(30);
        let log = loop {
            let log = self.log();
            if log.matches(ready).count() > self.upgrades {
                break log;
            }
            assert!(Instant::now() < end, "no upgrade in:\n{log}");
            std::thread::sleep(Duration::from_millis(10));
        };
        self.upgrades += 1;
        let started = log
            .lines()
            .rfind(|l| l.contains("SIGUSR2: starting"))
            .unwrap();
        let new = started
            .split("(pid ")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no pid in {started}"));
        // The old process is left to drain and exit by itself (reaped
        // here when it does).
        if let Some(child) = self.child.take() {
            std::thread::spawn(move || reap(child));
        }
        self.draining.push(self.pid);
        self.pid = new;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits (a while) for a process that drains to exit.
fn reap(mut child: Served) {
    let end = Instant::now() + Duration::from_secs(60);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The file uploaded: 1 MiB blocks of a generator's bytes, each block
/// stamped with its index (no two alike).
fn write_source(path: &Path) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut block = vec![0u8; 1 << 20];
    for i in 0..(LEN >> 20) {
        for word in block.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            word.copy_from_slice(&x.to_le_bytes());
        }
        block[..8].copy_from_slice(&i.to_le_bytes());
        f.write_all(&block).unwrap();
    }
    f.flush().unwrap();
}

/// Twenty offsets in (0, LEN − 16 MiB), ascending, from a fixed seed:
/// the last leaves room to be seen before the last chunk ends the upload.
fn offsets() -> Vec<u64> {
    let mut x: u64 = 20261206;
    let mut out: Vec<u64> = (0..20)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            1 + (x >> 20) % (LEN - (16 << 20))
        })
        .collect();
    out.sort_unstable();
    out
}

/// A free port below the ephemeral range (32768 and up): no connection
/// the relay makes while the server is down is ever given it (a connect
/// to a free port of that range can be given the port itself, and then
/// holds it). Each call a new one.
fn quiet_port() -> u16 {
    static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);
    let base = 20000 + (std::process::id() % 5000) as u16;
    loop {
        let p = base + NEXT.fetch_add(1, Relaxed) % 7000;
        if TcpListener::bind(("127.0.0.1", p)).is_ok() {
            return p;
        }
    }
}

fn part_len(partial: &Path) -> Option<u64> {
    std::fs::read_dir(partial)
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".part"))
        .and_then(|e| e.metadata().ok())
        .map(|m| m.len())
}

/// A run of the client: with a checksum on each chunk (a chunk cut short
/// is discarded whole) or without (every byte that arrived counts).
fn client(dir: &Path, relay: u16, sums: bool) -> Child {
    Command::new("python3")
        .current_dir(dir)
        .arg("client.py")
        .arg(format!("http://127.0.0.1:{relay}/.tus/"))
        .args(["big.bin", "urls.json", ALICE])
        .arg(if sums { "sums" } else { "bytes" })
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3")
}

fn same_bytes(a: &Path, b: &Path) -> bool {
    let (mut a, mut b) = (
        std::fs::File::open(a).unwrap(),
        std::fs::File::open(b).unwrap(),
    );
    let (mut x, mut y) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = a.read(&mut x).unwrap();
        let mut m = 0;
        while m < n {
            let got = b.read(&mut y[m..n]).unwrap();
            if got == 0 {
                return false;
            }
            m += got;
        }
        if x[..n] != y[..n] {
            return false;
        }
        if n == 0 {
            return b.read(&mut y).unwrap() == 0;
        }
    }
}

#[test]
fn tuspy_resumes_256_mib_after_twenty_blows_to_a_byte_identical_file() {
    let status = Command::new("python3")
        .args(["-c", "import tusclient"])
        .status()
        .unwrap();
    assert!(
        status.success(),
        "PyPI tuspy is missing: test.sh installs it"
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("site/in")).unwrap();
    std::fs::write(dir.join("users.htpasswd"), USERS).unwrap();
    std::fs::write(dir.join("client.py"), CLIENT).unwrap();
    write_source(&dir.join("big.bin"));
    let mut server = Server::start(dir);
    let relay = Relay::start(server.port.clone());
    let partial = dir.join("partial");
    let target = dir.join("site/in/big.bin");
    let blows = [
        Blow::KillClient,
        Blow::DropConnection,
        Blow::KillServer,
        Blow::Upgrade,
    ];
    let plan: Vec<(u64, Blow)> = offsets()
        .into_iter()
        .zip(blows.iter().copied().cycle())
        .collect();
    let mut next = 0;
    let mut runs = 0;
    let mut done = false;
    let deadline = Instant::now() + Duration::from_secs(240);
    while !done {
        runs += 1;
        let mut c = client(dir, relay.port, runs % 2 == 1);
        loop {
            assert!(
                Instant::now() < deadline,
                "not done after {runs} runs, {next} blows"
            );
            if let Some(exit) = c.try_wait().unwrap() {
                let mut out = String::new();
                c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
                done = exit.success() && out.starts_with(&format!("done {LEN}"));
                if !done {
                    // It failed (its connection cut, the server gone, or
                    // the upload held by a draining process): again.
                    std::thread::sleep(Duration::from_millis(50));
                }
                break;
            }
            let arrived = part_len(&partial).unwrap_or(0);
            if next < plan.len() && arrived >= plan[next].0 && arrived < LEN {
                assert!(!target.exists(), "a partial file under the final name");
                let (at, blow) = plan[next];
                eprintln!("blow {next}: {blow:?} at {arrived} (drawn {at})");
                next += 1;
                match blow {
                    Blow::KillClient => {
                        let _ = c.kill();
                    }
                    Blow::DropConnection => relay.drop_all(),
                    Blow::KillServer => server.restart(),
                    Blow::Upgrade => server.upgrade(),
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = c.wait();
    }
    assert_eq!(next, plan.len(), "every blow was dealt before the end");
    assert!(
        same_bytes(&dir.join("big.bin"), &target),
        "the file differs"
    );
    // Nothing of the upload's bytes is left beside its record.
    let left: Vec<String> = std::fs::read_dir(&partial)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.iter().all(|n| n.ends_with(".info")), "{left:?}");
    // The process serving now named the file; it saw the client resume.
    let explain = common::nikaia(dir, &["explain", "--json", "--socket", "stats.sock"]);
    let report: serde_json::Value = serde_json::from_slice(&explain.stdout).unwrap();
    let r = &report["resumable"];
    assert_eq!(r["completed"], 1, "{report}");
    assert!(r["resumed"].as_u64().unwrap() >= 1, "{report}");
    assert_eq!(r["pending"], 0, "{report}");
    let text = common::nikaia(dir, &["explain", "--socket", "stats.sock"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("resumable    0 pending"), "{text}");
    let prom = common::nikaia(dir, &["explain", "--prometheus", "--socket", "stats.sock"]);
    let parsed = common::parse_prometheus(&String::from_utf8_lossy(&prom.stdout));
    let completed = [("event", "completed")];
    let sample = common::prometheus_sample(&parsed, "nikaia_resumable_uploads", &completed);
    assert_eq!(sample, 1.0);
    eprintln!("{runs} client runs, {} blows", plan.len());
}

/// One request over a connection of its own: its status and head.
fn ask(port: u16, method: &str, target: &str, extra: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: t\r\nTus-Resumable: 1.0.0\r\n\
         Authorization: Basic {ALICE}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    let head = String::from_utf8_lossy(&all).into_owned();
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head)
}

/// The value of header `name` in `head`.
fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Waits until process `pid` holds no listening socket on `port` (once an
/// upgrade's old process closed its listeners, every new connection is
/// the new process's).
fn stopped_listening(pid: i32, port: u16) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
        let listening: Vec<String> = tcp
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|f| f.len() > 9 && f[3] == "0A")
            .filter(|f| f[1].ends_with(&format!(":{port:04X}")))
            .map(|f| format!("socket:[{}]", f[9]))
            .collect();
        let held = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .any(|l| listening.iter().any(|s| l.as_os_str() == s.as_str()));
        if !held {
            return;
        }
        assert!(Instant::now() < end, "pid {pid} still listens on {port}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// An upgrade while a `PATCH` waits for bytes a link that died without a
/// FIN will never bring: the new process hands the upload over to the
/// client's next requests at once — its `HEAD` says what was counted and
/// its `PATCH` from there finishes the file — rather than answering 423
/// until the old process's `PATCH` times out (`body-idle-timeout`, longer
/// than a tus client retries). Statuses and bytes, not times.
#[test]
fn an_upgrade_under_a_quiet_patch_hands_the_upload_over_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("site/in")).unwrap();
    std::fs::write(dir.join("users.htpasswd"), USERS).unwrap();
    let mut server = Server::start(dir);
    let port = server.port.load(Relaxed);
    let len = 2 << 20;
    let body: Vec<u8> = (0..len).map(|i| (i * 7 + i / 4099) as u8).collect();
    let meta = format!("Upload-Length: {len}\r\nUpload-Metadata: filename aW4vcXVpZXQuYmlu\r\n");
    let (status, head) = ask(port, "POST", "/.tus/", &meta, b"");
    assert_eq!(status, 201, "{head}");
    let at = header(&head, "location").unwrap().to_owned();
    // Half the body, then nothing; the connection stays open.
    let mut quiet = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        quiet,
        "PATCH {at} HTTP/1.1\r\nHost: t\r\nTus-Resumable: 1.0.0\r\nAuthorization: Basic {ALICE}\r\n\
         Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\nContent-Length: {len}\r\n\r\n"
    )
    .unwrap();
    quiet.write_all(&body[..len / 2]).unwrap();
    let part = dir.join("partial").join(format!("{}.part", &at[6..]));
    let end = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(&part).map_or(0, |m| m.len()) < (len / 2) as u64 {
        assert!(Instant::now() < end, "the first half was not written");
        std::thread::sleep(Duration::from_millis(10));
    }
    server.upgrade();
    stopped_listening(*server.draining.last().unwrap(), port);
    // The client's next requests reach the new process: neither is 423.
    let (status, head) = ask(port, "HEAD", &at, "", b"");
    assert_eq!(status, 200, "{head}");
    assert_eq!(header(&head, "upload-offset"), Some("1048576"), "{head}");
    let patch = "Content-Type: application/offset+octet-stream\r\nUpload-Offset: 1048576\r\n";
    let (status, head) = ask(port, "PATCH", &at, patch, &body[len / 2..]);
    assert_eq!(status, 204, "{head}");
    assert_eq!(header(&head, "upload-offset"), Some("2097152"), "{head}");
    assert!(std::fs::read(dir.join("site/in/quiet.bin")).unwrap() == body);
    drop(quiet);
}
