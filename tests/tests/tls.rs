//! HTTPS over real sockets with real clients (rustls, curl, openssl): the
//! same answers as plain HTTP, records, slow readers, a reloaded pair, and
//! files changed under a download (what it refuses: `tls_refusals.rs`).
//! `spec/tls.md` is what these check.

use nikaia_tests::https::{app, app_logging_errors, pattern, site};
use nikaia_tests::{test_runtime, Client, Reply, TestPki, TlsClient};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

/// Status, headers but Date and Alt-Svc (which only a TLS listener
/// serving HTTP/3 sends), and body: what must not differ between the
/// transports.
fn answer(r: &Reply) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let headers = r
        .headers
        .iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case("date") && !n.eq_ignore_ascii_case("alt-svc"))
        .cloned()
        .collect();
    (r.status, headers, r.body.clone())
}

#[test]
fn every_row_and_file_answer_is_the_same_as_in_plain_http() {
    let s = site();
    let pki = TestPki::new();
    let plain = app(test_runtime(), &s.root);
    // With HTTP/3 on, as the answers over it are compared in h3.rs.
    let mut rt = pki.runtime();
    rt.http3 = Some(true);
    let tls = app(rt, &s.root);
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
