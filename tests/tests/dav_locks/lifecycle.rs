//! Locks kept in `[webdav-locks] dir` outlive the process's configuration
//! and the process itself: a token taken before a SIGHUP works after it,
//! in the new process of an upgrade (SIGUSR2), and after a restart.
//! `dav_server` serves as `nikaia serve` does (its routes, the runtime
//! file read again at SIGHUP, signals handled by the library).

use super::{active_locks, assert_locked, discovery, get, locked, put, req, submit, Drive, ALICE};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The processes a test started, killed if it fails midway.
struct Started(Vec<u32>);

impl Drop for Started {
    fn drop(&mut self) {
        for pid in &self.0 {
            if alive(*pid) {
                signal(*pid, "-KILL");
            }
        }
    }
}

/// Whether `pid` runs (gone, or a zombie, is not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit(") ").next().is_some_and(|r| !r.starts_with('Z')))
}

fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid}");
}

/// `dav_server`'s port and process id once it wrote them (a process
/// other than `not`).
fn said(port_file: &Path, not: Option<u32>, log: &Path) -> (u16, u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(port_file) {
            let mut words = text.split_whitespace().map(|w| w.parse::<u32>().unwrap());
            let (port, pid) = (words.next().unwrap() as u16, words.next().unwrap());
            if Some(pid) != not {
                return (port, pid);
            }
        }
        assert!(
            Instant::now() < deadline,
            "dav_server did not say its port: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn spawn(d: &Drive) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(d.path().join("server.log"))
        .unwrap();
    Command::new(env!("CARGO_BIN_EXE_dav_server"))
        .arg(d.root())
        .arg(d.runtime_file())
        .arg(d.path().join("port"))
        .env("NIKAIA_RUNTIME", "")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// The lock `token` of `name` guards it here: a PUT without it 423, with
/// it 204 (its bytes written), and PROPFIND shows it.
fn guards(d: &Drive, addr: SocketAddr, name: &str, token: &str, when: &str) {
    let target = format!("/{name}");
    let r = put(&target, ALICE, b"no token").send(addr);
    assert_locked(
        &r,
        &target,
        &format!("{when}: PUT {name} without the token"),
    );
    let bytes = format!("{name} {when}");
    let r = put(&target, ALICE, bytes.as_bytes())
        .h("If", submit(token))
        .send(addr);
    assert_eq!(
        r.status,
        204,
        "{when}: PUT {name} with the token: {}",
        r.text()
    );
    assert_eq!(
        std::fs::read(d.root().join(name)).unwrap(),
        bytes.as_bytes()
    );
    let shown = discovery(addr, &target, ALICE);
    assert_eq!(active_locks(&shown), 1, "{when}: {shown}");
    assert!(shown.contains(token), "{when}: another lock shown: {shown}");
}

#[test]
fn a_token_works_after_sighup_sigusr2_and_a_restart() {
    let d = Drive::new("life", &super::rules("", ""));
    std::fs::write(d.root().join("marker.txt"), b"marker").unwrap();
    let log = d.path().join("server.log");
    let port_file = d.path().join("port");
    let mut first = spawn(&d);
    let mut started = Started(vec![first.id()]);
    let (port, pid) = said(&port_file, None, &log);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let t = locked(addr, "/f.txt", ALICE, "0");
    guards(&d, addr, "f.txt", &t, "before");

    // SIGHUP with a changed runtime file: seen applied when marker.txt
    // becomes denied.
    assert_eq!(get(addr, "/marker.txt").status, 200);
    let denied = super::rules("", "[[deny]]\nmatch = \"marker.txt\"");
    std::fs::write(d.runtime_file(), denied).unwrap();
    signal(pid, "-HUP");
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(addr, "/marker.txt").status != 404 {
        assert!(
            Instant::now() < deadline,
            "the reload was not applied: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    guards(&d, addr, "f.txt", &t, "after SIGHUP");

    // SIGUSR2: a new process on the same socket; the old one drains and
    // leaves, so every answer after is the new one's.
    signal(pid, "-USR2");
    let (port2, pid2) = said(&port_file, Some(pid), &log);
    started.0.push(pid2);
    assert_eq!(port2, port);
    assert!(first.wait().unwrap().success(), "the old process drained");
    guards(&d, addr, "f.txt", &t, "after SIGUSR2");
    let t2 = locked(addr, "/g.txt", ALICE, "0");
    let r = req("UNLOCK", "/f.txt")
        .h("Lock-Token", format!("<{t}>"))
        .send(addr);
    assert_eq!(r.status, 204, "UNLOCK in the new process: {}", r.text());
    let r = put("/f.txt", ALICE, b"unlocked").send(addr);
    assert_eq!(r.status, 204, "PUT after the UNLOCK: {}", r.text());

    // A restart: stopped, then started again on the same runtime file.
    signal(pid2, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(pid2) {
        assert!(Instant::now() < deadline, "the new process did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut third = spawn(&d);
    started.0.push(third.id());
    let (port3, _) = said(&port_file, Some(pid2), &log);
    let addr = SocketAddr::from(([127, 0, 0, 1], port3));
    guards(&d, addr, "g.txt", &t2, "after a restart");
    let shown = discovery(addr, "/f.txt", ALICE);
    assert_eq!(
        active_locks(&shown),
        0,
        "the released lock is back: {shown}"
    );
    let r = put("/f.txt", ALICE, b"free").send(addr);
    assert_eq!(r.status, 204, "{}", r.text());
    signal(third.id(), "-TERM");
    assert!(
        third.wait().unwrap().success(),
        "the restarted process stops"
    );
}
