//! The listing's upload control in a browser (`spec/site.md`, "Writes"):
//! headless Chromium, driven over `--remote-debugging-pipe` (the DevTools
//! protocol, JSON messages ended by NUL on its fds 3 and 4), opens a
//! listing, signs in where a `writes-only` rule protects the writes, picks
//! a file in the control and sends it; the test waits for the file on
//! disk. Any policy violation the browser reports fails it: the listing's
//! inline script and style run by their hashes.

use nikaia_tests::chromium::DevTools;
use nikaia_tests::uploads::{url, Site, OPEN, RULES};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long any one step may take before the test gives up.
const WAIT: Duration = nikaia_tests::chromium::WAIT;

/// Chromium and its DevTools session on one page.
struct Browser {
    dev: DevTools,
    /// Events read while waiting for something else.
    events: VecDeque<Value>,
    /// What the browser logged about the page (policy violations,
    /// exceptions).
    complaints: Vec<String>,
    /// Credentials given when the browser asks (`Fetch.authRequired`).
    credentials: (String, String),
}

/// A message the browser sent: requests it holds for us are let go on
/// (with `credentials`, when it asks for them) and what it logs is noted
/// in `complaints`, so every wait keeps the page moving. Anything else is
/// given back.
fn handle(
    dev: &mut DevTools,
    value: Value,
    complaints: &mut Vec<String>,
    credentials: &(String, String),
) -> Option<Value> {
    let params = &value["params"];
    match value["method"].as_str() {
        Some("Fetch.requestPaused") => {
            let id = params["requestId"].clone();
            dev.send_page("Fetch.continueRequest", json!({"requestId": id}));
        }
        Some("Fetch.authRequired") => {
            let id = params["requestId"].clone();
            let (user, password) = credentials.clone();
            dev.send_page(
                "Fetch.continueWithAuth",
                json!({"requestId": id, "authChallengeResponse": {
                    "response": "ProvideCredentials",
                    "username": user, "password": password}}),
            );
        }
        Some("Log.entryAdded") => {
            let entry = &params["entry"];
            let said = entry["text"].as_str().unwrap_or("");
            // The network's own errors (a missing favicon, the sign-in's
            // 401) are not the page's.
            if entry["level"] == "error" && entry["source"] != "network" {
                complaints.push(said.to_owned());
            }
        }
        Some("Runtime.exceptionThrown") => {
            complaints.push(params["exceptionDetails"].to_string());
        }
        Some("Runtime.consoleAPICalled") if params["type"] == "error" => {
            complaints.push(params["args"].to_string());
        }
        _ => return Some(value),
    }
    None
}

impl Browser {
    fn start(profile: &Path) -> Browser {
        let mut browser = Browser {
            dev: DevTools::start(profile, &[], None, |_, _| {}),
            events: VecDeque::new(),
            complaints: Vec::new(),
            credentials: (String::new(), String::new()),
        };
        for domain in ["Page.enable", "Runtime.enable", "Log.enable", "DOM.enable"] {
            browser.page(domain, json!({}));
        }
        browser.page(
            "Fetch.enable",
            json!({"handleAuthRequests": true, "patterns": [{"urlPattern": "*"}]}),
        );
        browser
    }

    /// Sends a command to the page and waits for its result; events that
    /// come meanwhile are handled or kept.
    fn page(&mut self, method: &str, params: Value) -> Value {
        let session = self.dev.session.clone();
        let (events, complaints) = (&mut self.events, &mut self.complaints);
        let credentials = &self.credentials;
        self.dev
            .call(Some(&session), method, params, &mut |dev, value| {
                if let Some(value) = handle(dev, value, complaints, credentials) {
                    events.push_back(value);
                }
            })
    }

    /// The next message the test may want (see [`handle`]).
    fn read(&mut self, waiting_for: &str) -> Value {
        loop {
            let value = self.dev.recv(waiting_for);
            let (complaints, credentials) = (&mut self.complaints, &self.credentials);
            if let Some(value) = handle(&mut self.dev, value, complaints, credentials) {
                return value;
            }
        }
    }

    /// Waits for the event `method`.
    fn event(&mut self, method: &str) -> Value {
        if let Some(at) = self.events.iter().position(|e| e["method"] == method) {
            return self.events.remove(at).unwrap();
        }
        loop {
            let value = self.read(method);
            if value["method"] == method {
                return value;
            }
        }
    }

    /// Loads `url` and waits until the page has loaded.
    fn open(&mut self, url: &str) {
        self.events.retain(|e| e["method"] != "Page.loadEventFired");
        self.page("Page.navigate", json!({"url": url}));
        self.event("Page.loadEventFired");
    }

    /// Evaluates `expression` in the page.
    fn eval(&mut self, expression: &str) -> Value {
        let result = self.page(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        result["result"]["value"].clone()
    }

    /// Clicks what `selector` finds, and waits for the page it loads.
    fn click_and_load(&mut self, selector: &str) {
        self.events.retain(|e| e["method"] != "Page.loadEventFired");
        let clicked = self.eval(&format!(
            "(() => {{ const e = document.querySelector({selector:?}); if (!e) return false; e.click(); return true; }})()"
        ));
        assert_eq!(clicked, json!(true), "{selector} is on the page");
        self.event("Page.loadEventFired");
    }

    /// Chooses `file` in the listing's control and presses its button.
    fn upload(&mut self, file: &Path) {
        let document = self.page("DOM.getDocument", json!({}));
        let root = document["root"]["nodeId"].clone();
        let input = self.page(
            "DOM.querySelector",
            json!({"nodeId": root, "selector": "#files"}),
        );
        let node = input["nodeId"].clone();
        assert_ne!(node, json!(0), "the page has the control");
        self.page(
            "DOM.setFileInputFiles",
            json!({"nodeId": node, "files": [file.to_str().unwrap()]}),
        );
        self.click_and_load("#upload button");
    }
}

/// Waits until `path` holds `bytes` (the upload arrived whole).
fn arrives(path: &Path, bytes: &[u8]) {
    let deadline = Instant::now() + WAIT;
    while std::fs::read(path).ok().as_deref() != Some(bytes) {
        assert!(
            Instant::now() < deadline,
            "{} never arrived",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn headless_chromium_uploads_a_file_chosen_in_the_listing() {
    let site = Site::new();
    std::fs::create_dir(site.root.join("open")).unwrap();
    let running = site.serve(&format!("{RULES}{OPEN}"));
    let profile = tempfile::tempdir().unwrap();
    let chosen = site.tmp.path().join("chosen");
    std::fs::create_dir(&chosen).unwrap();
    let mut browser = Browser::start(profile.path());
    browser.credentials = ("alice".into(), "open sesame".into());

    // A writes-only rule: anyone reads the plain listing; alice signs in
    // from it and comes back to the control.
    browser.open(&url(&running, "/open/"));
    let has =
        "[!!document.querySelector('#upload'), !!document.querySelector('a[href=\"?sign-in\"]')]";
    assert_eq!(browser.eval(has), json!([false, true]));
    browser.click_and_load("a[href=\"?sign-in\"]");
    assert_eq!(
        browser.eval("location.pathname + location.search"),
        json!("/open/")
    );
    assert_eq!(browser.eval(has), json!([true, false]));
    let file = chosen.join("notes of alice.txt");
    std::fs::write(&file, b"chosen in the browser\n").unwrap();
    browser.upload(&file);
    arrives(
        &site.root.join("open/notes of alice.txt"),
        b"chosen in the browser\n",
    );

    // The README's rule: the drop folder's rule covers the listed
    // directory itself and protects reads; the browser signs in on the
    // way in.
    browser.open(&url(&running, "/drop/"));
    assert_eq!(browser.eval(has), json!([true, false]));
    let file = chosen.join("report.txt");
    std::fs::write(&file, b"a report").unwrap();
    browser.upload(&file);
    arrives(&site.root.join("drop/report.txt"), b"a report");
    // Nothing the page did was refused.
    assert_eq!(browser.eval("1"), json!(1));
    assert!(browser.complaints.is_empty(), "{:?}", browser.complaints);
}
