//! Request bodies over HTTP/2 (`spec/http2.md`, "Request bodies"): nghttp
//! uploads over h2c and TLS with the window updates it sees, refusals on
//! their streams with the connection kept, a paused sink shutting only its
//! own stream's window, and the body clocks answered per stream
//! (`tests/h2/bodies.py`, PyPI `h2`). Counters and frames, not durations.

use nikaia_std::http::Aborted;
use nikaia_tests::bodies::{body_server, hash_answer, Probe};
use nikaia_tests::{start, test_runtime, TestPki};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/h2/bodies.py");

fn serve(rt: nikaia_std::rt::Runtime) -> (nikaia_std::http::Running, Arc<Probe>) {
    let (server, probe) = body_server(rt);
    (start(server), probe)
}

/// Runs a scenario of bodies.py; `between` is called with each JSON line
/// but the last (and may write to the script's stdin); the last line is
/// returned.
fn scenario(
    server: &nikaia_std::http::Running,
    name: &str,
    mut between: impl FnMut(&Value, &mut std::process::ChildStdin),
) -> Value {
    let addr = server.local_addr();
    let mut child = Command::new("python3")
        .arg(SCRIPT)
        .arg(addr.ip().to_string())
        .arg(addr.port().to_string())
        .arg(name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs (test.sh installs PyPI h2)");
    let mut stdin = child.stdin.take().unwrap();
    let lines: Vec<Value> = {
        let mut seen = Vec::new();
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let v: Value = serde_json::from_str(&line.unwrap()).expect("a JSON line");
            seen.push(v);
            let last = seen.last().unwrap();
            if last.get("status").is_none() {
                between(last, &mut stdin);
            }
        }
        seen
    };
    assert!(child.wait().unwrap().success(), "{lines:?}");
    lines.last().cloned().expect("the script's last line")
}

fn status(seen: &Value, stream: u32) -> u64 {
    seen["status"][stream.to_string()].as_u64().unwrap_or(0)
}

fn body(seen: &Value, stream: u32) -> &str {
    seen["body"][stream.to_string()].as_str().unwrap_or("")
}

#[test]
fn refusals_are_answered_on_their_streams_and_the_connection_is_kept() {
    let (server, _) = serve(test_runtime());
    let seen = scenario(&server, "refused", |_, _| {});
    assert_eq!(seen["goaway"], Value::Null, "{seen}");
    // Over the limit by its content-length, and as it arrived.
    assert_eq!(status(&seen, 1), 413, "{seen}");
    assert_eq!(status(&seen, 3), 413, "{seen}");
    // Refused by the program from its head: no 100 Continue.
    assert_eq!(status(&seen, 5), 401, "{seen}");
    assert_eq!(seen["informational"]["5"], Value::Null, "{seen}");
    // Let through: 100 Continue, then the body, then the answer.
    assert_eq!(
        seen["informational"]["7"],
        serde_json::json!([100]),
        "{seen}"
    );
    assert_eq!(status(&seen, 7), 200, "{seen}");
    assert_eq!(body(&seen, 7), hash_answer(b"hello"));
    assert_eq!(status(&seen, 9), 415, "{seen}");
    assert_eq!(body(&seen, 11), "hi", "the connection goes on: {seen}");
    let bodies = server.report().bodies;
    assert_eq!(
        (bodies.refused, bodies.streamed, bodies.bytes),
        (3, 1, 5),
        "{bodies:?}"
    );
}

#[test]
fn a_paused_sink_shuts_its_own_window_and_the_siblings_go_on() {
    let (server, probe) = serve(test_runtime());
    let resumer: std::cell::RefCell<Option<std::thread::JoinHandle<()>>> = Default::default();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = scenario(&server, "paused", |blocked, stdin| {
        // What the client could send before its window shut: the first
        // window and the streamed one, never the 4 MiB.
        let sent = blocked["blocked_after"].as_u64().unwrap();
        assert!(sent <= 320 << 10, "{sent} sent while the sink was paused");
        let held = probe.held.load(std::sync::atomic::Ordering::SeqCst);
        assert!(held <= 64 << 10, "the paused sink took {held}");
        assert_eq!(blocked["sibling"], blocked["sibling_expected"]);
        // Resumed, piece by piece.
        let (probe, done) = (probe.clone(), done.clone());
        *resumer.borrow_mut() = Some(std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                if probe.resume_all() == 0 {
                    std::thread::yield_now();
                }
            }
        }));
        stdin.write_all(b"go\n").unwrap();
    });
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    resumer
        .into_inner()
        .expect("the script blocked")
        .join()
        .unwrap();
    assert_eq!(status(&seen, 1), 200, "{seen}");
    assert_eq!(body(&seen, 1), hash_answer(&vec![b'x'; 4 << 20]));
    assert_eq!(seen["goaway"], Value::Null);
}

#[test]
fn each_body_clock_answers_408_on_its_stream_and_the_connection_goes_on() {
    let mut rt = test_runtime();
    rt.body_timeout = Duration::from_millis(600);
    rt.body_idle_timeout = Duration::from_millis(600);
    rt.body_min_rate = 50_000;
    rt.body_rate_grace = Duration::from_millis(600);
    let (server, probe) = serve(rt);
    let seen = scenario(&server, "clocks", |_, _| {});
    for stream in [1, 3, 5] {
        assert_eq!(status(&seen, stream), 408, "stream {stream}: {seen}");
        assert_eq!(
            seen["resets"][stream.to_string()],
            0,
            "NO_ERROR after the 408: {seen}"
        );
    }
    assert_eq!((body(&seen, 7), body(&seen, 9)), ("hi", "hi"), "{seen}");
    assert_eq!(seen["goaway"], Value::Null);
    assert_eq!(server.report().bodies.timeouts, 3);
    assert_eq!(
        *probe.aborted.lock().unwrap(),
        [Aborted::TooSlow, Aborted::TooSlow]
    );
}

/// nghttp uploads `size` bytes to `/hash` at `url`; what it printed
/// (`-v`: every frame) and the answer.
fn nghttp_upload(url: &str, size: usize) -> (String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("up");
    let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, &data).unwrap();
    let out = Command::new("nghttp")
        .arg("-v")
        .arg("-d")
        .arg(&file)
        .arg(format!("{url}/hash"))
        .output()
        .expect("nghttp runs (test.sh installs nghttp2-client)");
    assert!(out.status.success(), "{out:?}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), data)
}

#[test]
fn nghttp_streams_a_body_over_h2c_and_tls_through_the_granted_windows() {
    let (plain, _) = serve(test_runtime());
    let pki = TestPki::new();
    let (tls, _) = serve(pki.runtime());
    for url in [
        format!("http://{}", plain.local_addr()),
        format!("https://localhost:{}", tls.local_addr().port()),
    ] {
        let (trace, data) = nghttp_upload(&url, 3 << 20);
        assert!(trace.contains(&hash_answer(&data)), "{url}: {trace}");
        // The stream's window opened to 256 KiB, the connection's with it,
        // then credit came back as the sink took the body.
        let opened = "recv WINDOW_UPDATE frame <length=4, flags=0x00, stream_id=13>\n          (window_size_increment=196609)";
        assert!(trace.contains(opened), "{url}: {trace}");
        let credits = trace
            .matches("recv WINDOW_UPDATE frame <length=4, flags=0x00, stream_id=13>")
            .count();
        assert!(credits > 10, "{url}: {credits} stream window updates");
        // Credit returns a quarter of a window at a time, on the stream
        // (64 KiB of its 256 KiB, more as it grows) and on the connection:
        // about 40 updates each for 3 MiB, not one each per 16 KiB (192).
        let all = trace.matches("recv WINDOW_UPDATE").count();
        assert!(all <= 100, "{url}: {all} window updates for 3 MiB");
    }
    assert_eq!(plain.report().bodies.streamed, 1);
    assert_eq!(tls.report().bodies.streamed, 1);
}

#[test]
fn an_early_refusal_lets_a_large_body_arrive_to_a_bound_so_curl_reads_the_status() {
    let (server, _) = serve(test_runtime());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("up");
    std::fs::write(&file, vec![b'x'; 3 << 20]).unwrap();
    // PUT /echo (a POST route): 405 from its head. curl sends the body before it
    // reads the answer (and 7.88 reported a reset stream as error 92,
    // with no status); the body is let arrive to 256 KiB, then the
    // stream is reset, and the status has been read by then.
    let out = Command::new("curl")
        .args(["-sS", "--http2-prior-knowledge", "-o", "/dev/null"])
        .args(["-w", "%{http_code}", "-T"])
        .arg(&file)
        .arg(format!("http://{}/echo", server.local_addr()))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "405", "{out:?}");
    // The connection stays usable for others: a second request on a new
    // one, and the counters say the body was drained, not read.
    let out = Command::new("curl")
        .args(["-sS", "--http2-prior-knowledge"])
        .arg(format!("http://{}/", server.local_addr()))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi");
    assert_eq!(server.report().bodies.drained, 1);
}
