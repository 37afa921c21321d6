//! Request bodies under load (`spec/http.md`, "Request bodies"): a 1 GiB
//! streamed body (4 GiB with `NIKAIA_BODY_GIB=4`, the full mode) over
//! HTTP/1.1 (curl) and HTTP/2 (nghttp) with the server's resident memory
//! sampled every 100 ms and its threads counted; and 1 000 slow bodies
//! beside ten fast ones. Counters and bytes, not durations.

use nikaia_tests::bodies::{body_server, hash_answer};
use nikaia_tests::load::{env_number, sampled, server_threads, thread_names};
use nikaia_tests::{start, test_runtime, Client};
use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    env_number("NIKAIA_BODY_GIB", 1)
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
