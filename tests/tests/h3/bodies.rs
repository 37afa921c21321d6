//! Requests with bodies and answers that are produced, over HTTP/3 as over
//! HTTP/1.1 and HTTP/2: bodies taken whole and streamed to a sink, uploads
//! to `nikaia serve`'s writer read back, an event stream.

use super::equality::{compare, curl_over, h3_request, run};
use super::{h3_get, h3_runtime, sha256, H3Answer, H3Request};
use nikaia_std::http::{event_stream, Event, EventError, Events, Server};
use nikaia_tests::bodies::{body_server, hash_answer};
use nikaia_tests::corpus::{case, random, Case};
use nikaia_tests::curl::CurlAnswer;
use nikaia_tests::serve::serve_dir;
use nikaia_tests::uploads::{Site, ALICE, RULES};
use nikaia_tests::{start, TestPki};
use std::path::Path;
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// Writes `bytes` to `name` in `dir`; its path, for curl's `@` and `-T`.
fn file(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A body taken whole (`req.body()`), refused by its limit, streamed to a
/// sink that hashes it, refused by the program from its head: the same
/// answers over the three protocols; and a body sent over h3 in eight DATA
/// frames reaches the sink whole.
#[test]
fn request_bodies_whole_and_streamed_are_taken_the_same_over_h3() {
    let pki = TestPki::new();
    let (server, probe) = body_server(h3_runtime(&pki));
    let server = start(server);
    let tmp = tempfile::tempdir().unwrap();
    let small = random(10_000, 21);
    let big = random((1 << 20) + 3, 22);
    let (s, b) = (
        file(tmp.path(), "small", &small),
        file(tmp.path(), "big", &big),
    );
    let (at_s, at_b) = (format!("@{s}"), format!("@{b}"));
    let bearer = "Authorization: Bearer open-sesame";
    let cases = [
        case("no body", 0, "/", &[], 200),
        case("whole", 0, "/echo", &["--data-binary", &at_s], 200),
        case(
            "whole, over its limit",
            0,
            "/small",
            &["--data-binary", &at_s],
            413,
        ),
        case("streamed", 0, "/hash", &["--data-binary", &at_b], 200),
        case("streamed, put", 0, "/hash", &["-T", &b], 200),
        case(
            "streamed, over its limit",
            0,
            "/hash-small",
            &["--data-binary", &at_b],
            413,
        ),
        case("refused from its head", 0, "/guarded", &["-T", &s], 401),
        case("let through", 0, "/guarded", &["-T", &s, "-H", bearer], 200),
    ];
    let cases: Vec<&Case> = cases.iter().collect();
    run(&server, &pki, tmp.path(), &cases);

    // The big body in eight DATA frames, 50 ms apart: the sink hashes it
    // as it comes.
    let request = H3Request::new("POST", "/hash")
        .header("content-length", &big.len().to_string())
        .body(&big);
    let port = server.local_addr().port();
    let flags = ["--body-chunks", "8", "--chunk-pause", "0.05", "--bodies"];
    let (answers, stderr) = h3_get(port, &pki.ca_pem, &flags, &[request]);
    let a = &answers[0];
    assert_eq!(
        (a.status, a.error.as_deref()),
        (200, None),
        "{a:?} {stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&a.body), hash_answer(&big));
    // The body over its limit was refused from its declared length,
    // before a sink was made: no sink lost a body.
    assert!(probe.aborted.lock().unwrap().is_empty());
}

/// Replaces the protocol's own name in field values, and
/// blanks the values that name a moment (ETag, Last-Modified), so the
/// answers to the same steps on other names can be compared.
fn neutral(mut fields: Vec<(String, String)>, name: &str) -> Vec<(String, String)> {
    for (n, v) in &mut fields {
        *v = v.replace(name, "NAME");
        if matches!(&n.to_ascii_lowercase()[..], "etag" | "last-modified") {
            *v = "…".into();
        }
    }
    fields
}

fn neutral_curl(a: CurlAnswer, name: &str) -> CurlAnswer {
    CurlAnswer {
        headers: neutral(a.headers, name),
        ..a
    }
}

/// `PUT`s to `nikaia serve`'s writer (`[[write]]` rules) over the three
/// protocols, each on names of its own: a file made, replaced, read back,
/// deleted; a create-only folder refusing a second write; no credentials,
/// a body past `max-size`. The same statuses and fields (less the names
/// and the moments in them) each way; the bytes on disk and read back are
/// what was sent.
#[test]
fn uploads_to_nikaia_serve_are_written_and_read_back_over_h3() {
    let site = Site::new();
    let pki = TestPki::new();
    let mut rt = site.runtime(RULES);
    rt.tls_cert = Some(pki.cert.clone());
    rt.tls_key = Some(pki.key.clone());
    rt.http3 = Some(true);
    let server = serve_dir(&site.root, rt, false, true);
    let port = server.local_addr().port();
    let first = random(300_000, 31);
    let second = random(200_000, 32);
    let over = random((1 << 20) + 1, 33);
    let dir = site.tmp.path();
    let (f, s, o) = (
        file(dir, "first", &first),
        file(dir, "second", &second),
        file(dir, "over", &over),
    );
    let steps: [(&str, Vec<&str>, u16); 9] = [
        ("/drop/NAME/new.bin", vec!["-T", &f, "-u", ALICE], 201),
        ("/drop/NAME/new.bin", vec!["-T", &s, "-u", ALICE], 204),
        ("/drop/NAME/new.bin", vec!["-u", ALICE], 200),
        ("/inbox/NAME.bin", vec!["-T", &f], 201),
        ("/inbox/NAME.bin", vec!["-T", &s], 403),
        ("/drop/NAME/anon.bin", vec!["-T", &f], 401),
        ("/drop/NAME/over.bin", vec!["-T", &o, "-u", ALICE], 413),
        ("/drop/NAME/new.bin", vec!["-X", "DELETE", "-u", ALICE], 204),
        ("/drop/NAME/new.bin", vec!["-u", ALICE], 404),
    ];
    let by_curl = |version: &str, name: &str| -> Vec<CurlAnswer> {
        let steps = steps.iter().map(|(path, args, _)| {
            let url = format!("https://localhost:{port}{}", path.replace("NAME", name));
            neutral_curl(curl_over(version, &pki, dir, args, &url), name)
        });
        steps.collect()
    };
    let (one, two) = (by_curl("1.1", "one"), by_curl("2", "two"));
    let requests: Vec<H3Request> = (steps.iter())
        .map(|(path, args, _)| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            h3_request(&path.replace("NAME", "three"), &args)
        })
        .collect();
    let (three, stderr) = h3_get(port, &pki.ca_pem, &["--serial"], &requests);
    let mut failures = Vec::new();
    for (i, (step, three)) in steps.iter().zip(three).enumerate() {
        let three = H3Answer {
            headers: neutral(three.headers, "three"),
            ..three
        };
        let wrong = compare(port, step.2, &one[i], &two[i], &three);
        if !wrong.is_empty() {
            failures.push(format!(
                "{} {:?}:\n    {}",
                step.0,
                step.1,
                wrong.join("\n    ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\nh3client: {stderr}",
        failures.join("\n")
    );
    // What h3 sent is on disk, and what it read back was the replacement.
    let inbox = std::fs::read(site.root.join("inbox/three.bin")).unwrap();
    assert!(inbox == first, "inbox/three.bin: {} bytes", inbox.len());
    assert!(!site.root.join("drop/three/new.bin").exists());
    assert!(!site.root.join("drop/three/over.bin").exists());
    assert_eq!(two[2].body, second, "read back over HTTP/2");
    assert_eq!(server.report().h3.connections, 1);
}

/// A produced body: an event stream that ends after three events is the
/// same over the three protocols; one left open delivers its first events
/// to an h3 client while it is still open, and the client leaving ends it
/// for the program.
#[test]
fn an_event_stream_reaches_an_h3_client_as_it_is_sent() {
    let pki = TestPki::new();
    let (feeds_tx, feeds) = mpsc::channel::<Events>();
    let feeds_tx = Mutex::new(feeds_tx);
    let server = start(
        Server::with_runtime(h3_runtime(&pki))
            .route("/ended", |_| {
                let (events, answer) = event_stream();
                std::thread::spawn(move || {
                    for (i, word) in ["one", "two", "three"].iter().enumerate() {
                        events.send(&Event::data(*word).id(i.to_string())).unwrap();
                    }
                });
                answer
            })
            .route("/open", move |_| {
                let (events, answer) = event_stream();
                let _ = feeds_tx.lock().unwrap().send(events);
                answer
            }),
    );
    let tmp = tempfile::tempdir().unwrap();
    let ended = [case("an event stream that ends", 0, "/ended", &[], 200)];
    run(&server, &pki, tmp.path(), &[&ended[0]]);

    let port = server.local_addr().port();
    let ca = pki.ca_pem.clone();
    // The client stops at its deadline (the stream never ends) with what
    // it received.
    let client = std::thread::spawn(move || {
        let flags = ["--bodies", "--timeout", "4"];
        h3_get(port, &ca, &flags, &[H3Request::get("/open")])
    });
    let events = feeds
        .recv_timeout(Duration::from_secs(10))
        .expect("the h3 request reached the handler");
    let mut sent = Vec::new();
    for (i, word) in ["first", "second", "third"].iter().enumerate() {
        let event = Event::data(*word).id(i.to_string());
        events.send(&event).unwrap();
        sent.extend_from_slice(format!("id: {i}\ndata: {word}\n\n").as_bytes());
    }
    let (answers, stderr) = client.join().unwrap();
    let a = &answers[0];
    assert_eq!(a.status, 200, "{a:?}\n{stderr}");
    assert_eq!(a.header("content-type"), Some("text/event-stream"), "{a:?}");
    assert_eq!(a.error.as_deref(), Some("timeout"), "still open: {a:?}");
    assert_eq!(
        String::from_utf8_lossy(&a.body),
        String::from_utf8_lossy(&sent),
        "every event sent arrived"
    );
    assert_eq!(a.sha256, sha256(&sent));
    // The client closed its connection: the program's next send says so.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match events.send(&Event::data("anyone?")) {
            Err(EventError::Closed(_)) => break,
            _ if Instant::now() > deadline => panic!("the stream stayed open"),
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}
