//! Downloads by real clients: byte-exact files over h2c and h2 (curl),
//! and many concurrent streams on one connection (nghttp, h2load).

use super::{base, curl, text, tls_base};
use nikaia_tests::corpus::{dir_server, random, write};
use nikaia_tests::{test_runtime, TestPki};
use std::process::Command;
use std::time::Duration;

#[test]
fn downloads_are_byte_exact_over_h2c_and_h2_with_tls() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let sizes = [
        0usize,
        1,
        16_375,
        16_384,
        16_385,
        100_000,
        1 << 20,
        64 << 20,
    ];
    let contents: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| random(len, i as u64 + 1))
        .collect();
    for (i, c) in contents.iter().enumerate() {
        write(&root.join(format!("s{i}.bin")), c);
    }
    std::thread::sleep(Duration::from_millis(30));
    let pki = TestPki::new();
    let plain = dir_server(test_runtime(), &root, false);
    let tls = dir_server(pki.runtime(), &root, false);
    let ca = pki.ca_pem.to_str().unwrap().to_owned();
    let transports: [(&str, String, Vec<&str>); 2] = [
        ("h2c", base(&plain), vec!["--http2-prior-knowledge"]),
        ("h2", tls_base(&tls), vec!["--http2", "--cacert", &ca]),
    ];
    for (label, url, flags) in &transports {
        let out_dir = tmp.path().join(label);
        std::fs::create_dir(&out_dir).unwrap();
        // One connection for every URL over TLS. For h2c, one curl each:
        // curl 7.88 (Debian 12) breaks a reused prior-knowledge connection
        // itself, "Error in the HTTP2 framing layer" before its second
        // request is sent (curl/curl#10634, fixed in 8.0.0).
        let groups: Vec<Vec<usize>> = match *label {
            "h2c" => (0..sizes.len()).map(|i| vec![i]).collect(),
            _ => vec![(0..sizes.len()).collect()],
        };
        let mut lines = Vec::new();
        for group in &groups {
            let mut args: Vec<String> = ["-sS", "--fail"].map(String::from).to_vec();
            args.extend(flags.iter().map(|s| s.to_string()));
            args.push("-w".into());
            args.push("%{http_version} %{http_code} %{num_connects} %{size_download}\n".into());
            for &i in group {
                args.push(format!("{url}/s{i}.bin"));
                args.push("-o".into());
                args.push(out_dir.join(i.to_string()).to_str().unwrap().into());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let run = curl(&args);
            assert!(run.status.success(), "{label}: {run:?}");
            lines.extend(text(&run.stdout).lines().map(String::from));
        }
        assert_eq!(lines.len(), sizes.len(), "{label}: {lines:?}");
        let mut connects = 0;
        for (i, line) in lines.iter().enumerate() {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f[0], "2", "{label}: HTTP version of s{i}.bin: {line}");
            assert_eq!(f[1], "200", "{label}: s{i}.bin: {line}");
            assert_eq!(f[3], sizes[i].to_string(), "{label}: s{i}.bin: {line}");
            connects += f[2].parse::<usize>().unwrap();
        }
        assert_eq!(
            connects,
            groups.len(),
            "{label}: one connection per curl: {lines:?}"
        );
        for (i, want) in contents.iter().enumerate() {
            // curl -o writes no file for an empty body.
            let got = std::fs::read(out_dir.join(i.to_string())).unwrap_or_default();
            assert!(
                got == *want,
                "{label}: s{i}.bin ({} bytes): {} bytes came, first difference at {:?}",
                want.len(),
                got.len(),
                got.iter().zip(want).position(|(a, b)| a != b)
            );
        }
    }
    assert!(
        plain.report().h2.connections >= 1,
        "{:?}",
        plain.report().h2
    );
    assert!(tls.report().h2.connections >= 1, "{:?}", tls.report().h2);
}

fn tool(name: &str) -> Command {
    assert!(
        Command::new(name).arg("--version").output().is_ok(),
        "{name} is needed (test.sh installs nghttp2-client)"
    );
    Command::new(name)
}

#[test]
fn nghttp_and_h2load_run_many_streams_on_one_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    write(&root.join("a.bin"), &random(4096, 1));
    write(&root.join("b.bin"), &random(4096, 2));
    write(&root.join("c.bin"), &random(4096, 3));
    write(&root.join("big.bin"), &random(1 << 20, 4));
    std::thread::sleep(Duration::from_millis(30));
    let server = dir_server(test_runtime(), &root, false);
    let url = base(&server);

    // 4 URIs, 100 times each: 400 streams, at most 100 at once.
    let out = tool("nghttp")
        .args(["-n", "-s", "-m", "100"])
        .args(["a.bin", "b.bin", "c.bin", "big.bin"].map(|n| format!("{url}/{n}")))
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "nghttp: {out:?}\n{stdout}");
    // The timing table: "... code size request path" per stream.
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.trim_end().ends_with(".bin"))
        .collect();
    assert_eq!(rows.len(), 400, "one row per stream:\n{stdout}");
    for row in &rows {
        let f: Vec<&str> = row.split_whitespace().collect();
        let n = f.len();
        assert_eq!(f[n - 3], "200", "{row}");
        let size = if f[n - 1].ends_with("big.bin") {
            "1M"
        } else {
            "4K"
        };
        assert_eq!(f[n - 2], size, "{row}");
    }

    // h2load: 2 connections, 1000 streams each, 64 at once.
    let out = tool("h2load")
        .args(["-n", "2000", "-c", "2", "-m", "64"])
        .arg(format!("{url}/a.bin"))
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "h2load: {out:?}\n{stdout}");
    assert!(
        stdout.contains("2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed, 0 errored"),
        "{stdout}"
    );
    assert!(stdout.contains("status codes: 2000 2xx"), "{stdout}");
    assert!(stdout.contains("Application protocol: h2c"), "{stdout}");
    let h2 = server.report().h2;
    assert_eq!(h2.connections, 3, "{h2:?}");
    assert!(h2.streams >= 2400, "{h2:?}");
}
