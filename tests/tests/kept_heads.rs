//! Kept heads (`spec/http.md`, "Kept heads"): an answer asked again on a
//! connection gets the head its first one had, and every change to what a
//! head says — another body, a header the handler or a site rule sets, a
//! status, a reload, a new second, the connection closing — gets a head
//! of its own. Each answer here comes on one kept-alive connection, after
//! the head it could wrongly repeat was given more than once; HTTP/1.1's
//! over raw sockets, HTTP/2's (kept header blocks) through curl.

use nikaia_std::html::Raw;
use nikaia_std::http::{Response, Server};
use nikaia_tests::curl::{curl_output, parse_seen};
use nikaia_tests::site::{serve_reloading, site};
use nikaia_tests::{start, test_runtime, Client, Reply, TestPki};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// The same request, three times: the last two answers could be kept heads.
fn thrice(c: &mut Client, path: &str) -> Reply {
    let first = c.get(path);
    for _ in 0..2 {
        let again = c.get(path);
        assert_eq!(again.status, first.status);
        assert_eq!(again.headers, first.headers, "a head asked again changed");
        assert_eq!(again.body, first.body);
    }
    first
}

#[test]
fn a_held_page_whose_answer_changes_gets_a_head_for_each() {
    let mode = Arc::new(AtomicUsize::new(0));
    let page = Raw::new("<p>held</p>");
    let longer = Raw::new("<p>held, longer</p>");
    let m = mode.clone();
    let server = start(
        Server::with_runtime(test_runtime()).route("/page", move |_| match m.load(Relaxed) {
            0 => Response::new(200).body(page.clone()),
            1 => Response::new(200)
                .header("Cache-Control", "max-age=60")
                .body(page.clone()),
            2 => Response::new(200)
                .header("Cache-Control", "max-age=61")
                .body(page.clone()),
            3 => Response::new(200).body(longer.clone()),
            4 => Response::new(404).body(page.clone()),
            _ => Response::new(200)
                .header("Content-Type", "text/plain")
                .body(page.clone()),
        }),
    );
    let mut c = Client::connect(server.local_addr());
    let mut seen = Vec::new();
    // Back to the first answer between each change: a head kept for one
    // must never answer the next.
    for m in [0, 1, 0, 2, 1, 3, 0, 4, 5, 0] {
        mode.store(m, Relaxed);
        let r = thrice(&mut c, "/page");
        let length: usize = r.header("content-length").unwrap().parse().unwrap();
        assert_eq!(length, r.body.len(), "mode {m}: Content-Length");
        let expect_status = if m == 4 { 404 } else { 200 };
        assert_eq!(r.status, expect_status, "mode {m}");
        let cache = match m {
            1 => Some("max-age=60"),
            2 => Some("max-age=61"),
            _ => None,
        };
        assert_eq!(r.header("cache-control"), cache, "mode {m}");
        let ty = if m == 5 {
            "text/plain"
        } else {
            "text/html; charset=utf-8"
        };
        assert_eq!(r.header("content-type"), Some(ty), "mode {m}");
        seen.push((m, r.body.len()));
    }
    assert!(
        seen.contains(&(3, 19)) && seen.contains(&(0, 11)),
        "{seen:?}"
    );
    // HTTP/1.0 without keep-alive, then HTTP/1.1 closing: the connection's
    // own field is chosen per request.
    c.send("GET /page HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let r = c.reply().unwrap();
    assert_eq!(r.header("connection"), Some("keep-alive"));
    c.send("GET /page HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.reply().unwrap().header("connection"), None);
    c.send("GET /page HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(c.reply().unwrap().header("connection"), Some("close"));
    assert!(c.is_closed());
}

#[test]
fn the_date_of_a_kept_head_is_the_current_second() {
    let page = Raw::new("<p>held</p>");
    let server = start(Server::with_runtime(test_runtime()).route("/page", move |_| page.clone()));
    let mut c = Client::connect(server.local_addr());
    let before = thrice(&mut c, "/page");
    std::thread::sleep(Duration::from_millis(2100));
    let after = c.get("/page");
    let date = |r: &Reply| r.header("date").unwrap().to_owned();
    assert_ne!(date(&before), date(&after), "a kept head's Date went stale");
}

#[test]
fn a_reload_that_changes_a_rule_changes_the_heads_it_dressed() {
    let s = site();
    let file = s.tmp.path().join("runtime.toml");
    let rule = |v: &str| format!("[[headers]]\nmatch = \"**\"\nset = {{ X-Site = \"{v}\" }}\n");
    let running = serve_reloading(&s, &rule("one"));
    let mut c = Client::connect(running.local_addr());
    assert_eq!(thrice(&mut c, "/a.txt").header("x-site"), Some("one"));
    std::fs::write(&file, rule("two")).unwrap();
    running.reload().expect("the reload is taken");
    let r = thrice(&mut c, "/a.txt");
    assert_eq!(
        r.header("x-site"),
        Some("two"),
        "a head from before the reload"
    );
    // A file changed under its name: its ETag, Last-Modified and length.
    let etag = r.header("etag").unwrap().to_owned();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(s.root.join("a.txt"), b"0123456789abcdef, and more").unwrap();
    let r = thrice(&mut c, "/a.txt");
    assert_ne!(r.header("etag"), Some(etag.as_str()), "a stale ETag");
    assert_eq!(r.body, b"0123456789abcdef, and more");
    assert_eq!(r.header("content-length"), Some("26"));
}

/// Over HTTP/2 (TLS, ALPN h2: curl 7.88 breaks a reused h2c connection
/// itself, curl/curl#10634), twelve requests on one connection to a
/// handler whose answer changes every third request (a header's value,
/// then the body's length): each answer's fields are its own, never a
/// kept block's from the answer before.
#[test]
fn over_http2_a_kept_block_follows_the_answer() {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let pki = TestPki::new();
    let server = start(Server::with_runtime(pki.runtime()).route("/n", move |_| {
        let n = c.fetch_add(1, Relaxed);
        let body = if (n / 3).is_multiple_of(2) {
            "<p>held</p>"
        } else {
            "<p>held, longer</p>"
        };
        Response::new(200)
            .header("X-Third", n / 3)
            .body(Raw::new(body))
    }));
    let url = format!("https://localhost:{}/n", server.local_addr().port());
    let dir = tempfile::tempdir().unwrap();
    let heads = dir.path().join("heads");
    let ca = pki.ca_pem.to_str().unwrap();
    let mut args = vec![
        "-sS",
        "--http2",
        "--cacert",
        ca,
        "-D",
        heads.to_str().unwrap(),
    ];
    args.extend(["-w", "%{num_connects}\n"]);
    for _ in 0..12 {
        args.extend(["-o", "/dev/null", url.as_str()]);
    }
    let out = curl_output(&args);
    assert!(out.status.success(), "curl {args:?}: {out:?}");
    let connects: u32 = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse::<u32>().unwrap())
        .sum();
    assert_eq!(
        connects, 1,
        "the twelve requests were not on one connection"
    );
    let raw = std::fs::read(&heads).unwrap();
    let seen: Vec<_> = (raw.windows(6).enumerate())
        .filter(|(_, w)| *w == b"HTTP/2")
        .map(|(i, _)| parse_seen(&raw[i..]))
        .collect();
    assert_eq!(seen.len(), 12, "{}", String::from_utf8_lossy(&raw));
    for (n, s) in seen.iter().enumerate() {
        assert_eq!(
            s.header("x-third"),
            Some((n / 3).to_string().as_str()),
            "answer {n}"
        );
        let length = if n / 3 % 2 == 0 { "11" } else { "19" };
        assert_eq!(s.header("content-length"), Some(length), "answer {n}");
        assert!(s.header("date").is_some(), "answer {n}");
    }
}
