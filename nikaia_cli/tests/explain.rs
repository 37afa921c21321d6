//! `nikaia explain` against real servers after real requests.

use nikaia_std::fs::Root;
use nikaia_std::http::{File, Server};
use nikaia_std::rt::{LogTarget, Runtime};
mod common;

use common::{explain, explain_views as views};
use common::{get, parse_prometheus, prometheus_sample, spawn_serve};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// `nikaia serve SITE` with one worker and a stats socket in `dir`: the
/// child, its address, the socket and the runtime file.
fn serve_with_stats(
    dir: &Path,
    site: &Path,
) -> (
    common::Served,
    String,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let sock = dir.join("stats.sock");
    let runtime = dir.join("runtime.toml");
    std::fs::write(
        &runtime,
        format!(
            "listen = \"127.0.0.1:0\"\nworkers = 1\naccess-log = \"off\"\nstats-socket = \"{}\"\n",
            sock.display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
    cmd.arg("serve").arg(site).arg("--runtime").arg(&runtime);
    let (child, addr) = spawn_serve(cmd);
    (child, addr, sock, runtime)
}

fn vehicle(report: &serde_json::Value, name: &str) -> (u64, u64) {
    let v = report["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["vehicle"] == name)
        .unwrap();
    (
        v["requests"].as_u64().unwrap(),
        v["bytes"].as_u64().unwrap(),
    )
}

#[test]
fn counts_match_the_requests_made_to_nikaia_serve() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("a.txt"), "aaaa").unwrap();
    std::fs::write(site.join("b.txt"), "bbbbbbbb").unwrap();
    std::thread::sleep(Duration::from_millis(30));
    let (mut child, addr, sock, runtime) = serve_with_stats(dir.path(), &site);

    for _ in 0..3 {
        assert_eq!(get(&addr, "/a.txt").0, 200);
    }
    assert_eq!(get(&addr, "/b.txt").0, 200);
    assert_eq!(get(&addr, "/missing").0, 404);

    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the stats socket is the owner's only");

    // Each client closed its connection; the server notices as it reads
    // the end, maybe a moment after the client's last request returned.
    let mut report = serde_json::Value::Null;
    for _ in 0..100 {
        let out = explain(&["--runtime", runtime.to_str().unwrap(), "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        report = serde_json::from_slice(&out.stdout).unwrap();
        if report["connections"] == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // a.txt: first request opens (sendfile) and remembers the name, the
    // second keeps it (kept mapping), the third hits. b.txt: one open.
    assert_eq!(report["cache"]["hits"], 1, "{report}");
    assert_eq!(report["cache"]["misses"], 3, "{report}");
    assert_eq!(report["cache"]["entries"], 1, "{report}");
    assert_eq!(vehicle(&report, "sendfile"), (2, 12));
    assert_eq!(vehicle(&report, "kept mapping"), (2, 8));
    assert_eq!(vehicle(&report, "in-memory").0, 1, "the 404 page");
    assert_eq!(
        report["statuses"],
        serde_json::json!({"1xx": 0, "2xx": 4, "3xx": 0, "4xx": 1, "5xx": 0})
    );
    assert_eq!(report["connections"], 0, "{report}");
    assert!(report["pool_queued"].is_u64(), "{report}");
    // No HTTP/3 in this server: its counters are there, all zero.
    assert_eq!(
        report["h3"],
        serde_json::json!({"connections": 0, "refused": 0, "retries": 0, "streams": 0,
            "resets_sent": 0, "resets_received": 0, "floods": 0, "stalled": 0,
            "header_timeouts": 0, "datagrams": 0, "handed": 0, "handed_lost": 0,
            "path_changes": 0, "stateless_resets": 0, "forwarded": 0, "forwarded_in": 0,
            "forward_lost": 0, "drained": 0})
    );

    let out = explain(&["--socket", sock.to_str().unwrap(), "--prometheus"]);
    assert!(out.status.success());
    let prom = parse_prometheus(&String::from_utf8(out.stdout).unwrap());
    let sample = |family, labels: &[(&str, &str)]| prometheus_sample(&prom, family, labels);
    assert_eq!(sample("nikaia_responses", &[("class", "2xx")]), 4.0);
    assert_eq!(sample("nikaia_responses", &[("class", "4xx")]), 1.0);
    assert_eq!(prom["nikaia_responses"]["type"], "counter");
    let plain = |v| [("vehicle", v), ("transport", "plain")];
    assert_eq!(sample("nikaia_vehicle_responses", &plain("sendfile")), 2.0);
    assert_eq!(
        sample("nikaia_vehicle_body_bytes", &plain("sendfile")),
        12.0
    );
    assert_eq!(
        sample("nikaia_vehicle_body_bytes", &plain("kept mapping")),
        8.0
    );
    assert_eq!(sample("nikaia_kept_hits", &[]), 1.0);
    assert_eq!(sample("nikaia_kept_misses", &[]), 3.0);
    assert_eq!(sample("nikaia_kept_entries", &[]), 1.0);
    assert_eq!(prom["nikaia_kept_entries"]["type"], "gauge");
    assert_eq!(prom["nikaia_connections"]["type"], "gauge");
    assert_eq!(sample("nikaia_h3_connections", &[]), 0.0);
    assert_eq!(
        sample("nikaia_h3_resets", &[("direction", "received")]),
        0.0
    );
    for family in [
        "nikaia_kept_evictions",
        "nikaia_kept_invalidations",
        "nikaia_kept_bytes",
        "nikaia_io_pool_opens",
        "nikaia_io_pool_cold_reads",
        "nikaia_io_pool_queued",
        "nikaia_idle_closed",
        "nikaia_send_timeouts",
        "nikaia_truncated",
        "nikaia_uptime_seconds",
    ] {
        assert!(prom[family].is_object(), "{family} missing: {prom}");
    }
    assert!(
        prom["nikaia_tls_handshakes"].is_null(),
        "no TLS, no TLS metrics"
    );
    let both = explain(&["--socket", sock.to_str().unwrap(), "--prometheus", "--json"]);
    assert_eq!(
        both.status.code(),
        Some(2),
        "--json and --prometheus conflict"
    );

    let text = explain(&["--socket", sock.to_str().unwrap()]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("hits 1, misses 3, hit rate 25.0%"), "{text}");
    assert!(text.contains("kept mapping"), "{text}");
    assert!(!text.contains("HTTP/3"), "HTTP/3 never used: {text}");

    // A body sent to a name that takes none: 405, the body thrown away.
    {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\nConnection: close\r\n\r\n0123456789")
            .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 405 "), "{reply}");
    }
    let out = explain(&["--socket", sock.to_str().unwrap(), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["bodies"],
        serde_json::json!({"whole": 0, "streamed": 0, "bytes": 0, "refused": 0, "drained": 1, "timeouts": 0, "aborted": 0, "files_written": 0, "files_refused": 0, "files_failed": 0})
    );
    let out = explain(&["--socket", sock.to_str().unwrap(), "--prometheus"]);
    let prom = parse_prometheus(&String::from_utf8(out.stdout).unwrap());
    let drained = prometheus_sample(&prom, "nikaia_request_bodies", &[("outcome", "drained")]);
    assert_eq!(drained, 1.0);
    let text = explain(&["--socket", sock.to_str().unwrap()]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("1 thrown away unread"), "{text}");
    assert!(text.contains("files in     0 written, 0 refused"), "{text}");
    let written = prometheus_sample(&prom, "nikaia_files_written", &[("outcome", "written")]);
    assert_eq!(written, 0.0);

    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    assert!(child.wait().unwrap().success());
    assert!(!sock.exists(), "the socket is removed on shutdown");
}

#[test]
fn the_compressed_table_is_shown_with_its_hit_rate_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("app.js"), "console.log('hello');\n".repeat(400)).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    let (mut child, addr, sock, _) = serve_with_stats(dir.path(), &site);
    let gzip = "Accept-Encoding: gzip\r\n";
    // The first answer is the file; then, once made, the variant.
    let (_, head, _) = common::request(&addr, "GET", "/app.js", gzip);
    assert!(!head.contains("Content-Encoding"), "{head}");
    let mut coded = 0;
    for _ in 0..500 {
        let (_, head, _) = common::request(&addr, "GET", "/app.js", gzip);
        if head.contains("Content-Encoding: gzip") {
            coded += 1;
            if coded == 3 {
                break;
            }
        } else {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert_eq!(coded, 3, "the variant was never made");
    let (report, text, prom) = views(&sock);
    let z = &report["compressed"];
    assert_eq!(z["entries"], 1, "{report}");
    assert_eq!(z["made"], 1, "{report}");
    assert_eq!(z["hits"], 3, "{report}");
    let misses = z["misses"].as_u64().unwrap();
    assert!(misses >= 1, "{report}");
    let bytes = z["bytes"].as_u64().unwrap();
    assert!(bytes > 0 && bytes < 9200 / 4, "{report}");
    let rate = format!("{:.1}%", 300.0 / (3 + misses) as f64);
    assert!(text.contains("compressed    1 variants"), "{text}");
    assert!(
        text.contains(&format!("hits 3, misses {misses}, hit rate {rate}, made 1")),
        "{text}"
    );
    assert_eq!(prometheus_sample(&prom, "nikaia_compressed_hits", &[]), 3.0);
    assert_eq!(
        prometheus_sample(&prom, "nikaia_compressed_entries", &[]),
        1.0
    );
    assert_eq!(prom["nikaia_compressed_bytes"]["type"], "gauge");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn no_server_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("nobody.sock");
    let out = explain(&["--socket", sock.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no server answers at"), "{err}");
    let out = explain(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no stats socket"));
}

#[test]
fn anywhere_sites_seen_at_run_time_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "f").unwrap();
    let sock = dir.path().join("s.sock");
    let mut rt = Runtime::default();
    rt.listen = vec![std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into()];
    rt.workers = 1;
    rt.access_log = LogTarget::Off;
    rt.stats_socket = Some(sock.clone());
    let base = dir.path().to_path_buf();
    let anywhere = Root::anywhere();
    let server = Server::with_runtime(rt)
        .route("/any", move |_| File::new(base.join("f.txt"), &anywhere))
        .start()
        .unwrap();
    let addr = server.local_addr().to_string();
    assert_eq!(get(&addr, "/any").0, 200);
    assert_eq!(get(&addr, "/any").0, 200);
    let out = explain(&["--socket", sock.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("tests/explain.rs"))
        .unwrap_or_else(|| panic!("no site in {text}"));
    assert!(line.trim_end().ends_with(" 2"), "two opens: {line}");
    server.shutdown();
    server.wait();
    assert!(!Path::new(&sock).exists());
}

#[test]
fn http2_counters_reach_the_text_the_json_and_prometheus() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("a.txt"), "aaaa").unwrap();
    let (mut child, addr, sock, _) = serve_with_stats(dir.path(), &site);
    // Two streams on one h2c connection (nghttp: Debian 12's curl cannot
    // reuse a prior-knowledge connection, curl/curl#10634).
    let url = format!("http://{addr}/a.txt");
    let again = format!("{url}?again");
    let out = Command::new("nghttp")
        .args([&url, &again])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, b"aaaaaaaa");
    // A connection whose first frame is not SETTINGS: GOAWAY PROTOCOL_ERROR.
    let mut raw = std::net::TcpStream::connect(&addr).unwrap();
    raw.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\x08\x06\0\0\0\0\0pingping")
        .unwrap();
    let mut got = Vec::new();
    raw.read_to_end(&mut got).unwrap();
    assert!(
        got.windows(2).any(|w| w == [0x07, 0x00]),
        "a GOAWAY: {got:?}"
    );

    let (report, text, prom) = views(&sock);
    let h2 = &report["h2"];
    assert_eq!(h2["connections"], 2, "{report}");
    assert_eq!(h2["streams"], 2, "{report}");
    assert_eq!(h2["goaway"]["PROTOCOL_ERROR"], 1, "{report}");
    assert_eq!(h2["floods"], 0, "{report}");
    assert!(
        text.contains("HTTP/2        2 connections, 2 streams")
            && text.contains("GOAWAY sent: PROTOCOL_ERROR 1"),
        "{text}"
    );
    let sample = |family, labels: &[(&str, &str)]| prometheus_sample(&prom, family, labels);
    assert_eq!(sample("nikaia_h2_connections", &[]), 2.0);
    assert_eq!(sample("nikaia_h2_streams", &[]), 2.0);
    assert_eq!(
        sample("nikaia_h2_goaway", &[("code", "PROTOCOL_ERROR")]),
        1.0
    );
    assert_eq!(sample("nikaia_h2_resets", &[("direction", "sent")]), 0.0);
    assert_eq!(sample("nikaia_h2_flood_closes", &[]), 0.0);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn uploads_reach_the_text_the_json_and_prometheus() {
    let rules = "webdav = true\n[[write]]\nmatch = \"*\"\nanyone = true\nplain-http = true\ndelete = true\nwebdav = true\n";
    let (_dir, sock, mut child, addr) = serve_rules(rules);
    let send = |request: &str| send_closing(&addr, request);
    let put =
        "PUT /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello";
    assert!(send(put).starts_with("HTTP/1.1 201"));
    let again = put.replace("Content-Length", "If-None-Match: *\r\nContent-Length");
    assert!(send(&again).starts_with("HTTP/1.1 412"));
    let delete = "DELETE /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    assert!(send(delete).starts_with("HTTP/1.1 204"));
    let mkcol = "MKCOL /d HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    assert!(send(mkcol).starts_with("HTTP/1.1 201"));
    let propfind = "PROPFIND /d HTTP/1.1\r\nHost: t\r\nDepth: 0\r\nConnection: close\r\n\r\n";
    assert!(send(propfind).starts_with("HTTP/1.1 207"));

    let (report, text, prom) = views(&sock);
    assert_eq!(
        report["writes"],
        serde_json::json!({"created": 2, "replaced": 0, "bytes": 5, "deleted": 1, "refused": {"412": 1},
                           "dav": {"MKCOL": 1, "PROPFIND": 1}})
    );
    assert!(
        text.contains(
            "uploads      2 created, 0 replaced (5 B received), 1 deleted; refused: 1 412"
        ),
        "{text}"
    );
    assert!(
        text.contains("webdav       1 MKCOL, 1 PROPFIND answered"),
        "{text}"
    );
    assert_eq!(
        prometheus_sample(&prom, "nikaia_webdav_requests", &[("method", "MKCOL")]),
        1.0
    );
    assert_eq!(
        prometheus_sample(&prom, "nikaia_uploads", &[("outcome", "created")]),
        2.0
    );
    assert_eq!(prometheus_sample(&prom, "nikaia_upload_bytes", &[]), 5.0);
    assert_eq!(
        prometheus_sample(&prom, "nikaia_upload_refusals", &[("status", "412")]),
        1.0
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn webdav_locks_reach_the_text_the_json_and_prometheus() {
    let rules = "webdav = true\n[webdav-locks]\ndir = \"locks\"\n[[write]]\nmatch = \"*\"\n\
                 anyone = true\nplain-http = true\ncreate = true\nreplace = true\nwebdav = true\n";
    let (_dir, sock, mut child, addr) = serve_rules(rules);
    let send = |request: String| send_closing(&addr, &request);
    let body = "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/>\
                </D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>";
    let lock = |name: &str| {
        format!(
            "LOCK /{name} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let taken = send(lock("a.txt"));
    assert!(taken.starts_with("HTTP/1.1 201"), "{taken}");
    assert!(send(lock("b.txt")).starts_with("HTTP/1.1 201"));
    // The same name again: a conflict; a PUT without the token: 423.
    assert!(send(lock("a.txt")).starts_with("HTTP/1.1 423"));
    let put = "PUT /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx";
    assert!(send(put.to_owned()).starts_with("HTTP/1.1 423"));
    let token = taken
        .lines()
        .find_map(|l| l.strip_prefix("Lock-Token: "))
        .unwrap()
        .trim()
        .to_owned();
    let unlock = format!(
        "UNLOCK /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\nLock-Token: {token}\r\n\r\n"
    );
    assert!(send(unlock).starts_with("HTTP/1.1 204"));

    let (report, text, prom) = views(&sock);
    assert_eq!(
        report["locks"],
        serde_json::json!({"taken": 2, "refreshed": 0, "released": 1, "expired": 0,
                           "refused": 1, "writes_refused": 1, "held": 1})
    );
    assert!(
        text.contains(
            "locks        1 held; 2 taken, 0 refreshed, 1 released, 0 expired; refused: 1 LOCKs, 1 writes without the token"
        ),
        "{text}"
    );
    let sample = |family, labels: &[(&str, &str)]| prometheus_sample(&prom, family, labels);
    assert_eq!(sample("nikaia_webdav_locks", &[("event", "taken")]), 2.0);
    assert_eq!(sample("nikaia_webdav_locks", &[("event", "released")]), 1.0);
    assert_eq!(
        sample("nikaia_webdav_lock_refusals", &[("refused", "write")]),
        1.0
    );
    assert_eq!(sample("nikaia_webdav_locks_held", &[]), 1.0);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn produced_bodies_reach_the_text_the_json_and_prometheus() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("s.sock");
    let mut rt = Runtime::default();
    rt.listen = vec![std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into()];
    rt.workers = 1;
    rt.access_log = LogTarget::Off;
    rt.stats_socket = Some(sock.clone());
    let server = Server::with_runtime(rt)
        .route("/rows", |_| {
            nikaia_std::http::Produced::from_iter((0..3).map(|i| format!("row {i}\n")))
        })
        .start()
        .unwrap();
    let addr = server.local_addr().to_string();
    let (status, _, body) = get(&addr, "/rows");
    // The three rows, given at once, gathered into one chunk; then the
    // last chunk.
    let chunked = b"12\r\nrow 0\nrow 1\nrow 2\n\r\n0\r\n\r\n";
    assert_eq!(
        (status, &body[..]),
        (200, &chunked[..]),
        "one chunk, the last"
    );
    let (report, text, prom) = views(&sock);
    assert_eq!(
        report["produced"],
        serde_json::json!({"started": 1, "pulls": 4, "bytes": 18, "ended": 1, "failed": 0, "cancelled": 0})
    );
    assert!(
        text.contains(
            "produced     1 bodies, 4 pulls (18 B sent); 1 ended whole, 0 failed, 0 cancelled"
        ),
        "{text}"
    );
    assert_eq!(
        prometheus_sample(&prom, "nikaia_produced_bodies", &[("outcome", "ended")]),
        1.0
    );
    assert_eq!(prometheus_sample(&prom, "nikaia_produced_pulls", &[]), 4.0);
    server.shutdown();
    server.wait();
}

/// `nikaia serve` of an empty site under `rules`, one worker, its stats
/// socket: the scratch directory (kept while it runs), the socket, the
/// process and its address.
fn serve_rules(
    rules: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    common::Served,
    String,
) {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    let sock = dir.path().join("stats.sock");
    let runtime = dir.path().join("runtime.toml");
    std::fs::write(
        &runtime,
        format!(
            "listen = \"127.0.0.1:0\"\nworkers = 1\naccess-log = \"off\"\nstats-socket = \"{}\"\n{rules}",
            sock.display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
    cmd.arg("serve").arg(&site).arg("--runtime").arg(&runtime);
    let (child, addr) = spawn_serve(cmd);
    (dir, sock, child, addr)
}

/// One request on a connection of its own, answered whole.
fn send_closing(addr: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut got = String::new();
    let _ = s.read_to_string(&mut got);
    got
}

/// What `nikaia explain` prints of `report`, served as a stats socket
/// does: the JSON written to the one client, then closed.
fn explain_of(report: serde_json::Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("stats.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let server = std::thread::spawn(move || {
        let (mut client, _) = listener.accept().unwrap();
        std::io::Write::write_all(&mut client, report.to_string().as_bytes()).unwrap();
    });
    let out = explain(&["--socket", sock.to_str().unwrap()]);
    server.join().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn times_left_and_uptimes_are_said_in_the_units_that_fit_them() {
    let pair = |cert: &str, left: i64| {
        serde_json::json!({"source": "file", "cert": cert, "names": [cert],
            "default": false, "not_after": 1_803_902_400u64 + left as u64,
            "expires_in": left, "handshakes": 0})
    };
    let report = |uptime_ms: u64| {
        serde_json::json!({"uptime_ms": uptime_ms, "tls": {"certificates": [
            pair("a.example", 42), pair("b.example", 1799), pair("c.example", 12_000),
            pair("d.example", 7_430_400), pair("e.example", 0),
        ]}})
    };
    let text = explain_of(report(5210));
    assert!(text.contains("uptime        5.210s\n"), "{text}");
    for (cert, left) in [
        ("a.example", ", in 42s;"),
        ("b.example", ", in 29m 59s;"),
        ("c.example", ", in 3h 20m;"),
        ("d.example", ", in 86d 00h;"),
    ] {
        let at = text.find(&format!("  {cert} (file)")).unwrap();
        let end = text[at..].lines().nth(2).unwrap();
        assert!(end.contains(left), "{cert}: {end}");
    }
    assert!(!text.contains(" 0h "), "{text}");
    assert!(text.contains("expired"), "{text}");
    for (ms, said) in [
        (185_000, "3m 05s"),
        (18_123_000, "5h 02m 03s"),
        (
            (100 * 86_400 + 3 * 3600 + 4 * 60 + 5) * 1000,
            "100d 03h 04m",
        ),
    ] {
        let text = explain_of(report(ms));
        assert!(text.contains(&format!("uptime        {said}\n")), "{text}");
    }
}
