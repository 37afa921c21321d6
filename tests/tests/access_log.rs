//! The access log over real sockets: lines in the named file, the
//! combined format read by goaccess with no failed line, the JSON format
//! one object a line, and a reopen after a move that loses no line
//! (`spec/http.md`, "Logs").

use nikaia_std::http::Server;
use nikaia_tests::{start, test_runtime, Client};
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn access_log_lines_go_to_the_named_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let mut rt = test_runtime();
    rt.access_log = nikaia_std::rt::LogTarget::File(log.clone());
    let server = start(Server::with_runtime(rt).route("/", |_| "x"));
    Client::connect(server.local_addr()).get("/?q=1");
    server.shutdown();
    server.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("\"GET /?q=1 HTTP/1.1\" 200 1 "), "{text}");
}

/// A server writing its access log to `log` in `format`.
fn logging_server(
    log: &std::path::Path,
    format: nikaia_std::rt::AccessLogFormat,
) -> nikaia_std::http::Running {
    let mut rt = test_runtime();
    rt.access_log = nikaia_std::rt::LogTarget::File(log.to_path_buf());
    rt.access_log_format = format;
    start(rows_server_with(rt))
}

fn rows_server_with(rt: nikaia_std::rt::Runtime) -> Server {
    Server::with_runtime(rt)
        .route("/static", |_| "a static str")
        .route("/files/*name", |req| format!("[{}]", req.param().unwrap()))
        .method("POST", "/echo", |req| req.body().clone())
}

/// Requests whose lines test a log reader: a referer, user agents with a
/// quote, a backslash, a tab and bytes past ASCII, a 404, a HEAD, a POST,
/// a refused head. Returns how many lines they make.
fn varied_requests(addr: std::net::SocketAddr) -> usize {
    let mut c = Client::connect(addr);
    c.send(
        b"GET /static?q=%22x%22 HTTP/1.1\r\nHost: t\r\nReferer: http://example.com/a?b=\"c\"\r\n\
          User-Agent: Mozilla/5.0 (X11; \"quoted\" \\ back\tslash \xc3\xa9)\r\n\r\n",
    );
    assert_eq!(c.reply().unwrap().status, 200);
    assert_eq!(c.get("/nothing-here").status, 404);
    c.send("HEAD /static HTTP/1.1\r\nHost: t\r\nUser-Agent: curl/8.5.0\r\n\r\n");
    assert_eq!(c.read_reply(true).unwrap().status, 200);
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nReferer:\r\n\r\nabc");
    assert_eq!(c.reply().unwrap().status, 200);
    c.send("GET /files/%C3%A9t%C3%A9 HTTP/1.0\r\nHost: t\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 200);
    let mut bad = Client::connect(addr);
    bad.send("GET /\"a b\" HTTP/1.1 junk\r\n\r\n");
    assert_eq!(bad.reply().unwrap().status, 400);
    let mut bad = Client::connect(addr);
    bad.send("\x01\x02 \r\n\r\n");
    assert_eq!(bad.reply().unwrap().status, 400);
    7
}

#[test]
fn the_combined_access_log_is_read_by_goaccess_with_no_failed_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let server = logging_server(&log, nikaia_std::rt::AccessLogFormat::Combined);
    let lines = varied_requests(server.local_addr());
    server.shutdown();
    server.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), lines, "{text}");
    assert!(
        text.contains(
            "\"GET /static?q=%22x%22 HTTP/1.1\" 200 12 \"http://example.com/a?b=\\x22c\\x22\" \
             \"Mozilla/5.0 (X11; \\x22quoted\\x22 \\x5C back\\x09slash \\xC3\\xA9)\"\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("\"HEAD /static HTTP/1.1\" 200 0 \"-\" \"curl/8.5.0\"\n"),
        "{text}"
    );
    assert!(
        text.contains("\"POST /echo HTTP/1.1\" 200 3 \"-\" \"-\"\n"),
        "{text}"
    );
    assert!(
        text.contains("\"\\x01\\x02 \" 400 0 \"-\" \"-\"\n"),
        "{text}"
    );
    for line in text.lines() {
        assert!(line.starts_with("127.0.0.1 - - ["), "{line}");
    }
    let report = dir.path().join("report.json");
    let out = Command::new("goaccess")
        .arg(&log)
        .args(["--log-format=COMBINED", "--no-global-config", "-o"])
        .arg(&report)
        .output()
        .expect("goaccess runs (./test.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let general = &report["general"];
    assert_eq!(general["failed_requests"], 0, "{general}");
    assert_eq!(general["valid_requests"], lines as u64, "{general}");
}

#[test]
fn the_json_access_log_is_one_object_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let server = logging_server(&log, nikaia_std::rt::AccessLogFormat::Json);
    let lines = varied_requests(server.local_addr());
    server.shutdown();
    server.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    let objects: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(objects.len(), lines);
    let first = objects
        .iter()
        .find(|o| o["target"] == "/static?q=%22x%22")
        .unwrap();
    assert_eq!(first["method"], "GET");
    assert_eq!(first["protocol"], "HTTP/1.1");
    assert_eq!(first["status"], 200);
    assert_eq!(first["bytes"], 12);
    assert_eq!(first["remote_addr"], "127.0.0.1");
    assert_eq!(first["referer"], "http://example.com/a?b=\"c\"");
    assert_eq!(
        first["user_agent"],
        "Mozilla/5.0 (X11; \"quoted\" \\ back\tslash é)"
    );
    assert_eq!(first["vehicle"], "in-memory");
    assert!(first["duration_us"].is_u64());
    assert!(first["time"].as_str().unwrap().ends_with('Z'));
    let refused: Vec<_> = objects.iter().filter(|o| o["status"] == 400).collect();
    assert_eq!(refused.len(), 2);
    assert!(refused
        .iter()
        .all(|o| o["method"].is_null() && o["refused"].is_string()));
    for o in &objects {
        for key in [
            "time",
            "remote_addr",
            "method",
            "target",
            "protocol",
            "status",
            "bytes",
            "referer",
            "user_agent",
            "duration_us",
            "vehicle",
        ] {
            assert!(o.get(key).is_some(), "{key} missing in {o}");
        }
    }
}

/// Reads `path` until it holds `n` lines (the workers write once a turn).
fn wait_for_lines(path: &std::path::Path, n: usize) {
    let end = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(path).map_or(0, |t| t.lines().count()) < n {
        assert!(
            Instant::now() < end,
            "{} never had {n} lines",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn reopening_the_logs_after_a_move_loses_no_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let moved = dir.path().join("access.log.1");
    let server = logging_server(&log, nikaia_std::rt::AccessLogFormat::Combined);
    let addr = server.local_addr();
    let mut c = Client::connect(addr);
    for i in 0..20 {
        assert_eq!(c.get(&format!("/files/before-{i}")).status, 200);
    }
    wait_for_lines(&log, 20);
    // Clients keep asking while the file is moved and the logs reopened.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|t| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || n < 200 {
                    assert_eq!(c.get(&format!("/files/during-{t}-{n}")).status, 200);
                    n += 1;
                }
                n
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    std::fs::rename(&log, &moved).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    server.reopen_logs().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let during: usize = clients.into_iter().map(|t| t.join().unwrap()).sum();
    for i in 0..20 {
        assert_eq!(c.get(&format!("/files/after-{i}")).status, 200);
    }
    server.shutdown();
    server.wait();
    let old = std::fs::read_to_string(&moved).unwrap();
    let new = std::fs::read_to_string(&log).unwrap();
    assert_eq!(old.matches("/files/before-").count(), 20);
    assert_eq!(new.matches("/files/after-").count(), 20);
    assert!(!new.contains("/files/before-") && !old.contains("/files/after-"));
    let total = old.lines().count() + new.lines().count();
    assert_eq!(total, 40 + during, "no line lost, none doubled");
    assert!(
        old.contains("/files/during-"),
        "some went to the moved file"
    );
    assert!(new.contains("/files/during-"), "some went to the new file");
    for line in old.lines().chain(new.lines()) {
        assert!(line.ends_with("\"-\" \"-\""), "a whole line: {line}");
    }
}
