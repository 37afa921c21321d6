//! What is HTTP/3's own: 0-RTT offered and refused, a program's mapping
//! truncated under an h3 download, the access log's `HTTP/3.0`, and a
//! client that is not aioquic (Debian's `gtlsclient`, ngtcp2).

use super::{h3_get, h3_runtime, sha256, H3Request};
use nikaia_std::fs::{self, Root};
use nikaia_std::http::Server;
use nikaia_std::rt::{AccessLogFormat, LogTarget};
use nikaia_tests::corpus::random;
use nikaia_tests::{start, TestPki, TlsClient};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// 0-RTT is off (`spec/http3.md`): the session tickets the server issues
/// do not allow early data, so a client that follows them never offers
/// it; one that offers it anyway (aioquic with the ticket's limit forced)
/// sends its request in 0-RTT packets, sees early data refused, and is
/// answered once, after the handshake, from the request sent again.
#[test]
fn zero_rtt_is_refused_and_the_request_answered_after_the_handshake() {
    let pki = TestPki::new();
    let asked = Arc::new(AtomicU64::new(0));
    let counter = asked.clone();
    let server = start(
        Server::with_runtime(h3_runtime(&pki)).route("/once", move |_| {
            format!("answer {}", counter.fetch_add(1, SeqCst) + 1)
        }),
    );
    let port = server.local_addr().port();
    let get = [H3Request::get("/once")];

    let (a, stderr) = h3_get(port, &pki.ca_pem, &["--early-data", "--bodies"], &get);
    let early = &a[0].line["early_data"];
    assert_eq!(early["ticket"], true, "a ticket came: {early}\n{stderr}");
    assert_eq!(early["ticket_allows"], false, "{early}");
    assert_eq!(early["offered"], false, "{early}");
    assert_eq!(early["zero_rtt_packets"], 0, "{early}");
    assert_eq!((a[0].status, &a[0].body[..]), (200, &b"answer 1"[..]));

    let (a, stderr) = h3_get(port, &pki.ca_pem, &["--force-early-data", "--bodies"], &get);
    let early = &a[0].line["early_data"];
    assert_eq!(early["offered"], true, "{early}\n{stderr}");
    assert!(early["zero_rtt_packets"].as_u64() >= Some(1), "{early}");
    assert!(early["request_bytes_0rtt"].as_u64() >= Some(1), "{early}");
    assert_eq!(early["accepted"], false, "early data refused: {early}");
    assert_eq!(a[0].error, None, "{:?}", a[0]);
    // Answered once: the 0-RTT copy of the request was never handled.
    assert_eq!((a[0].status, &a[0].body[..]), (200, &b"answer 2"[..]));
    assert_eq!(asked.load(SeqCst), 2);
    // Three handshakes with a request each... and the two that only
    // fetched a ticket.
    assert_eq!(server.report().h3.connections, 4);
}

/// A program's `fs::Mapped` body is copied by the kernel before quinn
/// reads it (`spec/tls.md`): its file truncated while an h3 download of
/// it runs never kills the process (no SIGBUS). The download gets either
/// the bytes as they were, whole, or no answer; the next request for the
/// mapping is a logged 500, and the server goes on answering.
#[test]
fn a_mapped_file_truncated_under_an_h3_download_leaves_the_process_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let bytes = random(32 << 20, 41);
    std::fs::write(root.join("mapped.bin"), &bytes).unwrap();
    let pki = TestPki::new();
    let log = tmp.path().join("error.log");
    let mut rt = h3_runtime(&pki);
    rt.error_log = LogTarget::File(log.clone());
    let mapped = fs::map("mapped.bin", &Root::dir(&root).unwrap()).unwrap();
    let (asked_tx, asked) = mpsc::channel();
    let asked_tx = Mutex::new(asked_tx);
    let server = start(
        Server::with_runtime(rt)
            .route("/mapped", move |_| {
                let _ = asked_tx.lock().unwrap().send(());
                mapped.clone()
            })
            .route("/text", |_| "still here"),
    );
    let port = server.local_addr().port();
    let ca = pki.ca_pem.clone();
    let download = std::thread::spawn(move || {
        h3_get(
            port,
            &ca,
            &["--timeout", "20"],
            &[H3Request::get("/mapped")],
        )
    });
    asked
        .recv_timeout(Duration::from_secs(10))
        .expect("the h3 request reached the handler");
    std::thread::sleep(Duration::from_millis(20));
    std::fs::OpenOptions::new()
        .write(true)
        .open(root.join("mapped.bin"))
        .unwrap()
        .set_len(0)
        .unwrap();
    let (a, stderr) = download.join().unwrap();
    let a = &a[0];
    match (a.status, &a.error) {
        (200, None) => {
            assert_eq!(a.body_len, bytes.len() as u64, "{a:?}");
            assert_eq!(a.sha256, sha256(&bytes), "the bytes as they were");
        }
        (500, None) => {}
        _ => panic!("neither the whole file nor a 500: {a:?}\n{stderr}"),
    }
    // Now the mapping is longer than its file: a 500, logged.
    let requests = [H3Request::get("/mapped"), H3Request::get("/text")];
    let (after, stderr) = h3_get(port, &pki.ca_pem, &["--serial", "--bodies"], &requests);
    assert_eq!(after[0].status, 500, "{:?}\n{stderr}", after[0]);
    assert_eq!(
        (after[1].status, &after[1].body[..]),
        (200, &b"still here"[..])
    );
    let mut tls = TlsClient::connect_tls(server.local_addr(), pki.client_config());
    assert_eq!(tls.get("/text").text(), "still here", "HTTP/1.1 too");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("the mapped body could not be read"), "{text}");
}

/// A mapping whose file was cut to three quarters of its length before a
/// request: the kernel's copy stops at the file's new end, part of the way
/// (`process_vm_readv` returns what it copied before the fault), and the
/// answer is a logged 500, over h3 as over HTTP/1.1 with TLS.
#[test]
fn a_mapped_file_cut_past_half_its_length_is_a_logged_500() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let len = 1 << 20;
    std::fs::write(root.join("mapped.bin"), random(len, 42)).unwrap();
    let pki = TestPki::new();
    let log = tmp.path().join("error.log");
    let mut rt = h3_runtime(&pki);
    rt.error_log = LogTarget::File(log.clone());
    rt.workers = 1;
    let mapped = fs::map("mapped.bin", &Root::dir(&root).unwrap()).unwrap();
    let server = start(
        Server::with_runtime(rt)
            .route("/mapped", move |_| mapped.clone())
            .route("/text", |_| "still here"),
    );
    std::fs::OpenOptions::new()
        .write(true)
        .open(root.join("mapped.bin"))
        .unwrap()
        .set_len(len as u64 * 3 / 4)
        .unwrap();
    let port = server.local_addr().port();
    let requests = [H3Request::get("/mapped"), H3Request::get("/text")];
    let flags = ["--serial", "--bodies", "--timeout", "5"];
    let (a, stderr) = h3_get(port, &pki.ca_pem, &flags, &requests);
    assert_eq!(a[0].status, 500, "{:?}\n{stderr}", a[0]);
    assert_eq!((a[1].status, &a[1].body[..]), (200, &b"still here"[..]));
    let mut tls = TlsClient::connect_tls(server.local_addr(), pki.client_config());
    assert_eq!(tls.get("/mapped").status, 500, "HTTP/1.1 with TLS");
    assert_eq!(tls.get("/text").text(), "still here");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        text.matches("the mapped body could not be read").count(),
        2,
        "{text}"
    );
}

/// Each answer over h3 is one access-log line with `HTTP/3.0`, in the
/// combined format and in JSON.
#[test]
fn the_access_log_says_http_3_0() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = TestPki::new();
    for (format, name) in [
        (AccessLogFormat::Combined, "combined.log"),
        (AccessLogFormat::Json, "json.log"),
    ] {
        let log = tmp.path().join(name);
        let mut rt = h3_runtime(&pki);
        rt.access_log = LogTarget::File(log.clone());
        rt.access_log_format = format;
        let server = start(
            Server::with_runtime(rt)
                .route("/static", |_| "a static str")
                .method("POST", "/echo", |req| req.body().clone()),
        );
        let requests = [
            H3Request::get("/static?q=1").header("user-agent", "aioquic"),
            H3Request::new("HEAD", "/static"),
            H3Request::new("POST", "/echo").body(b"abc"),
            H3Request::get("/nothing-here"),
        ];
        let port = server.local_addr().port();
        let (a, _) = h3_get(port, &pki.ca_pem, &["--serial"], &requests);
        let statuses: Vec<u16> = a.iter().map(|a| a.status).collect();
        assert_eq!(statuses, [200, 200, 200, 404]);
        let mut tls = TlsClient::connect_tls(server.local_addr(), pki.client_config());
        assert_eq!(tls.get("/static").status, 200);
        server.shutdown();
        server.wait();
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        if name == "combined.log" {
            for (line, want) in lines.iter().zip([
                "\"GET /static?q=1 HTTP/3.0\" 200 12 \"-\" \"aioquic\"",
                "\"HEAD /static HTTP/3.0\" 200 0 ",
                "\"POST /echo HTTP/3.0\" 200 3 ",
                "\"GET /nothing-here HTTP/3.0\" 404 ",
                "\"GET /static HTTP/1.1\" 200 12 ",
            ]) {
                assert!(line.contains(want), "{want} in {line}");
            }
        } else {
            for (line, want) in lines
                .iter()
                .zip(["HTTP/3.0"; 4].iter().chain(["HTTP/1.1"].iter()))
            {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                assert_eq!(v["protocol"], *want, "{line}");
            }
        }
    }
}

/// Debian's ngtcp2 client (`gtlsclient`, GnuTLS): several streams on one
/// connection, each file byte-exact, from 0 bytes to 5 MiB.
#[test]
fn gtlsclient_downloads_byte_exact_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let sizes = [0usize, 1, 1200, 65_536, (5 << 20) + 3];
    for (i, &len) in sizes.iter().enumerate() {
        nikaia_tests::corpus::write(&root.join(format!("s{i}.bin")), &random(len, 50 + i as u64));
    }
    std::thread::sleep(Duration::from_millis(30));
    let pki = TestPki::new();
    let server = nikaia_tests::serve::serve_dir(&root, h3_runtime(&pki), false, false);
    let port = server.local_addr().port().to_string();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let urls: Vec<String> = (0..sizes.len())
        .map(|i| format!("https://localhost:{port}/s{i}.bin"))
        .collect();
    let run = Command::new("gtlsclient")
        .args(["-q", "--exit-on-all-streams-close", "--timeout=10s"])
        .arg(format!("--download={}", out.display()))
        .args(["--sni=localhost", "127.0.0.1", &port])
        .args(&urls)
        .output()
        .expect("gtlsclient runs (test.sh installs ngtcp2-client)");
    assert!(run.status.success(), "{run:?}");
    for (i, &len) in sizes.iter().enumerate() {
        let got = std::fs::read(out.join(format!("s{i}.bin"))).unwrap_or_default();
        assert!(
            got == random(len, 50 + i as u64),
            "s{i}.bin: {} of {len} bytes",
            got.len()
        );
    }
    let h3 = server.report().h3;
    assert_eq!(
        (h3.connections, h3.streams),
        (1, sizes.len() as u64),
        "{h3:?}"
    );
}
