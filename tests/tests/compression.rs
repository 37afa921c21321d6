//! Compression kept like files (`spec/files.md`): a compressible file
//! without a sidecar is answered as it is until the compressor has made
//! its variant, then from the variant. Every coding is checked by
//! decompressing it; ETags differ per coding and change with the file; no
//! changed file (edited in place, truncated, renamed over) is ever answered
//! with old compressed bytes; Range, 304 and HEAD work on a variant; the
//! table's bound holds.

use nikaia_std::fs::Root;
use nikaia_std::http::{dir_handler, File, Running, Server};
use nikaia_std::rt::{CompressedReport, Runtime};
use nikaia_tests::{start, test_runtime, Client, Reply};
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

/// Text that compresses about 5:1, `len` bytes, different for each `seed`.
fn text(len: usize, seed: u64) -> Vec<u8> {
    let words = [
        "function", "const", "return", "let", "if", "else", "document", "window", "true", "null",
    ];
    let mut out = Vec::with_capacity(len + 16);
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    while out.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.extend_from_slice(words[(x >> 33) as usize % words.len()].as_bytes());
        out.push(if (x >> 20).is_multiple_of(5) {
            b'\n'
        } else {
            b' '
        });
    }
    out.truncate(len);
    out
}

fn decode(coding: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match coding {
        "br" => {
            brotli::Decompressor::new(body, 4096)
                .read_to_end(&mut out)
                .unwrap();
        }
        "zstd" => out = zstd::decode_all(body).unwrap(),
        "gzip" => {
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .unwrap();
        }
        other => panic!("coding {other}"),
    }
    out
}

/// The bytes an answer stands for: decoded when it is coded.
fn plain(r: &Reply) -> Vec<u8> {
    match r.header("content-encoding") {
        Some(c) => decode(c, &r.body),
        None => r.body.clone(),
    }
}

fn serve(root: &Path, rt: Runtime) -> Running {
    let handler = dir_handler(Root::dir(root).unwrap(), false, false);
    let site = Root::dir(root).unwrap();
    let anywhere = Root::anywhere();
    let under = root.to_path_buf();
    start(
        Server::with_runtime(rt)
            .route("/own/*name", move |req| {
                nikaia_std::http::Response::new(200)
                    .header("Content-Encoding", "identity-of-mine")
                    .body(File::new(req.param().unwrap_or(""), &site))
            })
            .route("/anywhere/*name", move |req| {
                File::new(under.join(req.param().unwrap_or("")), &anywhere)
            })
            .route("/*path", handler),
    )
}

fn runtime() -> Runtime {
    let mut rt = test_runtime();
    rt.workers = 1;
    rt
}

fn get(server: &Running, path: &str, headers: &str) -> Reply {
    let mut c = Client::connect(server.local_addr());
    c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n{headers}\r\n"));
    c.reply().expect("a reply")
}

fn head(server: &Running, path: &str, headers: &str) -> Reply {
    let mut c = Client::connect(server.local_addr());
    c.send(format!("HEAD {path} HTTP/1.1\r\nHost: t\r\n{headers}\r\n"));
    c.read_reply(true).expect("a reply")
}

/// Asks until the answer is coded with `coding` (the compressor has made
/// it), at most 20 s.
fn until_coded(server: &Running, path: &str, coding: &str) -> Reply {
    let started = Instant::now();
    loop {
        let r = get(server, path, &format!("Accept-Encoding: {coding}\r\n"));
        if r.header("content-encoding") == Some(coding) {
            return r;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{path} never coded {coding}: {:?}",
            server.report().compressed
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn compressed(server: &Running) -> CompressedReport {
    server.report().compressed
}

/// Waits for the files' last change to be a second old: the compressor
/// does not take a file changed less than a second ago.
fn settle() {
    std::thread::sleep(Duration::from_millis(1100));
}

#[test]
fn every_coding_is_made_once_checked_by_decoding_and_tagged_apart() {
    let dir = tempfile::tempdir().unwrap();
    let js = text(100 << 10, 1);
    std::fs::write(dir.path().join("app.js"), &js).unwrap();
    settle();
    let server = serve(dir.path(), runtime());

    // The first answer does not wait for a compressor: the file itself.
    let first = get(&server, "/app.js", "Accept-Encoding: gzip\r\n");
    assert_eq!(first.status, 200);
    assert_eq!(first.header("content-encoding"), None);
    assert_eq!(first.header("vary"), Some("Accept-Encoding"));
    assert_eq!(first.body, js);
    let identity = first.header("etag").unwrap().to_owned();

    let mut tags = vec![identity.clone()];
    for coding in ["gzip", "br", "zstd"] {
        let r = until_coded(&server, "/app.js", coding);
        assert_eq!(r.status, 200);
        assert_eq!(decode(coding, &r.body), js, "{coding} decodes to the file");
        assert!(r.body.len() < js.len() / 3, "{coding}: {}", r.body.len());
        assert_eq!(
            r.header("content-length").unwrap(),
            r.body.len().to_string()
        );
        assert_eq!(r.header("vary"), Some("Accept-Encoding"));
        assert_eq!(
            r.header("content-type"),
            Some("text/javascript; charset=utf-8")
        );
        assert_eq!(r.header("last-modified"), first.header("last-modified"));
        let tag = r.header("etag").unwrap().to_owned();
        assert!(tag.starts_with(identity.trim_end_matches('"')), "{tag}");
        assert!(!tags.contains(&tag), "{coding}: {tag} is new");
        tags.push(tag);
    }
    // Each coding was made once; asking again is a hit, not new work.
    let made = compressed(&server).made;
    assert_eq!(made, 3, "{:?}", compressed(&server));
    for _ in 0..5 {
        let r = get(&server, "/app.js", "Accept-Encoding: gzip\r\n");
        assert_eq!(r.header("content-encoding"), Some("gzip"));
    }
    let after = compressed(&server);
    assert_eq!(after.made, 3);
    assert!(after.hits >= 5, "{after:?}");
    assert_eq!(after.entries, 3);

    // The client's order, then the server's (br, zstd, gzip).
    let r = get(&server, "/app.js", "Accept-Encoding: gzip, br;q=0.5\r\n");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let r = get(
        &server,
        "/app.js",
        "Accept-Encoding: gzip, deflate, br, zstd\r\n",
    );
    assert_eq!(r.header("content-encoding"), Some("br"));
    // No Accept-Encoding: the file.
    let r = get(&server, "/app.js", "");
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.body, js);
}

#[test]
fn range_304_and_head_work_on_a_variant() {
    let dir = tempfile::tempdir().unwrap();
    let page = text(20 << 10, 2);
    std::fs::write(dir.path().join("page.html"), &page).unwrap();
    settle();
    let server = serve(dir.path(), runtime());
    let whole = until_coded(&server, "/page.html", "gzip");
    let tag = whole.header("etag").unwrap().to_owned();

    let h = head(&server, "/page.html", "Accept-Encoding: gzip\r\n");
    assert_eq!(h.status, 200);
    assert_eq!(h.header("content-encoding"), Some("gzip"));
    assert_eq!(h.header("etag"), Some(tag.as_str()));
    assert_eq!(h.header("content-length"), whole.header("content-length"));

    let r = get(
        &server,
        "/page.html",
        &format!("Accept-Encoding: gzip\r\nIf-None-Match: {tag}\r\n"),
    );
    assert_eq!(r.status, 304);
    assert_eq!(r.header("etag"), Some(tag.as_str()));
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    // The identity's ETag is another representation's.
    let identity = get(&server, "/page.html", "")
        .header("etag")
        .unwrap()
        .to_owned();
    let r = get(
        &server,
        "/page.html",
        &format!("Accept-Encoding: gzip\r\nIf-None-Match: {identity}\r\n"),
    );
    assert_eq!(r.status, 200);

    // Ranges count the encoded bytes.
    let r = get(
        &server,
        "/page.html",
        "Accept-Encoding: gzip\r\nRange: bytes=10-99\r\n",
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.body, whole.body[10..100]);
    let total = whole.body.len();
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 10-99/{total}").as_str())
    );
    // If-Range with the identity's ETag never joins the encoding's bytes
    // to the identity's: the whole variant.
    let r = get(
        &server,
        "/page.html",
        &format!("Accept-Encoding: gzip\r\nRange: bytes=10-99\r\nIf-Range: {identity}\r\n"),
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.body, whole.body);
    let r = get(
        &server,
        "/page.html",
        &format!("Accept-Encoding: gzip\r\nRange: bytes=10-99\r\nIf-Range: {tag}\r\n"),
    );
    assert_eq!(r.status, 206);
    // A date cannot tell the encodings apart (they share Last-Modified):
    // the whole representation, coded or not.
    let date = whole.header("last-modified").unwrap();
    for ae in ["gzip", "identity"] {
        let r = get(
            &server,
            "/page.html",
            &format!("Accept-Encoding: {ae}\r\nRange: bytes=10-99\r\nIf-Range: {date}\r\n"),
        );
        assert_eq!(r.status, 200, "{ae}");
        assert_eq!(plain(&r), page, "{ae}");
    }
}

#[test]
fn a_file_asked_for_once_or_too_big_for_the_bound_costs_one_compression_at_most() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("once.js"), text(20 << 10, 9)).unwrap();
    std::fs::write(dir.path().join("big.js"), text(20 << 10, 10)).unwrap();
    settle();
    let server = serve(dir.path(), {
        let mut rt = runtime();
        rt.compress_cache_bytes = 2 << 10;
        rt
    });
    // Once: remembered, not compressed.
    get(&server, "/once.js", "Accept-Encoding: gzip\r\n");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(compressed(&server).made + compressed(&server).no_gain, 0);
    // A variant bigger than the table's bound: noted once, then never
    // compressed again for this file.
    let started = Instant::now();
    while compressed(&server).no_gain == 0 {
        let r = get(&server, "/big.js", "Accept-Encoding: gzip\r\n");
        assert_eq!(r.header("content-encoding"), None);
        assert!(started.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(50));
    }
    for _ in 0..10 {
        let r = get(&server, "/big.js", "Accept-Encoding: gzip\r\n");
        assert_eq!(r.header("content-encoding"), None);
    }
    std::thread::sleep(Duration::from_millis(500));
    let z = compressed(&server);
    assert_eq!(
        (z.made, z.no_gain, z.entries, z.bytes),
        (0, 1, 1, 0),
        "{z:?}"
    );
}

/// A way to change a file: it returns the file's new bytes.
type Change<'a> = dyn Fn(&Path, u64) -> Vec<u8> + 'a;

/// After each change every answer stands for the new bytes: the identity
/// until the new variant is made, then the new variant; never the old one.
#[test]
fn a_changed_file_is_never_answered_with_old_compressed_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // 100 KiB: opened for each request; 4 KiB: in the kept table.
    for (name, len) in [("big.js", 100usize << 10), ("small.css", 4 << 10)] {
        let path = dir.path().join(name);
        std::fs::write(&path, text(len, 3)).unwrap();
        settle();
        let server = serve(dir.path(), runtime());
        let url = format!("/{name}");
        let mut seed = 10;
        let changes: [&Change<'_>; 4] = [
            // In place, same length, same inode.
            &|p, seed| {
                let new = text(len, seed);
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(p)
                    .and_then(|mut f| std::io::Write::write_all(&mut f, &new))
                    .unwrap();
                new
            },
            // Grown in place.
            &|p, seed| {
                let mut new = std::fs::read(p).unwrap();
                new.extend_from_slice(&text(512, seed));
                std::fs::write(p, &new).unwrap();
                new
            },
            // Truncated.
            &|p, _| {
                let new = std::fs::read(p).unwrap()[..len / 2].to_vec();
                std::fs::File::options()
                    .write(true)
                    .open(p)
                    .unwrap()
                    .set_len(new.len() as u64)
                    .unwrap();
                new
            },
            // Renamed over (how spec/files.md says to deploy).
            &|p, seed| {
                let new = text(len, seed);
                let tmp = p.with_extension("tmp");
                std::fs::write(&tmp, &new).unwrap();
                std::fs::rename(&tmp, p).unwrap();
                new
            },
        ];
        let mut tags = vec![until_coded(&server, &url, "gzip")
            .header("etag")
            .unwrap()
            .to_owned()];
        for change in changes {
            seed += 1;
            let new = change(&path, seed);
            // At once (within the tick), and until the new variant is made.
            let started = Instant::now();
            loop {
                let r = get(&server, &url, "Accept-Encoding: gzip\r\n");
                assert_eq!(plain(&r), new, "{name}: an answer with old bytes");
                let tag = r.header("etag").unwrap().to_owned();
                if r.header("content-encoding").is_some() {
                    assert!(!tags.contains(&tag), "{name}: {tag} was the old file's");
                    tags.push(tag);
                    break;
                }
                assert!(started.elapsed() < Duration::from_secs(20), "{name}");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        // The three changes in place dropped their variants when next
        // asked; the rename made a new file (a new inode), whose variant
        // is a new entry: the old one waits for eviction, answering nothing.
        let z = compressed(&server);
        assert!(z.invalidations >= 3, "{name}: {z:?}");
    }
}

#[test]
fn sidecars_win_and_some_answers_are_never_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let css = text(8 << 10, 4);
    std::fs::write(dir.path().join("site.css"), &css).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    std::fs::write(dir.path().join("site.css.gz"), b"the operator's own gzip").unwrap();
    std::fs::write(dir.path().join("logo.png"), text(8 << 10, 5)).unwrap();
    std::fs::write(dir.path().join("tiny.txt"), text(255, 6)).unwrap();
    std::fs::write(dir.path().join("mine.txt"), text(8 << 10, 7)).unwrap();
    settle();
    let server = serve(dir.path(), runtime());

    // A sidecar for any accepted coding wins over a variant.
    let r = until_coded(&server, "/site.css", "br");
    assert_eq!(decode("br", &r.body), css);
    let r = get(&server, "/site.css", "Accept-Encoding: br;q=0.9, gzip\r\n");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.body, b"the operator's own gzip");
    let r = get(&server, "/site.css", "Accept-Encoding: br, gzip;q=0.5\r\n");
    assert_eq!(r.body, b"the operator's own gzip", "any sidecar first");

    // Not a compressible type, below the floor, the handler's own coding,
    // a name through `Anywhere`.
    for (path, len) in [
        ("/logo.png", 8 << 10),
        ("/tiny.txt", 255),
        ("/own/mine.txt", 8 << 10),
        ("/anywhere/mine.txt", 8 << 10),
    ] {
        for _ in 0..3 {
            let r = get(&server, path, "Accept-Encoding: gzip, br, zstd\r\n");
            assert_eq!(r.status, 200, "{path}");
            assert_ne!(r.header("content-encoding"), Some("gzip"), "{path}");
            assert_ne!(r.header("content-encoding"), Some("br"), "{path}");
            assert_eq!(r.body.len(), len, "{path}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert_eq!(compressed(&server).made, 1, "{:?}", compressed(&server));

    // `compress = false`: nothing is queued, the file goes as it is.
    let off = serve(dir.path(), {
        let mut rt = runtime();
        rt.compress = false;
        rt
    });
    std::fs::write(dir.path().join("other.js"), text(8 << 10, 8)).unwrap();
    settle();
    for _ in 0..5 {
        let r = get(&off, "/other.js", "Accept-Encoding: gzip\r\n");
        assert_eq!(r.header("content-encoding"), None);
        std::thread::sleep(Duration::from_millis(50));
    }
    let z = compressed(&off);
    assert_eq!((z.made, z.entries, z.misses), (0, 0, 0), "{z:?}");
}

#[test]
fn the_tables_bound_holds_under_many_files() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..40 {
        std::fs::write(
            dir.path().join(format!("f{i}.txt")),
            text(16 << 10, 100 + i),
        )
        .unwrap();
    }
    settle();
    let bound = 24 << 10;
    let server = serve(dir.path(), {
        let mut rt = runtime();
        rt.compress_cache_bytes = bound;
        rt
    });
    // Each round asks for every file, then waits for the compressor to
    // take what it queued (at most 16); the bound holds at every step.
    let started = Instant::now();
    for round in 0.. {
        for i in 0..40 {
            let r = get(&server, &format!("/f{i}.txt"), "Accept-Encoding: gzip\r\n");
            assert_eq!(plain(&r), text(16 << 10, 100 + i), "round {round}, f{i}");
            let z = compressed(&server);
            assert!(z.bytes <= bound, "{z:?}");
        }
        let z = compressed(&server);
        if z.made >= 20 && z.evictions > 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{z:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
    let z = compressed(&server);
    assert!(z.bytes <= bound, "{z:?}");
    assert!(z.entries >= 2 && z.made > z.entries, "{z:?}");
    assert!(z.evictions > 0, "{z:?}");
}
