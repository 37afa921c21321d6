//! HTTPS over real sockets with real clients (rustls, curl, openssl): the
//! same answers as plain HTTP, the wrong protocol on each port, the
//! handshake deadline, slow readers, resumption, and files changed under a
//! download. `spec/tls.md` is what these check.

use nikaia_std::fs::{self, Root};
use nikaia_std::http::{File, Response, Server};
use nikaia_std::rt::{LogTarget, Runtime};
use nikaia_std::{html, Bytes};
use nikaia_tests::{start, test_runtime, Client, Reply, TestPki, TlsClient};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Deterministic bytes of any length.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2654435761).to_le_bytes()[1] ^ seed)
        .collect()
}

struct Site {
    tmp: tempfile::TempDir,
    root: PathBuf,
}

fn site() -> Site {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(tmp.path().join("secret.txt"), b"SECRET").unwrap();
    std::fs::write(root.join("docs/index.html"), b"<h1>docs</h1>").unwrap();
    std::fs::write(root.join("sub/a.txt"), b"a").unwrap();
    std::fs::write(root.join("file.bin"), pattern(100_000, 3)).unwrap();
    std::fs::write(root.join("small.css"), b"body { color: red }").unwrap();
    std::fs::write(root.join("mapped.bin"), pattern(70_000, 5)).unwrap();
    std::os::unix::fs::symlink("../secret.txt", root.join("out")).unwrap();
    // Old enough for the kept table (it skips files changed this tick).
    std::thread::sleep(Duration::from_millis(30));
    Site { tmp, root }
}

/// Every row of the body table and `http::File` with index and listing.
fn app(rt: Runtime, root: &Path) -> nikaia_std::http::Running {
    let root = Root::dir(root).unwrap();
    let mapped = fs::map("mapped.bin", &root).unwrap();
    start(
        Server::with_runtime(rt)
            .route("/html", |_| html::Raw::new("<b>raw</b>"))
            .route("/text", |_| "plain text")
            .route("/string", |req| format!("you asked for {}", req.path()))
            .route("/bytes", |_| Bytes::from_static(b"\x00\x01\x02"))
            .route("/mapped", move |_| mapped.clone())
            .route("/response", |_| {
                Response::new(201).header("X-Made", "by hand").body("made")
            })
            .route("/fails", |_| -> Result<&'static str, String> {
                Err("the detail stays in the log".into())
            })
            .route("/f/*name", move |req| {
                File::new(req.param().unwrap_or(""), &root)
                    .index("index.html")
                    .list(false)
            }),
    )
}

/// [`app`] over HTTPS, its error log written to a file in the site's
/// temporary directory; the server and the log's path.
fn app_logging_errors(s: &Site, pki: &TestPki) -> (nikaia_std::http::Running, PathBuf) {
    let log = s.tmp.path().join("error.log");
    let mut rt = pki.runtime();
    rt.error_log = LogTarget::File(log.clone());
    (app(rt, &s.root), log)
}

/// Status, headers but Date, and body: what must not differ between the
/// transports.
fn answer(r: &Reply) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let headers = r
        .headers
        .iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case("date"))
        .cloned()
        .collect();
    (r.status, headers, r.body.clone())
}

#[test]
fn every_row_and_file_answer_is_the_same_as_in_plain_http() {
    let s = site();
    let pki = TestPki::new();
    let plain = app(test_runtime(), &s.root);
    let tls = app(pki.runtime(), &s.root);
    let config = pki.client_config();
    let etag = Client::connect(plain.local_addr())
        .get("/f/file.bin")
        .header("etag")
        .unwrap()
        .to_owned();
    let requests = [
        "GET /html HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /text HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /string HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /bytes HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /mapped HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /response HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /fails HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /f/file.bin HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /f/small.css HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /f/small.css HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /f/small.css HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /f/file.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=10-19\r\n\r\n".to_owned(),
        "GET /f/file.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=-7\r\n\r\n".to_owned(),
        "GET /f/file.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=999999-\r\n\r\n".to_owned(),
        format!("GET /f/file.bin HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\n\r\n"),
        "GET /f/file.bin HTTP/1.1\r\nHost: t\r\nIf-Match: \"other\"\r\n\r\n".to_owned(),
        "HEAD /f/file.bin HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /f/docs HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /f/docs/ HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /f/sub/ HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /f/missing HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /f/out HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "GET /f/..%2fsecret.txt HTTP/1.1\r\nHost: t\r\n\r\n".to_owned(),
        "POST /f/file.bin HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n".to_owned(),
        "GET /text HTTP/1.1\r\n\r\n".to_owned(),
    ];
    for request in &requests {
        let head_only = request.starts_with("HEAD");
        let mut p = Client::connect(plain.local_addr());
        p.send(request);
        let want = p.read_reply(head_only).unwrap();
        let mut t = TlsClient::connect_tls(tls.local_addr(), config.clone());
        t.send(request);
        let got = t.read_reply(head_only).unwrap();
        assert_eq!(answer(&got), answer(&want), "{request:?}");
    }
    // The interesting statuses were all reached.
    let statuses: Vec<u16> = requests
        .iter()
        .map(|r| {
            let mut c = Client::connect(plain.local_addr());
            c.send(r);
            c.read_reply(r.starts_with("HEAD")).unwrap().status
        })
        .collect();
    for want in [200, 201, 206, 301, 304, 400, 404, 405, 412, 416, 500] {
        assert!(statuses.contains(&want), "{want} not in {statuses:?}");
    }
    let report = tls.report();
    let t = report.tls.expect("a TLS section");
    let by = |name: &str| t.vehicles.iter().find(|v| v.0 == name).unwrap().1;
    assert!(by("kept copy") >= 1, "{t:?}");
    assert!(by("read") >= 1, "{t:?}");
    assert!(by("in-memory") >= 1, "{t:?}");
    assert!(t.vehicles.iter().all(|v| v.0 != "sendfile"), "{t:?}");
    assert_eq!(report.vehicles.iter().map(|v| v.1).sum::<u64>(), 0);
}

#[test]
fn keep_alive_and_pipelining_through_one_session() {
    let s = site();
    let pki = TestPki::new();
    let tls = app(pki.runtime(), &s.root);
    let mut c = TlsClient::connect_tls(tls.local_addr(), pki.client_config());
    for _ in 0..3 {
        assert_eq!(c.get("/text").text(), "plain text");
    }
    c.send(
        "GET /text HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /f/file.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=0-4\r\n\r\n\
         HEAD /f/file.bin HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /string HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(c.reply().unwrap().text(), "plain text");
    let r = c.reply().unwrap();
    assert_eq!((r.status, &r.body[..]), (206, &pattern(5, 3)[..]));
    let r = c.read_reply(true).unwrap();
    assert_eq!(r.header("content-length"), Some("100000"));
    assert_eq!(c.reply().unwrap().text(), "you asked for /string");
    assert!(c.is_closed());
    let t = tls.report().tls.unwrap();
    assert_eq!((t.handshakes_full, t.failures), (1, 0));
}

/// One GET answered through a client session driven by hand: the reply,
/// and the payload length of each application-data record it arrived in
/// (read off the raw socket, record header by record header, below the
/// session). Leaves nothing of the answer unread.
fn get_by_records(
    tcp: &mut TcpStream,
    conn: &mut rustls::ClientConnection,
    path: &str,
) -> (Reply, Vec<usize>) {
    const APPLICATION_DATA: u8 = 23;
    let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
    conn.writer().write_all(request.as_bytes()).unwrap();
    while conn.wants_write() {
        conn.write_tls(tcp).unwrap();
    }
    let (mut raw, mut plain, mut records) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        while raw.len() >= 5 {
            let len = u16::from_be_bytes([raw[3], raw[4]]) as usize;
            if raw.len() < 5 + len {
                break;
            }
            let record: Vec<u8> = raw.drain(..5 + len).collect();
            if record[0] == APPLICATION_DATA {
                records.push(len);
            }
            let mut rest = &record[..];
            while !rest.is_empty() {
                conn.read_tls(&mut rest).unwrap();
            }
            conn.process_new_packets().unwrap();
            let mut chunk = [0u8; 16 << 10];
            while let Ok(n @ 1..) = conn.reader().read(&mut chunk) {
                plain.extend_from_slice(&chunk[..n]);
            }
        }
        if let Some(end) = plain.windows(4).position(|w| w == b"\r\n\r\n") {
            let reply = nikaia_tests::read_reply(&mut &plain[..], true).unwrap();
            let len: usize = reply.header("content-length").unwrap().parse().unwrap();
            if plain.len() == end + 4 + len && raw.is_empty() {
                return (
                    nikaia_tests::read_reply(&mut &plain[..], false).unwrap(),
                    records,
                );
            }
        }
        let mut buf = [0u8; 64 << 10];
        let n = tcp.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed in the middle of {path}");
        raw.extend_from_slice(&buf[..n]);
    }
}

/// A small answer leaves as one record, head and body together, whether its
/// body is a kept copy or read from the file; a larger one as few 16 KiB
/// records as its bytes need, the head in the first.
#[test]
fn a_small_answer_is_one_tls_record_and_a_large_one_full_records() {
    let s = site();
    std::fs::write(s.root.join("twelve.bin"), pattern(12 << 10, 9)).unwrap();
    let pki = TestPki::new();
    let tls = app(pki.runtime(), &s.root);
    let mut tcp = TcpStream::connect(tls.local_addr()).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(pki.client_config(), name).unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).unwrap();
    }
    // The first answer after the handshake may share its reads with the
    // session tickets: not counted.
    let (r, _) = get_by_records(&mut tcp, &mut conn, "/f/small.css");
    assert_eq!(r.body, b"body { color: red }");
    let mut seen = Vec::new();
    for path in [
        "/f/small.css",  // kept on its second request
        "/f/small.css",  // a kept hit
        "/f/twelve.bin", // too large to keep: read from the file
        "/text",
        "/nowhere",
        "/f/file.bin",
    ] {
        let (r, records) = get_by_records(&mut tcp, &mut conn, path);
        assert!(matches!(r.status, 200 | 404), "{path}: {}", r.status);
        seen.push((path, records));
    }
    for (path, records) in &seen[..5] {
        assert_eq!(records.len(), 1, "{path} in one record: {seen:?}");
    }
    // 100 000 bytes read 64 KiB at a time, each read's bytes in records of
    // 16 KiB of plaintext (TLS 1.3 adds 17 bytes to each) but its last;
    // the head of about 250 bytes goes in the first, not in one of its own.
    let (path, records) = &seen[5];
    let full = (16 << 10) + 17;
    assert_eq!(records.len(), 8, "{path}: {records:?}");
    assert_eq!(records[..4], [full; 4], "{path}: {records:?}");
    let plaintext: usize = records.iter().map(|n| n - 17).sum();
    assert!((100_000..100_500).contains(&plaintext), "{records:?}");
}

/// curl, given several URLs, keeps one connection for them all.
#[test]
fn curl_byte_exact_from_0_bytes_to_64_mib() {
    let s = site();
    let sizes = [0usize, 1, 4095, 4096, 8192, 65_536, (1 << 20) + 7, 64 << 20];
    for (i, &len) in sizes.iter().enumerate() {
        std::fs::write(s.root.join(format!("s{i}.bin")), pattern(len, i as u8)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(30));
    let pki = TestPki::new();
    let tls = app(pki.runtime(), &s.root);
    let port = tls.local_addr().port();
    let out = s.tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let mut curl = Command::new("curl");
    // HTTP/1.1 on purpose: ALPN would choose h2 (tests/tests/h2.rs).
    curl.args(["-sS", "--fail", "--http1.1", "--cacert"])
        .arg(&pki.ca_pem)
        .args(["-w", "%{num_connects} %{http_code}\n"]);
    // Each file twice, so the small ones are also sent from the kept table.
    for round in 0..2 {
        for i in 0..sizes.len() {
            curl.arg(format!("https://localhost:{port}/f/s{i}.bin"))
                .arg("-o")
                .arg(out.join(format!("{round}-{i}")));
        }
    }
    let run = curl.output().expect("curl runs");
    assert!(run.status.success(), "{run:?}");
    let lines = String::from_utf8(run.stdout).unwrap();
    let connects: u32 = lines
        .lines()
        .map(|l| l.split(' ').next().unwrap().parse::<u32>().unwrap())
        .sum();
    assert_eq!(connects, 1, "one connection, kept alive: {lines}");
    for round in 0..2 {
        for (i, &len) in sizes.iter().enumerate() {
            let got = std::fs::read(out.join(format!("{round}-{i}"))).unwrap();
            assert!(got == pattern(len, i as u8), "size {len}, round {round}");
        }
    }
    // A range, a 304 and a HEAD, from curl too.
    let curl_one = |args: &[&str]| {
        let out = Command::new("curl")
            .args(["-sS", "--http1.1", "--cacert"])
            .arg(&pki.ca_pem)
            .args(args)
            .arg(format!("https://localhost:{port}/f/s6.bin"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        out.stdout
    };
    assert_eq!(
        curl_one(&["-r", "1000-1999"]),
        pattern((1 << 20) + 7, 6)[1000..2000]
    );
    let head = String::from_utf8(curl_one(&["-I"]))
        .unwrap()
        .to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-length: 1048583"), "{head}");
    let etag = head
        .lines()
        .find_map(|l| l.strip_prefix("etag: "))
        .unwrap()
        .trim();
    let code = curl_one(&[
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-H",
        &format!("If-None-Match: {etag}"),
    ]);
    assert_eq!(code, b"304");
    let t = tls.report().tls.unwrap();
    let kept = t.vehicles.iter().find(|v| v.0 == "kept copy").unwrap();
    assert!(kept.1 >= 3, "small files come from the kept table: {t:?}");
}

fn openssl_available() -> bool {
    Command::new("openssl").arg("version").output().is_ok()
}

#[test]
fn openssl_s_client_negotiates_http_1_1_over_tls_1_3_and_1_2() {
    assert!(
        openssl_available(),
        "the openssl CLI is needed (test.sh installs it)"
    );
    let s = site();
    let pki = TestPki::new();
    let tls = app(pki.runtime(), &s.root);
    let connect = format!("127.0.0.1:{}", tls.local_addr().port());
    for (version, protocol) in [("-tls1_3", "TLSv1.3"), ("-tls1_2", "TLSv1.2")] {
        let mut child = Command::new("openssl")
            .args(["s_client", "-connect", &connect, "-servername", "localhost"])
            .args(["-alpn", "http/1.1", version, "-ign_eof", "-CAfile"])
            .arg(&pki.ca_pem)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"GET /text HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("ALPN protocol: http/1.1"), "{text}");
        assert!(text.contains(&format!("Protocol  : {protocol}")), "{text}");
        assert!(text.contains("Verify return code: 0 (ok)"), "{text}");
        assert!(text.contains("HTTP/1.1 200 OK"), "{text}");
        assert!(text.contains("plain text"), "{text}");
    }
}

#[test]
fn plain_http_on_the_tls_port_is_400_then_closed() {
    let s = site();
    let pki = TestPki::new();
    let tls = app(pki.runtime(), &s.root);
    let mut c = Client::connect(tls.local_addr());
    let r = c.get("/text");
    assert_eq!(r.status, 400);
    assert!(
        r.text()
            .contains("The plain HTTP request was sent to HTTPS port"),
        "{}",
        r.text()
    );
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.is_closed());
    // curl says the same.
    let out = Command::new("curl")
        .args([
            "-sS",
            &format!("http://127.0.0.1:{}/text", tls.local_addr().port()),
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("plain HTTP request was sent to HTTPS port")
    );
    // HTTPS clients are still served.
    let mut t = TlsClient::connect_tls(tls.local_addr(), pki.client_config());
    assert_eq!(t.get("/text").text(), "plain text");
    assert_eq!(tls.report().tls.unwrap().plain_http, 2);
}

/// The bytes a rustls client sends first: its ClientHello record.
fn client_hello(pki: &TestPki) -> Vec<u8> {
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(pki.client_config(), name).unwrap();
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).unwrap();
    assert_eq!(hello[0], 0x16);
    hello
}

#[test]
fn a_tls_client_on_a_plain_port_is_closed_without_a_reply() {
    let s = site();
    let pki = TestPki::new();
    let plain = app(test_runtime(), &s.root);
    let mut sock = TcpStream::connect(plain.local_addr()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    sock.write_all(&client_hello(&pki)).unwrap();
    let mut got = Vec::new();
    let _ = sock.read_to_end(&mut got);
    assert!(
        got.is_empty(),
        "a stray reply: {:?}",
        String::from_utf8_lossy(&got)
    );
    // The plain port goes on serving.
    assert_eq!(Client::connect(plain.local_addr()).get("/text").status, 200);
}

#[test]
fn a_client_that_never_finishes_its_handshake_is_closed_at_the_deadline() {
    let s = site();
    let pki = TestPki::new();
    let mut rt = pki.runtime();
    rt.header_timeout = Duration::from_millis(300);
    let tls = app(rt, &s.root);
    let hello = client_hello(&pki);
    let silent = TcpStream::connect(tls.local_addr()).unwrap();
    let mut partial = TcpStream::connect(tls.local_addr()).unwrap();
    partial.write_all(&hello[..10]).unwrap();
    let started = Instant::now();
    for mut sock in [silent, partial] {
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut got = Vec::new();
        let _ = sock.read_to_end(&mut got);
        assert!(
            got.is_empty() || got[0] == 0x15,
            "only an alert, if anything: {got:?}"
        );
    }
    // Both were closed by the server, well before the client's own timeout.
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut t = TlsClient::connect_tls(tls.local_addr(), pki.client_config());
    assert_eq!(t.get("/text").status, 200);
}

#[test]
fn resumed_handshakes_are_counted_and_failures_logged_sparingly() {
    let s = site();
    let pki = TestPki::new();
    let (tls, log) = app_logging_errors(&s, &pki);
    let config = pki.client_config();
    let mut first = TlsClient::connect_tls(tls.local_addr(), config.clone());
    // Reading a reply also reads the tickets the server sent.
    assert_eq!(first.get("/text").status, 200);
    let mut again = TlsClient::connect_tls(tls.local_addr(), config.clone());
    assert_eq!(again.get("/text").status, 200);
    assert_eq!(
        again.session().handshake_kind(),
        Some(rustls::HandshakeKind::Resumed)
    );
    // Thirty scanners with broken handshakes: each reads the alert.
    for _ in 0..30 {
        let mut sock = TcpStream::connect(tls.local_addr()).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        sock.write_all(b"\x16\x03\x01\x00\x05hello").unwrap();
        let mut got = Vec::new();
        let _ = sock.read_to_end(&mut got);
        // rustls chose no alert for it (a handshake message longer than
        // its bound): the server's own, decode_error.
        assert_eq!(got, [0x15, 3, 3, 0, 2, 2, 50], "an alert record");
    }
    let t = tls.report().tls.unwrap();
    assert_eq!(
        (t.handshakes_full, t.handshakes_resumed, t.failures),
        (1, 1, 30)
    );
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let lines = text
        .lines()
        .filter(|l| l.contains("TLS handshake failed"))
        .count();
    assert!(
        (1..=2).contains(&lines),
        "rate-limited failure lines: {text}"
    );
    // The first line has none left out before it, and says nothing of it.
    let first = text.lines().find(|l| l.contains("TLS handshake failed"));
    assert!(first.is_some_and(|l| !l.contains("not logged")), "{text}");
}

fn addr_of(server: &nikaia_std::http::Running) -> SocketAddr {
    server.local_addr()
}

#[test]
fn reload_swaps_the_pair_for_new_connections_only() {
    let s = site();
    let mut pki = TestPki::new();
    let (tls, log) = app_logging_errors(&s, &pki);
    let config = pki.client_config();
    let leaf = |c: &TlsClient| c.session().peer_certificates().unwrap()[0].to_vec();
    let contains = |der: &[u8], what: &str| der.windows(what.len()).any(|w| w == what.as_bytes());
    let mut old = TlsClient::connect_tls(addr_of(&tls), config.clone());
    assert!(contains(&leaf(&old), "server one"));
    pki.issue("server two");
    tls.reload().unwrap();
    // New clients each time: a resumed session shows the certificate of the
    // session it resumed.
    let mut new = TlsClient::connect_tls(addr_of(&tls), pki.client_config());
    assert!(contains(&leaf(&new), "server two"));
    // The connection made before goes on with its session.
    assert_eq!(old.get("/text").status, 200);
    assert_eq!(new.get("/text").status, 200);
    // A pair that does not load leaves the last good one in place.
    std::fs::write(&pki.key, "not a key").unwrap();
    assert!(tls.reload().is_err());
    let mut after = TlsClient::connect_tls(addr_of(&tls), pki.client_config());
    assert!(contains(&leaf(&after), "server two"));
    assert_eq!(after.get("/text").status, 200);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("reloaded"), "{text}");
    assert!(text.contains("error: key `tls-key`"), "{text}");
    assert!(
        text.contains("refused; the running configuration stays"),
        "{text}"
    );
    assert!(text.contains("key.pem"), "{text}");
}

/// A client reading through a 4 KiB receive window, so a large response
/// stalls in the middle.
fn slow_tls_client(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> TlsClient {
    use rustix::net::{AddressFamily, SocketType};
    let fd = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    rustix::net::sockopt::set_socket_recv_buffer_size(&fd, 4096).unwrap();
    rustix::net::connect(&fd, &addr).unwrap();
    TlsClient::over(TcpStream::from(fd), config)
}

#[test]
fn files_changed_under_https_downloads_never_hurt_the_process() {
    let s = site();
    let pki = TestPki::new();
    let (tls, log) = app_logging_errors(&s, &pki);
    let config = pki.client_config();
    let get = |path: &str| TlsClient::connect_tls(tls.local_addr(), config.clone()).get(path);

    // Truncated mid-download (read vehicle): closed short, logged, counted.
    let victim = s.root.join("victim.bin");
    std::fs::write(&victim, pattern(32 << 20, 9)).unwrap();
    let mut slow = slow_tls_client(tls.local_addr(), config.clone());
    slow.send("GET /f/victim.bin HTTP/1.1\r\nHost: t\r\n\r\n");
    std::thread::sleep(Duration::from_millis(200));
    std::fs::OpenOptions::new()
        .write(true)
        .open(&victim)
        .unwrap()
        .set_len(1000)
        .unwrap();
    match slow.reply() {
        Ok(r) => panic!("a whole reply after truncation: {} bytes", r.body.len()),
        Err(e) => assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
            ),
            "{e}"
        ),
    }
    let r = get("/f/victim.bin");
    assert_eq!((r.status, r.body.len()), (200, 1000));
    assert_eq!(tls.report().truncated, 1);

    // Renamed over mid-download: the open file goes on, whole and right.
    std::fs::write(&victim, pattern(16 << 20, 1)).unwrap();
    let mut slow = slow_tls_client(tls.local_addr(), config.clone());
    slow.send("GET /f/victim.bin HTTP/1.1\r\nHost: t\r\n\r\n");
    std::thread::sleep(Duration::from_millis(200));
    let fresh = s.root.join("fresh.bin");
    std::fs::write(&fresh, pattern(5000, 2)).unwrap();
    std::fs::rename(&fresh, &victim).unwrap();
    let r = slow.reply().unwrap();
    assert!(r.body == pattern(16 << 20, 1), "old bytes, whole");
    std::thread::sleep(Duration::from_millis(30));
    assert!(get("/f/victim.bin").body == pattern(5000, 2));

    // Kept files (copies under TLS): truncated, edited in place, renamed
    // over; each next answer is the file as it is now.
    let kept = s.root.join("kept.txt");
    std::fs::write(&kept, pattern(6000, 4)).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    for _ in 0..3 {
        assert!(get("/f/kept.txt").body == pattern(6000, 4));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(&kept)
        .unwrap()
        .set_len(100)
        .unwrap();
    assert!(get("/f/kept.txt").body == pattern(100, 4));
    std::fs::write(&kept, pattern(6000, 8)).unwrap();
    assert!(get("/f/kept.txt").body == pattern(6000, 8));
    std::fs::write(&fresh, pattern(7000, 6)).unwrap();
    std::fs::rename(&fresh, &kept).unwrap();
    assert!(get("/f/kept.txt").body == pattern(7000, 6));

    // A program's own mapping, truncated: a 500 and a log line, not SIGBUS.
    assert!(get("/mapped").body == pattern(70_000, 5));
    std::fs::OpenOptions::new()
        .write(true)
        .open(s.root.join("mapped.bin"))
        .unwrap()
        .set_len(0)
        .unwrap();
    assert_eq!(get("/mapped").status, 500);
    assert_eq!(get("/text").status, 200, "the process is still here");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("victim.bin"), "{text}");
    assert!(text.contains("the mapped body could not be read"), "{text}");
}
