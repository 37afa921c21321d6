//! Names that are not UTF-8 over real sockets (`spec/http.md`, "Requests";
//! `spec/site.md`, "One name for every rule"): a file whose name is the
//! Latin-1 bytes `caf\xe9.txt` and a directory `d\xff/` are served
//! byte-exact by the directory handler and by a program's own `http::File`
//! through `Request::param_bytes`; their UTF-8 spellings are other names;
//! a NUL, a bad escape and an encoded `..` are refused as before.

use nikaia_std::fs::Root;
use nikaia_std::http::{dir_handler, File, Running, Server};
use nikaia_tests::{start, test_runtime, Client, Reply};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const LATIN1: &[u8] = b"the Latin-1 name";

fn name(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

struct Site {
    _tmp: tempfile::TempDir,
    root: std::path::PathBuf,
}

fn site() -> Site {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join(name(b"d\xff"))).unwrap();
    std::fs::write(root.join(name(b"caf\xe9.txt")), LATIN1).unwrap();
    // The name `param()` gives for `/caf%E9.txt` (U+FFFD for the byte): the
    // directory handler must never open it in the Latin-1 name's place.
    std::fs::write(root.join("caf\u{FFFD}.txt"), b"WRONG FILE").unwrap();
    std::fs::write(root.join(name(b"d\xff/x\xfe.txt")), b"inside").unwrap();
    std::fs::write(root.join(name(b"d\xff/index.html")), b"<h1>d</h1>").unwrap();
    std::fs::write(tmp.path().join("secret.txt"), b"outside").unwrap();
    Site { _tmp: tmp, root }
}

/// `nikaia serve`'s handler at `/`, and a program's own `http::File` by
/// the exact bytes (`/exact/*name`) and by the lossy text (`/lossy/*name`).
fn server(root: &Path) -> Running {
    let exact = Root::dir(root).unwrap();
    let lossy = exact.clone();
    start(
        Server::with_runtime(test_runtime())
            .route("/exact/*name", move |req| {
                File::new(OsStr::from_bytes(req.param_bytes().unwrap_or(b"")), &exact)
            })
            .route("/lossy/*name", move |req| {
                File::new(req.param().unwrap_or(""), &lossy)
            })
            .route("/echo/*name", |req| {
                format!("{:?} {:?}", req.param().unwrap_or(""), req.path())
            })
            .route(
                "/*path",
                dir_handler(Root::dir(root).unwrap(), false, false),
            ),
    )
}

fn get(server: &Running, target: &str) -> Reply {
    let mut c = Client::connect(server.local_addr());
    c.send(format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n"));
    c.reply().unwrap_or_else(|e| panic!("{target}: {e}"))
}

#[test]
fn names_that_are_not_utf8_are_served_byte_exact_over_http_1_1() {
    let s = site();
    let server = server(&s.root);
    for (target, status, body) in [
        ("/caf%E9.txt", 200, LATIN1),
        ("/caf%e9.txt", 200, LATIN1),
        ("//caf%E9.txt", 200, LATIN1),
        ("/d%FF/x%FE.txt", 200, b"inside"),
        ("/d%FF/", 200, b"<h1>d</h1>"),
        ("/exact/caf%E9.txt", 200, LATIN1),
        ("/exact/d%FF/x%FE.txt", 200, b"inside"),
        // The UTF-8 spelling of the name is another name: not there.
        ("/caf%C3%A9.txt", 404, b""),
        ("/exact/caf%C3%A9.txt", 404, b""),
    ] {
        let r = get(&server, target);
        assert_eq!(r.status, status, "{target}: {}", r.text());
        if status == 200 {
            assert_eq!(r.body, body, "{target}");
        }
        assert!(
            !r.text().contains("WRONG"),
            "{target} opened the lossy name"
        );
    }
    // A program that opens by `param()` asks for the lossy name: another
    // file, here one that exists (spec/http.md says why to use the bytes).
    assert_eq!(get(&server, "/lossy/caf%E9.txt").body, b"WRONG FILE");
    assert_eq!(
        get(&server, "/echo/d%FF/caf%E9?q").text(),
        "\"d\u{FFFD}/caf\u{FFFD}\" \"/echo/d\u{FFFD}/caf\u{FFFD}\""
    );

    // The slash redirect is built from the exact bytes, the query as sent.
    for (target, location) in [
        ("/d%FF", "/d%FF/"),
        ("/d%ff?x=%E9", "/d%FF/?x=%E9"),
        ("//d%FF", "/d%FF/"),
    ] {
        let r = get(&server, target);
        assert_eq!(r.status, 301, "{target}");
        assert_eq!(r.header("Location"), Some(location), "{target}");
    }

    // Refused as before: a NUL, a bad escape (400, then close); a dot
    // segment however it is spelled (404, nothing opened).
    for (target, status) in [
        ("/caf%00.txt", 400),
        ("/d%FF/%00", 400),
        ("/%zz", 400),
        ("/d%FF/%z", 400),
        ("/%2E%2E/secret.txt", 404),
        ("/d%FF/%2E%2E/caf%E9.txt", 404),
        ("/d%FF/%2e%2e/%2e%2e/secret.txt", 404),
        ("/exact/%2E%2E/secret.txt", 404),
        ("/exact/d%FF/%2E%2E/%2E%2E/secret.txt", 404),
    ] {
        let r = get(&server, target);
        assert_eq!(r.status, status, "{target}: {}", r.text());
        assert!(!r.text().contains("outside"), "{target} left the root");
    }
}
