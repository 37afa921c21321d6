//! Request bodies over HTTP/1.1 (`spec/http.md`, "Request bodies"): how a
//! route takes its body is decided at head time — 413 and 401 before any
//! byte is read and without `100 Continue`, a refused body never parsed
//! as a request, streamed bodies with backpressure, and the body clocks.
//! Real sockets and curl; counters, not durations.

use nikaia_std::http::Aborted;
use nikaia_tests::bodies::{body_server, hash_answer, Probe};
use nikaia_tests::{start, test_runtime, Client};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

fn serve() -> (nikaia_std::http::Running, Arc<Probe>) {
    serve_with(test_runtime())
}

fn serve_with(rt: nikaia_std::rt::Runtime) -> (nikaia_std::http::Running, Arc<Probe>) {
    let (server, probe) = body_server(rt);
    (start(server), probe)
}

/// A body of `n` bytes that is not all one byte.
fn body(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

/// `body` in chunked framing, in chunks of `size`.
fn chunked(body: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for c in body.chunks(size) {
        out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        out.extend_from_slice(c);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Reads what arrives within `wait` (or until EOF) as text.
fn read_for(c: &mut Client, wait: Duration) -> String {
    c.set_read_timeout(wait);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match c.reader().read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    c.set_read_timeout(Duration::from_secs(10));
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn whole_and_streamed_bodies_by_length_and_chunked() {
    let (server, _) = serve();
    let mut c = Client::connect(server.local_addr());
    let b = body(300_000);
    c.send(format!(
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        b.len()
    ));
    c.send(&b);
    assert_eq!(c.reply().unwrap().body, b);
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    c.send(chunked(&b, 7000));
    assert_eq!(c.reply().unwrap().body, b);
    // Streamed: hashed as it arrives, length or chunked, the same answer.
    let big = body(5 << 20);
    c.send(format!(
        "POST /hash HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        big.len()
    ));
    c.send(&big);
    assert_eq!(c.reply().unwrap().text(), hash_answer(&big));
    c.send("PUT /hash HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    c.send(chunked(&big, 65_000));
    assert_eq!(c.reply().unwrap().text(), hash_answer(&big));
    // An empty chunked body, then the connection goes on.
    c.send("POST /hash HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
    assert_eq!(c.reply().unwrap().text(), hash_answer(b""));
    assert_eq!(c.get("/").text(), "hi");
    let bodies = server.report().bodies;
    assert_eq!((bodies.whole, bodies.streamed), (2, 3));
    assert_eq!(bodies.bytes, 2 * 300_000 + 2 * (5 << 20));
}

#[test]
fn expect_100_continue_only_once_the_body_is_wanted() {
    let (server, _) = serve();
    let addr = server.local_addr();
    // Over the limit by its Content-Length: 413, no 100, and the
    // connection closes (the client may never send the body).
    let mut c = Client::connect(addr);
    c.send(
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\nExpect: 100-continue\r\n\r\n",
    );
    let seen = read_for(&mut c, Duration::from_secs(3));
    assert!(seen.starts_with("HTTP/1.1 413 "), "{seen}");
    assert!(!seen.contains("100 Continue"), "{seen}");
    // The program refuses from the head: 401, no 100.
    let mut c = Client::connect(addr);
    c.send("PUT /guarded HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    let seen = read_for(&mut c, Duration::from_secs(3));
    assert!(seen.starts_with("HTTP/1.1 401 "), "{seen}");
    assert!(!seen.contains("100 Continue"), "{seen}");
    // Let through: 100 Continue first, then the body, then the answer.
    let mut c = Client::connect(addr);
    c.send("PUT /guarded HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer open-sesame\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 100);
    c.send("hello");
    assert_eq!(c.reply().unwrap().text(), hash_answer(b"hello"));
    let bodies = server.report().bodies;
    assert_eq!(
        (bodies.refused, bodies.bytes),
        (2, 5),
        "nothing read of the refused bodies"
    );
}

#[test]
fn curl_waits_for_100_continue_and_sends_nothing_refused() {
    let (server, _) = serve();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("upload");
    std::fs::write(&file, body(3 << 20)).unwrap();
    let curl = |path: &str, auth: &str| {
        let out = Command::new("curl")
            .args([
                "-sv",
                "--expect100-timeout",
                "30",
                "-H",
                "Expect: 100-continue",
            ])
            .args(["-H", auth, "-T"])
            .arg(&file)
            .arg(format!("http://{}{path}", server.local_addr()))
            .output()
            .expect("curl runs");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (out, trace) = curl("/guarded", "X-No: auth");
    assert!(trace.contains("< HTTP/1.1 401"), "{trace}");
    assert!(!trace.contains("100 Continue"), "{trace}");
    assert_eq!(out, "who are you?");
    let (out, trace) = curl("/guarded", "Authorization: Bearer open-sesame");
    assert!(trace.contains("< HTTP/1.1 100 Continue"), "{trace}");
    assert_eq!(out, hash_answer(&body(3 << 20)));
    let bodies = server.report().bodies;
    assert_eq!((bodies.refused, bodies.bytes), (1, 3 << 20));
}

#[test]
fn a_refused_small_body_is_drained_and_the_next_request_answered() {
    let (server, _) = serve();
    let mut c = Client::connect(server.local_addr());
    // 1 200 bytes to a route that takes 1 000: the body, which looks like
    // a request, is thrown away; the real next request is answered.
    let smuggled = "GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n";
    let mut b = smuggled.repeat(1200 / smuggled.len() + 1).into_bytes();
    b.truncate(1200);
    c.send(format!(
        "POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        b.len()
    ));
    c.send(&b);
    c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    let refused = c.reply().unwrap();
    assert_eq!(refused.status, 413);
    assert_ne!(refused.header("connection"), Some("close"));
    assert_eq!(c.reply().unwrap().text(), "hi");
    // A body sent to a route that takes none, the same way.
    c.send(format!(
        "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        b.len()
    ));
    c.send(&b);
    c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.reply().unwrap().text(), "hi");
    assert_eq!(c.reply().unwrap().text(), "hi");
    // And chunked, counted as it arrives: past 1 000, 413.
    c.send("POST /small HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    c.send(chunked(&b, 100));
    let refused = c.reply().unwrap();
    assert_eq!(refused.status, 413);
    // Nothing else was answered: no request was read from a body.
    assert!(c.is_closed() || c.get("/").text() == "hi");
    let bodies = server.report().bodies;
    assert_eq!(bodies.drained, 2);
}

#[test]
fn a_body_thrown_away_too_slowly_ends_at_body_timeout_with_its_answer() {
    let mut rt = test_runtime();
    rt.body_timeout = Duration::from_millis(500);
    let (server, _) = serve_with(rt);
    // Bodies no one reads, trickled a byte at a time, each byte well
    // within body-idle-timeout: one answered after the body (a route
    // that takes none), one answered before it (refused from its head).
    // The refused one's answer went before the drain, meant to keep the
    // connection; the other's says it closes.
    for (head, status, close) in [
        (
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n",
            405,
            Some("close"),
        ),
        (
            "PUT /guarded HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n",
            401,
            None,
        ),
    ] {
        let mut c = Client::connect(server.local_addr());
        c.send(head);
        let mut stream = c.stream().try_clone().unwrap();
        let trickle = std::thread::spawn(move || {
            let mut sent = 0;
            while sent < 1000 && stream.write_all(b"x").is_ok() {
                sent += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            sent
        });
        let reply = c.reply().unwrap();
        assert_eq!(reply.status, status, "{head}");
        assert_eq!(reply.header("connection"), close, "{head}");
        // The connection closes while the body is still trickling: the
        // drain stopped at its deadline, not at the body's end.
        let mut rest = Vec::new();
        let _ = c.reader().read_to_end(&mut rest);
        let sent = trickle.join().unwrap();
        assert!(
            sent < 1000,
            "{head}: the whole body was waited for ({sent})"
        );
    }
}

#[test]
fn a_refused_large_body_closes_the_connection_unread() {
    let (server, _) = serve();
    let mut c = Client::connect(server.local_addr());
    let b = body(10 << 20);
    c.send("POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 10485760\r\n\r\n");
    // The client may still be sending when the server closes; what it
    // reads is the 413 and the end, never an answer to a request in the
    // body.
    let sender = {
        let mut s = c.stream().try_clone().unwrap();
        std::thread::spawn(move || {
            let _ = s.write_all(&b);
            let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        })
    };
    let refused = c.reply().unwrap();
    assert_eq!(refused.status, 413);
    assert_eq!(refused.header("connection"), Some("close"));
    assert!(c.is_closed());
    sender.join().unwrap();
    let bodies = server.report().bodies;
    assert_eq!((bodies.refused, bodies.bytes, bodies.drained), (1, 0, 0));
}

#[test]
fn a_chunked_stream_past_its_limit_is_413_and_closed() {
    let (server, probe) = serve();
    let mut c = Client::connect(server.local_addr());
    c.send("POST /hash-small HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    let _ = c.stream().write_all(&chunked(&body(300_000), 10_000));
    let r = c.reply().unwrap();
    assert_eq!(r.status, 413);
    assert!(c.is_closed());
    assert_eq!(*probe.aborted.lock().unwrap(), [Aborted::TooLarge]);
    // By its length, refused from the head: the sink was never made.
    let mut c = Client::connect(server.local_addr());
    c.send("POST /hash-small HTTP/1.1\r\nHost: t\r\nContent-Length: 100001\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 413);
    assert_eq!(probe.aborted.lock().unwrap().len(), 1);
}

#[test]
fn a_coded_body_is_415_unless_the_route_takes_it() {
    let (server, _) = serve();
    let mut c = Client::connect(server.local_addr());
    c.send(
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
    );
    assert_eq!(c.reply().unwrap().status, 415);
    // The three bytes were thrown away: the connection goes on.
    assert_eq!(c.get("/").text(), "hi");
    c.send(
        "POST /coded HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
    );
    assert_eq!(c.reply().unwrap().text(), "3 coded bytes");
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Encoding: identity\r\nContent-Length: 3\r\n\r\nabc");
    assert_eq!(c.reply().unwrap().text(), "abc");
}

/// Sends `total` bytes of a body, stopping as soon as the socket takes no
/// more for a while; how much it sent.
fn send_until_blocked(s: &mut std::net::TcpStream, total: usize) -> usize {
    s.set_write_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let chunk = vec![b'x'; 64 << 10];
    let mut sent = 0;
    while sent < total {
        let n = (total - sent).min(chunk.len());
        match s.write(&chunk[..n]) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    s.set_write_timeout(None).unwrap();
    sent
}

#[test]
fn a_paused_sink_stops_the_reading_and_its_clocks() {
    let mut rt = test_runtime();
    // Clocks far shorter than the pause: a paused body is not timed.
    rt.body_idle_timeout = Duration::from_millis(300);
    rt.body_rate_grace = Duration::from_millis(300);
    let (server, probe) = serve_with(rt);
    let mut c = Client::connect(server.local_addr());
    let total = 64 << 20;
    c.send(format!(
        "POST /hold HTTP/1.1\r\nHost: t\r\nContent-Length: {total}\r\n\r\n"
    ));
    let mut s = c.stream().try_clone().unwrap();
    // The sink pauses after its first piece: the socket fills and the
    // client can send no more than what the kernel buffers.
    let sent = send_until_blocked(&mut s, total);
    let held = probe.held.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        sent < total,
        "the client could send it all: nothing held back"
    );
    assert!(held <= 64 << 10, "the sink took {held} bytes while paused");
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        server.report().bodies.timeouts,
        0,
        "a paused body timed out"
    );
    // Resumed piece by piece (a thread resumes each pause as it comes),
    // the rest arrives.
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let resumer = {
        let (probe, done) = (probe.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                if probe.resume_all() == 0 {
                    std::thread::yield_now();
                }
            }
        })
    };
    let writer = std::thread::spawn(move || {
        let rest = vec![b'x'; total - sent];
        s.write_all(&rest).unwrap();
    });
    let reply = c.reply().unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    resumer.join().unwrap();
    writer.join().unwrap();
    assert_eq!(reply.text(), hash_answer(&vec![b'x'; total]));
    assert_eq!(
        probe.held.load(std::sync::atomic::Ordering::SeqCst),
        total as u64
    );
}

/// Connects and sends a head and `first` bytes of its body, then stalls.
fn stall(addr: SocketAddr, head: &str, first: usize) -> Client {
    let mut c = Client::connect(addr);
    c.send(head);
    c.send(vec![b'x'; first]);
    c
}

#[test]
fn each_body_clock_answers_408_and_closes_while_others_are_served() {
    let mut rt = test_runtime();
    rt.body_timeout = Duration::from_millis(600);
    rt.body_idle_timeout = Duration::from_millis(600);
    rt.body_min_rate = 50_000;
    rt.body_rate_grace = Duration::from_millis(600);
    let (server, probe) = serve_with(rt);
    let addr = server.local_addr();
    // A whole body past its total deadline.
    let mut whole = stall(
        addr,
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n",
        10,
    );
    // A streamed body that pauses too long.
    let mut idle = stall(
        addr,
        "POST /hash HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n",
        10,
    );
    // A streamed body that trickles below the minimum rate, never idle
    // for long.
    let mut slow = stall(
        addr,
        "POST /hash HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n",
        10,
    );
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let trickle = {
        let (mut s, done) = (slow.stream().try_clone().unwrap(), done.clone());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                if s.write_all(b"xxxxxxxxxx").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    // Meanwhile another client is served.
    let mut other = Client::connect(addr);
    for _ in 0..5 {
        assert_eq!(other.get("/").text(), "hi");
        std::thread::sleep(Duration::from_millis(100));
    }
    for c in [&mut whole, &mut idle] {
        let r = c.reply().unwrap();
        assert_eq!(r.status, 408);
        assert!(c.is_closed());
    }
    assert_eq!(slow.reply().unwrap().status, 408);
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    trickle.join().unwrap();
    assert_eq!(server.report().bodies.timeouts, 3);
    assert_eq!(
        *probe.aborted.lock().unwrap(),
        [Aborted::TooSlow, Aborted::TooSlow]
    );
    assert_eq!(other.get("/").text(), "hi");
}

#[test]
fn a_client_that_leaves_mid_body_aborts_its_sink() {
    let (server, probe) = serve();
    let c = stall(
        server.local_addr(),
        "POST /hash HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n",
        500,
    );
    c.stream().shutdown(std::net::Shutdown::Both).unwrap();
    for _ in 0..200 {
        if !probe.aborted.lock().unwrap().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(*probe.aborted.lock().unwrap(), [Aborted::Gone]);
}
