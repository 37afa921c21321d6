//! Bodies written under a root by std (`spec/files.md`, "A body written
//! under a root"): each mode and its answer, the head's refusals before
//! `100 Continue`, no name ever partial, the race of creators, names that
//! leave the root, over HTTP/1.1 (real sockets) and HTTP/2 (curl).

use nikaia_std::fs::{Durability, Root};
use nikaia_std::http::{Server, ToFile};
use nikaia_tests::{names, start, test_runtime, Client};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A server whose `PUT /create/*`, `/replace/*`, `/if/*` (If-Match) and
/// `/full/*` write under `dir`.
fn serve(dir: &Path, rt: nikaia_std::rt::Runtime) -> nikaia_std::http::Running {
    let root = Root::dir(dir).unwrap();
    let (r1, r2, r3, r4) = (root.clone(), root.clone(), root.clone(), root);
    let server = Server::with_runtime(rt)
        .to_file("PUT", "/create/*name", move |req| {
            ToFile::create(req.param().unwrap_or(""), &r1)
        })
        .to_file("PUT", "/replace/*name", move |req| {
            ToFile::replace(req.param().unwrap_or(""), &r2).durability(Durability::None)
        })
        .to_file("PUT", "/if/*name", move |req| {
            let etag = req.header("if-match").unwrap_or("\"none\"").to_owned();
            ToFile::replace_if(req.param().unwrap_or(""), &r3, etag)
        })
        .to_file("PUT", "/full/*name", move |req| {
            ToFile::replace(req.param().unwrap_or(""), &r4)
                .durability(Durability::Full)
                .answer(|_req, done| match done {
                    Ok(w) => format!("{} bytes", w.id.size),
                    Err(e) => format!("not written: {e}"),
                })
        });
    start(server)
}

fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("nikaia-to-file")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let path = dir.path().to_path_buf();
    std::fs::create_dir(path.join("sub")).unwrap();
    (dir, path)
}

fn body(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
}

fn put(c: &mut Client, path: &str, extra: &str, data: &[u8]) -> nikaia_tests::Reply {
    c.send(format!(
        "PUT {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n{extra}\r\n",
        data.len()
    ));
    c.send(data);
    c.reply().unwrap()
}

/// Racing writers (each thread's status and body): exactly one got
/// `won`, every other 412, and `file` holds the winner's body.
fn the_one_winner(threads: Vec<std::thread::JoinHandle<(u16, Vec<u8>)>>, won: u16, file: &Path) {
    let results: Vec<(u16, Vec<u8>)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let statuses: Vec<u16> = results.iter().map(|r| r.0).collect();
    let winners: Vec<&Vec<u8>> = results
        .iter()
        .filter(|(s, _)| *s == won)
        .map(|(_, d)| d)
        .collect();
    assert_eq!(winners.len(), 1, "{statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == won || *s == 412),
        "{statuses:?}"
    );
    assert_eq!(&std::fs::read(file).unwrap(), winners[0]);
}

#[test]
fn each_mode_answers_and_names_the_file_whole() {
    let (_keep, dir) = scratch();
    let server = serve(&dir, test_runtime());
    let mut c = Client::connect(server.local_addr());
    let first = body(300_000, 1);
    let r = put(&mut c, "/create/sub/a.bin", "", &first);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("location"), Some("/create/sub/a.bin"));
    let etag = r.header("etag").unwrap().to_owned();
    assert_eq!(std::fs::read(dir.join("sub/a.bin")).unwrap(), first);
    // Create only: 412, the file untouched, the connection kept.
    let r = put(&mut c, "/create/sub/a.bin", "", b"other");
    assert_eq!(r.status, 412);
    assert_eq!(std::fs::read(dir.join("sub/a.bin")).unwrap(), first);
    // A stale ETag is refused from the head; the right one replaces once.
    let second = body(70_000, 2);
    let r = put(&mut c, "/if/sub/a.bin", "If-Match: \"1-2\"\r\n", &second);
    assert_eq!(r.status, 412);
    assert_eq!(std::fs::read(dir.join("sub/a.bin")).unwrap(), first);
    let r = put(
        &mut c,
        "/if/sub/a.bin",
        &format!("If-Match: {etag}\r\n"),
        &second,
    );
    assert_eq!(r.status, 204, "{}", r.text());
    let new_etag = r.header("etag").unwrap().to_owned();
    assert_ne!(new_etag, etag);
    assert_eq!(std::fs::read(dir.join("sub/a.bin")).unwrap(), second);
    let r = put(
        &mut c,
        "/if/sub/a.bin",
        &format!("If-Match: {etag}\r\n"),
        b"x",
    );
    assert_eq!(r.status, 412);
    // Replace, chunked, and an empty body (a file of no bytes).
    let third = body(200_000, 3);
    c.send("PUT /replace/sub/a.bin HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    for part in third.chunks(33_333) {
        c.send(format!("{:x}\r\n", part.len()));
        c.send(part);
        c.send("\r\n");
    }
    c.send("0\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 204);
    assert_eq!(std::fs::read(dir.join("sub/a.bin")).unwrap(), third);
    let r = put(&mut c, "/create/empty", "", b"");
    assert_eq!(r.status, 201);
    c.send("PUT /create/none HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 201);
    assert_eq!(std::fs::read(dir.join("none")).unwrap(), b"");
    // The program's own answer, after a full sync.
    let r = put(&mut c, "/full/sub/b", "", b"12345");
    assert_eq!((r.status, r.text()), (200, "5 bytes".to_owned()));
    // Nothing but the names written: no temporary anywhere.
    assert_eq!(names(&dir), vec!["empty", "none", "sub"]);
    assert_eq!(names(&dir.join("sub")), vec!["a.bin", "b"]);
    let stats = server.report();
    assert_eq!(stats.bodies.files_written, 6);
    assert_eq!(stats.bodies.files_refused, 3);
}

#[test]
fn names_that_cannot_be_written_are_refused_from_the_head() {
    let (_keep, dir) = scratch();
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.join("out")).unwrap();
    let server = serve(&dir, test_runtime());
    for (path, status) in [
        ("/replace/out/x", 404),
        ("/replace/sub/..%2f..%2fx", 404),
        ("/replace/.nikaia-tmp-0123", 404),
        ("/replace/missing/x", 409),
        ("/replace/sub", 409),
    ] {
        // The client waits for 100 Continue: it is never sent, the
        // refusal comes instead, and the body is not read.
        let mut c = Client::connect(server.local_addr());
        c.send(format!(
            "PUT {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        ));
        let r = c.reply().unwrap();
        assert_eq!(r.status, status, "{path}");
    }
    assert!(names(outside.path()).is_empty());
    assert_eq!(names(&dir), vec!["out", "sub"]);
    // A length the file system cannot hold above its floor: 507 first.
    let mut rt = test_runtime();
    rt.write_free_floor = u64::MAX / 4;
    let server = serve(&dir, rt);
    let mut c = Client::connect(server.local_addr());
    c.send("PUT /replace/big HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 507);
    assert!(!dir.join("big").exists());
}

#[test]
fn continue_is_sent_only_once_the_file_is_ready() {
    let (_keep, dir) = scratch();
    let server = serve(&dir, test_runtime());
    let mut c = Client::connect(server.local_addr());
    c.send(
        "PUT /create/c HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n",
    );
    let r = c.read_reply(true).unwrap();
    assert_eq!(r.status, 100);
    c.send("abc");
    assert_eq!(c.reply().unwrap().status, 201);
    assert_eq!(std::fs::read(dir.join("c")).unwrap(), b"abc");
}

#[test]
fn of_many_creators_of_one_name_one_wins() {
    let (_keep, dir) = scratch();
    let server = serve(&dir, test_runtime());
    let addr = server.local_addr();
    let threads: Vec<_> = (0..50u8)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let data = body(50_000 + i as usize, i);
                (put(&mut c, "/create/race", "", &data).status, data)
            })
        })
        .collect();
    the_one_winner(threads, 201, &dir.join("race"));
    assert_eq!(names(&dir), vec!["race", "sub"]);
}

#[test]
fn a_client_that_leaves_mid_body_leaves_no_name() {
    let (_keep, dir) = scratch();
    std::fs::write(dir.join("old"), b"old bytes").unwrap();
    let server = serve(&dir, test_runtime());
    for path in ["/create/new", "/replace/old"] {
        let mut c = Client::connect(server.local_addr());
        c.send(format!(
            "PUT {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n"
        ));
        c.send(body(400_000, 9));
        drop(c);
    }
    // The aborts reach the writer; then nothing new is under any name.
    for _ in 0..100 {
        if server.report().bodies.aborted == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.report().bodies.aborted, 2);
    assert_eq!(names(&dir), vec!["old", "sub"]);
    assert_eq!(std::fs::read(dir.join("old")).unwrap(), b"old bytes");
}

#[test]
fn curl_puts_over_http2_and_http1() {
    let (_keep, dir) = scratch();
    let server = serve(&dir, test_runtime());
    let data = body(3 << 20, 7);
    let file = dir.join("sub/source");
    std::fs::write(&file, &data).unwrap();
    for (flag, name) in [("--http2-prior-knowledge", "h2"), ("--http1.1", "h1")] {
        let out = Command::new("curl")
            .args(["-sS", flag, "-T"])
            .arg(&file)
            .args(["-o", "/dev/null", "-w", "%{http_code}"])
            .arg(format!("http://{}/create/{name}", server.local_addr()))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "201", "{flag}");
        assert_eq!(std::fs::read(dir.join(name)).unwrap(), data, "{flag}");
        // Again, a small body: the name exists (a large one is refused as
        // early, and its stream reset, which curl 7.88 takes for an error
        // on HTTP/2).
        let small = dir.join("sub/small");
        std::fs::write(&small, body(100_000, 8)).unwrap();
        let out = Command::new("curl")
            .args(["-sS", flag, "-T"])
            .arg(&small)
            .args(["-o", "/dev/null", "-w", "%{http_code}"])
            .arg(format!("http://{}/create/{name}", server.local_addr()))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "412", "{flag}: {err}");
    }
}

#[test]
fn of_many_conditional_replacers_of_one_version_one_wins() {
    let (_keep, dir) = scratch();
    std::fs::write(dir.join("doc"), b"version one").unwrap();
    let server = serve(&dir, test_runtime());
    let root = Root::dir(&dir).unwrap();
    let etag = root.open("doc").unwrap().id.etag();
    let addr = server.local_addr();
    let threads: Vec<_> = (0..50u8)
        .map(|i| {
            let etag = etag.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let data = body(20_000 + i as usize, i);
                let status = put(&mut c, "/if/doc", &format!("If-Match: {etag}\r\n"), &data).status;
                (status, data)
            })
        })
        .collect();
    the_one_winner(threads, 204, &dir.join("doc"));
}

#[test]
fn past_max_writes_a_body_is_refused_from_its_head() {
    let (_keep, dir) = scratch();
    let mut rt = test_runtime();
    rt.max_writes = 1;
    let server = serve(&dir, rt);
    // One body being written (half sent), the next is 503 before its body.
    // Its 100 Continue says its file is open.
    let mut first = Client::connect(server.local_addr());
    first.send(
        "PUT /create/one HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n",
    );
    assert_eq!(first.read_reply(true).unwrap().status, 100);
    first.send("half!");
    let mut second = Client::connect(server.local_addr());
    second.send(
        "PUT /create/two HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
    );
    let r = second.reply().unwrap();
    assert_eq!((r.status, r.header("retry-after")), (503, Some("1")));
    // The first goes on; then there is room again.
    first.send("whole");
    assert_eq!(first.reply().unwrap().status, 201);
    assert_eq!(put(&mut first, "/create/two", "", b"12345").status, 201);
    assert_eq!(names(&dir), vec!["one", "sub", "two"]);
}

#[test]
fn http2_streams_hold_refuse_drop_and_write_files() {
    let (_keep, dir) = scratch();
    let server = serve(&dir, test_runtime());
    let addr = server.local_addr();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/h2/bodies.py");
    let out = Command::new("python3")
        .arg(script)
        .args([addr.ip().to_string(), addr.port().to_string()])
        .arg("to_file")
        .output()
        .expect("python3 runs (test.sh installs PyPI h2)");
    let text = String::from_utf8_lossy(&out.stdout);
    let seen: serde_json::Value =
        serde_json::from_str(text.lines().last().expect("a JSON line")).unwrap();
    let status = |s: &str| seen["status"][s].as_u64();
    // 100 Continue only for the body that was wanted, after its file was
    // open; the refusal from the head came without it.
    assert_eq!(
        seen["informational"]["1"],
        serde_json::json!([100]),
        "{text}"
    );
    assert!(seen["informational"].get("3").is_none(), "{text}");
    assert_eq!(status("1"), Some(201), "{text}");
    assert_eq!(status("3"), Some(412), "{text}");
    assert_eq!(status("5"), Some(201), "{text}");
    assert_eq!(status("7"), Some(412), "{text}");
    assert_eq!(status("11"), Some(201), "{text}");
    assert_eq!(status("13"), Some(404), "{text}");
    assert!(seen["goaway"].is_null(), "{text}");
    let first: Vec<u8> = (0..1200).flat_map(|_| 0..=255u8).collect();
    assert_eq!(std::fs::read(dir.join("h2a")).unwrap(), first);
    assert_eq!(std::fs::read(dir.join("h2b")).unwrap(), vec![b'b'; 100_000]);
    assert_eq!(std::fs::read(dir.join("h2empty")).unwrap(), b"");
    // The stream reset mid-body left no name, and no temporary.
    for _ in 0..100 {
        if server.report().bodies.aborted >= 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(names(&dir), vec!["h2a", "h2b", "h2empty", "sub"]);
}
