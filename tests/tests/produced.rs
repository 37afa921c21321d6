//! Response bodies a program produces piece by piece (`spec/http.md`,
//! "Produced bodies"), on real sockets with curl, nghttp and a raw
//! client: a generated GiB read byte-exact with the server's memory flat,
//! a client that stops reading parks the producer (its pulls stop) and
//! cancels it by leaving, a producer that fails mid-way ends the answer
//! the way each protocol can, HEAD never runs the producer, a promised
//! length is kept. No test asserts a duration: counters and the order of
//! events.

use bytes::Bytes;
use nikaia_std::http::{Cancelled, Produced, Producer, Pull, Pulled, Server};
use nikaia_tests::{start, test_runtime, Client};
use std::io::Read;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A body of `pieces` pieces of `size` bytes, each byte telling where it
/// is, so a reader can check every byte; counts its pulls, and says how
/// it was cancelled.
struct Counted {
    next: u64,
    pieces: u64,
    size: usize,
    /// Fail after this many pieces.
    fail_after: Option<u64>,
    seen: Arc<Seen>,
}

#[derive(Default)]
struct Seen {
    pulls: AtomicU64,
    cancelled: Mutex<Option<Cancelled>>,
}

fn byte_at(i: u64) -> u8 {
    (i % 251) as u8
}

impl Producer for Counted {
    fn pull(&mut self, pull: &mut Pull<'_>) -> Pulled {
        self.seen.pulls.fetch_add(1, Ordering::SeqCst);
        assert!(pull.room() > 0);
        if self.fail_after == Some(self.next) {
            return Pulled::Failed("the source went away".into());
        }
        if self.next == self.pieces {
            return Pulled::End;
        }
        let start = self.next * self.size as u64;
        let piece: Vec<u8> = (start..start + self.size as u64).map(byte_at).collect();
        self.next += 1;
        Pulled::Piece(Bytes::from(piece))
    }

    fn cancel(&mut self, why: Cancelled) {
        *self.seen.cancelled.lock().unwrap() = Some(why);
    }
}

struct Served {
    running: nikaia_std::http::Running,
    seen: Arc<Mutex<Vec<Arc<Seen>>>>,
}

/// `/gen/PIECES/SIZE` (and `/len/PIECES/SIZE/LENGTH` with a promised
/// length, `/fail/PIECES/SIZE/AFTER` failing after AFTER pieces).
fn serve() -> Served {
    serve_with(test_runtime())
}

fn serve_with(rt: nikaia_std::rt::Runtime) -> Served {
    let seen: Arc<Mutex<Vec<Arc<Seen>>>> = Arc::default();
    let record = seen.clone();
    let handler = move |req: &nikaia_std::http::Request| {
        let parts: Vec<u64> = (req.param().unwrap_or("").split('/'))
            .map(|p| p.parse().unwrap_or(0))
            .collect();
        let s = Arc::new(Seen::default());
        record.lock().unwrap().push(s.clone());
        let counted = Counted {
            next: 0,
            pieces: parts[0],
            size: parts[1] as usize,
            fail_after: None,
            seen: s,
        };
        match req.path().split('/').nth(1) {
            Some("len") => Produced::new(counted).length(parts[2]),
            Some("fail") => Produced::new(Counted {
                fail_after: Some(parts[2]),
                ..counted
            }),
            _ => Produced::new(counted),
        }
    };
    let handler = Arc::new(handler);
    let (a, b, c) = (handler.clone(), handler.clone(), handler);
    let running = start(
        Server::with_runtime(rt)
            .route("/gen/*p", move |req| a(req))
            .route("/len/*p", move |req| b(req))
            .route("/fail/*p", move |req| c(req)),
    );
    Served { running, seen }
}

impl Served {
    fn url(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}{path}",
            self.running.local_addr().port()
        )
    }

    /// The producer of the `n`th request made.
    fn seen(&self, n: usize) -> Arc<Seen> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.seen.lock().unwrap().get(n) {
                return s.clone();
            }
            assert!(Instant::now() < deadline, "no request {n}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn check_bytes(body: &[u8]) {
    for (i, b) in body.iter().enumerate() {
        assert_eq!(*b, byte_at(i as u64), "byte {i}");
    }
}

fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_generated_gib_is_read_byte_exact_chunked_with_memory_flat() {
    let s = serve();
    let before = vm_rss_kib();
    // 1 GiB in pieces of 64 KiB, read by curl and checked as it streams.
    let mut child = Command::new("curl")
        .args(["-sS", "--raw", "-D", "/dev/stderr", "-o", "-"])
        .arg(s.url("/gen/16384/65536"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut raw = Vec::new();
    out.read_to_end(&mut raw).unwrap();
    let mut head = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut head)
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert!(
        head.to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    // De-chunk and check every byte.
    let mut body = Vec::with_capacity(1 << 30);
    let mut at = 0;
    loop {
        let line_end = at + raw[at..].windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&raw[at..line_end]).unwrap(), 16).unwrap();
        at = line_end + 2;
        if size == 0 {
            assert_eq!(&raw[at..], b"\r\n", "the last chunk ends it");
            break;
        }
        body.extend_from_slice(&raw[at..at + size]);
        at += size + 2;
    }
    drop(raw);
    assert_eq!(body.len(), 1 << 30);
    check_bytes(&body);
    drop(body);
    let grown = vm_rss_kib().saturating_sub(before);
    let seen = s.seen(0);
    assert_eq!(
        seen.pulls.load(Ordering::SeqCst),
        16385,
        "one pull a piece, and the end"
    );
    assert_eq!(*seen.cancelled.lock().unwrap(), None);
    assert!(grown < 64 << 10, "the server held {grown} KiB more");
    let p = s.running.report().produced;
    assert_eq!(
        (p.started, p.ended, p.pulls, p.bytes),
        (1, 1, 16385, 1 << 30)
    );
}

#[test]
fn a_client_that_stops_reading_parks_the_producer_and_leaving_cancels_it() {
    let s = serve();
    let mut c = Client::connect(s.running.local_addr());
    // Endless in practice: 1 TiB.
    c.send("GET /gen/16777216/65536 HTTP/1.1\r\nHost: t\r\n\r\n");
    let seen = s.seen(0);
    // The pulls stop growing once the socket's buffers are full.
    let mut last = 0;
    let mut steady = 0;
    while steady < 20 {
        std::thread::sleep(Duration::from_millis(25));
        let now = seen.pulls.load(Ordering::SeqCst);
        steady = if now == last && now > 0 {
            steady + 1
        } else {
            0
        };
        last = now;
    }
    // What the kernel's buffers hold, no more: a few MiB at most.
    assert!(
        last < 256,
        "{last} pieces of 64 KiB pulled for a client that reads nothing"
    );
    assert_eq!(
        *seen.cancelled.lock().unwrap(),
        None,
        "parked, not cancelled"
    );
    drop(c);
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.cancelled.lock().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the producer was not cancelled");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(*seen.cancelled.lock().unwrap(), Some(Cancelled::Gone));
    assert!(seen.pulls.load(Ordering::SeqCst) <= last + 2);
    let p = s.running.report().produced;
    assert_eq!((p.started, p.cancelled, p.ended, p.failed), (1, 1, 0, 0));
}

#[test]
fn a_producer_that_fails_ends_the_answer_without_its_last_chunk() {
    let s = serve();
    let out = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{size_download}"])
        .arg(s.url("/fail/100/1000/7"))
        .output()
        .unwrap();
    // curl 18: the transfer closed with data outstanding.
    assert_eq!(out.status.code(), Some(18), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "7000");
    assert_eq!(
        *s.seen(0).cancelled.lock().unwrap(),
        None,
        "failed, not cancelled"
    );
}

#[test]
fn head_never_runs_the_producer_and_a_promised_length_is_sent_and_kept() {
    let s = serve();
    let mut c = Client::connect(s.running.local_addr());
    c.send("HEAD /gen/10/100 HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.read_reply(true).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(s.seen(0).pulls.load(Ordering::SeqCst), 0);
    // A length: sent as Content-Length, the body as it is.
    c.send("GET /len/10/100/1000 HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.reply().unwrap();
    assert_eq!(r.header("content-length"), Some("1000"));
    assert_eq!(r.header("transfer-encoding"), None);
    check_bytes(&r.body);
    assert_eq!(r.body.len(), 1000);
    // More than promised, or fewer: the connection ends short (logged).
    for target in ["/len/10/100/550", "/len/10/100/1500"] {
        let mut c = Client::connect(s.running.local_addr());
        c.send(format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n"));
        assert!(c.reply().is_err(), "{target}: the answer is cut short");
    }
    assert_eq!(s.running.report().produced.failed, 2);
    // HTTP/1.0: no length, the end of the connection ends it.
    let mut c = Client::connect(s.running.local_addr());
    c.send("GET /gen/3/100 HTTP/1.0\r\n\r\n");
    let mut all = Vec::new();
    c.reader().read_to_end(&mut all).unwrap();
    let text = String::from_utf8_lossy(&all);
    assert!(text.contains("Connection: close\r\n"), "{text}");
    assert!(
        !text.to_ascii_lowercase().contains("transfer-encoding"),
        "{text}"
    );
    let body = &all[all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4..];
    check_bytes(body);
    assert_eq!(body.len(), 300);
}

#[test]
fn over_h2_data_follows_the_window_and_a_failure_resets_the_stream() {
    let s = serve();
    let out = Command::new("nghttp")
        .args(["-v"])
        .arg(s.url("/gen/64/10000"))
        .output()
        .expect("nghttp runs (test.sh installs nghttp2-client)");
    let trace = String::from_utf8_lossy(&out.stdout);
    assert!(trace.contains(":status: 200"), "{trace}");
    let data: usize = trace
        .lines()
        .filter(|l| l.contains("recv DATA frame"))
        .filter_map(|l| l.split("length=").nth(1))
        .filter_map(|l| l.split(',').next()?.trim().parse::<usize>().ok())
        .sum();
    assert_eq!(data, 640_000);
    let out = Command::new("nghttp")
        .args(["-v"])
        .arg(s.url("/fail/64/10000/5"))
        .output()
        .unwrap();
    let trace = String::from_utf8_lossy(&out.stdout);
    assert!(trace.contains("recv RST_STREAM frame"), "{trace}");
    assert!(trace.contains("error_code=INTERNAL_ERROR"), "{trace}");
}

#[test]
fn over_h2_a_stream_that_is_not_read_parks_its_producer_and_siblings_go_on() {
    let s = serve();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/h2/produced.py");
    let port = s.running.local_addr().port().to_string();
    let mut child = Command::new("python3")
        .args([script, "127.0.0.1", &port, "/gen/16777216/10000"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs (test.sh installs PyPI h2)");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let seen: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(seen["stream"], 65535, "the stream's window, no more");
    assert_eq!(seen["sibling"], 100, "the sibling went on");
    let parked = s.seen(0);
    let mut last = 0;
    let mut steady = 0;
    while steady < 20 {
        std::thread::sleep(Duration::from_millis(25));
        let now = parked.pulls.load(Ordering::SeqCst);
        steady = if now == last { steady + 1 } else { 0 };
        last = now;
    }
    assert!(
        last <= 8,
        "{last} pulls of 10 000 bytes for a window of 65 535"
    );
    assert_eq!(*parked.cancelled.lock().unwrap(), None);
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while parked.cancelled.lock().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the producer was not cancelled");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(*parked.cancelled.lock().unwrap(), Some(Cancelled::Gone));
}

#[test]
fn a_client_that_takes_nothing_for_send_timeout_cancels_its_producer() {
    let mut rt = test_runtime();
    rt.send_timeout = Duration::from_millis(300);
    let s = serve_with(rt);
    let c = Client::connect(s.running.local_addr());
    let mut c = c;
    c.send("GET /gen/16777216/65536 HTTP/1.1\r\nHost: t\r\n\r\n");
    let seen = s.seen(0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.cancelled.lock().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the producer was not cancelled");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(*seen.cancelled.lock().unwrap(), Some(Cancelled::TimedOut));
    assert_eq!(s.running.report().send_timeouts, 1);
    drop(c);
}
