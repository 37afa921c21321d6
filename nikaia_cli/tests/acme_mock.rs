//! Automatic HTTPS against the mock CA (`tests/acme/mock_ca.py`) for what
//! Debian's Pebble 2.4 lacks: renewal windows (ARI) and `replaces`, short
//! lifetimes, `Retry-After`, a CA that goes down, a clock that jumps; and
//! what no CA shows: crashes at every point, a full disk, two processes
//! on one storage. No verdict waits on the wall clock: the CA's request
//! log, the orders it saw, and what the server serves.
//!
//! `NIKAIA_ACME_FULL=1` runs the long forms (1 000 crashes, 100 trials of
//! two processes): `tests/acme/full.sh`.

mod common;
#[path = "common/acme.rs"]
mod harness;

use harness::{client, handshake, put, served, served_when, wait_until, Ca, Site};
use serde_json::json;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn full() -> bool {
    std::env::var_os("NIKAIA_ACME_FULL").is_some_and(|v| v == "1")
}

fn count(log: &[serde_json::Value], what: &str) -> usize {
    log.iter().filter(|e| e["what"] == what).count()
}

#[test]
fn lego_gets_a_certificate_from_the_mock() {
    let ca = Ca::mock();
    let out = Command::new("lego")
        .arg("--path")
        .arg(ca.dir.path().join("lego"))
        .args([
            "--server",
            &ca.directory(),
            "--accept-tos",
            "--email",
            "t@nikaia.test",
        ])
        .args(["--domains", "lego.nikaia.test", "--http", "--http.port"])
        .arg(format!("127.0.0.1:{}", ca.http))
        .arg("run")
        .env("LEGO_CA_CERTIFICATES", ca.tls_roots())
        .output()
        .expect("lego runs (./test.sh installs Debian's lego)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cert = ca.dir.path().join("lego/certificates/lego.nikaia.test.crt");
    let verified = Command::new("openssl")
        .args(["verify", "-CAfile"])
        .arg(ca.issuer_root())
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
    let log = ca.log();
    for what in ["new-account", "new-order", "chall", "finalize", "cert"] {
        assert_eq!(count(&log, what), 1, "{what}: {log:?}");
    }
}

#[test]
fn an_ari_window_moved_earlier_renews_with_replaces() {
    let ca = Ca::mock();
    // Windows are asked for again every second.
    ca.config(json!({"ari_retry": 1}));
    let site = Site::new(&ca, &["ari.nikaia.test"], "", "");
    let server = site.serve();
    let first = served(&site, &ca, "ari.nikaia.test");
    assert_eq!(ca.orders().len(), 1);
    // The CA moves the window into the past: renew now.
    ca.config(json!({"ari": [-60, -30]}));
    let second = served_when(&site, &ca, "ari.nikaia.test", 30, |leaf| leaf != first);
    assert_ne!(first, second);
    let orders = ca.orders();
    assert_eq!(orders.len(), 2, "{orders:?}");
    assert!(orders[0]["replaces"].is_null());
    // The mock accepts `replaces` only for this account's certificate it
    // did not see replaced yet.
    assert!(
        orders[1]["replaces"]
            .as_str()
            .is_some_and(|r| r.contains('.')),
        "{orders:?}"
    );
    assert_eq!(orders[1]["status"], "valid");
    assert!(count(&ca.log(), "renewal-info") >= 1);
    // A stored pair that does not load (a disk's damage, a hand's edit) is
    // logged and the one before it served; the server starts anyway.
    drop(server);
    let stored = site.storage.join(ca_dir(&ca)).join("ari.nikaia.test.pem");
    wait_until("the renewed pair stored", 10, || {
        std::fs::read(&stored).is_ok_and(|b| pem_leaf(&b) == second)
    });
    std::fs::write(&stored, b"-----BEGIN PRIVATE KEY-----\ntorn\n").unwrap();
    ca.config(json!({"down": 30}));
    let _server = site.serve();
    let config = client(&ca.issuer_root(), &[b"http/1.1"]);
    assert_eq!(
        handshake(site.tls, &config, "ari.nikaia.test").unwrap(),
        first
    );
    assert!(
        site.log().contains("ari.nikaia.test.pem does not load"),
        "{}",
        site.log()
    );
}

#[test]
fn certificates_of_two_seconds_swap_every_second_under_h1_and_h2_handshakes() {
    let ca = Ca::mock();
    // Two-second certificates, no windows: renewed at half their life.
    ca.config(json!({"lifetime": 2, "ari_off": true}));
    let site = Site::new(&ca, &["swap.nikaia.test"], "", "");
    let _server = site.serve();
    served(&site, &ca, "swap.nikaia.test");
    let stop = Arc::new(AtomicBool::new(false));
    let (done, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let leaves = Arc::new(Mutex::new(std::collections::HashSet::new()));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let load: Vec<_> = [
        &[b"http/1.1" as &[u8]][..],
        &[b"h2"],
        &[b"http/1.1"],
        &[b"h2"],
    ]
    .into_iter()
    .map(|alpn| {
        let config = client(&ca.issuer_root(), alpn);
        let (stop, done, failed) = (stop.clone(), done.clone(), failed.clone());
        let (leaves, errors, port) = (leaves.clone(), errors.clone(), site.tls);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match handshake(port, &config, "swap.nikaia.test") {
                    Ok(leaf) => {
                        done.fetch_add(1, Ordering::Relaxed);
                        leaves.lock().unwrap().insert(leaf);
                    }
                    Err(e) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        errors.lock().unwrap().push(e.to_string());
                    }
                }
            }
        })
    })
    .collect();
    let orders_before = ca.orders().len();
    // Ten renewals under the load.
    wait_until("ten renewals", 40, || {
        ca.orders().len() >= orders_before + 10
    });
    stop.store(true, Ordering::Relaxed);
    for t in load {
        t.join().unwrap();
    }
    let (done, failed) = (done.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    assert_eq!(
        failed,
        0,
        "{done} handshakes, errors: {:?}",
        errors.lock().unwrap()
    );
    assert!(
        leaves.lock().unwrap().len() >= 8,
        "{} certificates seen",
        leaves.lock().unwrap().len()
    );
    assert!(done > 100, "{done}");
}

#[test]
fn a_rate_limited_order_waits_for_retry_after_with_no_request_before_it() {
    let ca = Ca::mock();
    ca.config(json!({"rate_limit": {"orders": 1, "retry_after": 3}}));
    let site = Site::new(&ca, &["limited.nikaia.test"], "", "");
    let _server = site.serve();
    served(&site, &ca, "limited.nikaia.test");
    let log = ca.log();
    let limited = log
        .iter()
        .find(|e| e["what"] == "problem rateLimited")
        .expect("a 429")
        .clone();
    let at = limited["t"].as_f64().unwrap();
    let after: Vec<f64> = (log.iter())
        .map(|e| e["t"].as_f64().unwrap())
        .filter(|t| *t > at)
        .collect();
    assert!(!after.is_empty());
    assert!(
        after.iter().all(|t| *t >= at + 3.0),
        "a request before Retry-After: {log:?}"
    );
    assert!(site.log().contains("rateLimited"), "{}", site.log());
}

#[test]
fn with_the_ca_down_for_a_minute_the_stored_pair_serves_and_retries_are_spaced() {
    let ca = Ca::mock();
    let site = Site::new(&ca, &["up.nikaia.test"], "", "");
    let server = site.serve();
    let up = served(&site, &ca, "up.nikaia.test");
    // Its renewal window read (the next in an hour), the CA goes down.
    wait_until("the window read", 10, || {
        count(&ca.log(), "renewal-info") >= 1
    });
    ca.config(json!({"down": 60}));
    std::thread::sleep(Duration::from_secs(12));
    // A name added while the CA is down: its order fails, is tried again
    // after the backoff (about a minute), and gets through once the CA is
    // back.
    site.write(&ca, &["up.nikaia.test", "late.nikaia.test"], "", "");
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&server),
        rustix::process::Signal::HUP,
    )
    .unwrap();
    let config = client(&ca.issuer_root(), &[b"http/1.1"]);
    for _ in 0..10 {
        assert_eq!(handshake(site.tls, &config, "up.nikaia.test").unwrap(), up);
        std::thread::sleep(Duration::from_millis(200));
    }
    served_when(&site, &ca, "late.nikaia.test", 120, |_| true);
    let log = ca.log();
    let down: Vec<f64> = (log.iter().filter(|e| e["what"] == "down"))
        .map(|e| e["t"].as_f64().unwrap())
        .collect();
    assert!(!down.is_empty(), "the server asked while the CA was down");
    // One attempt's requests while down, then nothing for the backoff.
    let first = down[0];
    assert!(
        down.iter().all(|t| *t - first < 5.0),
        "retries not spaced: {down:?}"
    );
    let entry = site.acme("late.nikaia.test");
    assert!(entry["failures"].as_u64().unwrap() >= 1, "{entry}");
    assert!(
        site.log().contains("ACME late.nikaia.test:") && site.log().contains("next attempt at"),
        "{}",
        site.log()
    );
    assert_eq!(handshake(site.tls, &config, "up.nikaia.test").unwrap(), up);
}

#[test]
fn a_wall_clock_jumped_past_the_renewal_time_renews_soon_after() {
    let faketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
    assert!(
        std::path::Path::new(faketime).exists(),
        "./test.sh installs Debian's faketime"
    );
    // The server and the CA on one faked wall clock, read from a file.
    let clock_dir = tempfile::tempdir().unwrap();
    let clock = clock_dir.path().join("clock");
    put(&clock, b"+0\n");
    let clock_s = clock.display().to_string();
    let env = [
        ("LD_PRELOAD", faketime),
        ("FAKETIME_TIMESTAMP_FILE", clock_s.as_str()),
        ("FAKETIME_NO_CACHE", "1"),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
    ];
    let ca = Ca::mock_with(&env);
    ca.config(json!({"ari_off": true}));
    let site = Site::new(&ca, &["jump.nikaia.test"], "", "");
    let _server = site.serve_with(&env);
    served(&site, &ca, "jump.nikaia.test");
    let before = site.acme("jump.nikaia.test");
    // 90 days, renewed at 60: the server's clock jumps 61 days (a host
    // suspended, a clock set right).
    put(&clock, b"+61d\n");
    // The server looks at its wall clock every quarter second.
    wait_until("a renewal after the jump", 20, || {
        site.acme("jump.nikaia.test")["orders"] == 2
    });
    let after = site.acme("jump.nikaia.test");
    assert_ne!(after["not_after"], before["not_after"], "{after}");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(ca.orders().len(), 2, "one renewal, not a loop");
}

/// Checks that every pair in `storage` loads: its key is its
/// certificate's (the bundle is one file: never torn).
fn stored_pairs_load(storage: &std::path::Path) {
    for entry in walk(storage) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".pem") && !name.starts_with('.') {
            let bytes = std::fs::read(&entry).unwrap();
            let out = Command::new("sh")
                .arg("-c")
                .arg("a=$(openssl pkey -pubout 2>/dev/null < \"$1\"); b=$(openssl x509 -pubkey -noout < \"$1\"); [ -n \"$a\" ] && [ \"$a\" = \"$b\" ]")
                .arg("sh")
                .arg(&entry)
                .status()
                .unwrap();
            assert!(
                out.success(),
                "{} does not hold its certificate's key ({} bytes)",
                entry.display(),
                bytes.len()
            );
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Runs the site with `NIKAIA_ACME_CRASH_AFTER=n` until it kills itself
/// (or, having passed fewer points, serves: then it is stopped); whether
/// it crashed.
fn crash_at(site: &Site, n: usize) -> bool {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(site.dir.path().join("site"))
        .arg("--runtime")
        .arg(&site.runtime)
        .env("NIKAIA_ACME_CRASH_AFTER", n.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let said = harness::drain(child.stderr.take().unwrap());
    for _ in 0..200 {
        if let Some(status) = child.try_wait().unwrap() {
            let killed = std::os::unix::process::ExitStatusExt::signal(&status) == Some(9);
            assert!(
                killed,
                "exited otherwise: {status:?}: {}",
                said.lock().unwrap()
            );
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

#[test]
fn sigkill_at_every_point_of_issuance_and_renewal_then_a_restart_serves_a_matching_pair() {
    let ca = Ca::mock();
    ca.config(json!({"ari_retry": 1}));
    let rounds = if full() { 30 } else { 1 };
    let mut points = 0;
    for round in 0..rounds {
        // Issuance: from an empty storage, killed at the nth point.
        for n in 1.. {
            let site = Site::new(&ca, &["kill.nikaia.test"], "", "");
            if !crash_at(&site, n) {
                break;
            }
            points += 1;
            stored_pairs_load(&site.storage);
            let _server = site.serve();
            served(&site, &ca, "kill.nikaia.test");
            stored_pairs_load(&site.storage);
        }
        // Renewal: from a storage holding a pair the CA's window says to
        // renew now, killed at the nth point; the pair it had serves at
        // once on the restart.
        let base = Site::new(&ca, &["renew.nikaia.test"], "", "");
        {
            let _server = base.serve();
            served(&base, &ca, "renew.nikaia.test");
        }
        ca.config(json!({"ari": [-60, -30]}));
        for n in 1.. {
            let site = Site::new(&ca, &["renew.nikaia.test"], "", "");
            copy_dir(&base.storage, &site.storage);
            let old = std::fs::read(site.storage.join(ca_dir(&ca)).join("renew.nikaia.test.pem"))
                .unwrap();
            if !crash_at(&site, n) {
                break;
            }
            points += 1;
            stored_pairs_load(&site.storage);
            let _server = site.serve();
            let config = client(&ca.issuer_root(), &[b"http/1.1"]);
            // At once: the old pair or the renewed one, never a torn one.
            let leaf = handshake(site.tls, &config, "renew.nikaia.test").expect("a pair at once");
            let old_leaf = pem_leaf(&old);
            let renewed = served_when(&site, &ca, "renew.nikaia.test", 30, |l| {
                l != old_leaf.as_slice()
            });
            assert!(leaf == old_leaf || leaf == renewed);
            stored_pairs_load(&site.storage);
        }
        ca.config(json!({"ari": null}));
        eprintln!("round {round}: {points} points so far");
    }
    assert!(points >= 30, "{points} points");
}

/// The CA's directory in a site's storage.
fn ca_dir(ca: &Ca) -> String {
    ca.directory()
        .trim_start_matches("https://")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn pem_leaf(bundle: &[u8]) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(bundle)
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_full_disk_during_the_write_keeps_the_old_pair_in_use() {
    let ca = Ca::mock();
    ca.config(json!({"ari_retry": 1}));
    let site = Site::new(&ca, &["full.nikaia.test"], "", "");
    std::fs::create_dir(&site.storage).unwrap();
    // The server in a mount namespace of its own, its storage a 64 KiB
    // tmpfs; the test reaches it through /proc/PID/root.
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "sh", "-c"])
        .arg(format!(
            "mount -t tmpfs -o size=64k,mode=0700 tmpfs {} && exec \"$0\" serve {} --runtime {}",
            site.storage.display(),
            site.dir.path().join("site").display(),
            site.runtime.display()
        ))
        .arg(env!("CARGO_BIN_EXE_nikaia"));
    let (server, _) = common::spawn_serving(cmd);
    let old = served(&site, &ca, "full.nikaia.test");
    let inside = std::path::PathBuf::from(format!("/proc/{}/root", server.id()))
        .join(site.storage.strip_prefix("/").unwrap());
    // Fill the tmpfs to its last byte.
    let filler = inside.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0u8; 1024];
    while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
    drop(f);
    ca.config(json!({"ari": [-60, -30]}));
    wait_until("a renewal that could not be stored", 30, || {
        site.acme("full.nikaia.test")["failures"]
            .as_u64()
            .unwrap_or(0)
            >= 1
    });
    let entry = site.acme("full.nikaia.test");
    assert!(
        entry["last_error"]
            .as_str()
            .unwrap()
            .contains("No space left"),
        "{entry}"
    );
    let config = client(&ca.issuer_root(), &[b"http/1.1"]);
    assert_eq!(
        handshake(site.tls, &config, "full.nikaia.test").unwrap(),
        old
    );
    // Nothing half-written is left behind.
    let dir = inside.join(ca_dir(&ca));
    let names: Vec<String> = (std::fs::read_dir(&dir).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".tmp.")), "{names:?}");
    stored_pairs_load(&inside);
}

#[test]
fn two_processes_on_one_storage_place_one_order_per_due_renewal() {
    let ca = Ca::mock();
    ca.config(json!({"ari_retry": 1}));
    let a = Site::new(&ca, &["two.nikaia.test"], "", "");
    // B listens elsewhere, on A's storage: the CA reaches only A, so what
    // B orders is validated by A from the storage.
    let b = Site::on(
        &ca,
        harness::free_port(),
        harness::free_port(),
        &["two.nikaia.test"],
        "",
        "",
    );
    std::fs::remove_file(&b.runtime).unwrap();
    let text = std::fs::read_to_string(&a.runtime)
        .unwrap()
        .replace(
            &format!("127.0.0.1:{}", a.tls),
            &format!("127.0.0.1:{}", b.tls),
        )
        .replace(
            &format!("127.0.0.1:{}", a.http),
            &format!("127.0.0.1:{}", b.http),
        )
        .replace("stats.sock", "stats-b.sock");
    std::fs::write(&b.runtime, text).unwrap();
    let _a = a.serve();
    let _b = b.serve();
    let mut leaf = served(&a, &ca, "two.nikaia.test");
    served_when(&b, &ca, "two.nikaia.test", 10, |l| l == leaf.as_slice());
    assert_eq!(ca.orders().len(), 1);
    let trials = if full() { 100 } else { 20 };
    for trial in 1..=trials {
        ca.config(json!({"ari": [-60, -30]}));
        let old = leaf.clone();
        leaf = served_when(&a, &ca, "two.nikaia.test", 30, |l| l != old.as_slice());
        served_when(&b, &ca, "two.nikaia.test", 30, |l| l == leaf.as_slice());
        assert_eq!(
            ca.orders().len(),
            1 + trial,
            "trial {trial}: one order per due renewal"
        );
    }
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(ca.orders().len(), 1 + trials);
}
