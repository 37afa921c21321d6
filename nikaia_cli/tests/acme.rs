//! Automatic HTTPS against Debian's Pebble (`spec/tls.md`, "Automatic
//! HTTPS"): the first certificate over HTTP-01 and TLS-ALPN-01, then curl
//! and nghttp over h1 and h2 trusting Pebble's root; three ACME names by
//! SNI beside a file pair; a CA that rejects most nonces; a restart that
//! orders nothing; a Pebble that forgot its accounts; a crash after
//! finalize. No verdict waits on the wall clock: the CA's request log and
//! what the server serves.

mod common;
#[path = "common/acme.rs"]
mod harness;

use harness::{client, handshake, plain_get, served, wait_until, Ca, Site};
use std::process::Command;
use std::time::Instant;

fn curl(site: &Site, ca: &Ca, name: &str, http2: bool) -> String {
    let out = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{http_version}",
        ])
        .arg(if http2 { "--http2" } else { "--http1.1" })
        .arg("--cacert")
        .arg(ca.issuer_root())
        .arg("--resolve")
        .arg(format!("{name}:{}:127.0.0.1", site.tls))
        .arg(format!("https://{name}:{}/", site.tls))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn http01_three_names_beside_a_file_pair_then_curl_and_nghttp_over_h1_and_h2() {
    let ca = Ca::pebble(&[]);
    let pki = nikaia_tests::TestPki::new();
    let (cert, key) = pki.write_pair("files", "the file pair", &["files.nikaia.test"], 2100);
    let pair = format!(
        "[[certificate]]\ncert = {:?}\nkey = {:?}\n",
        cert.display().to_string(),
        key.display().to_string()
    );
    let names = ["a.nikaia.test", "b.nikaia.test", "c.nikaia.test"];
    let site = Site::new(&ca, &names, "challenges = [\"http-01\"]", &pair);
    let started = Instant::now();
    let _server = site.serve();
    served(&site, &ca, names[0]);
    eprintln!(
        "first certificate served {:?} after the start",
        started.elapsed()
    );
    for name in &names[1..] {
        served(&site, &ca, name);
    }
    assert_eq!(curl(&site, &ca, names[0], false), "200 1.1");
    assert_eq!(curl(&site, &ca, names[1], true), "200 2");
    // nghttp over h2, asking for the name (its SNI comes from the URL's
    // host): run where /etc/hosts says the name is 127.0.0.1.
    let hosts = site.dir.path().join("hosts");
    std::fs::write(&hosts, format!("127.0.0.1 {}\n", names[2])).unwrap();
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c"])
        .arg(format!(
            "mount --bind {} /etc/hosts && nghttp -v https://{}:{}/",
            hosts.display(),
            names[2],
            site.tls
        ))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("The negotiated protocol: h2"), "{text}");
    assert!(text.contains(":status: 200"), "{text}");
    // The file pair answers its own name, beside the ACME ones.
    let files = client(&pki.ca_pem, &[b"http/1.1"]);
    let leaf = handshake(site.tls, &files, "files.nikaia.test").unwrap();
    assert_eq!(nikaia_tests::common_name(&leaf), "the file pair");
    // One order per name, each answered over HTTP-01.
    assert_eq!(ca.count("POST /order-plz"), 3);
    assert_eq!(ca.count("POST /sign-me-up"), 1, "one account");
    let entry = site.acme(names[2]);
    assert_eq!(entry["orders"], 1, "{entry}");
    assert!(entry["not_after"].as_u64().unwrap() > 0, "{entry}");
    assert!(entry["next_renewal"].as_u64().unwrap() > entry["last_attempt"].as_u64().unwrap());
    assert_eq!(entry["last_error"], "");
    assert!(entry["challenges"].as_u64().unwrap() >= 3, "{entry}");
    // Pebble validates more than once, from more than one place; a token
    // the server does not hold is 404 for an ACME name, and the redirect
    // for another host.
    let (status, _) = plain_get(
        site.http,
        "a.nikaia.test",
        "/.well-known/acme-challenge/nothing",
    );
    assert_eq!(status, 404);
    let (status, head) = plain_get(
        site.http,
        "elsewhere.example",
        "/.well-known/acme-challenge/nothing",
    );
    assert_eq!(
        status, 404,
        "certbot's webroot: the file, missing here\n{head}"
    );
    let (status, head) = plain_get(site.http, "a.nikaia.test", "/index.html");
    assert_eq!(status, 308, "{head}");
}

#[test]
fn tls_alpn01_alone_then_curl_over_h2() {
    let ca = Ca::pebble(&[]);
    let site = Site::new(
        &ca,
        &["alpn.nikaia.test"],
        "challenges = [\"tls-alpn-01\"]",
        "",
    );
    let _server = site.serve();
    served(&site, &ca, "alpn.nikaia.test");
    assert_eq!(curl(&site, &ca, "alpn.nikaia.test", true), "200 2");
    assert_eq!(ca.count("POST /order-plz"), 1);
    // The CA's validation handshakes are neither failures nor logged.
    let report = site.explain();
    assert_eq!(report["tls"]["failures"], 0, "{report}");
    assert!(
        !site.log().contains("TLS handshake failed"),
        "{}",
        site.log()
    );
}

#[test]
fn a_ca_that_rejects_nine_nonces_in_ten_still_issues() {
    let ca = Ca::pebble(&[("PEBBLE_WFE_NONCEREJECT", "90")]);
    let site = Site::new(&ca, &["nonce.nikaia.test"], "", "");
    let _server = site.serve();
    served(&site, &ca, "nonce.nikaia.test");
    assert!(ca.count("POST /order-plz") >= 1);
    let entry = site.acme("nonce.nikaia.test");
    assert_eq!(entry["last_error"], "", "{entry}");
}

#[test]
fn a_restart_serves_the_stored_pair_first_and_orders_nothing() {
    let mut ca = Ca::pebble(&[]);
    let site = Site::new(&ca, &["again.nikaia.test"], "", "");
    let server = site.serve();
    let first = served(&site, &ca, "again.nikaia.test");
    assert_eq!(ca.count("POST /order-plz"), 1);
    let issuer = ca.issuer_root();
    drop(server);
    // With the CA gone, the restarted server serves the stored pair.
    ca.stop();
    let _server = site.serve();
    let config = client(&issuer, &[b"http/1.1"]);
    assert_eq!(
        handshake(site.tls, &config, "again.nikaia.test").unwrap(),
        first
    );
    ca.restart();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(ca.count("POST /order-plz"), 1, "no second order");
}

#[test]
fn a_ca_that_forgot_the_account_gets_it_registered_again() {
    let mut ca = Ca::pebble(&[]);
    let site = Site::new(&ca, &["one.nikaia.test"], "", "");
    let server = site.serve();
    served(&site, &ca, "one.nikaia.test");
    // Pebble restarted: every account and order is gone, and its root
    // is new.
    ca.restart();
    site.write(&ca, &["one.nikaia.test", "two.nikaia.test"], "", "");
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&server),
        rustix::process::Signal::HUP,
    )
    .unwrap();
    served(&site, &ca, "two.nikaia.test");
    assert_eq!(
        ca.count("POST /sign-me-up"),
        2,
        "registered again after the CA's reset\n{}",
        site.log()
    );
    assert!(site.log().contains("accountDoesNotExist"), "{}", site.log());
}

#[test]
fn sigkill_after_finalize_then_a_restart_resumes_the_order() {
    let ca = Ca::pebble(&[]);
    let site = Site::new(
        &ca,
        &["crash.nikaia.test"],
        "challenges = [\"http-01\"]",
        "",
    );
    // The checkpoints of a first issuance, in order: the account key
    // stored (its temporary written, renamed; stored), the account
    // registered (its file: temporary, renamed), the order placed, its
    // file (temporary, renamed), stored, the validation's file (temporary,
    // renamed), offered, asked for, the authorization valid, finalized.
    let finalized = "16";
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(site.dir.path().join("site"))
        .arg("--runtime")
        .arg(&site.runtime)
        .env("NIKAIA_ACME_CRASH_AFTER", finalized)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("killed at finalized"),
        "{said}\n{}",
        site.log()
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9)
    );
    assert_eq!(ca.count("POST /order-plz"), 1);
    assert_eq!(ca.count("POST /finalize-order/"), 1);
    let _server = site.serve();
    served(&site, &ca, "crash.nikaia.test");
    assert_eq!(
        ca.count("POST /order-plz"),
        1,
        "the order was resumed, not placed again\n{}",
        site.log()
    );
    assert_eq!(
        ca.count("POST /finalize-order/"),
        1,
        "and not finalized again"
    );
}

#[test]
fn check_validates_the_acme_table_and_never_prints_the_eab_key() {
    let ca = Ca::pebble(&[]);
    let site = Site::new(
        &ca,
        &["check.nikaia.test"],
        "challenges = [\"http-01\"]",
        "",
    );
    let check = |file: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
            .arg("check")
            .arg(file)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    assert_eq!(
        check(&site.runtime).0,
        Some(0),
        "{}",
        check(&site.runtime).1
    );
    // A storage others may read: refused (keys live there).
    std::fs::create_dir(&site.storage).unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(&site.storage).unwrap().permissions(),
        0o755,
    );
    std::fs::set_permissions(
        &site.storage,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (status, text) = check(&site.runtime);
    assert_eq!(status, Some(1), "{text}");
    assert!(
        text.contains("error: key `acme`: storage") && text.contains("must be 0700"),
        "{text}"
    );
    // The server refuses to start with it too.
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(site.dir.path().join("site"))
        .arg("--runtime")
        .arg(&site.runtime)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be 0700"));
    std::fs::set_permissions(
        &site.storage,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    // HTTP-01 alone with no plain listener: nothing can answer it.
    let text = std::fs::read_to_string(&site.runtime).unwrap();
    let tls_only = site.dir.path().join("tls-only.toml");
    let plain = format!(
        ", {{ address = \"127.0.0.1:{}\", tls = false, https-redirect = true }}",
        site.http
    );
    std::fs::write(&tls_only, text.replace(&plain, "")).unwrap();
    let (status, out) = check(&tls_only);
    assert_eq!(status, Some(1), "{out}");
    assert!(
        out.contains("no listener can answer the challenges allowed"),
        "{out}"
    );
    // Listeners on other ports than 80 and 443: a warning (a port may be
    // forwarded).
    let (status, out) = check(&site.runtime);
    assert_eq!(status, Some(0), "{out}");
    assert!(
        out.contains("warning: key `acme`: HTTP-01 is validated on port 80"),
        "{out}"
    );
    // An EAB key file: read to check it, never printed.
    let key = site.dir.path().join("eab.key");
    std::fs::write(&key, "c2VjcmV0LWhtYWMta2V5LXRoYXQtbXVzdC1ub3Qtc2hvdw").unwrap();
    let eab = site.dir.path().join("eab.toml");
    std::fs::write(
        &eab,
        format!(
            "{text}eab-kid = \"kid-7\"\neab-hmac-key = {:?}\n",
            key.display().to_string()
        ),
    )
    .unwrap();
    let (status, out) = check(&eab);
    assert_eq!(status, Some(0), "{out}");
    assert!(out.contains("eab-hmac-key = "), "{out}");
    assert!(!out.contains("c2VjcmV0"), "the key is printed: {out}");
    std::fs::remove_file(&key).unwrap();
    let (status, out) = check(&eab);
    assert_eq!(status, Some(1), "{out}");
    assert!(
        out.contains("eab-hmac-key") && out.contains("No such file"),
        "{out}"
    );
}

#[test]
fn explain_shows_each_acme_certificate_in_text_and_prometheus() {
    let ca = Ca::pebble(&[]);
    let site = Site::new(&ca, &["shown.nikaia.test"], "", "");
    let _server = site.serve();
    served(&site, &ca, "shown.nikaia.test");
    let text = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .args(["explain", "--runtime"])
        .arg(&site.runtime)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("  shown.nikaia.test (acme"), "{text}");
    assert!(text.contains("next renewal 20"), "{text}");
    assert!(text.contains("(no error)"), "{text}");
    assert!(text.contains("1 orders, 0 failed attempts"), "{text}");
    let prom = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .args(["explain", "--prometheus", "--runtime"])
        .arg(&site.runtime)
        .output()
        .unwrap();
    let prom = common::parse_prometheus(&String::from_utf8(prom.stdout).unwrap());
    let labels = [
        ("cert", "shown.nikaia.test"),
        ("names", "shown.nikaia.test"),
        ("source", "acme"),
    ];
    assert_eq!(
        common::prometheus_sample(&prom, "nikaia_acme_orders", &labels),
        1.0
    );
    assert_eq!(
        common::prometheus_sample(&prom, "nikaia_acme_failing", &labels),
        0.0
    );
    assert!(common::prometheus_sample(&prom, "nikaia_acme_next_renewal_seconds", &labels) > 1.7e9);
    assert!(
        common::prometheus_sample(&prom, "nikaia_tls_certificate_expiry_seconds", &labels) > 0.0
    );
}

#[test]
fn serve_domain_sets_up_a_public_site_on_80_and_443() {
    // Ports 80 and 443 of every address: root's, and free.
    let free = ["0.0.0.0:80", "0.0.0.0:443"]
        .iter()
        .all(|a| std::net::TcpListener::bind(a).is_ok());
    if !rustix::process::geteuid().is_root() || !free {
        panic!("this test binds ports 80 and 443: run it as root on a machine where they are free");
    }
    let ca = harness::Ca::mock_on(80, 443);
    // The runtime file gives the CA and the storage; --domain the rest:
    // the names, and the agreement to the terms (README, "As a systemd
    // service").
    let site = Site::new(&ca, &["unused.nikaia.test"], "", "");
    let text = std::fs::read_to_string(&site.runtime).unwrap();
    let acme: String = text[text.find("[acme]").unwrap()..]
        .lines()
        .filter(|l| !l.starts_with("domains") && !l.starts_with("agree-to-terms"))
        .map(|l| format!("{l}\n"))
        .collect();
    let runtime = site.dir.path().join("domain.toml");
    std::fs::write(&runtime, format!("workers = 1\naccess-log = \"off\"\nerror-log = \"error.log\"\nstats-socket = \"stats.sock\"\n{acme}")).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
    cmd.arg("serve")
        .arg(site.dir.path().join("site"))
        .args(["--domain", "Public.Nikaia.Test", "--runtime"])
        .arg(&runtime);
    let (_server, line) = common::spawn_serving(cmd);
    assert!(line.contains("https://0.0.0.0:443/"), "{line}");
    assert!(line.contains("http://0.0.0.0:80/"), "{line}");
    let config = client(&ca.issuer_root(), &[b"h2"]);
    wait_until("the certificate on 443", 30, || {
        handshake(443, &config, "public.nikaia.test").is_ok()
    });
    let (status, head) = plain_get(80, "public.nikaia.test", "/x?y");
    assert_eq!(status, 308, "{head}");
    assert!(
        head.contains("Location: https://public.nikaia.test/x?y"),
        "{head}"
    );
}
