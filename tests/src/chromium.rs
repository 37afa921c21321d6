//! Headless Chromium driven over `--remote-debugging-pipe`: the DevTools
//! protocol, JSON messages ended by NUL on the browser's fds 3 (commands
//! in) and 4 (answers and events out). What the browser tests share: the
//! process, the pipe, one page's session, and commands sent and answered;
//! what each test does with the events that come meanwhile is its own.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long one message may take before a test gives up (a browser that
/// never gets there; a passing step takes milliseconds).
pub const WAIT: Duration = Duration::from_secs(30);

/// A running Chromium, its pipe, and the session of the one page it
/// opened.
pub struct DevTools {
    child: Child,
    to: ChildStdin,
    from: mpsc::Receiver<Value>,
    next: u64,
    /// The page's session, to which [`DevTools::send_page`] speaks.
    pub session: String,
}

impl DevTools {
    /// Starts Chromium headless with `profile` as its user data directory,
    /// `flags` after the ones every test needs, and `home` as its HOME
    /// when given (where its NSS database is), then opens one blank page
    /// and attaches to it. `on_event` sees what comes before each answer.
    pub fn start(
        profile: &Path,
        flags: &[String],
        home: Option<&Path>,
        mut on_event: impl FnMut(&mut DevTools, Value),
    ) -> DevTools {
        // The shell moves the pipe to fds 3 and 4 from stdin and stdout.
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg("exec chromium \"$@\" 3<&0 4>&1 0</dev/null 1>/dev/null")
            .arg("chromium")
            .args(["--headless=new", "--no-sandbox", "--disable-gpu"])
            .args(["--no-first-run", "--remote-debugging-pipe"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(home) = home {
            command.env("HOME", home);
        }
        let mut child = command
            .spawn()
            .expect("chromium runs (test.sh installs it)");
        let to = child.stdin.take().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, from) = mpsc::channel();
        std::thread::spawn(move || {
            let mut out = BufReader::new(out);
            loop {
                let mut message = Vec::new();
                if !matches!(out.read_until(0, &mut message), Ok(n) if n > 0) {
                    return;
                }
                message.pop();
                if let Ok(value) = serde_json::from_slice::<Value>(&message) {
                    if tx.send(value).is_err() {
                        return;
                    }
                }
            }
        });
        let mut browser = DevTools {
            child,
            to,
            from,
            next: 0,
            session: String::new(),
        };
        let blank = json!({"url": "about:blank"});
        let target = browser.call(None, "Target.createTarget", blank, &mut on_event);
        let target = target["targetId"].as_str().unwrap().to_owned();
        let attach = json!({"targetId": target, "flatten": true});
        let attached = browser.call(None, "Target.attachToTarget", attach, &mut on_event);
        browser.session = attached["sessionId"].as_str().unwrap().to_owned();
        browser
    }

    /// The next message from the browser.
    pub fn recv(&mut self, waiting_for: &str) -> Value {
        (self.from.recv_timeout(WAIT))
            .unwrap_or_else(|_| panic!("no answer from chromium for {waiting_for}"))
    }

    /// Sends a command (to `session`, or to the browser); its id.
    pub fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> u64 {
        self.next += 1;
        let mut message = json!({"id": self.next, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        self.next
    }

    /// Sends a command to the page without waiting for its answer.
    pub fn send_page(&mut self, method: &str, params: Value) -> u64 {
        let session = self.session.clone();
        self.send(Some(&session), method, params)
    }

    /// Sends a command and waits for its result, every message that comes
    /// first handed to `on_event`; an error answer fails the test.
    pub fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        on_event: &mut impl FnMut(&mut DevTools, Value),
    ) -> Value {
        let id = self.send(session, method, params);
        loop {
            let value = self.recv(method);
            if value["id"] == json!(id) {
                if let Some(error) = value.get("error") {
                    panic!("{method}: {error}");
                }
                return value["result"].clone();
            }
            on_event(self, value);
        }
    }
}

impl Drop for DevTools {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
