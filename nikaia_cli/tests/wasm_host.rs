//! The wasm32 build of `nikaia serve`, run by Node (`nikaia_std/wasm/`),
//! answers as the Linux build does: for the same files, the same status,
//! the same header fields but Date (and the connection's own), and the same
//! body, asked by curl. `.ci/run` builds the module first
//! (`nikaia_std/wasm/build.sh`); without it this test fails and says so.

mod common;

use common::spawn_serve;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// (status line, header fields but Date, body) of one curl request.
fn curl(addr: &str, target: &str, extra: &[&str]) -> (String, Vec<String>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("head");
    let out = Command::new("curl")
        .args(["-sS", "--path-as-is", "-H", "Connection: close", "-D"])
        .arg(&head)
        .args(extra)
        .arg(format!("http://{addr}{target}"))
        .output()
        .expect("curl runs");
    assert!(out.status.success(), "{target}: {out:?}");
    let text = std::fs::read_to_string(&head).unwrap();
    let mut lines = text.lines().filter(|l| !l.is_empty());
    let status = lines.next().unwrap_or_default().to_owned();
    let mut fields: Vec<String> = lines
        .filter(|l| !l.to_ascii_lowercase().starts_with("date:"))
        .map(str::to_owned)
        .collect();
    fields.sort();
    // With -I the body curl prints is the head again: its Date goes too
    // (two answers a second boundary apart differ there, and only there).
    let body = if extra.contains(&"-I") {
        String::from_utf8_lossy(&out.stdout)
            .split_inclusive('\n')
            .filter(|l| !l.to_ascii_lowercase().starts_with("date:"))
            .collect::<String>()
            .into_bytes()
    } else {
        out.stdout
    };
    (status, fields, body)
}

#[test]
fn the_wasm_host_answers_as_the_linux_build() {
    let pkg = workspace().join("target/wasm-pkg/nikaia_wasm.js");
    assert!(
        pkg.exists(),
        "{} is missing: run nikaia_std/wasm/build.sh (test.sh does)",
        pkg.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(site.join("docs")).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "SECRET").unwrap();
    std::fs::write(site.join("index.html"), "<h1>home</h1>\n").unwrap();
    std::fs::write(site.join("docs/index.html"), "<h1>docs</h1>\n").unwrap();
    std::fs::write(site.join("style.css"), "body { margin: 0 }\n").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 256) as u8).collect();
    std::fs::write(site.join("big.bin"), &big).unwrap();
    std::fs::write(site.join(".env"), "HIDDEN=1").unwrap();
    std::os::unix::fs::symlink("../secret.txt", site.join("out.txt")).unwrap();
    // A name that is not UTF-8 (Latin-1 `café.txt`), and the name its lossy
    // text gives (U+FFFD for the byte): Node names files by JS strings.
    {
        use std::os::unix::ffi::OsStrExt;
        let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
        std::fs::write(site.join(latin1), "LATIN-1").unwrap();
        std::fs::write(site.join("caf\u{FFFD}.txt"), "LOSSY").unwrap();
    }
    // A directory without an index, listed (`--list`): sizes, mtimes, a
    // link inside the root (listed with its target's), one out (left out).
    std::fs::create_dir_all(site.join("files/inner")).unwrap();
    std::fs::write(site.join("files/a.txt"), "a").unwrap();
    std::fs::write(site.join("files/b <&> \"q\".txt"), vec![b'b'; 5000]).unwrap();
    std::fs::write(site.join("files/.hidden"), "h").unwrap();
    std::os::unix::fs::symlink("a.txt", site.join("files/link")).unwrap();
    std::os::unix::fs::symlink("../../secret.txt", site.join("files/out")).unwrap();

    let mut linux = Command::new(env!("CARGO_BIN_EXE_nikaia"));
    linux
        .arg("serve")
        .arg(&site)
        .args(["--list", "--listen", "127.0.0.1:0"]);
    let (_linux, linux_addr) = spawn_serve(linux);

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let node_addr = format!("127.0.0.1:{port}");
    let mut node = Command::new("node");
    node.arg(workspace().join("nikaia_std/wasm/host.cjs"))
        .arg(&site)
        .arg(&node_addr)
        .arg("--list")
        .stderr(Stdio::inherit());
    let (_node, wasm_addr) = spawn_serve(node);
    assert_eq!(wasm_addr, node_addr);

    let etag = curl(&linux_addr, "/style.css", &[])
        .1
        .iter()
        .find_map(|f| f.strip_prefix("ETag: ").map(str::to_owned))
        .unwrap();
    let if_none_match = format!("If-None-Match: {etag}");
    let list_etag = curl(&linux_addr, "/files/?format=json", &[])
        .1
        .iter()
        .find_map(|f| f.strip_prefix("ETag: ").map(str::to_owned))
        .unwrap();
    let list_inm = format!("If-None-Match: {list_etag}");
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        ("/", vec![], "200"),
        ("/style.css", vec![], "200"),
        ("/big.bin", vec![], "200"),
        ("/big.bin", vec!["-r", "1000-1999"], "206"),
        ("/big.bin", vec!["-r", "999999-"], "416"),
        ("/style.css", vec!["-H", &if_none_match], "304"),
        ("/docs", vec![], "301"),
        ("/docs/", vec![], "200"),
        ("/missing", vec![], "404"),
        ("/out.txt", vec![], "404"),
        ("/..%2fsecret.txt", vec![], "404"),
        ("/.env", vec![], "404"),
        ("/big.bin", vec!["-I"], "200"),
        // spec/site.md: the name normaliser and OPTIONS.
        ("//style.css", vec![], "200"),
        ("/docs//index.html", vec![], "200"),
        ("/docs/../style.css", vec![], "404"),
        ("/docs/%2e%2e/style.css", vec![], "404"),
        ("/style.css", vec!["-X", "OPTIONS"], "204"),
        // spec/files.md, "Listings".
        ("/files/", vec![], "200"),
        ("/files/", vec!["-H", "Accept: application/json"], "200"),
        ("/files/?format=json&sort=size&order=desc", vec![], "200"),
        ("/files/?sort=mtime", vec![], "200"),
        ("/files/?format=json", vec!["-H", &list_inm], "304"),
        ("/files/inner/?format=json", vec![], "200"),
        ("/files", vec![], "301"),
    ];
    for (target, extra, want) in &cases {
        let on_linux = curl(&linux_addr, target, extra);
        let on_wasm = curl(&wasm_addr, target, extra);
        assert!(on_linux.0.contains(want), "{target}: {}", on_linux.0);
        assert_eq!(on_wasm, on_linux, "{target} {extra:?}");
        assert!(!String::from_utf8_lossy(&on_wasm.2).contains("SECRET"));
    }
    assert_eq!(curl(&wasm_addr, "/big.bin", &[]).2, big);

    // spec/targets.md: a name that is not UTF-8 is served on Linux; the
    // wasm32 host cannot name it, so it is a 404 there, and never the file
    // its lossy text names.
    assert!(curl(&linux_addr, "/caf%E9.txt", &[]).0.contains("200"));
    assert_eq!(curl(&linux_addr, "/caf%E9.txt", &[]).2, b"LATIN-1");
    let on_wasm = curl(&wasm_addr, "/caf%E9.txt", &[]);
    assert!(on_wasm.0.contains("404"), "{}", on_wasm.0);
    assert!(!String::from_utf8_lossy(&on_wasm.2).contains("LOSSY"));
    for target in ["/%FF", "/d%FF/", "/caf%C3%A9.txt"] {
        let on_wasm = curl(&wasm_addr, target, &[]);
        assert!(on_wasm.0.contains("404"), "{target}: {}", on_wasm.0);
        assert_eq!(on_wasm, curl(&linux_addr, target, &[]), "{target}");
    }
    for target in ["/caf%00.txt", "/%zz"] {
        assert_eq!(
            curl(&wasm_addr, target, &[]),
            curl(&linux_addr, target, &[]),
            "{target}"
        );
    }
}
