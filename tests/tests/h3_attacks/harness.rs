//! What every attack test uses: one server at a time with HTTP/3 on, the
//! scripted attacker (`tests/h3/h3client.py attack NAME`), well-behaved
//! clients (`h3client.py get`, Debian's `gtlsclient`) and a bystander
//! connection that lives across an attack (`tests/h3/bystander.py`).

use nikaia_std::http::Running;
use nikaia_std::rt::{H3Report, Runtime};
use nikaia_tests::serve::serve_dir;
use nikaia_tests::TestPki;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

/// The attacks run one at a time: a flood must not overlap another test's
/// attack (nor its memory figures). Every test holds this for its whole run.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The scripts of `tests/h3/`.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("h3").join(name)
}

/// The served files: `index.html` (small) and `big.bin` (4 MiB, for the
/// download whose acknowledgements are withheld).
pub const SMALL: &str = "/index.html";
pub const BIG: &str = "/big.bin";
pub const BIG_LEN: usize = 4 << 20;

/// Hex SHA-256 of `data`, as the clients print it.
pub fn sha256(data: &[u8]) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs `cmd` to its end; its stdout's JSON lines.
pub fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| {
                panic!(
                    "not JSON ({e}): {l}\nstderr: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
        })
        .collect()
}

/// A server with `http3 = true` on one worker, serving a directory over
/// TLS on 127.0.0.1 (its UDP port the TCP one's number).
pub struct H3Server {
    pub running: Running,
    pub pki: TestPki,
    pub port: u16,
    files: std::collections::HashMap<&'static str, Vec<u8>>,
    _dir: tempfile::TempDir,
}

/// The site's files and their bytes.
pub fn site() -> (
    tempfile::TempDir,
    std::collections::HashMap<&'static str, Vec<u8>>,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut files = std::collections::HashMap::new();
    files.insert(SMALL, b"<h1>served</h1>\n".to_vec());
    files.insert(BIG, nikaia_tests::https::pattern(BIG_LEN, 7));
    for (name, bytes) in &files {
        std::fs::write(dir.path().join(&name[1..]), bytes).unwrap();
    }
    // Old enough for the kept table (it skips files changed this tick).
    std::thread::sleep(std::time::Duration::from_millis(30));
    (dir, files)
}

/// A runtime for `pki` with HTTP/3 on, one worker, quiet logs.
pub fn runtime(pki: &TestPki) -> Runtime {
    let mut rt = pki.runtime();
    rt.workers = 1;
    rt.http3 = Some(true);
    rt
}

impl H3Server {
    /// The server, its runtime as `edit` leaves [`runtime`].
    pub fn start(edit: impl FnOnce(&mut Runtime)) -> H3Server {
        let pki = TestPki::new();
        let (dir, files) = site();
        let mut rt = runtime(&pki);
        edit(&mut rt);
        let running = serve_dir(dir.path(), rt, false, false);
        let port = running.local_addr().port();
        H3Server {
            running,
            pki,
            port,
            files,
            _dir: dir,
        }
    }

    /// The directory it serves.
    pub fn root(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// The options every h3client.py mode takes.
    fn client_args(&self) -> Vec<String> {
        vec![
            "--connect".into(),
            format!("127.0.0.1:{}", self.port),
            "--authority".into(),
            "localhost".into(),
            "--cafile".into(),
            self.pki.ca_pem.display().to_string(),
        ]
    }

    fn attack_command(&self, name: &str, extra: &[&str]) -> Command {
        let mut cmd = Command::new("python3");
        cmd.arg(script("h3client.py"))
            .args(["attack", name])
            .args(self.client_args())
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs attack `name` to its end (each ends within its --timeout,
    /// 8 s unless `extra` says less); its report.
    pub fn attack(&self, name: &str, extra: &[&str]) -> Value {
        let out = self
            .attack_command(name, extra)
            .output()
            .expect("python3 runs tests/h3/h3client.py (PyPI aioquic 1.7)");
        attack_report(name, &out)
    }

    /// Starts attack `name`; [`Attack::report`] waits for its end.
    pub fn spawn_attack(&self, name: &str, extra: &[&str]) -> Attack {
        let child = self
            .attack_command(name, extra)
            .spawn()
            .expect("python3 runs tests/h3/h3client.py");
        Attack {
            name: name.to_owned(),
            child,
        }
    }

    /// Runs `code` (Python, with `tests/h3/` importable) with the server's
    /// address and the CA file as its two arguments; its one JSON line.
    pub fn python(&self, code: &str) -> Value {
        let out = Command::new("python3")
            .current_dir(script(""))
            .args(["-c", code])
            .arg(format!("127.0.0.1:{}", self.port))
            .arg(&self.pki.ca_pem)
            .stdin(Stdio::null())
            .output()
            .expect("python3 runs");
        attack_report("(inline)", &out)
    }

    /// One GET of `path` by `h3client.py get` on a fresh connection: its
    /// answer line.
    pub fn get(&self, path: &str) -> Value {
        let request = format!("{{\"path\": \"{path}\"}}");
        let out = Command::new("python3")
            .arg(script("h3client.py"))
            .arg("get")
            .args(self.client_args())
            .args(["--timeout", "5", &request])
            .stdin(Stdio::null())
            .output()
            .expect("python3 runs tests/h3/h3client.py");
        let mut lines = json_lines(&out);
        assert_eq!(lines.len(), 1, "{out:?}");
        lines.remove(0)
    }

    /// A fresh well-behaved connection is served `path` exactly.
    #[track_caller]
    pub fn assert_served(&self, path: &str, when: &str) {
        let answer = self.get(path);
        self.assert_answer(&answer, path, &format!("a fresh client {when}"));
    }

    /// `answer` (a client's JSON line) is `path`'s bytes with 200.
    #[track_caller]
    pub fn assert_answer(&self, answer: &Value, path: &str, who: &str) {
        let bytes = &self.files[path];
        assert_eq!(answer["status"], 200, "{who}: {answer}");
        assert_eq!(answer["body_len"], bytes.len(), "{who}: {answer}");
        assert_eq!(answer["sha256"], sha256(bytes), "{who}: {answer}");
    }

    /// Debian's ngtcp2 client (`gtlsclient`) on a fresh connection gets
    /// `path`'s bytes.
    #[track_caller]
    pub fn assert_served_by_gtlsclient(&self, path: &str) {
        let dl = tempfile::tempdir().unwrap();
        let out = Command::new("gtlsclient")
            .arg("-q")
            .arg("--exit-on-all-streams-close")
            .arg(format!("--download={}", dl.path().display()))
            .arg("--timeout=5s")
            .arg("127.0.0.1")
            .arg(self.port.to_string())
            .arg(format!("https://localhost:{}{path}", self.port))
            .output()
            .expect("gtlsclient runs (Debian's ngtcp2-client)");
        let got = std::fs::read(dl.path().join(&path[1..])).unwrap_or_default();
        assert!(
            got == self.files[path],
            "gtlsclient got {} bytes of {path}, not its {}: {out:?}",
            got.len(),
            self.files[path].len()
        );
    }

    /// A connection opened (and served once) now, kept across what follows.
    pub fn bystander(&self) -> Bystander {
        let mut child = Command::new("python3")
            .arg(script("bystander.py"))
            .args(self.client_args())
            .args(["--path", SMALL])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs tests/h3/bystander.py");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut b = Bystander {
            child,
            stdin,
            stdout,
        };
        let first = b.answer();
        self.assert_answer(&first, SMALL, "the bystander, before the attack");
        b
    }

    /// The bystander's connection is still open and served after the attack.
    #[track_caller]
    pub fn assert_bystander_served(&self, b: &mut Bystander) {
        let answer = b.again();
        assert!(
            answer["close"].is_null(),
            "the bystander's connection was closed: {answer}"
        );
        self.assert_answer(&answer, SMALL, "the bystander, after the attack");
    }

    /// The server's HTTP/3 counters now (what `nikaia explain` shows).
    pub fn h3(&self) -> H3Report {
        self.running.report().h3
    }
}

/// The attack's one JSON line; it must have run (exit 0) and the server
/// must not have vanished under it (no ICMP port unreachable).
fn attack_report(name: &str, out: &Output) -> Value {
    assert!(out.status.success(), "attack {name}: {out:?}");
    let mut lines = json_lines(out);
    assert_eq!(lines.len(), 1, "attack {name}: {out:?}");
    let report = lines.remove(0);
    assert_eq!(
        report["counters"]["icmp_unreachable"], 0,
        "attack {name}: nothing listened any more: {report}"
    );
    report
}

pub struct Attack {
    name: String,
    child: Child,
}

impl Attack {
    pub fn report(self) -> Value {
        let out = self.child.wait_with_output().unwrap();
        attack_report(&self.name, &out)
    }
}

/// A connection kept open across an attack: each [`Bystander::again`] is one
/// more GET on it.
pub struct Bystander {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Bystander {
    fn answer(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            // Ours: ended by its own handle.
            let _ = self.child.kill();
            let mut err = String::new();
            if let Some(e) = self.child.stderr.as_mut() {
                let _ = std::io::Read::read_to_string(e, &mut err);
            }
            panic!("the bystander said nothing; its stderr: {err}");
        }
        serde_json::from_str(&line).unwrap()
    }

    pub fn again(&mut self) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(b"get\n").unwrap();
        stdin.flush().unwrap();
        self.answer()
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// The close the attacker saw, as (by, kind, code).
pub fn close_of(report: &Value) -> (String, String, u64) {
    let c = &report["close"];
    assert!(c.is_object(), "no close: {report}");
    (
        c["by"].as_str().unwrap().to_owned(),
        c["kind"].as_str().unwrap().to_owned(),
        c["code"].as_u64().unwrap(),
    )
}

/// The server closed the attacker's connection with this error.
#[track_caller]
pub fn assert_closed(report: &Value, kind: &str, code: u64) {
    assert_eq!(
        close_of(report),
        ("server".to_owned(), kind.to_owned(), code),
        "{report}"
    );
}
