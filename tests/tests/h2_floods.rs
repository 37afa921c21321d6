//! HTTP/2 (h2c by prior knowledge) under attack: rapid reset, MadeYouReset,
//! control-frame and CONTINUATION floods, HPACK faults, the stream and
//! request caps, stalled readers, protocol errors, malformed requests, body
//! limits and the graceful shutdown. Each scenario is a frame-level client
//! in `tests/h2/attacks.py` (PyPI `h2`, `hyperframe`) run against a server
//! started here; it checks the misbehaving connection gets exactly its
//! answer while a well-behaved connection is served, and prints what it saw
//! as one JSON line. The server's counters are checked here.

use nikaia_std::fs::Root;
use nikaia_std::http::{dir_handler, Running, Server};
use nikaia_std::rt::Runtime;
use nikaia_tests::{start, test_runtime};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/h2/attacks.py");
const SMALL: usize = 4096;
const BIG: usize = 1 << 20;

/// Scenarios run side by side (read); the one that watches the process's
/// peak RSS runs alone (write).
static SERIAL: RwLock<()> = RwLock::new(());

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    SERIAL.read().unwrap_or_else(|e| e.into_inner())
}

/// The Python side's libraries are there; CI installs them (test.sh), so a
/// missing one fails the test rather than skipping it.
fn python_ready() {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    let ready = READY.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import h2, hyperframe, hpack"])
            .output()
            .map_err(|e| format!("python3 not runnable: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "python3 cannot import h2/hyperframe (pip install h2 hyperframe): {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    });
    if let Err(why) = ready {
        panic!("{why}");
    }
}

/// Deterministic file content.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2654435761).to_le_bytes()[1] ^ seed)
        .collect()
}

struct Site {
    server: Running,
    _dir: tempfile::TempDir,
}

/// The server the scenarios expect: `/f/*` a directory of real files
/// (small.bin 4 KiB, big.bin 1 MiB), `/t` a short text, `POST /len` the
/// body's length; send-timeout 1 s so stalled streams are reset quickly.
fn site() -> Site {
    site_with(|_| {})
}

fn site_with(tune: impl FnOnce(&mut Runtime)) -> Site {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.bin"), pattern(SMALL, 1)).unwrap();
    std::fs::write(dir.path().join("big.bin"), pattern(BIG, 2)).unwrap();
    let root = Root::dir(dir.path()).unwrap();
    let mut rt = test_runtime();
    rt.send_timeout = Duration::from_secs(1);
    tune(&mut rt);
    assert!(rt.http2, "HTTP/2 is on by default");
    let server = start(
        Server::with_runtime(rt)
            .route("/f/*name", dir_handler(root, false, false))
            .route("/t", |_| "tiny")
            .method("POST", "/len", |req| req.body().len().to_string()),
    );
    Site { server, _dir: dir }
}

/// Runs one scenario of attacks.py against `server`; `on_line` sees each
/// line it prints before the JSON. Panics with the JSON (what was seen and
/// what differed) when the scenario failed.
fn attack_with(server: &Running, name: &str, mut on_line: impl FnMut(&str)) -> Value {
    python_ready();
    let addr = server.local_addr();
    let mut child = Command::new("python3")
        .arg(SCRIPT)
        .arg(addr.ip().to_string())
        .arg(addr.port().to_string())
        .arg(name)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut last = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if line.starts_with('{') {
                    last = Some(line);
                } else {
                    on_line(&line);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("h2 scenario {name}: no result within 40 s (killed)");
            }
        }
    }
    let status = child.wait().expect("python3 exits");
    let stderr = err_reader.join().unwrap_or_default();
    let json: Value = match &last {
        Some(line) => serde_json::from_str(line).unwrap_or_else(|e| {
            panic!("h2 scenario {name}: not JSON ({e}): {line}\nstderr:\n{stderr}")
        }),
        None => panic!("h2 scenario {name}: no JSON line ({status})\nstderr:\n{stderr}"),
    };
    let pretty = serde_json::to_string_pretty(&json).unwrap();
    assert!(
        status.success() && json["ok"] == Value::Bool(true),
        "h2 scenario {name} failed ({status}):\n{pretty}\nstderr:\n{stderr}"
    );
    // Shown with --nocapture (and for a failing test): what was seen.
    eprintln!("{name}: {json}");
    json
}

fn attack(server: &Running, name: &str) -> Value {
    attack_with(server, name, |_| {})
}

/// GOAWAY frames the server counted with this code name.
fn goaways(server: &Running, code: &str) -> u64 {
    server
        .report()
        .h2
        .goaway
        .iter()
        .find(|(n, _)| n == code)
        .map_or(0, |(_, n)| *n)
}

/// Waits (a little) for a counter the connection's last turn updates.
fn eventually(what: &str, mut ok: impl FnMut() -> bool, report: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !ok() {
        assert!(Instant::now() < deadline, "{what}: {}", report());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A scenario whose attacker is closed for a flood: the counters say so.
fn flood(name: &str) {
    let _g = shared();
    let site = site();
    attack(&site.server, name);
    let s = &site.server;
    eventually(
        &format!("{name}: floods and GOAWAY ENHANCE_YOUR_CALM counted"),
        || s.report().h2.floods >= 1 && goaways(s, "ENHANCE_YOUR_CALM") >= 1,
        || format!("{:?}", s.report().h2),
    );
}

/// A scenario whose connection is closed with `code`: counted.
fn connection_error(name: &str, code: &str) {
    let _g = shared();
    let site = site();
    attack(&site.server, name);
    let s = &site.server;
    eventually(
        &format!("{name}: GOAWAY {code} counted"),
        || goaways(s, code) >= 1,
        || format!("{:?}", s.report().h2),
    );
    assert_eq!(s.report().h2.floods, 0, "{name}: not a flood");
}

/// A scenario that resets streams with PROTOCOL_ERROR and goes on.
fn stream_error(name: &str) {
    let _g = shared();
    let site = site();
    attack(&site.server, name);
    let h2 = site.server.report().h2;
    assert!(h2.resets_sent >= 1, "{name}: resets counted: {h2:?}");
    assert!(h2.goaway.iter().all(|(_, n)| *n == 0), "{name}: {h2:?}");
}

#[test]
fn settings_and_the_largest_frame() {
    let _g = shared();
    let site = site();
    attack(&site.server, "settings_and_get");
    let h2 = site.server.report().h2;
    assert!(h2.connections >= 1 && h2.streams >= 2, "{h2:?}");
}

#[test]
fn curl_prior_knowledge_is_served() {
    let _g = shared();
    let site = site();
    let url = format!("http://{}/f/big.bin", site.server.local_addr());
    let out = Command::new("curl")
        .args(["-sS", "--http2-prior-knowledge", "-o", "/dev/null"])
        .args(["-w", "%{http_version} %{http_code} %{size_download}"])
        .arg(&url)
        .output()
        .expect("curl runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("2 200 {BIG}"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn frame_larger_than_16384() {
    connection_error("frame_too_large", "FRAME_SIZE_ERROR");
}

#[test]
fn rapid_reset() {
    flood("rapid_reset");
}

#[test]
fn reset_budget_is_earned_back() {
    let _g = shared();
    let site = site();
    attack(&site.server, "reset_budget_earned_back");
    let h2 = site.server.report().h2;
    assert!(h2.resets_received >= 100, "{h2:?}");
    assert_eq!(h2.floods, 0, "{h2:?}");
}

#[test]
fn made_you_reset_window_update_0() {
    flood("made_you_reset_window_update");
}

#[test]
fn made_you_reset_priority_length() {
    flood("made_you_reset_priority_length");
}

#[test]
fn made_you_reset_priority_on_itself() {
    flood("made_you_reset_priority_self");
}

#[test]
fn flood_ping() {
    flood("flood_ping");
}

#[test]
fn flood_settings() {
    flood("flood_settings");
}

#[test]
fn flood_priority() {
    flood("flood_priority");
}

#[test]
fn flood_priority_update() {
    flood("flood_priority_update");
}

#[test]
fn flood_window_update() {
    flood("flood_window_update");
}

#[test]
fn flood_empty_data() {
    flood("flood_empty_data");
}

#[test]
fn flood_unknown_frames() {
    flood("flood_unknown_frames");
}

#[test]
fn pings_within_the_burst_are_answered() {
    let _g = shared();
    let site = site();
    attack(&site.server, "pings_within_burst");
    assert_eq!(site.server.report().h2.floods, 0);
}

#[test]
fn continuation_flood() {
    flood("continuation_flood");
}

#[test]
fn sixteen_continuations_are_a_request() {
    let _g = shared();
    let site = site();
    attack(&site.server, "continuation_16_ok");
}

#[test]
fn header_block_past_twice_max_header_bytes() {
    flood("continuation_too_big");
}

#[test]
fn frame_inside_a_header_block() {
    connection_error("frame_inside_header_block", "PROTOCOL_ERROR");
}

#[test]
fn hpack_truncated() {
    connection_error("hpack_truncated", "COMPRESSION_ERROR");
}

#[test]
fn hpack_index_past_the_table() {
    connection_error("hpack_index_past_table", "COMPRESSION_ERROR");
}

#[test]
fn hpack_table_size_above_4096() {
    connection_error("hpack_table_size_above_4096", "COMPRESSION_ERROR");
}

#[test]
fn header_list_over_max_header_bytes_is_431() {
    let _g = shared();
    let site = site();
    attack(&site.server, "header_list_431");
    let r = site.server.report();
    assert!(r.statuses[3] >= 1, "a 4xx counted: {:?}", r.statuses);
}

#[test]
fn the_129th_stream_is_refused() {
    let _g = shared();
    let site = site();
    attack(&site.server, "concurrency_refused");
    let h2 = site.server.report().h2;
    assert!(h2.resets_sent >= 12, "{h2:?}");
}

#[test]
fn refused_streams_spend_the_reset_budget() {
    flood("refused_streams_spend_budget");
}

#[test]
fn a_thousand_requests_per_connection() {
    let _g = shared();
    let site = site();
    attack(&site.server, "requests_per_connection");
    let s = &site.server;
    eventually(
        "the request cap's GOAWAY NO_ERROR counted",
        || goaways(s, "NO_ERROR") >= 1,
        || format!("{:?}", s.report().h2),
    );
    assert!(s.report().h2.streams >= 1000);
}

#[test]
fn zero_window_streams_are_reset_after_send_timeout() {
    let _g = shared();
    let site = site();
    attack(&site.server, "zero_window");
    let s = &site.server;
    eventually(
        "8 stalled streams counted",
        || s.report().h2.stalled >= 8,
        || format!("{:?}", s.report().h2),
    );
}

/// VmHWM (peak resident set) of this process, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

#[test]
fn a_client_that_stops_reading_does_not_grow_the_server() {
    // Alone: the peak RSS is the whole process's.
    let _g = SERIAL.write().unwrap_or_else(|e| e.into_inner());
    let site = site();
    // Resets the peak to the current RSS (Linux 4.0+); if refused, the
    // bound below is only looser.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = peak_rss_kib();
    let json = attack(&site.server, "no_read");
    let after = peak_rss_kib();
    let grown_mib = after.saturating_sub(before) / 1024;
    // 100 MiB was asked for; the file is mapped and shared, the output is
    // bounded: far less may be resident.
    assert!(
        grown_mib < 48,
        "peak RSS grew by {grown_mib} MiB ({before} -> {after} KiB) for a client that stopped reading; seen {}",
        json["seen"]
    );
}

#[test]
fn first_frame_not_settings() {
    connection_error("first_frame_not_settings", "PROTOCOL_ERROR");
}

#[test]
fn push_promise_from_the_client() {
    connection_error("push_promise_from_client", "PROTOCOL_ERROR");
}

#[test]
fn even_stream_id() {
    connection_error("even_stream_id", "PROTOCOL_ERROR");
}

#[test]
fn data_on_stream_0() {
    connection_error("data_on_stream_0", "PROTOCOL_ERROR");
}

#[test]
fn data_on_an_idle_stream() {
    connection_error("data_on_idle_stream", "PROTOCOL_ERROR");
}

#[test]
fn window_update_0_on_the_connection() {
    connection_error("window_update_0_on_connection", "PROTOCOL_ERROR");
}

#[test]
fn connection_window_past_2_31() {
    connection_error("connection_window_overflow", "FLOW_CONTROL_ERROR");
}

#[test]
fn initial_window_size_past_2_31() {
    connection_error("initial_window_too_big", "FLOW_CONTROL_ERROR");
}

#[test]
fn settings_not_a_multiple_of_6() {
    connection_error("settings_length_not_6n", "FRAME_SIZE_ERROR");
}

#[test]
fn ping_not_8_octets() {
    connection_error("ping_length_not_8", "FRAME_SIZE_ERROR");
}

#[test]
fn malformed_uppercase_name() {
    stream_error("malformed_uppercase_name");
}

#[test]
fn malformed_connection_header() {
    stream_error("malformed_connection_header");
}

#[test]
fn malformed_te_gzip() {
    stream_error("malformed_te_gzip");
}

#[test]
fn malformed_pseudo_header_after_a_regular_one() {
    stream_error("malformed_pseudo_after_regular");
}

#[test]
fn malformed_missing_path() {
    stream_error("malformed_missing_path");
}

#[test]
fn malformed_content_length() {
    stream_error("malformed_content_length");
}

#[test]
fn host_disagreeing_with_authority() {
    stream_error("host_disagrees_with_authority");
}

#[test]
fn a_1_mib_body_is_read() {
    let _g = shared();
    let site = site();
    attack(&site.server, "body_1mib_ok");
}

#[test]
fn a_body_past_1_mib_is_413() {
    let _g = shared();
    let site = site();
    attack(&site.server, "body_over_1mib_413");
}

#[test]
fn graceful_shutdown_drains_an_h2_connection() {
    let _g = shared();
    let Site { server, _dir } = site();
    let server = Arc::new(server);
    let mut stopped = false;
    attack_with(&server, "graceful_shutdown", |line| {
        if line == "READY" && !stopped {
            server.shutdown();
            stopped = true;
        }
    });
    assert!(stopped, "the scenario never said READY");
    // The workers finish once the drained connection closed.
    let (tx, rx) = mpsc::channel();
    let waiting = Arc::clone(&server);
    std::thread::spawn(move || {
        waiting.wait();
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(5)).is_ok(),
        "the server did not finish within 5 s of the drained connection"
    );
    let h2 = server.report().h2;
    assert!(goaways(&server, "NO_ERROR") >= 1, "{h2:?}");
}

#[test]
fn the_calm_budget_refills_over_time() {
    flood("calm_refills_over_time");
}

#[test]
fn the_calm_budget_is_earned_by_data_sent() {
    flood("calm_earned_by_data");
}

#[test]
fn a_connection_idle_after_pings_stays_open() {
    let _g = shared();
    let site = site_with(|rt| rt.keepalive_timeout = Duration::from_secs(2));
    attack(&site.server, "idle_after_pings");
}
