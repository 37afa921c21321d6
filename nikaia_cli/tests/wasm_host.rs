//! The wasm32 build of `nikaia serve`, run by Node (`nikaia_std/wasm/`),
//! answers as the Linux build does: for the same files, the same status,
//! the same header fields but Date (and the connection's own), and the same
//! body, asked by curl. `.ci/run` builds the module first
//! (`nikaia_std/wasm/build.sh`); without it this test fails and says so.
//! The host streams a file body from the descriptor std opened: the tests
//! below truncate and grow files under a download, and abort downloads, on
//! both servers, over real sockets.

mod common;

use common::{spawn_serve, Served};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The module build.sh made: `wasm-pkg` in the target directory this test
/// was built in (CARGO_TARGET_DIR or the workspace's `target`).
fn wasm_pkg() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_nikaia"));
    bin.ancestors()
        .skip(1)
        .take(3)
        .map(|dir| dir.join("wasm-pkg/nikaia_wasm.js"))
        .find(|p| p.exists())
        .unwrap_or_else(|| workspace().join("target/wasm-pkg/nikaia_wasm.js"))
}

/// `nikaia serve SITE` (Linux) and the Node host over the same SITE, each
/// with its address; `extra` arguments for both, `linux_only` for Linux.
fn both(site: &Path, extra: &[&str], linux_only: &[&str]) -> [(Served, String); 2] {
    let pkg = wasm_pkg();
    assert!(
        pkg.exists(),
        "{} is missing: run nikaia_std/wasm/build.sh (test.sh does)",
        pkg.display()
    );
    let mut linux = Command::new(env!("CARGO_BIN_EXE_nikaia"));
    linux
        .arg("serve")
        .arg(site)
        .args(extra)
        .args(linux_only)
        .args(["--listen", "127.0.0.1:0"]);
    let linux = spawn_serve(linux);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let node_addr = format!("127.0.0.1:{port}");
    let mut node = Command::new("node");
    node.arg(workspace().join("nikaia_std/wasm/host.cjs"))
        .arg(site)
        .arg(&node_addr)
        .args(extra)
        .env("NIKAIA_WASM_PKG", &pkg);
    let node = spawn_serve(node);
    assert_eq!(node.1, node_addr);
    [linux, node]
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
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(site.join("docs")).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "SECRET").unwrap();
    std::fs::write(site.join("index.html"), "<h1>home</h1>\n").unwrap();
    std::fs::write(site.join("docs/index.html"), "<h1>docs</h1>\n").unwrap();
    std::fs::write(site.join("style.css"), "body { margin: 0 }\n").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 256) as u8).collect();
    std::fs::write(site.join("big.bin"), &big).unwrap();
    std::fs::write(site.join("empty.txt"), "").unwrap();
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

    let [(_linux, linux_addr), (_node, wasm_addr)] = both(&site, &["--list"], &[]);

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
        ("/big.bin", vec!["-r", "0-0"], "206"),
        ("/big.bin", vec!["-r", "-70000"], "206"),
        ("/big.bin", vec!["-r", "299999-"], "206"),
        // HEAD ignores Range (RFC 9110 §14.2: only GET is ranged).
        ("/big.bin", vec!["-I", "-r", "5-9"], "200"),
        ("/empty.txt", vec![], "200"),
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

/// `len` bytes no server could pad with unseen: byte `i` is `i % 251 + 1`.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251 + 1) as u8).collect()
}

/// A kept-alive connection with GET `target` sent on it.
fn send_get(s: &mut TcpStream, target: &str) {
    write!(s, "GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
}

/// A connection to `addr` with GET `target` sent on it.
fn start_get(addr: &str, target: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    send_get(&mut s, target);
    s
}

/// Reads one response head: (status line, Content-Length, the body bytes
/// read past the head).
fn read_head(s: &mut TcpStream) -> (String, u64, Vec<u8>) {
    let mut all = Vec::new();
    let mut buf = [0u8; 16 << 10];
    let split = loop {
        if let Some(at) = all.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = s.read(&mut buf).expect("a response head");
        assert!(
            n > 0,
            "closed before a head: {:?}",
            String::from_utf8_lossy(&all)
        );
        all.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&all[..split]).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no Content-Length in {head}"));
    let status = head.lines().next().unwrap().to_owned();
    (status, length, all[split..].to_vec())
}

/// Reads until the server ends the connection (EOF or a reset), appending
/// to `body`; a read that waits 20 s fails the test (a hang is no end), and
/// so do more than `limit` bytes.
fn read_to_close(s: &mut TcpStream, body: &mut Vec<u8>, limit: usize) {
    let mut buf = vec![0u8; 256 << 10];
    loop {
        assert!(
            body.len() <= limit,
            "{} bytes, more than {limit}",
            body.len()
        );
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => body.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("after {} body bytes: {e}", body.len()),
        }
    }
}

#[test]
fn a_file_that_shrinks_under_a_download_ends_it_short_and_closes() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    let len = 32 << 20;
    let whole = pattern(len);
    let file = site.join("shrink.bin");
    std::fs::write(&file, &whole).unwrap();
    // Linux reads and copies the bytes (`send-file = "never"`), as the
    // host does: with `sendfile` the pages already queued in the socket
    // may go out zeroed past the cut (spec/files.md), which is the
    // kernel's and not what this compares.
    let runtime = dir.path().join("runtime.toml");
    std::fs::write(&runtime, "send-file = \"never\"\nstatic-cache = 0\n").unwrap();
    let runtime = runtime.to_str().unwrap();
    let servers = both(&site, &[], &["--runtime", runtime]);
    for ((_server, addr), which) in servers.into_iter().zip(["linux", "wasm"]) {
        let addr = format!("{addr} ({which})");
        std::fs::write(&file, &whole).unwrap();
        let mut s = start_get(addr.split(' ').next().unwrap(), "/shrink.bin");
        let (status, length, mut body) = read_head(&mut s);
        assert!(status.contains("200"), "{addr}: {status}");
        assert_eq!(length, len as u64, "{addr}");
        // The server fills the socket and waits for this client to read.
        std::thread::sleep(Duration::from_millis(300));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&file)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        read_to_close(&mut s, &mut body, len);
        assert!(
            body.len() < len,
            "{addr}: all {len} bytes of a file cut to 1 MiB (padded?)"
        );
        let differ = body.iter().zip(&whole).position(|(a, b)| a != b);
        assert!(
            differ.is_none(),
            "{addr}: of the {} bytes sent, byte {differ:?} on is not the file's: {:?}",
            body.len(),
            differ.map(|at| &body[at..(at + 16).min(body.len())])
        );
    }
}

#[test]
fn a_file_that_grows_under_a_download_sends_the_declared_length() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("small.txt"), "small\n").unwrap();
    // Not a whole number of the host's parts: its last read is short.
    let len = (16 << 20) + 4321;
    let whole = pattern(len);
    let file = site.join("grow.bin");
    for (_server, addr) in both(&site, &[], &[]) {
        std::fs::write(&file, &whole).unwrap();
        let mut s = start_get(&addr, "/grow.bin");
        let (status, length, mut body) = read_head(&mut s);
        assert!(status.contains("200"), "{addr}: {status}");
        assert_eq!(length, len as u64, "{addr}");
        std::thread::sleep(Duration::from_millis(300));
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(&vec![0xEE; 16 << 20])
            .unwrap();
        let mut rest = vec![0u8; len - body.len()];
        s.read_exact(&mut rest).unwrap();
        body.extend_from_slice(&rest);
        assert!(
            body == whole,
            "{addr}: the body is not the file as declared"
        );
        // The next bytes on the connection are the next answer's: nothing
        // of what the file grew by came after the declared length.
        send_get(&mut s, "/small.txt");
        let (status, length, mut next) = read_head(&mut s);
        assert!(status.starts_with("HTTP/1.1 200"), "{addr}: {status}");
        let mut tail = vec![0u8; length as usize - next.len()];
        s.read_exact(&mut tail).unwrap();
        next.extend_from_slice(&tail);
        assert_eq!(next, b"small\n", "{addr}");
    }
}

/// The descriptors open in process `pid`.
fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Waits (up to 3 s) for `pid`'s descriptor count to be `want` (or to
/// stop changing); the last count seen. Short on purpose: a descriptor the
/// host forgot is closed only when V8 collects its answer (wasm-bindgen's
/// finalizer), which a longer wait would let pass for a close.
fn settle_fds(pid: u32, want: Option<usize>) -> usize {
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut last = fd_count(pid);
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = fd_count(pid);
        let done = match want {
            Some(want) => now == want,
            None => now == last,
        };
        if done || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

/// The whole body of GET `target` on a fresh connection.
fn download(addr: &str, target: &str) -> Vec<u8> {
    let mut s = start_get(addr, target);
    let (status, length, mut body) = read_head(&mut s);
    assert!(status.contains("200"), "{status}");
    let mut rest = vec![0u8; length as usize - body.len()];
    s.read_exact(&mut rest).unwrap();
    body.extend_from_slice(&rest);
    body
}

#[test]
fn aborted_downloads_close_their_descriptors_in_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    let whole = pattern(32 << 20);
    std::fs::write(site.join("large.bin"), &whole).unwrap();
    let [_linux, (node, addr)] = both(&site, &[], &[]);
    let pid = node.id();
    assert!(download(&addr, "/large.bin") == whole);
    let baseline = settle_fds(pid, None);
    for round in 0..3 {
        let mut open: Vec<TcpStream> = (0..40)
            .map(|_| {
                let mut s = start_get(&addr, "/large.bin");
                let (status, _, body) = read_head(&mut s);
                assert!(status.contains("200"), "{status}");
                if body.is_empty() {
                    let mut one = [0u8; 1];
                    s.read_exact(&mut one).unwrap();
                }
                s
            })
            .collect();
        // Each download is under way: its socket and its file are open.
        let during = fd_count(pid);
        assert!(
            during >= baseline + 80,
            "round {round}: {during} descriptors with 40 downloads under way, {baseline} before"
        );
        // Half go; a whole download meanwhile is still the file (no
        // descriptor of another was closed under it); then the rest go.
        open.truncate(20);
        assert!(download(&addr, "/large.bin") == whole, "round {round}");
        drop(open);
        let after = settle_fds(pid, Some(baseline));
        assert_eq!(after, baseline, "round {round}: descriptors left open");
    }
}
