//! What the CLI tests share: running `nikaia`, starting `nikaia serve`,
//! finding its address, and asking it for a page. Each test file is its own
//! crate and uses part of this.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// A spawned `nikaia serve`, killed when dropped: a test that fails midway
/// leaves no server behind. Derefs to its [`Child`].
pub struct Served(Child);

impl std::ops::Deref for Served {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Served {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl From<Child> for Served {
    fn from(child: Child) -> Served {
        Served(child)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Spawns `cmd` (a `nikaia serve …` already given its arguments) and
/// returns the child and its first line, `Serving DIR at URL, … (…)`.
pub fn spawn_serving(mut cmd: Command) -> (Served, String) {
    let mut child = Served(
        cmd.env("NIKAIA_RUNTIME", "")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

/// Spawns `cmd` (a `nikaia serve …` already given its arguments), reads the
/// `Serving DIR at http://ADDR/` (or `https://`) line, and returns the
/// child and ADDR.
pub fn spawn_serve(cmd: Command) -> (Served, String) {
    let (child, line) = spawn_serving(cmd);
    let addr = line
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    (child, addr)
}

/// (status, headers, body) of one GET over a fresh connection.
pub fn get(addr: &str, target: &str) -> (u16, String, Vec<u8>) {
    request(addr, "GET", target, "")
}

/// (status, head, body) of one request over a fresh connection, with
/// `extra` header lines (each ending in CRLF).
pub fn request(addr: &str, method: &str, target: &str, extra: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {target} HTTP/1.1\r\nHost: t\r\n{extra}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&all[..split]).into_owned();
    let status = head[9..12].parse().unwrap();
    (status, head, all[split..].to_vec())
}

/// Runs the `nikaia` binary with `args` in `dir` and waits for it.
pub fn nikaia(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run nikaia")
}

/// Parses Prometheus text with a real parser, Python's `prometheus_client`
/// (`./test.sh` installs it), and returns `{family: {"type", "help",
/// "samples": [[name, {labels}, value]]}}`. Panics on text the parser
/// refuses, or a family without HELP and TYPE.
pub fn parse_prometheus(text: &str) -> serde_json::Value {
    const SCRIPT: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for f in text_string_to_metric_families(sys.stdin.read()):
    assert f.type != "unknown" and f.documentation, f.name
    assert f.name not in out, "family twice: " + f.name
    out[f.name] = {"type": f.type, "help": f.documentation,
                   "samples": [[s.name, s.labels, s.value] for s in f.samples]}
print(json.dumps(out))
"#;
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "prometheus_client refused the text (./test.sh installs it): {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The value of the sample `name` with exactly `labels` in parsed
/// Prometheus text.
pub fn prometheus_sample(parsed: &serde_json::Value, family: &str, labels: &[(&str, &str)]) -> f64 {
    let samples = parsed[family]["samples"]
        .as_array()
        .unwrap_or_else(|| panic!("no family {family}"));
    samples
        .iter()
        .find(|s| {
            let l = s[1].as_object().unwrap();
            l.len() == labels.len() && labels.iter().all(|(k, v)| l[*k] == *v)
        })
        .unwrap_or_else(|| panic!("no {family} {labels:?}"))[2]
        .as_f64()
        .unwrap()
}

/// `nikaia explain ARGS...` run to its end, `NIKAIA_RUNTIME` unset.
pub fn explain(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("explain")
        .args(args)
        .env("NIKAIA_RUNTIME", "")
        .output()
        .unwrap()
}

/// What `nikaia explain` shows of the server at `sock`, in each of its
/// forms: the JSON, the text, and the Prometheus text parsed.
pub fn explain_views(sock: &Path) -> (serde_json::Value, String, serde_json::Value) {
    let socket = sock.to_str().unwrap();
    let json = serde_json::from_slice(&explain(&["--socket", socket, "--json"]).stdout).unwrap();
    let text = String::from_utf8(explain(&["--socket", socket]).stdout).unwrap();
    let prom = explain(&["--socket", socket, "--prometheus"]).stdout;
    (
        json,
        text,
        parse_prometheus(&String::from_utf8(prom).unwrap()),
    )
}

/// `nikaia serve` running, and the directory it serves kept alive.
pub struct Serving {
    pub child: Served,
    pub addr: String,
    pub _dir: tempfile::TempDir,
}

/// Starts `nikaia serve ROOT ARGS...` and reads the URL it prints; the
/// returned `Serving` keeps `dir` (which holds ROOT) alive.
pub fn start_serve(
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

/// Whether any thread of `pid` is still there. A killed process's leader
/// is a zombie while its other threads still exit, and its descriptors
/// (its sockets) close only when the last one has: so a zombie counts as
/// gone only once it is the only task left.
pub fn alive(pid: i32) -> bool {
    let Some(p) = rustix::process::Pid::from_raw(pid) else {
        return false;
    };
    if rustix::process::test_kill_process(p).is_err() {
        return false;
    }
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.split(") ").nth(1).is_some_and(|s| s.starts_with('Z')));
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
    !zombie || tasks > 1
}

/// The pid of the process an upgrade started, from the error log's
/// `SIGUSR2: starting PROGRAM (pid N)` line (the last one).
#[allow(dead_code)] // not every test binary upgrades
pub fn upgraded_pid(log: &str) -> i32 {
    log.lines()
        .rfind(|l| l.contains("SIGUSR2: starting"))
        .and_then(|l| l.split("(pid ").nth(1))
        .and_then(|rest| rest.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no new pid in {log}"))
}

/// Waits (at most 40 s, the shutdown grace and some) until `what` holds,
/// failing with `why` otherwise: an old process gone after an upgrade, a
/// new one after its SIGTERM.
#[allow(dead_code)] // not every test binary upgrades
pub fn within_grace(why: &str, mut what: impl FnMut() -> bool) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(40);
    while !what() {
        assert!(std::time::Instant::now() < end, "{why}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
