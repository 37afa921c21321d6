//! Server-sent events through a produced body (`spec/http.md`,
//! "Server-sent events"): curl `-N` sees each event as it is sent, before
//! the next one exists; a client that does not read fills the bounded
//! queue and leaving closes the stream; HEAD runs nothing; the server
//! stopping ends each stream with its last chunk (an `EventSource`
//! reconnects; `events_upgrade.rs` has the upgrade); HTTP/2 carries it too.

use nikaia_std::http::{event_stream, Cancelled, Event, EventError, Events, Server};
use nikaia_tests::{start, test_runtime, Client};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A server whose `/events` answers an event stream and hands its feed to
/// the test.
fn serve() -> (nikaia_std::http::Running, mpsc::Receiver<Events>) {
    serve_with(test_runtime())
}

fn serve_with(rt: nikaia_std::rt::Runtime) -> (nikaia_std::http::Running, mpsc::Receiver<Events>) {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let running = start(Server::with_runtime(rt).route("/events", move |_| {
        let (events, answer) = event_stream();
        let _ = tx.lock().unwrap().send(events);
        answer
    }));
    (running, rx)
}

fn feed(rx: &mpsc::Receiver<Events>) -> Events {
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the handler ran")
}

/// Waits until `events` says the stream ended, and why.
fn closed(events: &Events) -> Cancelled {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match events.send(&Event::data("probe")) {
            Err(EventError::Closed(why)) => return why,
            _ if Instant::now() > deadline => panic!("the stream did not close"),
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

#[test]
fn curl_sees_each_event_as_it_is_sent() {
    let (running, rx) = serve();
    let url = format!("http://127.0.0.1:{}/events", running.local_addr().port());
    let mut curl = Command::new("curl")
        .args(["-sS", "-N", "-D", "-", &url])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(curl.stdout.take().unwrap()).lines();
    let events = feed(&rx);
    let mut head = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.trim().is_empty() {
            break;
        }
        head.push(line.to_ascii_lowercase());
    }
    assert!(
        head.iter()
            .any(|l| l.starts_with("content-type: text/event-stream")),
        "{head:?}"
    );
    assert!(
        head.iter()
            .any(|l| l.starts_with("cache-control: no-store")),
        "{head:?}"
    );
    // Each event is read before the next is made.
    for i in 0..5 {
        events
            .send(&Event::data(format!("tick {i}")).id(i.to_string()))
            .unwrap();
        let mut got = Vec::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            if line.is_empty() {
                break;
            }
            got.push(line);
        }
        assert_eq!(got, [format!("id: {i}"), format!("data: tick {i}")]);
    }
    // The last handle dropped: the answer ends whole, curl succeeds.
    drop(events);
    assert!(lines.next().is_none());
    assert!(curl.wait().unwrap().success());
    let p = running.report().produced;
    assert_eq!((p.started, p.ended, p.cancelled), (1, 1, 0));
}

#[test]
fn a_client_that_does_not_read_fills_the_queue_and_leaving_closes_it() {
    let (running, rx) = serve();
    let mut c = Client::connect(running.local_addr());
    c.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n");
    let events = feed(&rx);
    let big = Event::data("x".repeat(8 << 10));
    let mut sent = 0u64;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match events.send(&big) {
            Ok(()) => sent += 1,
            Err(EventError::Full) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(Instant::now() < deadline, "the queue never filled");
        // Let the worker pull what it can while the socket takes it.
        std::thread::sleep(Duration::from_millis(1));
    }
    // What the kernel's buffers took, and the queue's bound: not more.
    assert!(
        sent < 1500,
        "{sent} events of 8 KiB taken by a client that reads nothing"
    );
    drop(c);
    assert_eq!(closed(&events), Cancelled::Gone);
    assert_eq!(running.report().produced.cancelled, 1);
}

#[test]
fn head_runs_nothing_and_stopping_ends_each_stream_whole() {
    let (running, rx) = serve();
    let mut c = Client::connect(running.local_addr());
    c.send("HEAD /events HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.read_reply(true).unwrap().status, 200);
    let head_feed = feed(&rx);
    assert!(head_feed.is_closed(), "a HEAD's stream is never sent");
    // Two readers of streams; the server stops.
    let url = format!("http://127.0.0.1:{}/events", running.local_addr().port());
    let curls: Vec<_> = (0..2)
        .map(|_| {
            let child = Command::new("curl")
                .args(["-sS", "-N", &url])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let events = feed(&rx);
            events.send(&Event::data("hello")).unwrap();
            (child, events)
        })
        .collect();
    let mut readers = Vec::new();
    for (mut child, events) in curls {
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "data: hello");
        readers.push((child, lines, events));
    }
    running.shutdown();
    for (mut child, mut lines, events) in readers {
        // The blank line after the event, then the end: a whole answer.
        assert_eq!(lines.next().unwrap().unwrap(), "");
        assert!(lines.next().is_none());
        assert!(
            child.wait().unwrap().success(),
            "the stream ended with its last chunk"
        );
        assert_eq!(closed(&events), Cancelled::Stopping);
    }
    running.wait();
}

#[test]
fn over_h2_events_arrive_as_data_and_a_reset_closes_the_stream() {
    let (running, rx) = serve();
    let url = format!("http://127.0.0.1:{}/events", running.local_addr().port());
    let mut nghttp = Command::new("nghttp")
        .args(["-v", &url])
        .stdout(Stdio::piped())
        .spawn()
        .expect("nghttp runs (test.sh installs nghttp2-client)");
    let events = feed(&rx);
    events.send(&Event::data("over h2")).unwrap();
    let mut lines = BufReader::new(nghttp.stdout.take().unwrap()).lines();
    let mut seen = false;
    for line in lines.by_ref() {
        if line.unwrap().contains("data: over h2") {
            seen = true;
            break;
        }
    }
    assert!(seen);
    drop(events);
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert!(rest.iter().any(|l| l.contains("END_STREAM")), "{rest:?}");
    assert!(nghttp.wait().unwrap().success());
}

#[test]
fn a_client_that_leaves_a_quiet_stream_closes_it_without_an_event_sent() {
    let (running, rx) = serve();
    let mut c = Client::connect(running.local_addr());
    c.send("GET /events HTTP/1.1\r\nHost: t\r\n\r\n");
    let events = feed(&rx);
    assert_eq!(c.read_reply(true).unwrap().status, 200);
    assert!(!events.is_closed());
    drop(c);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !events.is_closed() {
        assert!(Instant::now() < deadline, "the quiet stream was not closed");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        events.send(&Event::data("late")),
        Err(EventError::Closed(Cancelled::Gone))
    );
}

#[test]
fn a_quiet_stream_outlives_send_timeout_on_both_protocols() {
    let mut rt = test_runtime();
    rt.send_timeout = Duration::from_millis(200);
    let (running, rx) = serve_with(rt);
    let url = format!("http://127.0.0.1:{}/events", running.local_addr().port());
    for http2 in [false, true] {
        let mut args = vec!["-sS", "-N"];
        if http2 {
            args.push("--http2-prior-knowledge");
        }
        args.push(&url);
        let mut curl = Command::new("curl")
            .args(&args)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(curl.stdout.take().unwrap()).lines();
        let events = feed(&rx);
        events.send(&Event::data("before")).unwrap();
        assert_eq!(lines.next().unwrap().unwrap(), "data: before");
        // Quiet for several send-timeouts: the wait is the producer's.
        std::thread::sleep(Duration::from_millis(1000));
        events.send(&Event::data("after")).unwrap();
        assert_eq!(lines.next().unwrap().unwrap(), "");
        assert_eq!(
            lines.next().unwrap().unwrap(),
            "data: after",
            "http2: {http2}"
        );
        drop(events);
        assert!(curl.wait().unwrap().success());
    }
    assert_eq!(running.report().send_timeouts, 0);
}
