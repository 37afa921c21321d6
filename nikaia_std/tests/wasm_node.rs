//! The wasm32 glue under Node (wasm-bindgen-test): a tree made with
//! `node:fs`, the same program as on Linux registered by `Server::run`, and
//! requests answered by `http::handle` — every body row, `http::File`
//! 200/206/304/404, a symlink out, a loop, and the read-only fs.
//!
//! Run by `.ci/run` as `cargo test -p nikaia_std --target
//! wasm32-unknown-unknown --lib --tests` with wasm-bindgen-test-runner.
#![cfg(target_arch = "wasm32")]

use nikaia_std::fs::{self, Root};
use nikaia_std::http::{handle, Answer, File, Response, Server};
use nikaia_std::{html, Bytes};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen(module = "node:fs")]
extern "C" {
    #[wasm_bindgen(js_name = mkdtempSync)]
    fn mkdtemp(prefix: &str) -> String;
    #[wasm_bindgen(js_name = mkdirSync)]
    fn mkdir(path: &str);
    #[wasm_bindgen(js_name = writeFileSync)]
    fn write_file(path: &str, data: &[u8]);
    #[wasm_bindgen(js_name = symlinkSync)]
    fn symlink(target: &str, path: &str);
}

#[wasm_bindgen(module = "node:os")]
extern "C" {
    fn tmpdir() -> String;
}

/// A tree: root/{a.txt, big.bin, sub/b.txt, out → ../secret, loop1 ⇄ loop2}
/// with `secret` beside root. Returns the root's path.
fn tree() -> String {
    let top = mkdtemp(&format!("{}/nikaia-wasm-", tmpdir()));
    let root = format!("{top}/root");
    mkdir(&root);
    mkdir(&format!("{root}/sub"));
    write_file(&format!("{top}/secret"), b"SECRET");
    write_file(&format!("{root}/a.txt"), b"hello from node:fs\n");
    write_file(&format!("{root}/sub/b.txt"), b"b");
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    write_file(&format!("{root}/big.bin"), &big);
    symlink("../secret", &format!("{root}/out"));
    symlink("loop2", &format!("{root}/loop1"));
    symlink("loop1", &format!("{root}/loop2"));
    root
}

fn app(root: &str) {
    let site = Root::dir(root).expect("a root on the host");
    Server::with_runtime(nikaia_std::rt::Runtime::default())
        .route("/html", |_| html::Raw::new("<b>raw</b>"))
        .route("/text", |_| "plain text")
        .route("/string", |req| format!("path {}", req.path()))
        .route("/bytes", |_| Bytes::from_static(b"\x00\x01"))
        .route("/response", |_| {
            Response::new(201).header("X-Made", "by hand").body("made")
        })
        .route("/fails", |_| -> Result<&'static str, String> {
            Err("detail".into())
        })
        .route("/f/*name", move |req| {
            File::new(req.param().unwrap_or(""), &site).index("index.html")
        })
        // A produced body that never waits: pulled whole for the host.
        .route("/csv", |_| {
            let rows = (0..1000u32).map(|i| format!("{i},{}\n", i * i));
            nikaia_std::http::Produced::from_iter(rows).content_type("text/csv")
        })
        // One that waits for events that come later: refused here.
        .route("/events", |_| {
            let (events, answer) = nikaia_std::http::event_stream();
            KEPT.lock().unwrap().push(events);
            answer
        })
        .run()
        .unwrap();
}

/// Event streams' feeds, kept so their streams wait.
static KEPT: std::sync::Mutex<Vec<nikaia_std::http::Events>> = std::sync::Mutex::new(Vec::new());

const NOW_MS: f64 = 1_764_547_200_000.0; // 2025-12-01T00:00:00Z

fn get(target: &str, extra: &[(&str, &str)]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut headers = vec!["Host".to_owned(), "t".to_owned()];
    for (n, v) in extra {
        headers.push((*n).to_owned());
        headers.push((*v).to_owned());
    }
    let mut answer: Answer = handle("GET", target, headers, Vec::new(), NOW_MS);
    let pairs = answer
        .headers()
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    let mut body = Vec::new();
    loop {
        let part = answer.next_chunk().map_err(|_| "read error").unwrap();
        if part.is_empty() {
            break;
        }
        body.extend(part);
    }
    (answer.status(), pairs, body)
}

fn header<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
    h.iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[wasm_bindgen_test]
fn every_row_and_file_answer_under_node() {
    let root = tree();
    app(&root);

    let (s, h, b) = get("/html", &[]);
    assert_eq!(
        (s, header(&h, "content-type"), &b[..]),
        (200, Some("text/html; charset=utf-8"), &b"<b>raw</b>"[..])
    );
    assert_eq!(
        header(&h, "date"),
        Some("Mon, 01 Dec 2025 00:00:00 GMT"),
        "the host's clock"
    );
    assert_eq!(get("/text", &[]).2, b"plain text");
    assert_eq!(get("/string?q=1", &[]).2, b"path /string");
    let (s, h, b) = get("/bytes", &[]);
    assert_eq!(
        (s, header(&h, "content-type"), b),
        (200, Some("application/octet-stream"), vec![0, 1])
    );
    let (s, h, b) = get("/response", &[]);
    assert_eq!(
        (s, header(&h, "x-made"), &b[..]),
        (201, Some("by hand"), &b"made"[..])
    );
    let (s, _, b) = get("/fails", &[]);
    assert_eq!(s, 500);
    assert!(!String::from_utf8_lossy(&b).contains("detail"));
    assert_eq!(get("/nowhere", &[]).0, 404);

    let (s, h, b) = get("/f/a.txt", &[]);
    assert_eq!((s, &b[..]), (200, &b"hello from node:fs\n"[..]));
    assert_eq!(
        header(&h, "content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(header(&h, "content-length"), Some("19"));
    let etag = header(&h, "etag").unwrap().to_owned();
    assert_eq!(get("/f/a.txt", &[("If-None-Match", &etag)]).0, 304);
    let (s, h, b) = get("/f/a.txt", &[("Range", "bytes=6-9")]);
    assert_eq!(
        (s, header(&h, "content-range"), &b[..]),
        (206, Some("bytes 6-9/19"), &b"from"[..])
    );
    assert_eq!(get("/f/a.txt", &[("Range", "bytes=99-")]).0, 416);
    // A body larger than one part comes whole, in parts.
    let (s, _, b) = get("/f/big.bin", &[]);
    assert_eq!(s, 200);
    assert!(b == (0..200_000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>());
    // A produced body: whole, with its length (the host takes it whole).
    let (s, h, b) = get("/csv", &[]);
    let rows: String = (0..1000u32).map(|i| format!("{i},{}\n", i * i)).collect();
    assert_eq!((s, header(&h, "content-type")), (200, Some("text/csv")));
    assert_eq!(header(&h, "content-length"), Some(&*rows.len().to_string()));
    assert_eq!(b, rows.as_bytes());
    // One that waits (an event stream): a clear 500, logged (spec/targets.md).
    assert_eq!(get("/events", &[]).0, 500);
    assert_eq!(get("/f/sub", &[]).0, 301);
    assert_eq!(get("/f/missing", &[]).0, 404);
    // A name that is not UTF-8 is decoded, not refused: no file on the
    // host can have it, so it is missing (spec/targets.md).
    assert_eq!(get("/f/caf%E9.txt", &[]).0, 404);
    assert_eq!(get("/f/%FF/", &[]).0, 404);
    assert_eq!(get("/f/%00", &[]).0, 400);
    // Outside the root, through a symlink or `..`, and a loop: 404.
    for name in [
        "/f/out",
        "/f/..%2fsecret",
        "/f/sub/..%2f..%2fsecret",
        "/f/loop1",
    ] {
        let (s, _, b) = get(name, &[]);
        assert_eq!(s, 404, "{name}");
        assert!(!String::from_utf8_lossy(&b).contains("SECRET"), "{name}");
    }
}

#[wasm_bindgen_test]
fn the_fs_is_read_only_and_confined() {
    let root = tree();
    let site = Root::dir(&root).unwrap();
    assert_eq!(fs::read("sub/b.txt", &site).unwrap(), b"b");
    assert!(matches!(fs::read("out", &site), Err(fs::Error::Outside(_))));
    let err = fs::write("new.txt", &site, b"x").unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
}
