//! A browser's `EventSource` on an event stream (`spec/http.md`,
//! "Server-sent events"): headless Chromium loads a page from the same
//! program, which reports back each event the browser received; the test
//! sends events one at a time, each seen before the next is sent, then
//! ends the stream, and the browser reconnects by itself (after the
//! `retry` the stream told it) and receives the next stream's events.

use nikaia_std::html::Raw;
use nikaia_std::http::{event_stream, Event, Events, Server};
use nikaia_tests::{start, test_runtime};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

const PAGE: &str = r#"<!doctype html>
<script>
const es = new EventSource('/events');
es.onmessage = (e) => fetch('/seen?' + encodeURIComponent(e.data));
</script>
"#;

#[test]
fn headless_chromium_receives_each_event_and_reconnects_when_a_stream_ends() {
    let (feeds_tx, feeds) = mpsc::channel::<(Events, Option<String>)>();
    let (seen_tx, seen) = mpsc::channel::<String>();
    let (feeds_tx, seen_tx) = (Mutex::new(feeds_tx), Mutex::new(seen_tx));
    let running = start(
        Server::with_runtime(test_runtime())
            .route("/", |_| Raw(PAGE.into()))
            .route("/events", move |req| {
                let (events, answer) = event_stream();
                let last = req.header("last-event-id").map(str::to_owned);
                let _ = feeds_tx.lock().unwrap().send((events, last));
                answer
            })
            .route("/seen", move |req| {
                let _ = seen_tx
                    .lock()
                    .unwrap()
                    .send(req.query().unwrap_or("").to_owned());
                nikaia_std::http::Response::new(204)
            }),
    );
    let profile = tempfile::tempdir().unwrap();
    let mut chromium = Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("http://127.0.0.1:{}/", running.local_addr().port()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium runs (test.sh installs it)");
    let wait = Duration::from_secs(60);
    let (first, last) = feeds
        .recv_timeout(wait)
        .expect("the page opened the stream");
    assert_eq!(last, None);
    for (i, word) in ["one", "two", "three"].iter().enumerate() {
        // A short retry, so the reconnect below comes soon.
        let event = Event::data(*word).id(i.to_string()).retry(100);
        first.send(&event).unwrap();
        assert_eq!(
            seen.recv_timeout(wait).unwrap(),
            *word,
            "seen before the next is sent"
        );
    }
    // The stream ends: the browser reconnects, saying the last id it saw.
    drop(first);
    let (second, last) = feeds.recv_timeout(wait).expect("the browser reconnected");
    assert_eq!(last.as_deref(), Some("2"));
    second.send(&Event::data("after")).unwrap();
    assert_eq!(seen.recv_timeout(wait).unwrap(), "after");
    let _ = chromium.kill();
    let _ = chromium.wait();
}
