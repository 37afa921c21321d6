//! Files truncated and renamed over under h2 downloads: on one
//! connection (the client of `client.rs`) and on many (curl).

use super::client::H2;
use super::{base, curl, text};
use nikaia_std::rt::LogTarget;
use nikaia_tests::corpus::{dir_server, random, write};
use nikaia_tests::test_runtime;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `curl --parallel` downloads of `url` to `outs`, each on a connection
/// of its own (`--parallel-immediate`: curl 7.88 cannot reuse an h2c
/// connection, curl/curl#10634), each at most `rate` bytes a second.
fn parallel_downloads(url: &str, outs: &[PathBuf], rate: &str) -> std::process::Child {
    for out in outs {
        let _ = std::fs::remove_file(out);
    }
    let mut cmd = Command::new("curl");
    cmd.args([
        "-s",
        "--http2-prior-knowledge",
        "--parallel",
        "--parallel-immediate",
    ])
    .args(["--limit-rate", rate, "--max-time", "30"])
    .args([
        "-w",
        "%{urlnum} %{exitcode} %{http_code} %{size_download}\n",
    ]);
    for (i, out) in outs.iter().enumerate() {
        cmd.arg(format!("{url}?n={i}")).arg("-o").arg(out);
    }
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until every transfer has written its first bytes, so the server
/// has the file open ([`parallel_downloads`] removed the last round's).
fn wait_started(outs: &[PathBuf]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !outs
        .iter()
        .all(|o| std::fs::metadata(o).is_ok_and(|m| m.len() > 0))
    {
        assert!(Instant::now() < deadline, "the downloads did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
}

/// Per transfer: (curl's exit code, bytes received).
fn results(child: std::process::Child, n: usize) -> Vec<(u32, u64)> {
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    let mut r = vec![(u32::MAX, 0u64); n];
    for line in stdout.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let i: usize = f[0].parse().unwrap();
        r[i] = (f[1].parse().unwrap(), f[3].parse().unwrap());
    }
    assert!(
        r.iter().all(|x| x.0 != u32::MAX),
        "every transfer reported: {stdout}"
    );
    r
}

#[test]
fn files_truncated_or_renamed_over_under_h2_downloads() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let log = tmp.path().join("error.log");
    let victim = root.join("victim.bin");
    let original = random(64 << 20, 21);
    write(&victim, &original);
    std::thread::sleep(Duration::from_millis(30));
    let mut rt = test_runtime();
    rt.error_log = LogTarget::File(log.clone());
    let server = dir_server(rt, &root, false);
    let url = format!("{}/victim.bin", base(&server));
    let outs: Vec<PathBuf> = (0..3).map(|i| tmp.path().join(format!("t{i}"))).collect();

    let truncate = |path: &Path| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(1000)
            .unwrap()
    };

    // Three streams on one connection, each given 256 KiB of credit at a
    // time; truncated once each has 1 MiB: none can be whole, each must be
    // reset (or the connection closed), none ended as if complete.
    let sock = TcpStream::connect(server.local_addr()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let authority = format!("127.0.0.1:{}", server.local_addr().port());
    let mut c = H2::new(sock, &authority, false, Some(256 << 10));
    let ids: Vec<u32> = (0..3).map(|_| c.get("/victim.bin")).collect();
    c.run(|s| s.values().all(|s| s.body.len() >= 1 << 20));
    assert!(!c.gone, "{}", c.summary());
    truncate(&victim);
    c.run(|s| s.values().all(|s| s.done || s.reset.is_some()));
    for id in &ids {
        let s = &c.streams[id];
        assert_eq!(s.status, Some(200), "stream {id}");
        assert!(
            s.body[..] == original[..s.body.len()],
            "stream {id}: the bytes that came are the file's"
        );
        assert!(
            !s.done,
            "stream {id} ended cleanly after {} of {} bytes: {}",
            s.body.len(),
            original.len(),
            c.summary()
        );
        assert!(
            s.reset.is_some() || c.gone,
            "stream {id} neither reset nor its connection closed: {}",
            c.summary()
        );
    }
    // The same connection, when it lives on, answers the file as it is now.
    if !c.gone {
        let id = c.get("/victim.bin");
        c.run(|s| s[&id].done || s[&id].reset.is_some());
        let s = &c.streams[&id];
        assert!(
            s.done && s.body[..] == original[..1000],
            "{:?}",
            c.summary()
        );
    }
    let resets: Vec<Option<u32>> = ids.iter().map(|id| c.streams[id].reset).collect();
    eprintln!(
        "truncated under one connection: resets {resets:?}, connection gone: {}",
        c.gone
    );
    drop(c);

    // Separate connections (curl): each transfer whole or an error.
    write(&victim, &original);
    std::thread::sleep(Duration::from_millis(30));
    let child = parallel_downloads(&url, &outs, "16M");
    wait_started(&outs);
    truncate(&victim);
    let r = results(child, outs.len());
    for (i, (code, size)) in r.iter().enumerate() {
        if *code == 0 {
            let got = std::fs::read(&outs[i]).unwrap();
            assert!(
                got == original,
                "transfer {i} succeeded with {} wrong bytes",
                got.len()
            );
        } else {
            assert!(
                *size < original.len() as u64,
                "transfer {i}: error {code} after all bytes"
            );
            // 92: the stream was reset; 18: cut short; 56: the
            // connection closed. Not 16 (a framing error).
            assert!(
                [18, 56, 92].contains(code),
                "transfer {i}: curl error {code}: {r:?}"
            );
        }
    }
    assert!(
        r.iter().any(|x| x.0 != 0),
        "a truncation at 400 ms cut no stream short: {r:?}"
    );
    let after = curl(&["-sS", "--http2-prior-knowledge", "--max-time", "10", &url]);
    assert!(after.status.success(), "{after:?}");
    assert!(
        after.stdout == original[..1000],
        "the file as it is now: {} bytes",
        after.stdout.len()
    );
    let report = server.report();
    assert!(report.truncated >= 1, "{report:?}");
    let text_log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text_log.contains("victim.bin"),
        "the error log names the file: {text_log}"
    );

    // Renamed over mid-download: the open file goes on, whole and right.
    let old = random(64 << 20, 22);
    write(&victim, &old);
    std::thread::sleep(Duration::from_millis(30));
    let child = parallel_downloads(&url, &outs, "48M");
    wait_started(&outs);
    let fresh = root.join("fresh.bin");
    write(&fresh, &random(5000, 23));
    std::fs::rename(&fresh, &victim).unwrap();
    let r = results(child, outs.len());
    for (i, (code, _)) in r.iter().enumerate() {
        assert_eq!(*code, 0, "transfer {i} after a rename over: {r:?}");
        let got = std::fs::read(&outs[i]).unwrap();
        assert!(
            got == old,
            "transfer {i}: the old bytes, whole ({} bytes came)",
            got.len()
        );
    }
    std::thread::sleep(Duration::from_millis(30));
    let after = curl(&["-sS", "--http2-prior-knowledge", "--max-time", "10", &url]);
    assert!(
        after.stdout == random(5000, 23),
        "the new file: {} bytes",
        after.stdout.len()
    );
    // The process and its other answers go on.
    let still = curl(&[
        "-sS",
        "--http2-prior-knowledge",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        &format!("{}/", base(&server)),
    ]);
    assert_eq!(text(&still.stdout), "404");
}
