//! Bodies written to files under faults (`spec/files.md`, "A body written
//! under a root"): the server and the client killed at many offsets during
//! creates and replaces, a directory swapped for a symlink out while
//! writes go on, a file system filled mid-body, the durability order as
//! strace sees it (a writer waiting on a slow sync: `to_file_slow.rs`).
//! The kills go through `Server::to_file`'s routes and through `nikaia
//! serve`'s directory writer alike. The guarantee checked: no name ever
//! holds anything but the old bytes or the new ones, and nothing lands
//! outside the root.

use nikaia_std::fs::{Durability, Root};
use nikaia_std::http::{Server, ToFile};
use nikaia_tests::tmpfs::{free_bytes, Tmpfs};
use nikaia_tests::{names, start, test_runtime, Client};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn scratch(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("nikaia-{tag}"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// A body whose every 8-byte word says which body it is and where: a
/// read of a name can tell exactly which version (or mix) it holds.
fn body(version: u32, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    let mut i = 0u32;
    while out.len() < len {
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&i.to_le_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

/// The `put_server` program, started on `dir`.
struct PutServer {
    child: Child,
    port: u16,
    /// The server's own process (the child may be a tracer around it).
    pid: u32,
}

impl PutServer {
    fn start(dir: &Path, named: bool, wrap: Option<(&str, &[&str])>) -> PutServer {
        let port_file = dir.with_extension(format!("port{}", std::process::id()));
        let _ = std::fs::remove_file(&port_file);
        let exe = env!("CARGO_BIN_EXE_put_server");
        let mut cmd = match wrap {
            Some((tool, args)) => {
                let mut c = Command::new(tool);
                c.args(args).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        // The directory writer's rule, for `nikaia serve`'s paths.
        let rules = dir.with_extension("rules.toml");
        let rule = "[[write]]\nmatch = \"*\"\nanyone = true\nplain-http = true\n";
        std::fs::write(&rules, rule).unwrap();
        let child = cmd
            .arg(dir)
            .arg(&port_file)
            .env("NIKAIA_NAMED_TEMPORARIES", if named { "1" } else { "0" })
            .env("NIKAIA_PUT_RUNTIME", &rules)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let (port, pid) = loop {
            if let Ok(said) = std::fs::read_to_string(&port_file) {
                let mut words = said.split_whitespace().map(|w| w.parse::<u32>().unwrap());
                break (words.next().unwrap() as u16, words.next().unwrap());
            }
            assert!(Instant::now() < deadline, "put_server did not start");
            std::thread::sleep(Duration::from_millis(10));
        };
        let _ = std::fs::remove_file(&port_file);
        PutServer { child, port, pid }
    }

    /// SIGKILL, as a crash.
    fn kill(self) {
        self.signal("-KILL");
    }

    /// SIGTERM: a tracer around it sees it end, then ends too.
    fn stop(self) {
        self.signal("-TERM");
    }

    fn signal(mut self, signal: &str) {
        let _ = Command::new("kill")
            .args([signal, &self.pid.to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// Which of `versions` a read of a name found whole, if any.
fn version_of(bytes: &[u8], versions: &[(u32, usize)]) -> Option<u32> {
    let first = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
    versions
        .iter()
        .find(|(v, len)| *v == first && bytes.len() == *len)
        .filter(|(v, len)| bytes == body(*v, *len).as_slice())
        .map(|(v, _)| *v)
}

/// Sends a PUT of `data` and waits for its status, or returns `None` if
/// the connection ended first.
fn put(port: u16, path: &str, data: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        data.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(data).ok()?;
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got);
    text.split_whitespace().nth(1)?.parse().ok()
}

/// Sends `head` and the first `upto` bytes of `data`, then returns the
/// open connection (the caller kills something meanwhile).
fn put_partial(port: u16, path: &str, data: &[u8], upto: usize) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let head = format!(
        "PUT {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        data.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(&data[..upto]);
    s
}

/// The round count of the kill test: `NIKAIA_KILL_ROUNDS` (full mode:
/// 200), else 24.
fn rounds() -> usize {
    nikaia_tests::load::env_number("NIKAIA_KILL_ROUNDS", 24)
}

#[test]
fn kills_at_any_offset_leave_each_name_old_or_new() {
    const LEN: usize = 4 << 20;
    let dir = scratch("kills");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("target"), body(0, LEN)).unwrap();
    // Versions a name may hold: the ones a PUT completed or may complete.
    let mut versions: Vec<(u32, usize)> = vec![(0, LEN)];
    // A reader checks the names all along: old or new, never a mix.
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicUsize::new(0));
    let known = Arc::new(std::sync::Mutex::new(versions.clone()));
    let reader = {
        let (stop, seen, known, root) = (stop.clone(), seen.clone(), known.clone(), root.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for name in ["target", "created"] {
                    let Ok(bytes) = std::fs::read(root.join(name)) else {
                        continue;
                    };
                    let known = known.lock().unwrap().clone();
                    assert!(
                        version_of(&bytes, &known).is_some(),
                        "{name} holds {} bytes of no whole version",
                        bytes.len()
                    );
                    seen.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    // Temporaries a kill left (named ones, mid-body), all swept.
    let mut left_by_kills = 0;
    for round in 0..rounds() {
        let named = round % 2 == 1;
        let server = PutServer::start(&root, named, None);
        let version = round as u32 + 1;
        let len = LEN - next(LEN / 2);
        let data = body(version, len);
        // The new version may become the name's from here.
        known.lock().unwrap().push((version, len));
        versions.push((version, len));
        // `Server::to_file`'s routes, and `nikaia serve`'s directory
        // writer under a write rule.
        let path = match next(4) {
            0 => "/create/created",
            1 => "/replace/target",
            2 => "/target",
            _ => "/created",
        };
        let upto = next(len);
        let conn = put_partial(server.port, path, &data, upto);
        match round % 4 {
            // The client leaves mid-body.
            0 | 1 => {
                drop(conn);
                server.kill();
            }
            // The server is killed mid-body.
            2 => server.kill(),
            // The server is killed as the body completes (mid-write, mid-
            // sync or after the name appeared).
            _ => {
                let mut conn = conn;
                let _ = conn.write_all(&data[upto..]);
                std::thread::sleep(Duration::from_millis(next(20) as u64));
                server.kill();
            }
        }
        // After each kill: no temporary is visible to a request, and the
        // next server's first write into the directory sweeps what a kill
        // left (a temporary older than that server's first write).
        let server = PutServer::start(&root, false, None);
        for name in names(&root) {
            if name.starts_with(".nikaia-tmp-") {
                left_by_kills += 1;
                let mut c = Client::connect(([127, 0, 0, 1], server.port).into());
                assert_eq!(c.get(&format!("/files/{name}")).status, 404);
            }
        }
        assert_eq!(put(server.port, "/create/sweep-probe", b"x"), Some(201));
        assert_eq!(put(server.port, "/replace/sweep-probe", b"y"), Some(204));
        // The directory writer writes under the same directory.
        assert_eq!(put(server.port, "/sweep-probe", b"z"), Some(204));
        let left: Vec<String> = names(&root)
            .into_iter()
            .filter(|n| n.starts_with(".nikaia-tmp-"))
            .collect();
        assert!(left.is_empty(), "round {round}: {left:?} not swept");
        std::fs::remove_file(root.join("sweep-probe")).unwrap();
        server.stop();
    }
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    assert!(seen.load(Ordering::Relaxed) > 0);
    assert!(left_by_kills > 0, "no kill left a temporary to sweep");
    for name in ["target", "created"] {
        if let Ok(bytes) = std::fs::read(root.join(name)) {
            assert!(version_of(&bytes, &versions).is_some(), "{name}");
        }
    }
}

#[test]
fn a_directory_swapped_for_a_symlink_out_takes_nothing_outside() {
    let dir = scratch("swap");
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::create_dir(&outside).unwrap();
    let served = Root::dir(&root).unwrap();
    let server = start(Server::with_runtime(test_runtime()).to_file(
        "PUT",
        "/put/*name",
        move |req| ToFile::replace(req.param().unwrap_or(""), &served).durability(Durability::None),
    ));
    let port = server.local_addr().port();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = {
        let (stop, root, outside) = (stop.clone(), root.clone(), outside.clone());
        std::thread::spawn(move || {
            let (d, real) = (root.join("d"), root.join("d.real"));
            let mut n = 0;
            while n < 2000 || !stop.load(Ordering::Relaxed) {
                std::fs::rename(&d, &real).unwrap();
                std::os::unix::fs::symlink(&outside, &d).unwrap();
                std::fs::remove_file(&d).unwrap();
                std::fs::rename(&real, &d).unwrap();
                n += 1;
                if n >= 20_000 {
                    break;
                }
            }
            n
        })
    };
    let mut statuses = std::collections::BTreeMap::new();
    let started = Instant::now();
    while !swaps.is_finished() && started.elapsed() < Duration::from_secs(60) {
        let status = put(port, "/put/d/f", b"written while the directory moves").unwrap_or(0);
        *statuses.entry(status).or_insert(0) += 1;
        if statuses.values().sum::<u32>() >= 300 {
            stop.store(true, Ordering::Relaxed);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let n = swaps.join().unwrap();
    assert!(n >= 2000);
    // Nothing outside; inside, only what a write named.
    assert!(names(&outside).is_empty(), "{:?}", names(&outside));
    assert!(
        statuses.keys().all(|s| [204, 201, 404, 409].contains(s)),
        "{statuses:?}"
    );
    assert!(
        statuses.contains_key(&201) || statuses.contains_key(&204),
        "{statuses:?}"
    );
    assert_eq!(names(&root), vec!["d"]);
    assert!(names(&root.join("d")).iter().all(|n| n == "f"));
}

#[test]
fn a_full_file_system_mid_body_is_507_and_gives_the_space_back() {
    let dir = scratch("full");
    let mnt: PathBuf = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let Some(_tmpfs) = Tmpfs::mount(&mnt, "8m") else {
        eprintln!("SKIPPED: cannot mount a tmpfs here");
        return;
    };
    std::fs::write(mnt.join("keep"), b"old").unwrap();
    let before = free_bytes(&mnt);
    let root = Root::dir(&mnt).unwrap();
    let mut rt = test_runtime();
    rt.write_free_floor = 0;
    let server = start(
        Server::with_runtime(rt).to_file("PUT", "/put/*name", move |req| {
            ToFile::replace(req.param().unwrap_or(""), &root)
        }),
    );
    // Chunked: no length to refuse from the head; the disk fills mid-body.
    let mut c = Client::connect(server.local_addr());
    c.send("PUT /put/keep HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    let chunk = body(9, 256 << 10);
    let mut sent = 0;
    c.stream()
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    while sent < 16 << 20 {
        let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
        framed.extend_from_slice(&chunk);
        framed.extend_from_slice(b"\r\n");
        if c.stream().write_all(&framed).is_err() {
            break;
        }
        sent += chunk.len();
    }
    let _ = c.stream().write_all(b"0\r\n\r\n");
    let r = c.reply().unwrap();
    assert_eq!(r.status, 507);
    // The name still holds its old bytes; nothing else is there; the
    // space came back when the unnamed file closed, before the answer.
    assert_eq!(names(&mnt), vec!["keep"]);
    assert_eq!(std::fs::read(mnt.join("keep")).unwrap(), b"old");
    assert_eq!(free_bytes(&mnt), before);
    assert_eq!(server.report().bodies.files_failed, 1);
    // With the floor, a length that would cross it is 507 from the head.
    drop(c);
}

/// The 507 of a full disk goes only once the unnamed file is closed, so
/// the space is back when the client reads the answer: strace sees the
/// writer thread that found no room (`fstatfs`) close the file and its
/// directory before it hands the answer to the worker (a write to its
/// eventfd), never after. The order of one thread's calls, not a time.
#[test]
fn a_full_disk_is_answered_after_the_unnamed_file_closed() {
    if Command::new("strace").arg("-V").output().is_err() {
        panic!("strace is missing: test.sh installs it");
    }
    let dir = scratch("closed");
    let mnt: PathBuf = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    // Smaller than `write-free-floor` (64 MiB): the first run is refused.
    let Some(_tmpfs) = Tmpfs::mount(&mnt, "8m") else {
        eprintln!("SKIPPED: cannot mount a tmpfs here");
        return;
    };
    let before = free_bytes(&mnt);
    let trace = dir.path().join("trace");
    let trace_arg = trace.to_str().unwrap().to_owned();
    let args = [
        "-f",
        "-qq",
        "-e",
        "trace=fstatfs,close,write",
        "-o",
        &trace_arg,
    ];
    let server = PutServer::start(&mnt, false, Some(("strace", &args)));
    // The program's `to_file` route, then the directory writer's PUT.
    for path in ["/replace/a.bin", "/b.bin"] {
        let mut c = Client::connect(([127, 0, 0, 1], server.port).into());
        c.send(format!(
            "PUT {path} HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
        ));
        let chunk = body(3, 256 << 10);
        for _ in 0..16 {
            let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
            framed.extend_from_slice(&chunk);
            framed.extend_from_slice(b"\r\n");
            if c.stream().write_all(&framed).is_err() {
                break;
            }
        }
        assert_eq!(c.reply().unwrap().status, 507, "{path}");
        assert_eq!(free_bytes(&mnt), before, "{path}: the space is back");
    }
    server.kill();
    let text = std::fs::read_to_string(&trace).unwrap();
    // Each thread's calls in its own order (a call strace saw begin; its
    // "resumed" half adds nothing).
    let mut threads: std::collections::HashMap<&str, Vec<&str>> = Default::default();
    for line in text.lines() {
        let Some((tid, call)) = line.split_once(' ') else {
            continue;
        };
        let call = call.trim_start();
        if !call.starts_with("<...") {
            threads.entry(tid).or_default().push(call);
        }
    }
    let wake = |c: &str| c.starts_with("write(") && c.contains("\"\\1\\0\\0\\0\\0\\0\\0\\0\", 8");
    let mut refusals = 0;
    for calls in threads.values() {
        for (i, call) in calls.iter().enumerate() {
            if !call.starts_with("fstatfs(") {
                continue;
            }
            refusals += 1;
            let next: Vec<&str> = calls[i + 1..].iter().take(3).copied().collect();
            assert!(
                next.len() == 3
                    && next[..2].iter().all(|c| c.starts_with("close("))
                    && wake(next[2]),
                "after the look that found no room: {next:?}\n{text}"
            );
        }
    }
    assert_eq!(refusals, 2, "{text}");
}

#[test]
fn strace_sees_each_durability_in_order() {
    if Command::new("strace").arg("-V").output().is_err() {
        panic!("strace is missing: test.sh installs it");
    }
    let dir = scratch("order");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("old"), b"old").unwrap();
    let trace = dir.path().join("trace");
    let trace_arg = trace.to_str().unwrap().to_owned();
    let args = [
        "-f",
        "-qq",
        "-e",
        "trace=fdatasync,fsync,linkat,renameat,renameat2",
        "-o",
        &trace_arg,
    ];
    let server = PutServer::start(&root, false, Some(("strace", &args)));
    assert_eq!(put(server.port, "/create/new", b"created"), Some(201));
    assert_eq!(put(server.port, "/full/old", b"replaced"), Some(204));
    server.stop();
    let text = std::fs::read_to_string(&trace).unwrap();
    let calls: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            ["fdatasync", "fsync", "linkat", "renameat2", "renameat"]
                .into_iter()
                .find(|c| {
                    l.split_whitespace()
                        .nth(1)
                        .is_some_and(|w| w.starts_with(&format!("{c}(")))
                })
        })
        .collect();
    // Create (data): the data synced, then the name linked. Replace
    // (full): synced, linked to a temporary, renamed over, the directory
    // synced.
    assert_eq!(
        calls,
        [
            "fdatasync",
            "linkat",
            "fdatasync",
            "linkat",
            "renameat2",
            "fsync"
        ],
        "{text}"
    );
    assert_eq!(std::fs::read(root.join("new")).unwrap(), b"created");
    assert_eq!(std::fs::read(root.join("old")).unwrap(), b"replaced");
}
