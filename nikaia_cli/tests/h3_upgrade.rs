//! QUIC connections through an upgrade and a reload (`spec/http3.md`,
//! "Lifecycle"): 16 HTTP/3 downloads of 4 MiB each, held open by
//! construction — each client (tests/h3/mover.py, aioquic) reads the first
//! MiB, then stops reading its socket (no acknowledgement, no credit)
//! until the test lets it go on — span a SIGUSR2 upgrade (the old process
//! finishes them; the new one hands it their datagrams) and a SIGHUP
//! reload (8 downloads there); none fails, none is cut short. No assertion is about time.

mod common;

use common::{alive, explain, spawn_serve, Served};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const MOVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/h3/mover.py");

/// Each download's length.
const BIG: usize = 4 << 20;

/// A site with a 4 MiB file, its pair, and a runtime file serving it
/// over TLS with HTTP/3 on 2 workers.
struct Site {
    dir: tempfile::TempDir,
    pki: nikaia_tests::TestPki,
    big: Vec<u8>,
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        let big = nikaia_tests::corpus::random(BIG, 54);
        std::fs::write(dir.path().join("root/big.bin"), &big).unwrap();
        let site = Site {
            dir,
            pki: nikaia_tests::TestPki::new(),
            big,
        };
        site.write_runtime("");
        site
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write_runtime(&self, extra: &str) {
        self.write_runtime_h3("true", extra);
    }

    fn write_runtime_h3(&self, http3: &str, extra: &str) {
        std::fs::write(
            self.path("runtime.toml"),
            format!(
                "listen = \"127.0.0.1:0\"\nworkers = 2\nhttp3 = {http3}\n\
                 error-log = \"error.log\"\naccess-log = \"off\"\nstats-socket = \"stats.sock\"\n\
                 tls-cert = \"{}\"\ntls-key = \"{}\"\n{extra}",
                self.pki.cert.display(),
                self.pki.key.display()
            ),
        )
        .unwrap();
    }

    fn serve(&self) -> (Served, u16) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
        cmd.arg("serve")
            .arg(self.path("root"))
            .arg("--runtime")
            .arg(self.path("runtime.toml"));
        let (server, addr) = spawn_serve(cmd);
        (server, addr.rsplit(':').next().unwrap().parse().unwrap())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path("error.log")).unwrap_or_default()
    }

    fn wait_for_log(&self, text: &str) -> String {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let log = self.log();
            if log.contains(text) {
                return log;
            }
            assert!(Instant::now() < end, "no {text:?} in the error log:\n{log}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The h3 counters `nikaia explain --json` shows through the stats
    /// socket.
    fn h3(&self) -> Value {
        let out = explain(&[
            "--socket",
            self.path("stats.sock").to_str().unwrap(),
            "--json",
        ]);
        let report: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("explain: {out:?}"));
        report["h3"].clone()
    }
}

/// One held download: mover.py paused after its first MiB.
struct Held {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: std::io::Lines<BufReader<ChildStdout>>,
}

impl Held {
    /// Starts `n` downloads of `/big.bin` at once and waits until each
    /// paused.
    fn start_many(n: usize, port: u16, site: &Site) -> Vec<Held> {
        let mut held: Vec<Held> = (0..n).map(|_| Held::spawn(port, site)).collect();
        for h in &mut held {
            let first: Value = serde_json::from_str(&h.lines.next().unwrap().unwrap()).unwrap();
            assert!(first["paused"].as_u64() >= Some(1 << 20), "{first}");
        }
        held
    }

    fn spawn(port: u16, site: &Site) -> Held {
        let mut child = Command::new("python3")
            .arg(MOVER)
            .arg(format!("--connect=127.0.0.1:{port}"))
            .arg("--authority=localhost")
            .arg("--cafile")
            .arg(&site.pki.ca_pem)
            .args(["--path=/big.bin", "--move-every=0", "--window=262144"])
            .args(["--pause-at=1048576", "--timeout=30"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs tests/h3/mover.py (test.sh installs aioquic)");
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Held {
            child,
            stdin,
            lines,
        }
    }

    /// Lets the client read on.
    fn go_on(&mut self) {
        let mut stdin = self.stdin.take().unwrap();
        stdin.write_all(b"go on\n").unwrap();
    }

    /// The download's end, as mover.py saw it.
    fn finish(mut self) -> Value {
        let line = self.lines.next().unwrap().unwrap();
        let _ = self.child.wait();
        serde_json::from_str(&line).unwrap()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Hex SHA-256 of `bytes`, as mover.py writes it.
fn sha256(bytes: &[u8]) -> String {
    let out = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(bytes)?;
            c.wait_with_output()
        })
        .unwrap();
    String::from_utf8_lossy(&out.stdout)[..64].to_owned()
}

/// Every held download ended whole: 0 failed, 0 truncated.
fn all_whole(held: Vec<Held>, site: &Site) {
    let want = sha256(&site.big);
    let ends: Vec<Value> = held.into_iter().map(Held::finish).collect();
    let failed: Vec<&Value> = ends
        .iter()
        .filter(|e| e["status"] != 200 || e["error"] != Value::Null)
        .collect();
    assert!(failed.is_empty(), "failed: {failed:?}");
    let truncated: Vec<&Value> = ends
        .iter()
        .filter(|e| e["body_len"] != BIG as u64 || e["sha256"] != want.as_str())
        .collect();
    assert!(truncated.is_empty(), "truncated: {truncated:?}");
    // mover.py checks every datagram against every reset token the server
    // gave the connection: none came on its live path.
    let reset: Vec<&Value> = ends.iter().filter(|e| e["resets"] != json!([])).collect();
    assert!(
        reset.is_empty(),
        "a stateless reset reached a live connection: {reset:?}"
    );
}

/// The process an upgrade started (not our child): killed when dropped,
/// so a test that fails midway leaves no server behind.
struct Upgraded(i32);

impl Drop for Upgraded {
    fn drop(&mut self) {
        if alive(self.0) {
            signal(self.0, rustix::process::Signal::KILL);
        }
    }
}

fn signal(pid: i32, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(pid).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
}

/// The number just before `text` in the last log line that says it.
fn number_before(log: &str, text: &str) -> Option<u64> {
    let line = log.lines().rfind(|l| l.contains(text))?;
    let before = line.split(text).next()?;
    before.split_whitespace().last()?.parse().ok()
}

/// SIGUSR2 while 16 h3 downloads are held open in the old process: the
/// new process takes over (the old one stops reading the UDP socket, so
/// every datagram of the 16 reaches the new one and is handed across),
/// each download then finishes in the old process, whole, and the old
/// process logs that 16 QUIC connections finished after the handover.
#[test]
fn sigusr2_under_16_held_h3_downloads_fails_and_cuts_none() {
    let site = Site::new();
    let (mut server, port) = site.serve();
    let mut held = Held::start_many(16, port, &site);
    assert_eq!(site.h3()["connections"], 16);

    signal(server.id() as i32, rustix::process::Signal::USR2);
    let log = site.wait_for_log("is ready; this process stops accepting and drains");
    let pid = common::upgraded_pid(&log);
    let _upgraded = Upgraded(pid);
    // The new process refuses a second upgrade while the old one drains.
    signal(pid, rustix::process::Signal::USR2);
    site.wait_for_log("still finishes its HTTP/3 connections");
    for h in &mut held {
        h.go_on();
    }
    all_whole(held, &site);

    common::within_grace("the old process did not exit", || {
        server.try_wait().unwrap().is_some()
    });
    let log = site.log();
    assert_eq!(
        number_before(&log, " QUIC connection(s) finished after the handover"),
        Some(16),
        "the old process's count of drained QUIC connections:\n{log}"
    );
    // The new process read the 16 connections' datagrams and handed them
    // to the old one.
    let h3 = site.h3();
    assert!(h3["forwarded"].as_u64() > Some(0), "{h3}");
    assert_eq!(h3["stateless_resets"], 0, "{h3}");
    // It serves h3 itself.
    let mut again = Held::start_many(1, port, &site);
    again[0].go_on();
    all_whole(again, &site);
    assert!(alive(pid));
    signal(pid, rustix::process::Signal::TERM);
    common::within_grace("the new process did not stop", || !alive(pid));
}

/// SIGHUP while 8 h3 downloads are held open: the reload keeps every QUIC
/// connection (each download ends whole) and new connections after it
/// are served too.
#[test]
fn sighup_under_8_held_h3_downloads_fails_none() {
    let site = Site::new();
    let (server, port) = site.serve();
    let mut held = Held::start_many(8, port, &site);
    site.write_runtime("cache-control = \"no-cache\"\nkeepalive-timeout = \"30s\"\n");
    signal(server.id() as i32, rustix::process::Signal::HUP);
    site.wait_for_log("notice: SIGHUP:");
    for h in &mut held {
        h.go_on();
    }
    let mut after = Held::start_many(2, port, &site);
    all_whole(held, &site);
    for h in &mut after {
        h.go_on();
    }
    all_whole(after, &site);
    let h3 = site.h3();
    assert_eq!(h3["connections"], 10, "{h3}");
    drop(server);
}

/// An upgrade to a process with HTTP/3 off: it takes no UDP socket, so the
/// old process reads them while it drains, and its held downloads end
/// whole (they starved before: nobody read their datagrams).
#[test]
fn an_upgrade_to_a_process_without_http3_leaves_the_old_one_reading_its_udp_socket() {
    let site = Site::new();
    let (mut server, port) = site.serve();
    let mut held = Held::start_many(2, port, &site);
    site.write_runtime_h3("false", "");
    signal(server.id() as i32, rustix::process::Signal::USR2);
    let log = site.wait_for_log("is ready; this process stops accepting and drains");
    assert!(log.contains("took 2 of the 4 sockets"), "{log}");
    let pid = common::upgraded_pid(&log);
    let _upgraded = Upgraded(pid);
    for h in &mut held {
        h.go_on();
    }
    all_whole(held, &site);
    common::within_grace("the old process did not exit", || {
        server.try_wait().unwrap().is_some()
    });
}

/// The new process of an upgrade dies while the old one still finishes
/// held downloads: nobody reads the UDP socket for the old one then, so it
/// reads it again itself, and every download ends whole.
#[test]
fn the_old_process_reads_its_udp_socket_again_when_the_new_one_dies() {
    let site = Site::new();
    let (mut server, port) = site.serve();
    let mut held = Held::start_many(4, port, &site);
    signal(server.id() as i32, rustix::process::Signal::USR2);
    let log = site.wait_for_log("is ready; this process stops accepting and drains");
    let pid = common::upgraded_pid(&log);
    signal(pid, rustix::process::Signal::KILL);
    site.wait_for_log("the process that took the UDP sockets is gone");
    for h in &mut held {
        h.go_on();
    }
    all_whole(held, &site);
    common::within_grace("the old process did not exit", || {
        server.try_wait().unwrap().is_some()
    });
}
