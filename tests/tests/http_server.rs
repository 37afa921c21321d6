//! The HTTP/1.1 server over real sockets on 127.0.0.1.

use bytes::Bytes;
use nikaia_std::http::{Response, Server};
use nikaia_std::{fs, html};
use nikaia_tests::{start, test_runtime, Client};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

fn rows_server() -> Server {
    let page = html::Raw::new("<p>hi</p>");
    let blob = Bytes::from(vec![7u8; 1000]);
    Server::with_runtime(test_runtime())
        .route("/string", |_| String::from("a string"))
        .route("/static", |_| "a static str")
        .route("/html", move |_| page.clone())
        .route("/bytes", move |_| blob.clone())
        .route("/response", |_| {
            Response::new(201)
                .header("Content-Type", "text/css")
                .header("X-Extra", "1")
                .body("body{}")
        })
        .route("/ok", |_| -> Result<&'static str, std::io::Error> {
            Ok("fine")
        })
        .route("/err", |_| -> Result<&'static str, std::io::Error> {
            Err(std::io::Error::other("secret detail"))
        })
        .route("/panic", |_| -> &'static str { panic!("handler bug") })
        .route("/files/*name", |req| format!("[{}]", req.param().unwrap()))
        .method("POST", "/echo", |req| req.body().clone())
}

#[test]
fn every_row_of_the_body_table() {
    let server = start(rows_server());
    let mut c = Client::connect(server.local_addr());
    let cases = [
        (
            "/string",
            200,
            "text/plain; charset=utf-8",
            &b"a string"[..],
        ),
        ("/static", 200, "text/plain; charset=utf-8", b"a static str"),
        ("/html", 200, "text/html; charset=utf-8", b"<p>hi</p>"),
        ("/response", 201, "text/css", b"body{}"),
        ("/ok", 200, "text/plain; charset=utf-8", b"fine"),
    ];
    for (path, status, ctype, body) in cases {
        let r = c.get(path);
        assert_eq!(r.status, status, "{path}");
        assert_eq!(r.header("content-type"), Some(ctype), "{path}");
        assert_eq!(r.body, body, "{path}");
        assert_eq!(r.header("content-length").unwrap(), body.len().to_string());
    }
    let r = c.get("/bytes");
    assert_eq!(r.header("content-type"), Some("application/octet-stream"));
    assert_eq!(r.body, vec![7u8; 1000]);
    assert_eq!(c.get("/response").header("x-extra"), Some("1"));
    // Only one Content-Type, the Response's own.
    let r = c.get("/response");
    assert_eq!(
        r.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .count(),
        1
    );

    for path in ["/err", "/panic"] {
        let r = c.get(path);
        assert_eq!(r.status, 500, "{path}");
        assert!(
            !r.text().contains("secret"),
            "{path}: the error stays in the log"
        );
    }
    // The connection survived both failures.
    assert_eq!(c.get("/static").status, 200);
}

#[test]
fn a_mapped_file_is_a_bytes_row() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("page.bin"), b"mapped bytes").unwrap();
    let root = fs::Root::dir(dir.path()).unwrap();
    let mapped = fs::map("page.bin", &root).unwrap();
    let server = start(Server::with_runtime(test_runtime()).route("/m", move |_| mapped.clone()));
    let mut c = Client::connect(server.local_addr());
    for _ in 0..3 {
        let r = c.get("/m");
        assert_eq!(r.header("content-type"), Some("application/octet-stream"));
        assert_eq!(r.body, b"mapped bytes");
    }
}

#[test]
fn wildcard_values_are_decoded_once() {
    let server = start(rows_server());
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/files/a%20b/c").text(), "[a b/c]");
    assert_eq!(c.get("/files/%2541").text(), "[%41]");
    assert_eq!(c.get("/files/%C3%A9").text(), "[é]");
    // Bytes that are not UTF-8 are decoded too; `param()` is lossy.
    assert_eq!(c.get("/files/caf%E9").text(), "[caf\u{FFFD}]");
    assert_eq!(c.get("/files/%C0%AE").text(), "[\u{FFFD}\u{FFFD}]");
    for bad in ["/files/%zz", "/files/%00x", "/files/%e9%00", "/files/%F"] {
        let mut c = Client::connect(server.local_addr());
        assert_eq!(c.get(bad).status, 400, "{bad}");
        assert!(c.is_closed(), "{bad}");
    }
}

#[test]
fn not_found_wrong_method_and_head() {
    let server = start(rows_server());
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/missing").status, 404);
    c.send("DELETE /string HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.reply().unwrap();
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
    c.send("HEAD /bytes HTTP/1.1\r\nHost: t\r\n\r\n");
    let head = c.read_reply(true).unwrap();
    let get = c.get("/bytes");
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some("1000"));
    assert_eq!(head.header("content-type"), get.header("content-type"));
    assert_eq!(
        get.body.len(),
        1000,
        "HEAD sent no body: the next reply parsed cleanly"
    );
}

#[test]
fn keep_alive_and_three_pipelined_requests() {
    let server = start(rows_server());
    let mut c = Client::connect(server.local_addr());
    for _ in 0..5 {
        assert_eq!(c.get("/static").status, 200);
    }
    c.send(
        "GET /files/1 HTTP/1.1\r\nHost: t\r\n\r\nGET /files/2 HTTP/1.1\r\nHost: t\r\n\r\nGET /files/3 HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    for want in ["[1]", "[2]", "[3]"] {
        assert_eq!(c.reply().unwrap().text(), want);
    }
    assert_eq!(c.get("/static").status, 200);
}

#[test]
fn http10_closes_unless_keep_alive_is_asked() {
    let server = start(rows_server());
    let mut c = Client::connect(server.local_addr());
    c.send("GET /static HTTP/1.0\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 200);
    assert!(c.is_closed());

    let mut c = Client::connect(server.local_addr());
    c.send("GET /static HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = c.reply().unwrap();
    assert_eq!(r.header("connection"), Some("keep-alive"));
    c.send("GET /static HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 200);

    let mut c = Client::connect(server.local_addr());
    c.send("GET /static HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(c.reply().unwrap().header("connection"), Some("close"));
    assert!(c.is_closed());
}

#[test]
fn malformed_and_smuggling_requests_get_their_status_and_close() {
    let server = start(rows_server());
    let cases: &[(&str, u16)] = &[
        ("GET /static HTTP/1.1\r\n\r\n", 400),
        ("GET /static HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        ("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400),
        ("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400),
        ("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400),
        ("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: -5\r\n\r\n", 400),
        ("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5x\r\n\r\n", 400),
        ("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 18446744073709551616\r\n\r\n", 400),
        ("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 501),
        ("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: xchunked\r\n\r\n", 501),
        ("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        ("GET /static HTTP/1.1\r\nHost: t\r\nBad Header: x\r\n\r\n", 400),
        ("GET /static HTTP/1.1\r\nHost: t\r\nX: a\r\n  folded\r\n\r\n", 400),
        ("GET /static HTTP/1.1\r\nHost : t\r\n\r\n", 400),
        ("GET /static\r\n\r\n", 400),
        ("GET  /static HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        ("GET static HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        ("GET /static HTTP/9.9\r\nHost: t\r\n\r\n", 505),
        ("GET /static HTTP/2.0\r\nHost: t\r\n\r\n", 505),
        // A raw space in the target: a malformed request line, whatever
        // its last word looks like.
        ("GET /a b HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        ("GET /a\tb HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        ("GET /static HTTP/1.1 HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        ("GET /static  HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        ("GET /static HTTQ/1.1\r\nHost: t\r\n\r\n", 400),
        ("GET /static HTTP/1\r\nHost: t\r\n\r\n", 400),
        ("GET /static HTTP/1.1x\r\nHost: t\r\n\r\n", 400),
        ("GET /static http/1.1\r\nHost: t\r\n\r\n", 400),
        ("GET /static HTTP/1.1\r\nHost: t/../x\r\n\r\n", 400),
    ];
    for (raw, status) in cases {
        let mut c = Client::connect(server.local_addr());
        c.send(raw);
        let r = c.reply().unwrap_or_else(|e| panic!("{raw:?}: {e}"));
        assert_eq!(r.status, *status, "{raw:?}");
        assert_eq!(r.header("connection"), Some("close"), "{raw:?}");
        assert!(c.is_closed(), "{raw:?} left the connection open");
    }
    // A TLS handshake on this plain port is closed without a reply: a TLS
    // client would take an HTTP answer for a broken record (spec/tls.md).
    let mut c = Client::connect(server.local_addr());
    c.send("\x16\x03\x01\x02\x00\x01\x00\x01\x03\x03");
    assert!(c.is_closed(), "a TLS handshake got a reply");
    // The server kept serving.
    assert_eq!(
        Client::connect(server.local_addr()).get("/static").status,
        200
    );
}

#[test]
fn headers_past_the_limit_are_431() {
    let mut rt = test_runtime();
    rt.max_header_bytes = 4096;
    let server = start(Server::with_runtime(rt).route("/", |_| "x"));
    let mut c = Client::connect(server.local_addr());
    c.send(format!(
        "GET / HTTP/1.1\r\nHost: t\r\nCookie: {}\r\n\r\n",
        "a".repeat(5000)
    ));
    assert_eq!(c.reply().unwrap().status, 431);
    assert!(c.is_closed());
    let mut c = Client::connect(server.local_addr());
    let many: String = (0..150).map(|i| format!("X-{i}: v\r\n")).collect();
    c.send(format!("GET / HTTP/1.1\r\nHost: t\r\n{many}\r\n"));
    assert_eq!(c.reply().unwrap().status, 431);
}

#[test]
fn request_bodies_keep_the_connection_in_sync() {
    let server = start(rows_server());
    let mut c = Client::connect(server.local_addr());
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhelloGET /static HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.reply().unwrap().body, b"hello");
    assert_eq!(c.reply().unwrap().text(), "a static str");
    // A body sent to a GET route is read and dropped, not parsed as a request.
    c.send("GET /static HTTP/1.1\r\nHost: t\r\nContent-Length: 27\r\n\r\nGET /files/x HTTP/1.1\r\n\r\n\r\n");
    assert_eq!(c.reply().unwrap().text(), "a static str");
    assert_eq!(c.get("/files/y").text(), "[y]");
    // Chunked, with an extension and a trailer, in small pieces.
    for piece in [
        "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
        "3;x=y\r\nabc\r\n",
        "4\r\ndefg\r\n0\r\nT: 1\r\n\r\n",
    ] {
        c.send(piece);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.reply().unwrap().body, b"abcdefg");
    // Expect: 100-continue gets its interim response.
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 100);
    c.send("ok");
    assert_eq!(c.reply().unwrap().body, b"ok");
    // Too large a body: 413, then close.
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 413);
    assert!(c.is_closed());
}

#[test]
fn a_slowloris_client_is_closed_after_header_timeout() {
    let mut rt = test_runtime();
    rt.header_timeout = Duration::from_millis(400);
    let server = start(Server::with_runtime(rt).route("/", |_| "x"));
    let mut slow = Client::connect(server.local_addr());
    let began = Instant::now();
    let mut closed = false;
    for piece in [
        "GET / HTTP/1.1\r\n",
        "Host: t\r\n",
        "X-a: 1\r\n",
        "X-b: 1\r\n",
        "X-c: 1\r\n",
        "X-d: 1\r\n",
        "X-e: 1\r\n",
        "X-f: 1\r\n",
    ] {
        if slow.stream().write_all(piece.as_bytes()).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    slow.set_read_timeout(Duration::from_secs(3));
    closed = closed || slow.is_closed();
    assert!(
        closed,
        "a head trickling in was still open after {:?}",
        began.elapsed()
    );
    // Everyone else is still served.
    assert_eq!(Client::connect(server.local_addr()).get("/").status, 200);
}

/// A client that sends its request and closes its end in one go (`nc -N`,
/// `printf | nc`): the request and the FIN reach epoll in one edge, so the
/// server must read on to EOF after the answer rather than wait for an edge
/// that never comes; it answers and closes at once, not at keepalive-timeout.
#[test]
fn a_request_then_half_close_is_answered_and_closed_at_once() {
    let server = start(Server::with_runtime(test_runtime()).route("/", |_| "x"));
    for _ in 0..20 {
        let mut sock = TcpStream::connect(server.local_addr()).unwrap();
        // Registered in epoll by now: what follows arrives as one edge.
        std::thread::sleep(Duration::from_millis(20));
        sock.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        sock.shutdown(std::net::Shutdown::Write).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let started = Instant::now();
        let mut got = Vec::new();
        sock.read_to_end(&mut got)
            .expect("closed by the server, not left to keepalive-timeout");
        assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"));
        assert!(got.ends_with(b"\r\n\r\nx"));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

#[test]
fn an_idle_keep_alive_connection_is_closed() {
    let mut rt = test_runtime();
    rt.keepalive_timeout = Duration::from_millis(300);
    let server = start(Server::with_runtime(rt).route("/", |_| "x"));
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/").status, 200);
    std::thread::sleep(Duration::from_millis(800));
    assert!(c.is_closed());
}

#[test]
fn a_client_that_never_reads_is_dropped_and_others_are_served() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut rt = test_runtime();
    rt.send_timeout = Duration::from_millis(500);
    rt.workers = 1;
    rt.error_log = nikaia_std::rt::LogTarget::File(log.path().to_path_buf());
    let big = Bytes::from(vec![b'z'; 32 << 20]);
    let server = start(
        Server::with_runtime(rt)
            .route("/big", move |_| big.clone())
            .route("/small", |_| "small"),
    );
    let stuck = TcpStream::connect(server.local_addr()).unwrap();
    (&stuck)
        .write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    // While it is stuck, the one worker keeps answering others.
    for _ in 0..20 {
        assert_eq!(
            Client::connect(server.local_addr()).get("/small").text(),
            "small"
        );
    }
    std::thread::sleep(Duration::from_millis(1500));
    // Now read: the server gave up, so far fewer than 32 MiB arrive.
    stuck
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut got = Vec::new();
    let _ = (&stuck).read_to_end(&mut got);
    assert!(
        got.len() < 32 << 20,
        "the stalled reader got the whole body"
    );
    // Counted, and said once in the error log (not once per reader).
    assert_eq!(server.report().send_timeouts, 1);
    let said = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(
        said.matches("made no progress for send-timeout").count(),
        1,
        "{said}"
    );
    // The first line: none were left out, and it says nothing of them.
    assert!(!said.contains("not logged"), "{said}");
}

#[test]
fn two_hundred_concurrent_keep_alive_clients() {
    let body: Bytes = (0..100_000u32)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<_>>()
        .into();
    let expect = body.clone();
    let server =
        start(Server::with_runtime(test_runtime()).route("/data/*n", move |_| body.clone()));
    let addr = server.local_addr();
    let threads: Vec<_> = (0..200)
        .map(|t| {
            let expect = expect.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..5 {
                    let r = c.get(&format!("/data/{t}-{i}"));
                    assert_eq!(r.status, 200);
                    assert!(r.body == expect[..], "client {t} request {i}: bytes differ");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn small_sequential_responses_are_not_delayed_by_nagle() {
    let server = start(Server::with_runtime(test_runtime()).route("/", |_| "x"));
    let mut c = Client::connect(server.local_addr());
    let began = Instant::now();
    for _ in 0..200 {
        assert_eq!(c.get("/").status, 200);
    }
    // A Nagle/delayed-ACK stall costs ~40 ms a request: 200 of them, 8 s.
    assert!(
        began.elapsed() < Duration::from_secs(1),
        "{:?}",
        began.elapsed()
    );
}

#[test]
fn graceful_shutdown_finishes_a_50_mib_body_in_flight() {
    let big = Bytes::from(vec![b'q'; 50 << 20]);
    let server = start(Server::with_runtime(test_runtime()).route("/big", move |_| big.clone()));
    let addr = server.local_addr();
    let mut c = Client::connect(addr);
    c.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    // Read a little so the response is certainly in flight.
    let mut first = [0u8; 4096];
    c.stream()
        .try_clone()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    let idle = Client::connect(addr);
    server.shutdown();
    let mut rest = Vec::new();
    c.stream()
        .try_clone()
        .unwrap()
        .read_to_end(&mut rest)
        .unwrap();
    let all = [&first[..], &rest[..]].concat();
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(all.len() - split, 50 << 20, "the whole body arrived");
    assert!(all[split..].iter().all(|&b| b == b'q'));
    // read_to_end returned: the server closed the connection after the body.
    server.wait();
    drop(idle);
    assert!(TcpStream::connect(addr).is_err(), "no longer accepting");
}

#[test]
fn curl_gets_every_row() {
    let server = start(rows_server());
    let base = format!("http://{}", server.local_addr());
    let out = Command::new("curl")
        .args(["-sS", "--fail-with-body", "--http1.1"])
        .arg(format!("{base}/html"))
        .arg(format!("{base}/string"))
        .output()
        .expect("curl runs (./test.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"<p>hi</p>a string");
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{content_type}",
        ])
        .arg(format!("{base}/bytes"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "200 application/octet-stream"
    );
}

#[test]
fn at_max_connections_the_oldest_idle_connection_makes_room() {
    let mut rt = test_runtime();
    rt.max_connections = 2;
    rt.workers = 1;
    let server = start(Server::with_runtime(rt).route("/", |_| "x"));
    let mut a = Client::connect(server.local_addr());
    assert_eq!(a.get("/").status, 200);
    std::thread::sleep(Duration::from_millis(20));
    let mut b = Client::connect(server.local_addr());
    assert_eq!(b.get("/").status, 200);
    // Both wait for their next request: the third client is admitted, and
    // the connection idle the longest (a) is closed for it, as nginx does.
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/").status, 200);
    assert!(a.is_closed(), "the oldest idle connection was closed");
    assert_eq!(b.get("/").status, 200);
    assert_eq!(server.report().idle_closed, 1);
}

#[test]
fn at_max_connections_busy_connections_are_not_closed() {
    let mut rt = test_runtime();
    rt.max_connections = 2;
    rt.workers = 1;
    let server = start(Server::with_runtime(rt).route("/", |_| "x"));
    // Two clients in the middle of a request: neither is idle.
    let mut a = Client::connect(server.local_addr());
    let mut b = Client::connect(server.local_addr());
    a.send("GET / HTTP/1.1\r\n");
    b.send("GET / HTTP/1.1\r\n");
    std::thread::sleep(Duration::from_millis(50));
    let mut c = Client::connect(server.local_addr());
    c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    c.set_read_timeout(Duration::from_millis(300));
    assert!(
        c.reply().is_err(),
        "a third client is not served while two are busy"
    );
    // a finishes its request and waits for the next: now it may make room.
    a.send("Host: t\r\n\r\n");
    assert_eq!(a.reply().unwrap().status, 200);
    c.set_read_timeout(Duration::from_secs(5));
    assert_eq!(c.reply().unwrap().status, 200);
    b.send("Host: t\r\n\r\n");
    assert_eq!(b.reply().unwrap().status, 200);
}

#[test]
fn the_date_header_is_an_imf_fixdate() {
    let server = start(rows_server());
    let r = Client::connect(server.local_addr()).get("/static");
    let date = r.header("date").unwrap();
    assert_eq!(date.len(), 29, "{date}");
    assert!(date.ends_with(" GMT"));
}
