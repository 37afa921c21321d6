//! Several certificates on one TLS listener, chosen by the name a client
//! asks for (`spec/tls.md`, "Several certificates"): rustls, curl (h1 and
//! h2) and `openssl s_client` against servers in the test process.

use nikaia_std::http::{Running, Server};
use nikaia_std::rt::{LogTarget, Runtime};
use nikaia_tests::{start, test_runtime, TestPki, TlsClient};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

/// Three pairs (two names each, one of them a wildcard) and a default,
/// written as `[[certificate]]` tables: the runtime file's text.
fn four_pairs(pki: &TestPki) -> String {
    let a = pki.write_pair("a", "pair a", &["a.example", "www.a.example"], 2100);
    let b = pki.write_pair("b", "pair b", &["b.example", "*.b.example"], 2100);
    let c = pki.write_pair("c", "pair c", &["c.example", "127.0.0.1"], 2100);
    let d = pki.write_pair("d", "pair d", &["default.example"], 2100);
    let table = |(cert, key): (PathBuf, PathBuf), default: bool| {
        format!(
            "[[certificate]]\ncert = {:?}\nkey = {:?}\ndefault = {default}\n",
            cert.display().to_string(),
            key.display().to_string()
        )
    };
    [
        table(a, false),
        table(b, false),
        table(c, false),
        table(d, true),
    ]
    .join("\n")
}

/// A server on 127.0.0.1 whose runtime file is `text` (TLS by its
/// certificates), reloading from that file; its error log is `error.log`
/// beside it.
fn serve(dir: &Path, text: &str) -> Running {
    let file = dir.join("runtime.toml");
    std::fs::write(&file, text).unwrap();
    let log = dir.join("error.log");
    let adjust = move |rt: &mut Runtime| {
        let test = test_runtime();
        rt.listen = test.listen;
        rt.workers = test.workers;
        rt.access_log = LogTarget::Off;
        rt.error_log = LogTarget::File(log.clone());
    };
    let mut rt = Runtime::load(&file).unwrap_or_else(|e| panic!("{e:?}"));
    adjust(&mut rt);
    start(
        Server::with_runtime(rt)
            .reload_from(&file, adjust)
            .route("/", |_| "hello"),
    )
}

fn client(pki: &TestPki, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut config = Arc::unwrap_or_clone(pki.client_config());
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config.resumption = rustls::client::Resumption::disabled();
    Arc::new(config)
}

/// The common name of the certificate a handshake asking for `name` gets.
fn cn_for(addr: SocketAddr, config: &Arc<rustls::ClientConfig>, name: &str) -> String {
    let mut c = TlsClient::connect_named(addr, config.clone(), name)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    match c.session().alpn_protocol() {
        // HTTP/2 is asked by curl below; here the handshake is what counts.
        Some(b"h2") => {}
        _ => assert_eq!(c.get("/").text(), "hello", "{name}"),
    }
    c.peer_common_name()
}

/// What curl says of a GET of `https://NAME:PORT/` resolved to the server:
/// (HTTP version, the certificate's subject line); trusting `roots`, or
/// without verifying (a name whose certificate would not match).
fn curl(addr: SocketAddr, roots: Option<&Path>, name: &str, http2: bool) -> (String, String) {
    let port = addr.port();
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-v", "-o", "/dev/null", "-w", "%{http_version}"])
        .arg(if http2 { "--http2" } else { "--http1.1" });
    match roots {
        Some(roots) => cmd.arg("--cacert").arg(roots),
        None => cmd.arg("-k"),
    };
    let out = cmd
        .arg("--resolve")
        .arg(format!("{name}:{port}:127.0.0.1"))
        .arg(format!("https://{name}:{port}/"))
        .output()
        .expect("curl runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "curl {name}: {err}");
    let subject = err
        .lines()
        .find_map(|l| l.trim_start_matches(['*', ' ']).strip_prefix("subject: "))
        .unwrap_or_default()
        .to_owned();
    (String::from_utf8_lossy(&out.stdout).into_owned(), subject)
}

/// `openssl s_client` asking for `name` (none: no SNI); what it printed.
fn s_client(addr: SocketAddr, pki: &TestPki, name: Option<&str>) -> String {
    s_client_with(addr, pki, name, &[])
}

/// [`s_client`] with more arguments (`-alpn …`).
fn s_client_with(addr: SocketAddr, pki: &TestPki, name: Option<&str>, more: &[&str]) -> String {
    let mut cmd = Command::new("openssl");
    cmd.args(["s_client", "-connect"])
        .arg(addr.to_string())
        .arg("-CAfile")
        .arg(&pki.ca_pem)
        .args(more);
    match name {
        Some(name) => cmd.args(["-servername", name]),
        None => cmd.arg("-noservername"),
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl runs");
    child.stdin.take().unwrap().write_all(b"Q\n").unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn each_name_gets_the_pair_that_covers_it_on_h1_and_h2() {
    let pki = TestPki::new();
    let server = serve(pki.dir.path(), &four_pairs(&pki));
    let addr = server.local_addr();
    for alpn in [&[b"http/1.1" as &[u8]][..], &[b"h2", b"http/1.1"]] {
        let config = client(&pki, alpn);
        for (name, cn) in [
            ("a.example", "pair a"),
            ("www.a.example", "pair a"),
            ("b.example", "pair b"),
            ("files.b.example", "pair b"), // the wildcard
            ("FILES.B.Example", "pair b"), // names are matched without case
            ("c.example", "pair c"),
            ("default.example", "pair d"),
        ] {
            assert_eq!(cn_for(addr, &config, name), cn, "{name}");
        }
    }
    // What no pair covers gets the default: an unknown name, and a name
    // two labels under a wildcard (it covers one).
    let config = client(&pki, &[b"http/1.1"]);
    for name in ["unknown.example", "deep.files.b.example"] {
        // The default's certificate does not name it: the client refuses.
        let refused = TlsClient::connect_named(addr, config.clone(), name).map(|_| ());
        assert!(refused.is_err(), "{name}");
        let (_, subject) = curl(addr, None, name, false);
        assert!(subject.contains("pair d"), "{name}: {subject}");
    }
    // No SNI (a client that asked for an IP address): the pair whose
    // subjectAltName holds the address the connection reached.
    assert_eq!(cn_for(addr, &config, "127.0.0.1"), "pair c");

    // curl over HTTP/1.1 and HTTP/2, each name to its pair.
    for (name, cn) in [("www.a.example", "pair a"), ("x.b.example", "pair b")] {
        for http2 in [false, true] {
            let (version, subject) = curl(addr, Some(&pki.ca_pem), name, http2);
            assert_eq!(version, if http2 { "2" } else { "1.1" }, "{name}");
            assert!(subject.contains(cn), "{name}: {subject}");
        }
    }
    // openssl s_client -servername, and without SNI.
    let out = s_client(addr, &pki, Some("b.example"));
    assert!(
        out.contains("CN = pair b") || out.contains("CN=pair b"),
        "{out}"
    );
    assert!(out.contains("Verify return code: 0"), "{out}");
    let out = s_client(addr, &pki, None);
    assert!(
        out.contains("CN = pair c") || out.contains("CN=pair c"),
        "{out}"
    );

    // The report lists the pairs, their names and their handshakes.
    let tls = server.report().tls.unwrap();
    let certs = &tls.certificates;
    assert_eq!(certs.len(), 4);
    assert_eq!(certs[1].names, ["b.example", "*.b.example"]);
    assert_eq!(certs[2].names, ["c.example", "127.0.0.1"]);
    assert_eq!(
        certs.iter().map(|c| c.default).collect::<Vec<_>>(),
        [false, false, false, true]
    );
    assert!(certs.iter().all(|c| c.source == "file" && c.expires_in > 0));
    // a: 2 names × 2 ALPN lists + 2 curls; b: 3 × 2 + 2 curls + s_client.
    assert_eq!(certs[0].handshakes, 6);
    assert_eq!(certs[1].handshakes, 9);
    // d: its own name on two ALPN lists, and curl's two names no pair
    // covers (the clients that verified refused its certificate before
    // their handshake ended).
    assert_eq!(certs[3].handshakes, 2 + 2);
    assert_eq!(tls.unrecognized, 0);
}

#[test]
fn without_a_default_a_name_no_pair_covers_is_refused_with_unrecognized_name() {
    let pki = TestPki::new();
    // The three pairs without the default.
    let text = four_pairs(&pki);
    let text = &text[..text.rfind("[[certificate]]").unwrap()];
    let server = serve(pki.dir.path(), text);
    let addr = server.local_addr();
    let config = client(&pki, &[b"http/1.1"]);
    let refused = |name: &str| match TlsClient::connect_named(addr, config.clone(), name) {
        Ok(_) => panic!("{name}: the handshake went through"),
        Err(e) => e.to_string(),
    };
    let error = refused("unknown.example");
    assert!(error.contains("UnrecognisedName"), "{error}");
    let out = s_client(addr, &pki, Some("nothing.example"));
    assert!(out.contains("unrecognized name"), "{out}");
    // A name a pair covers is still served, on the same listener.
    assert_eq!(cn_for(addr, &config, "a.example"), "pair a");
    let tls = server.report().tls.unwrap();
    assert_eq!((tls.unrecognized, tls.failures), (2, 2));
    let log = std::fs::read_to_string(pki.dir.path().join("error.log")).unwrap();
    assert!(
        log.contains("no certificate covers \"unknown.example\" (unrecognized_name)"),
        "{log}"
    );
    // Throttled: one line for the two.
    assert_eq!(log.matches("TLS handshake refused").count(), 1, "{log}");
}

#[test]
fn an_acme_tls_probe_with_no_validation_in_flight_reads_unrecognized_name() {
    // `spec/tls.md`, "Challenges": a hello offering only `acme-tls/1` is a
    // CA's; with no validation of its name in flight it is refused with
    // the alert, silently — whatever the pairs cover, with a default too.
    let pki = TestPki::new();
    let server = serve(pki.dir.path(), &four_pairs(&pki));
    let addr = server.local_addr();
    let acme = ["-alpn", "acme-tls/1"];
    for name in [Some("nothing.example"), Some("a.example"), None] {
        let out = s_client_with(addr, &pki, name, &acme);
        assert!(out.contains("unrecognized name"), "{name:?}: {out}");
        assert!(!out.contains("read 0 bytes"), "{name:?}: {out}");
    }
    let config = client(&pki, &[b"acme-tls/1"]);
    match TlsClient::connect_named(addr, config, "nothing.example") {
        Ok(_) => panic!("the acme-tls/1 handshake went through"),
        Err(e) => assert!(e.to_string().contains("UnrecognisedName"), "{e}"),
    }
    // Neither counted nor logged as a failure; the listener serves on.
    let tls = server.report().tls.unwrap();
    assert_eq!((tls.unrecognized, tls.failures), (0, 0));
    let log = std::fs::read_to_string(pki.dir.path().join("error.log")).unwrap_or_default();
    assert!(!log.contains("TLS handshake"), "{log}");
    assert_eq!(cn_for(addr, &client(&pki, &[]), "a.example"), "pair a");
}

#[test]
fn without_sni_and_without_a_pair_for_the_address_the_default_answers() {
    let pki = TestPki::new();
    let a = pki.write_pair("a", "pair a", &["a.example"], 2100);
    let d = pki.write_pair("d", "pair d", &["default.example"], 2100);
    let text = format!(
        "certificate = [{{ cert = {:?}, key = {:?} }}, {{ cert = {:?}, key = {:?}, default = true }}]\n",
        a.0.display().to_string(),
        a.1.display().to_string(),
        d.0.display().to_string(),
        d.1.display().to_string(),
    );
    let server = serve(pki.dir.path(), &text);
    let out = s_client(server.local_addr(), &pki, None);
    assert!(
        out.contains("CN = pair d") || out.contains("CN=pair d"),
        "{out}"
    );
    // With no default, the same hello is refused.
    let text = text.replace(", default = true", "");
    let server = serve(pki.dir.path(), &text);
    let out = s_client(server.local_addr(), &pki, None);
    assert!(out.contains("unrecognized name"), "{out}");
}

#[test]
fn a_sole_pair_answers_every_name_as_before() {
    let pki = TestPki::new();
    let text = format!(
        "tls-cert = {:?}\ntls-key = {:?}\n",
        pki.cert.display().to_string(),
        pki.key.display().to_string()
    );
    let server = serve(pki.dir.path(), &text);
    let (_, subject) = curl(
        server.local_addr(),
        None,
        "not-on-the-certificate.example",
        false,
    );
    assert!(subject.contains("server one"), "{subject}");
    assert_eq!(
        cn_for(server.local_addr(), &client(&pki, &[]), "127.0.0.1"),
        "server one"
    );
}

#[test]
fn of_two_pairs_for_one_name_the_one_that_expires_later_serves_it() {
    let pki = TestPki::new();
    let early = pki.write_pair("early", "early", &["site.example"], 2090);
    let late = pki.write_pair("late", "late", &["site.example", "other.example"], 2100);
    let table = |(cert, key): &(PathBuf, PathBuf)| {
        format!(
            "[[certificate]]\ncert = {:?}\nkey = {:?}\n",
            cert.display().to_string(),
            key.display().to_string()
        )
    };
    // In either order.
    for text in [table(&early) + &table(&late), table(&late) + &table(&early)] {
        let server = serve(pki.dir.path(), &text);
        let config = client(&pki, &[]);
        assert_eq!(cn_for(server.local_addr(), &config, "site.example"), "late");
    }
}

#[test]
fn a_reload_replaces_one_pair_while_kept_alive_connections_go_on() {
    let pki = TestPki::new();
    let server = serve(pki.dir.path(), &four_pairs(&pki));
    let addr = server.local_addr();
    let config = client(&pki, &[b"http/1.1"]);
    let h2 = client(&pki, &[b"h2"]);
    let mut kept = TlsClient::connect_named(addr, config.clone(), "a.example").unwrap();
    assert_eq!(kept.get("/").text(), "hello");
    assert_eq!(kept.peer_common_name(), "pair a");
    // An HTTP/2 connection made before, kept open across the reload.
    let mut kept_h2 = TlsClient::connect_named(addr, h2.clone(), "b.example").unwrap();
    assert_eq!(kept_h2.session().alpn_protocol(), Some(&b"h2"[..]));
    kept_h2.send(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00");

    // Pair a is replaced: new handshakes get the new certificate.
    pki.write_pair(
        "a",
        "pair a, renewed",
        &["a.example", "www.a.example"],
        2101,
    );
    server.reload().expect("the reload is taken");
    assert_eq!(cn_for(addr, &config, "a.example"), "pair a, renewed");
    assert_eq!(cn_for(addr, &h2, "www.a.example"), "pair a, renewed");
    assert_eq!(cn_for(addr, &config, "x.b.example"), "pair b");
    // The connections made before go on with their sessions.
    for _ in 0..3 {
        assert_eq!(kept.get("/").text(), "hello");
    }
    assert_eq!(kept.peer_common_name(), "pair a");
    // A PING on the HTTP/2 connection, answered with its ACK.
    kept_h2.send(b"\x00\x00\x08\x06\x00\x00\x00\x00\x00pingpong");
    let mut frame = [0u8; 9];
    use std::io::Read;
    let mut got_ping_ack = false;
    for _ in 0..8 {
        let r = kept_h2.reader();
        r.read_exact(&mut frame).unwrap();
        let len = u32::from_be_bytes([0, frame[0], frame[1], frame[2]]) as usize;
        let mut payload = vec![0; len];
        r.read_exact(&mut payload).unwrap();
        if frame[3] == 6 && frame[4] & 1 == 1 {
            got_ping_ack = true;
            break;
        }
    }
    assert!(
        got_ping_ack,
        "the HTTP/2 connection kept across the reload answers"
    );

    // A pair whose key does not match is refused at reload; the set in
    // place stays whole.
    let (_, other_key) = pki.make_for("stray", &["b.example"], 2100);
    std::fs::write(pki.dir.path().join("b.key"), other_key).unwrap();
    let refused = server.reload().expect_err("a key that does not match");
    let refused = refused.join("\n");
    assert!(refused.contains("key `certificate`"), "{refused}");
    assert!(refused.contains("does not match"), "{refused}");
    assert!(refused.contains("b.key"), "{refused}");
    assert_eq!(cn_for(addr, &config, "b.example"), "pair b");
    assert_eq!(cn_for(addr, &config, "a.example"), "pair a, renewed");
    // Handshake counters are carried over the reload that kept a pair.
    let tls = server.report().tls.unwrap();
    assert!(
        tls.certificates[1].handshakes >= 3,
        "{:?}",
        tls.certificates[1]
    );
}

#[test]
fn a_runtime_is_built_the_documented_way() {
    // `Runtime` is `non_exhaustive`: a program starts from the defaults and
    // sets what it needs, so a key added later breaks nothing here.
    let pki = TestPki::new();
    let (cert, key) = pki.write_pair("site", "built", &["site.example"], 2100);
    let mut rt = Runtime::default();
    rt.listen = vec![SocketAddr::from(([127, 0, 0, 1], 0)).into()];
    rt.workers = 1;
    rt.access_log = LogTarget::Off;
    rt.certificates
        .push(nikaia_std::rt::CertFiles::new(cert, key).default_pair(true));
    let server = start(Server::with_runtime(rt).route("/", |_| "hello"));
    let config = client(&pki, &[]);
    assert_eq!(
        cn_for(server.local_addr(), &config, "site.example"),
        "built"
    );
}
