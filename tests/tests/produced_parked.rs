//! A producer that waits costs nothing until it has something, on every
//! protocol (`spec/http.md`, "Produced bodies"): whatever wakes the
//! connection meanwhile — the client's bytes, the socket taking more — a
//! body whose producer said `Later` is not pulled again until a handle
//! it took wakes it. Counted in pulls per event, with an event stream and
//! with a producer of our own that takes a new handle on every pull and
//! drops the one before (each drop is a wake of an old handle, which
//! must not start a pull). No test asserts a duration.

use bytes::Bytes;
use nikaia_std::http::{event_stream, Event, Events, Produced, Producer, Pull, Pulled, Resume};
use nikaia_tests::{start, test_runtime, Client};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// The pieces the test gives, and the handle the producer holds.
#[derive(Default)]
struct Feed {
    pieces: Mutex<(VecDeque<Bytes>, Option<Resume>)>,
    pulls: AtomicU64,
}

impl Feed {
    /// Gives the producer `piece` and wakes it with its newest handle.
    fn give(&self, piece: &str) {
        let mut held = self.pieces.lock().unwrap();
        held.0.push_back(Bytes::from(piece.to_owned()));
        let handle = held.1.take();
        drop(held);
        handle.expect("the producer holds a handle").resume();
    }
}

/// Takes a new handle on every pull, dropping the one before.
struct Restless(Arc<Feed>);

impl Producer for Restless {
    fn pull(&mut self, pull: &mut Pull<'_>) -> Pulled {
        self.0.pulls.fetch_add(1, Ordering::SeqCst);
        let mut held = self.0.pieces.lock().unwrap();
        let old = held.1.replace(pull.later());
        let piece = held.0.pop_front();
        drop(held);
        // The old handle woken by its drop, outside the lock.
        drop(old);
        match piece {
            Some(p) => Pulled::Piece(p),
            None => Pulled::Later,
        }
    }
}

enum Fed {
    Events(Events),
    Own(Arc<Feed>),
}

fn serve() -> (nikaia_std::http::Running, mpsc::Receiver<Fed>) {
    let (tx, rx) = mpsc::channel();
    let (tx, tx2) = (Mutex::new(tx.clone()), Mutex::new(tx));
    let running = start(
        nikaia_std::http::Server::with_runtime(test_runtime())
            .route("/events", move |_| {
                let (events, answer) = event_stream();
                let _ = tx.lock().unwrap().send(Fed::Events(events));
                answer
            })
            .route("/own", move |_| {
                let feed = Arc::new(Feed::default());
                let _ = tx2.lock().unwrap().send(Fed::Own(feed.clone()));
                Produced::new(Restless(feed))
            }),
    );
    (running, rx)
}

const EVENTS: u64 = 5;

/// Sends `EVENTS` events (or pieces), each read by the client before the
/// next, with quiet stretches between them in which `poke` wakes the
/// connection; the pulls the server made.
fn pulls_for(
    running: &nikaia_std::http::Running,
    fed: Fed,
    next_line: &mut dyn FnMut() -> String,
    poke: &mut dyn FnMut(),
) -> u64 {
    let before = running.report().produced.pulls;
    for i in 0..EVENTS {
        // Quiet: the producer has nothing; the client pokes.
        for _ in 0..5 {
            poke();
            std::thread::sleep(Duration::from_millis(20));
        }
        let text = format!("event {i}");
        match &fed {
            Fed::Events(e) => e.send(&Event::data(&text)).unwrap(),
            Fed::Own(f) => f.give(&format!("data: {text}\n\n")),
        }
        loop {
            let line = next_line();
            if line.contains(&text) {
                break;
            }
        }
    }
    for _ in 0..5 {
        poke();
        std::thread::sleep(Duration::from_millis(20));
    }
    let pulls = running.report().produced.pulls - before;
    if let Fed::Own(f) = &fed {
        // The server's counter and the producer's own agree.
        assert_parked(f.pulls.load(Ordering::SeqCst), "the producer's count");
    }
    pulls
}

/// About two pulls an event (the one that finds it, the one that finds
/// nothing more), and none between them.
fn assert_parked(pulls: u64, what: &str) {
    assert!(
        pulls <= 2 * EVENTS + 2,
        "{what}: {pulls} pulls for {EVENTS} events"
    );
}

#[test]
fn over_http1_a_waiting_producer_is_not_pulled_when_the_client_pokes() {
    let (running, rx) = serve();
    for path in ["/events", "/own"] {
        let mut c = Client::connect(running.local_addr());
        c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
        let fed = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(c.read_reply(true).unwrap().status, 200);
        let mut writer = c.stream().try_clone().unwrap();
        let mut poke = || {
            // Bytes after the request: the connection wakes to read them.
            let _ = std::io::Write::write_all(&mut writer, b"\r\n");
        };
        let mut next_line = || {
            let mut line = String::new();
            c.reader().read_line(&mut line).unwrap();
            line
        };
        let pulls = pulls_for(&running, fed, &mut next_line, &mut poke);
        assert_parked(pulls, path);
    }
}

#[test]
fn over_http2_a_waiting_producer_is_not_pulled_again_by_an_old_handle() {
    let (running, rx) = serve();
    for path in ["/events", "/own"] {
        let url = format!("http://127.0.0.1:{}{path}", running.local_addr().port());
        let mut curl = Command::new("curl")
            .args(["-sS", "-N", "--http2-prior-knowledge", &url])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(curl.stdout.take().unwrap()).lines();
        let fed = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let mut next_line = || lines.next().unwrap().unwrap();
        let pulls = pulls_for(&running, fed, &mut next_line, &mut || {});
        assert_parked(pulls, path);
        let _ = curl.kill();
        let _ = curl.wait();
    }
}
