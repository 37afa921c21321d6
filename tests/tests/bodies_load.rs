//! Request bodies under load (`spec/http.md`, "Request bodies"): a 1 GiB
//! streamed body (4 GiB with `NIKAIA_BODY_GIB=4`, the full mode) over
//! HTTP/1.1 (curl) and HTTP/2 (nghttp) with the server's resident memory
//! sampled every 100 ms and its threads counted; and 1 000 slow bodies
//! beside ten fast ones. Counters and bytes, not durations.

use nikaia_tests::bodies::{body_server, hash_answer};
use nikaia_tests::{start, test_runtime, Client};
use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The server runs in this process: its resident memory is the process's.
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// The server's threads (its workers, io pool and helpers are named
/// `nikaia-…`).
fn server_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("nikaia"))
        .count()
}

/// The server threads' names, for a failure's message.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("nikaia"))
        .map(|n| n.trim().to_owned())
        .collect()
}

/// Samples the server every 100 ms while `run` goes: the most its
/// resident memory grew by, and every thread count seen.
fn sampled(run: impl FnOnce()) -> (u64, Vec<usize>) {
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let threads = Arc::new(Mutex::new(Vec::new()));
    let base = rss_bytes();
    let sampler = {
        let (stop, peak, threads) = (stop.clone(), peak.clone(), threads.clone());
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                peak.fetch_max(rss_bytes().saturating_sub(base), SeqCst);
                let n = server_threads();
                let mut seen = threads.lock().unwrap();
                if !seen.contains(&n) {
                    seen.push(n);
                }
                drop(seen);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    run();
    stop.store(true, SeqCst);
    sampler.join().unwrap();
    let seen = threads.lock().unwrap().clone();
    (peak.load(SeqCst), seen)
}

/// The memory test runs alone: the other's clients would count as the
/// server's.
static ALONE: Mutex<()> = Mutex::new(());

/// The server's thread count once every thread it started is running
/// (a thread takes its name only once it runs).
fn settled_threads() -> usize {
    let mut last = server_threads();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = server_threads();
        if now == last {
            return now;
        }
        last = now;
    }
}

/// Stops `server` and waits for its threads to be gone, so the next test
/// counts only its own.
fn stop(server: nikaia_std::http::Running) {
    drop(server);
    for _ in 0..500 {
        if server_threads() == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the server's threads outlived it: {:?}", thread_names());
}

fn gib() -> u64 {
    std::env::var("NIKAIA_BODY_GIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

#[test]
fn a_gib_streamed_over_each_protocol_holds_memory_and_threads_flat() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let (server, _) = body_server(test_runtime());
    let server = start(server);
    let size = gib() << 30;
    // A sparse file: the size without the disk.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big");
    std::fs::File::create(&file).unwrap().set_len(size).unwrap();
    let before = settled_threads();
    let addr = server.local_addr();
    let (grew, threads) = sampled(|| {
        let out = Command::new("curl")
            .args(["-sS", "-T"])
            .arg(&file)
            .arg(format!("http://{addr}/count"))
            .output()
            .expect("curl runs");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            size.to_string(),
            "{out:?}"
        );
        let out = Command::new("nghttp")
            .arg("-d")
            .arg(&file)
            .arg(format!("http://{addr}/count"))
            .output()
            .expect("nghttp runs");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            size.to_string(),
            "{out:?}"
        );
    });
    eprintln!(
        "{} GiB each way: resident memory grew by {} KiB at most; server threads seen {threads:?}",
        gib(),
        grew >> 10
    );
    assert!(
        grew <= 32 << 20,
        "resident memory grew by {} MiB",
        grew >> 20
    );
    assert_eq!(threads, [before], "the server's thread count changed");
    let bodies = server.report().bodies;
    assert_eq!((bodies.streamed, bodies.bytes), (2, 2 * size));
    stop(server);
}

#[test]
fn a_thousand_slow_bodies_do_not_hold_back_ten_fast_ones() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let (server, _) = body_server(test_runtime());
    let server = start(server);
    let addr = server.local_addr();
    let before = settled_threads();
    // 1 000 bodies of 60 KiB, each sent at 1 KiB/s (100 bytes every
    // 100 ms) until the fast ones are done, then the rest at once.
    const SLOW: usize = 1000;
    const SLOW_BODY: usize = 60 << 10;
    let mut slow: Vec<TcpStream> = (0..SLOW)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            let head =
                format!("POST /hash HTTP/1.1\r\nHost: t\r\nContent-Length: {SLOW_BODY}\r\n\r\n");
            s.write_all(head.as_bytes()).unwrap();
            s
        })
        .collect();
    let fast_done = Arc::new(AtomicBool::new(false));
    let trickle = {
        let fast_done = fast_done.clone();
        std::thread::spawn(move || {
            let mut sent = 0;
            let mut sent_when_fast_done = None;
            while sent < SLOW_BODY {
                let n = match fast_done.load(SeqCst) {
                    false => 100.min(SLOW_BODY - sent),
                    true => {
                        sent_when_fast_done.get_or_insert(sent);
                        SLOW_BODY - sent
                    }
                };
                for s in &mut slow {
                    s.write_all(&vec![b's'; n]).unwrap();
                }
                sent += n;
                std::thread::sleep(Duration::from_millis(100));
            }
            (slow, sent_when_fast_done)
        })
    };
    // Ten fast bodies of 8 MiB each, all at once, at full speed.
    let fast: Vec<_> = (0..10)
        .map(|i| {
            std::thread::spawn(move || {
                let body: Vec<u8> = (0..8 << 20).map(|j| ((i + j) % 253) as u8).collect();
                let mut c = Client::connect(addr);
                c.send(format!(
                    "POST /hash HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                ));
                c.send(&body);
                assert_eq!(c.reply().unwrap().text(), hash_answer(&body));
            })
        })
        .collect();
    for f in fast {
        f.join().unwrap();
    }
    assert_eq!(server.report().bodies.streamed, 10);
    assert_eq!(
        server_threads(),
        before,
        "a thread per body: {:?}",
        thread_names()
    );
    fast_done.store(true, SeqCst);
    let (slow, sent_when_fast_done) = trickle.join().unwrap();
    // Every fast body was answered while the slow ones were still coming.
    assert!(
        sent_when_fast_done.is_some_and(|n| n < SLOW_BODY),
        "the slow bodies ended before the fast ones"
    );
    let expected = hash_answer(&[b's'; SLOW_BODY]);
    for s in slow {
        let mut c = Client::from_stream(s);
        assert_eq!(c.reply().unwrap().text(), expected);
    }
    assert_eq!(server.report().bodies.streamed, 10 + SLOW as u64);
    stop(server);
}
