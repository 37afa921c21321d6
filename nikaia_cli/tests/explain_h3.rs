//! `nikaia explain` after real HTTP/3: ngtcp2's `gtlsclient` (Debian's
//! `ngtcp2-client`) against `nikaia serve` with `http3 = true`.

mod common;

use common::{explain, explain_views, prometheus_sample, spawn_serve};
use std::process::Command;
use std::time::Duration;

const H3_ZERO_LINE: &str = "HTTP/3        0 connections, 0 streams; resets 0 sent, 0 received\n";

#[test]
fn http3_counters_reach_the_text_the_json_and_prometheus() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    std::fs::write(site.join("a.txt"), "aaaa").unwrap();
    std::fs::write(site.join("b.txt"), "bbbbbbbb").unwrap();
    let pki = nikaia_tests::TestPki::new();
    let sock = dir.path().join("stats.sock");
    let runtime = dir.path().join("runtime.toml");
    std::fs::write(
        &runtime,
        format!(
            "listen = \"127.0.0.1:0\"\nworkers = 1\naccess-log = \"off\"\nstats-socket = \"{}\"\n\
             tls-cert = \"{}\"\ntls-key = \"{}\"\nhttp3 = true\n",
            sock.display(),
            pki.cert.display(),
            pki.key.display()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
    cmd.arg("serve").arg(&site).arg("--runtime").arg(&runtime);
    let (mut child, addr) = spawn_serve(cmd);

    // No datagram yet. Read through the runtime file, which turns HTTP/3
    // on, the text shows its lines at zero; through the socket alone
    // (whether HTTP/3 is on unknown), not while nothing moved.
    let out = explain(&["--runtime", runtime.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(H3_ZERO_LINE), "{text}");
    let (report, text, _) = explain_views(&sock);
    assert_eq!(report["h3"]["datagrams"], 0, "{report}");
    assert!(!text.contains("HTTP/3"), "{text}");

    // Two request streams on one QUIC connection.
    let port = addr.rsplit(':').next().unwrap();
    let downloads = dir.path().join("got");
    std::fs::create_dir(&downloads).unwrap();
    let out = Command::new("gtlsclient")
        .args(["-q", "--exit-on-all-streams-close", "--timeout=10s"])
        .arg(format!("--download={}", downloads.display()))
        .args(["127.0.0.1", port])
        .arg(format!("https://{addr}/a.txt"))
        .arg(format!("https://{addr}/b.txt"))
        .output()
        .expect("gtlsclient runs (Debian's ngtcp2-client)");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(downloads.join("a.txt")).unwrap(), b"aaaa");
    assert_eq!(std::fs::read(downloads.join("b.txt")).unwrap(), b"bbbbbbbb");

    // The client has its answers; the server counts a stream as its turn
    // ends, maybe a moment after.
    let (mut report, mut text, mut prom) = explain_views(&sock);
    for _ in 0..100 {
        if report["h3"]["streams"] == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        (report, text, prom) = explain_views(&sock);
    }
    let h3 = &report["h3"];
    for (key, value) in [
        ("connections", 1),
        ("streams", 2),
        ("refused", 0),
        ("retries", 0),
        ("resets_sent", 0),
        ("resets_received", 0),
        ("floods", 0),
        ("stalled", 0),
        ("header_timeouts", 0),
    ] {
        assert_eq!(h3[key], value, "{key}: {report}");
    }
    let datagrams = h3["datagrams"].as_u64().unwrap();
    assert!(datagrams >= 2, "{report}");
    assert_eq!(report["h2"]["connections"], 0, "{report}");

    assert!(
        text.contains("HTTP/3        1 connections, 2 streams; resets 0 sent, 0 received\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "              0 handshakes refused at max-connections, 0 Retry sent, "
        ) && text.contains(
            "              0 connections closed for a flood, 0 stalled streams reset after send-timeout, 0 closed by header-timeout\n"
        ),
        "{text}"
    );

    let sample = |family, labels: &[(&str, &str)]| prometheus_sample(&prom, family, labels);
    assert_eq!(sample("nikaia_h3_connections", &[]), 1.0);
    assert_eq!(sample("nikaia_h3_streams", &[]), 2.0);
    assert_eq!(sample("nikaia_h3_resets", &[("direction", "sent")]), 0.0);
    assert_eq!(
        sample("nikaia_h3_resets", &[("direction", "received")]),
        0.0
    );
    // Read after the JSON: as many datagrams or more.
    assert!(sample("nikaia_h3_datagrams_received", &[]) >= datagrams as f64);
    for family in [
        "nikaia_h3_connections",
        "nikaia_h3_refused_handshakes",
        "nikaia_h3_retries",
        "nikaia_h3_streams",
        "nikaia_h3_resets",
        "nikaia_h3_flood_closes",
        "nikaia_h3_stalled_streams",
        "nikaia_h3_header_timeouts",
        "nikaia_h3_datagrams_received",
    ] {
        assert_eq!(prom[family]["type"], "counter", "{family}: {prom}");
    }
    for family in [
        "nikaia_h3_refused_handshakes",
        "nikaia_h3_retries",
        "nikaia_h3_flood_closes",
        "nikaia_h3_stalled_streams",
        "nikaia_h3_header_timeouts",
    ] {
        assert_eq!(sample(family, &[]), 0.0, "{family}");
    }
    let _ = child.kill();
    let _ = child.wait();
}
