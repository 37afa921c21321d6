//! `nikaia serve` with a runtime file's pages, as a user runs it:
//! `cache-control`, `not-found`, `fallback`, `index` and `list`, on the
//! real binary and a real directory.

mod common;

use common::{get, request, start_serve, Serving};
use std::process::Command;

// ---- cache-control, not-found and fallback from the runtime file ----------

/// A site for the runtime's pages: hashed assets, a 404 page, a dot-file,
/// a symlink out of the root.
fn pages_site() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("site");
    std::fs::create_dir_all(root.join("assets")).unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(tmp.path().join("secret.txt"), "OUTSIDE-SECRET").unwrap();
    std::fs::write(root.join("index.html"), "<h1>app</h1>").unwrap();
    std::fs::write(root.join("docs/index.html"), "<h1>docs</h1>").unwrap();
    std::fs::write(root.join("404.html"), "<h1>not here</h1>").unwrap();
    std::fs::write(root.join("assets/app-3fa9c1.js"), "let app = 1;").unwrap();
    std::fs::write(root.join("assets/logo.png"), "PNG").unwrap();
    std::fs::write(root.join(".env"), "SECRET=1").unwrap();
    std::os::unix::fs::symlink("../secret.txt", root.join("link-out")).unwrap();
    tmp
}

/// `nikaia serve SITE --runtime FILE`, FILE holding `runtime`.
fn serve_with_runtime(runtime: &str) -> Serving {
    let tmp = pages_site();
    let file = tmp.path().join("runtime.toml");
    std::fs::write(&file, runtime).unwrap();
    let root = tmp.path().join("site");
    let listen = ["--listen", "127.0.0.1:0", "--runtime"].map(std::ffi::OsStr::new);
    start_serve(tmp, &root, listen.into_iter().chain([file.as_os_str()]))
}

fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

const CACHE_RULES: &str = r#"
[cache-control]
default = "max-age=60"
"*.html" = "no-cache"
"assets/*-[0-9a-f]*.*" = "public, max-age=31536000, immutable"
"#;

#[test]
fn cache_control_by_pattern_and_default() {
    let s = serve_with_runtime(CACHE_RULES);
    let cc = |target: &str| {
        let (status, head, _) = get(&s.addr, target);
        (status, header(&head, "Cache-Control").map(str::to_owned))
    };
    let immutable = Some("public, max-age=31536000, immutable".to_owned());
    assert_eq!(cc("/"), (200, Some("no-cache".into())), "index.html");
    assert_eq!(cc("/docs/"), (200, Some("no-cache".into())), "at any depth");
    assert_eq!(cc("/assets/app-3fa9c1.js"), (200, immutable.clone()));
    assert_eq!(cc("/assets/logo.png"), (200, Some("max-age=60".into())));
    // Only on file answers: not on a 404, not on a redirect.
    assert_eq!(cc("/missing.js"), (404, None));
    assert_eq!(cc("/.env"), (404, None));
    assert_eq!(cc("/docs"), (301, None));
    // 206 and 304 carry it too.
    let (status, head, body) = request(
        &s.addr,
        "GET",
        "/assets/app-3fa9c1.js",
        "Range: bytes=0-2\r\n",
    );
    assert_eq!((status, &body[..]), (206, &b"let"[..]));
    assert_eq!(header(&head, "Cache-Control").map(str::to_owned), immutable);
    let etag = header(&head, "ETag").unwrap().to_owned();
    let (status, head, _) = request(
        &s.addr,
        "GET",
        "/assets/app-3fa9c1.js",
        &format!("If-None-Match: {etag}\r\n"),
    );
    assert_eq!(status, 304);
    assert_eq!(header(&head, "Cache-Control").map(str::to_owned), immutable);
}

#[test]
fn a_not_found_page_for_missing_hidden_and_outside_names() {
    let s = serve_with_runtime("not-found = \"404.html\"\n");
    for target in [
        "/missing.html",
        "/no/such/dir/",
        "/.env",
        "/%2eenv",
        "/link-out",
        "/docs/../.env",
    ] {
        let (status, head, body) = get(&s.addr, target);
        assert_eq!(status, 404, "{target}");
        assert_eq!(body, b"<h1>not here</h1>", "{target}");
        assert_eq!(
            header(&head, "Content-Type"),
            Some("text/html; charset=utf-8"),
            "{target}"
        );
    }
    // HEAD: the page's head, no body.
    let (status, head, body) = request(&s.addr, "HEAD", "/missing", "");
    assert_eq!(
        (status, header(&head, "Content-Length"), body.len()),
        (404, Some("17"), 0)
    );
    // The page itself is a file like any other; the rest is unchanged.
    assert_eq!(get(&s.addr, "/404.html").0, 200);
    assert_eq!(get(&s.addr, "/").2, b"<h1>app</h1>");
    // A missing not-found page: the plain 404.
    std::fs::remove_file(s._dir.path().join("site/404.html")).unwrap();
    let (status, head, body) = get(&s.addr, "/missing.html");
    assert_eq!((status, &body[..]), (404, &b"404 Not Found\n"[..]));
    assert_eq!(
        header(&head, "Content-Type"),
        Some("text/plain; charset=utf-8")
    );
}

#[test]
fn the_fallback_answers_missing_names_but_never_hidden_or_outside_ones() {
    let runtime = format!("fallback = \"index.html\"\nnot-found = \"404.html\"\n{CACHE_RULES}");
    let s = serve_with_runtime(&runtime);
    for target in ["/some/app/route", "/settings", "/docs/nothing/"] {
        let (status, head, body) = get(&s.addr, target);
        assert_eq!((status, &body[..]), (200, &b"<h1>app</h1>"[..]), "{target}");
        assert_eq!(
            header(&head, "Content-Type"),
            Some("text/html; charset=utf-8")
        );
        // The rule of the file sent: index.html's.
        assert_eq!(header(&head, "Cache-Control"), Some("no-cache"), "{target}");
        // No extension: Accept did not decide.
        assert_eq!(header(&head, "Vary"), Some("Accept-Encoding"), "{target}");
    }
    // A missing asset stays missing (the stale-asset bug: an old page asking
    // for last week's `app.3f2a.js` must not get HTML with 200), whatever a
    // script, a stylesheet or an image accepts.
    for (target, accept) in [
        ("/assets/app.3f2a.js", "*/*"),
        ("/missing.js", "*/*"),
        ("/style.css", "text/css,*/*;q=0.1"),
        ("/logo.png", "image/avif,image/webp,*/*;q=0.8"),
        ("/font.woff2", ""),
    ] {
        let accept = if accept.is_empty() {
            String::new()
        } else {
            format!("Accept: {accept}\r\n")
        };
        let (status, head, body) = request(&s.addr, "GET", target, &accept);
        assert_eq!(
            (status, &body[..]),
            (404, &b"<h1>not here</h1>"[..]),
            "{target}"
        );
        assert_eq!(
            header(&head, "Vary"),
            Some("Accept-Encoding, Accept"),
            "{target}"
        );
    }
    // A navigation whose last segment looks like an extension: a browser
    // names text/html.
    let browser = "Accept: text/html,application/xhtml+xml,*/*;q=0.8\r\n";
    for target in ["/v1.2", "/users/jane.doe"] {
        let (status, head, body) = request(&s.addr, "GET", target, browser);
        assert_eq!((status, &body[..]), (200, &b"<h1>app</h1>"[..]), "{target}");
        assert_eq!(
            header(&head, "Vary"),
            Some("Accept-Encoding, Accept"),
            "{target}"
        );
    }
    // Names that exist are themselves; a directory still gets its slash.
    assert_eq!(get(&s.addr, "/docs/").2, b"<h1>docs</h1>");
    assert_eq!(get(&s.addr, "/docs").0, 301);
    // A dot-name or a symlink out is the 404 page, never the app.
    for target in ["/.env", "/link-out", "/%2e%2e/secret.txt"] {
        let (status, head, body) = get(&s.addr, target);
        assert_eq!(
            (status, &body[..]),
            (404, &b"<h1>not here</h1>"[..]),
            "{target}"
        );
        assert_eq!(header(&head, "Cache-Control"), None, "{target}");
    }
    // `fallback-for = "all"`: every missing name gets the app.
    let all = serve_with_runtime(&format!("fallback-for = \"all\"\n{runtime}"));
    for target in ["/missing.js", "/logo.png", "/settings"] {
        let (status, head, body) = get(&all.addr, target);
        assert_eq!((status, &body[..]), (200, &b"<h1>app</h1>"[..]), "{target}");
        assert_eq!(header(&head, "Vary"), Some("Accept-Encoding"), "{target}");
    }
    // Without the fallback file: the not-found page.
    std::fs::remove_file(s._dir.path().join("site/index.html")).unwrap();
    assert_eq!(get(&s.addr, "/some/app/route").0, 404);
    assert_eq!(get(&s.addr, "/some/app/route").2, b"<h1>not here</h1>");
}

#[test]
fn a_bad_runtime_file_stops_serve_with_positions() {
    let tmp = pages_site();
    let file = tmp.path().join("runtime.toml");
    std::fs::write(
        &file,
        "fallback = \"/srv/app/index.html\"\n[cache-control]\n\"a**\" = \"no-cache\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(tmp.path().join("site"))
        .args(["--listen", "127.0.0.1:0", "--runtime"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("runtime.toml:1:12: error: key `fallback`"),
        "{err}"
    );
    assert!(
        err.contains("runtime.toml:3:1: error: key `cache-control`: bad pattern"),
        "{err}"
    );
}

/// The fallback and the not-found page are files like any other: their
/// precompressed sidecars are sent to a client that accepts them, with
/// the page's own status, type and cache rule.
#[test]
fn the_pages_have_their_sidecars_too() {
    let runtime = format!(
        "precompressed = [\"gzip\"]\nfallback = \"index.html\"\nnot-found = \"404.html\"\n{CACHE_RULES}"
    );
    let s = serve_with_runtime(&runtime);
    let site = s._dir.path().join("site");
    std::fs::write(site.join("index.html.gz"), "GZ-APP").unwrap();
    std::fs::write(site.join("404.html.gz"), "GZ-404").unwrap();
    let gzip = "Accept-Encoding: gzip\r\n";
    let (status, head, body) = request(&s.addr, "GET", "/some/app/route", gzip);
    assert_eq!((status, &body[..]), (200, &b"GZ-APP"[..]));
    assert_eq!(header(&head, "Content-Encoding"), Some("gzip"));
    assert_eq!(header(&head, "Vary"), Some("Accept-Encoding"));
    assert_eq!(header(&head, "Cache-Control"), Some("no-cache"));
    assert_eq!(
        header(&head, "Content-Type"),
        Some("text/html; charset=utf-8")
    );
    for target in ["/.env", "/link-out"] {
        let (status, head, body) = request(&s.addr, "GET", target, gzip);
        assert_eq!((status, &body[..]), (404, &b"GZ-404"[..]), "{target}");
        assert_eq!(header(&head, "Content-Encoding"), Some("gzip"), "{target}");
        assert_eq!(header(&head, "Cache-Control"), None, "{target}");
    }
    // Without Accept-Encoding: the pages themselves.
    let (status, head, body) = get(&s.addr, "/some/app/route");
    assert_eq!((status, &body[..]), (200, &b"<h1>app</h1>"[..]));
    assert_eq!(header(&head, "Content-Encoding"), None);
    let (status, _, body) = get(&s.addr, "/.env");
    assert_eq!((status, &body[..]), (404, &b"<h1>not here</h1>"[..]));
}

/// A program's own `Cache-Control` on `dir_handler`'s response wins over
/// the runtime's.
#[test]
fn a_handler_set_cache_control_wins() {
    use nikaia_std::http::{dir_handler, Server};
    use nikaia_std::rt::Runtime;
    let tmp = pages_site();
    let file = tmp.path().join("runtime.toml");
    std::fs::write(&file, CACHE_RULES).unwrap();
    let mut rt = Runtime::load(&file).unwrap();
    rt.workers = 1;
    rt.listen = vec![std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into()];
    rt.access_log = nikaia_std::rt::LogTarget::Off;
    let root = nikaia_std::fs::Root::dir(tmp.path().join("site")).unwrap();
    let plain = dir_handler(root.clone(), false, false);
    let own = dir_handler(root, false, false);
    let running = Server::with_runtime(rt)
        .route("/own/*path", move |req| {
            own(req).header("Cache-Control", "private, max-age=5")
        })
        .route("/*path", plain)
        .start()
        .unwrap();
    let addr = running.local_addr().to_string();
    let (status, head, body) = get(&addr, "/own/assets/app-3fa9c1.js");
    assert_eq!((status, &body[..]), (200, &b"let app = 1;"[..]));
    let values: Vec<&str> = head
        .lines()
        .filter(|l| l.to_ascii_lowercase().starts_with("cache-control:"))
        .collect();
    assert_eq!(values, ["Cache-Control: private, max-age=5"]);
    let (_, head, _) = get(&addr, "/assets/app-3fa9c1.js");
    assert_eq!(
        header(&head, "Cache-Control"),
        Some("public, max-age=31536000, immutable")
    );
    drop(running);
}

/// `index` is a list, tried in order; the first that is a file answers,
/// and past the last the directory is listed (`--list`) or missing.
#[test]
fn index_names_are_tried_in_order() {
    let tmp = pages_site();
    let root = tmp.path().join("site");
    for (dir, files) in [
        ("both", &["index.htm", "home.html"][..]),
        ("home", &["home.html"]),
        ("none", &["other.txt"]),
        ("htm-is-a-dir", &["home.html"]),
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        for f in files {
            std::fs::write(root.join(dir).join(f), format!("{dir}/{f}")).unwrap();
        }
    }
    std::fs::create_dir_all(root.join("htm-is-a-dir/index.htm")).unwrap();
    let file = tmp.path().join("runtime.toml");
    std::fs::write(
        &file,
        "index = [\"index.htm\", \"home.html\"]\n[[deny]]\nmatch = \"secret/home.html\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("secret/home.html"), "SECRET").unwrap();
    let args = ["--listen", "127.0.0.1:0", "--list", "--runtime"].map(std::ffi::OsStr::new);
    let s = start_serve(tmp, &root, args.into_iter().chain([file.as_os_str()]));
    assert_eq!(get(&s.addr, "/both/").2, b"both/index.htm");
    assert_eq!(get(&s.addr, "/home/").2, b"home/home.html");
    assert_eq!(get(&s.addr, "/htm-is-a-dir/").2, b"htm-is-a-dir/home.html");
    // Not in the list: index.html is a name like any other here.
    let (status, _, body) = get(&s.addr, "/docs/");
    assert_eq!(status, 200);
    assert!(
        String::from_utf8_lossy(&body).contains("index.html"),
        "a listing"
    );
    let (status, head, body) = get(&s.addr, "/none/");
    assert_eq!(status, 200);
    assert!(header(&head, "Content-Type")
        .unwrap()
        .starts_with("text/html"));
    assert!(
        String::from_utf8_lossy(&body).contains("other.txt"),
        "a listing"
    );
    assert_eq!(get(&s.addr, "/home").0, 301);
    // A rule on an index name covers the directory asked for.
    let (status, _, body) = get(&s.addr, "/secret/");
    assert_eq!(status, 404);
    assert!(!String::from_utf8_lossy(&body).contains("SECRET"));
}

#[test]
fn a_bad_index_list_is_refused_at_its_element() {
    let tmp = pages_site();
    let file = tmp.path().join("runtime.toml");
    std::fs::write(
        &file,
        "index = [\"index.html\", \"a/b.html\", \"index.html\"]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("check")
        .arg(&file)
        .output()
        .unwrap();
    let err =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("runtime.toml:1:24: error: key `index`"),
        "{err}"
    );
    assert!(err.contains("\"a/b.html\" is not one file name"), "{err}");
    assert!(
        err.contains("runtime.toml:1:36: error: key `index`"),
        "{err}"
    );
    assert!(err.contains("named twice"), "{err}");
}

/// `list = true` in the runtime file lists as `--list` does.
#[test]
fn the_runtime_file_turns_listings_on() {
    let s = serve_with_runtime("list = true\n");
    let site = s._dir.path().join("site");
    std::fs::create_dir_all(site.join("plain")).unwrap();
    std::fs::write(site.join("plain/a.txt"), "a").unwrap();
    std::fs::write(site.join("plain/.hidden"), "h").unwrap();
    let (status, head, body) = get(&s.addr, "/plain/?format=json");
    assert_eq!(status, 200);
    assert_eq!(header(&head, "Content-Type"), Some("application/json"));
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("\"a.txt\""), "{body}");
    assert!(!body.contains(".hidden"), "{body}");
    // No index names at all: every directory is listed, and asked for
    // without its slash, redirected first.
    let none = serve_with_runtime("list = true\nindex = []\n");
    let (status, _, body) = get(&none.addr, "/docs/?format=json");
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("\"index.html\""));
    assert_eq!(get(&none.addr, "/docs").0, 301);
    let off = serve_with_runtime("list = false\n");
    std::fs::create_dir_all(off._dir.path().join("site/plain")).unwrap();
    assert_eq!(get(&off.addr, "/plain/").0, 404);
}
