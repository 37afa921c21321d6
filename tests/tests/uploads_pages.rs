//! What `nikaia serve` answers about writes beside the writes themselves
//! (`spec/site.md`, "Writes"): a listing is the server's own page, served
//! with a policy of its own and never the sandbox an uploaded file gets;
//! its upload control reaches the writers of a `writes-only` rule, who
//! sign in from the listing; and every 405 and `OPTIONS` answer lists the
//! same methods for a name, over HTTP/1.1 and HTTP/2.

use nikaia_tests::curl::{curl, Seen};
use nikaia_tests::site::base64_bytes;
use nikaia_tests::uploads::{basic, get, put, url, Site, ALICE, BOB, OPEN, RULES};
use nikaia_tests::Client;

const CONTROL: &str = "<form id=\"upload\"";
const SIGN_IN: &str = "<a href=\"?sign-in\">";

/// The text of each `<tag>…</tag>` element of `page`.
fn elements<'p>(page: &'p str, tag: &str) -> Vec<&'p str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(at) = rest.find(&open) {
        let from = &rest[at + open.len()..];
        let end = from.find(&close).expect("the element closes");
        out.push(&from[..end]);
        rest = &from[end..];
    }
    out
}

/// The listing's policy: exactly one, no sandbox, nothing inline beyond
/// the hashes of the page's own script and style, which it names.
fn assert_listing_policy(seen: &Seen, page: Option<&str>) {
    assert_policy(&seen.all("content-security-policy"), page);
}

fn assert_policy(policies: &[&str], page: Option<&str>) {
    assert_eq!(policies.len(), 1, "{policies:?}");
    let policy = policies[0];
    assert!(!policy.contains("sandbox"), "{policy}");
    assert!(policy.starts_with("default-src 'none';"), "{policy}");
    assert!(!policy.contains("unsafe"), "{policy}");
    let directive = |name: &str| {
        policy
            .split(';')
            .map(str::trim)
            .find_map(|d| d.strip_prefix(name))
            .unwrap_or_else(|| panic!("{name} in {policy}"))
            .trim()
            .to_owned()
    };
    assert_eq!(directive("connect-src"), "'self'");
    assert_eq!(directive("form-action"), "'self'");
    let Some(page) = page else { return };
    for (tag, source) in [("script", "script-src"), ("style", "style-src")] {
        let allowed = directive(source);
        for text in elements(page, tag) {
            let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, text.as_bytes());
            let hash = format!("'sha256-{}'", base64_bytes(digest.as_ref()));
            assert_eq!(allowed, hash, "the {tag} of the page is the one allowed");
        }
    }
    // No inline event handler or style attribute the hashes do not cover.
    assert!(!page.contains(" onsubmit=") && !page.contains(" onclick="));
    assert!(!page.contains(" style="));
}

fn text(seen: &Seen) -> String {
    String::from_utf8_lossy(&seen.body).into_owned()
}

#[test]
fn a_listing_has_a_policy_of_its_own_and_an_uploaded_page_keeps_the_sandbox() {
    let site = Site::new();
    std::fs::create_dir(site.root.join("drop/q\"<b>'&")).unwrap();
    let running = site.serve(RULES);
    // The README's rule covers the listed directory itself: the writer's
    // listing is the server's page, its control allowed by hash.
    let listing = get(&running, "/drop/", &["-u", ALICE]);
    assert_eq!(listing.status, 200);
    let page = text(&listing);
    assert!(page.contains(CONTROL), "{page}");
    assert_listing_policy(&listing, Some(&page));
    assert_eq!(listing.header("x-content-type-options"), Some("nosniff"));
    // Its 304 and its HEAD say the same (a 304's headers update the
    // browser's stored ones).
    let etag = listing.header("etag").unwrap().to_owned();
    let again = get(
        &running,
        "/drop/",
        &["-u", ALICE, "-H", &format!("If-None-Match: {etag}")],
    );
    assert_eq!(again.status, 304);
    assert_listing_policy(&again, None);
    let mut c = Client::connect(([127, 0, 0, 1], running.local_addr().port()).into());
    c.send(format!(
        "HEAD /drop/ HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {}\r\n\r\n",
        basic(ALICE)
    ));
    let head = c.read_reply(true).unwrap();
    assert_eq!(head.status, 200);
    let policies: Vec<&str> = (head.headers.iter())
        .filter(|(n, _)| n.eq_ignore_ascii_case("content-security-policy"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert_policy(&policies, None);
    // A directory whose name has quotes and markup: escaped in the page,
    // the script and style unchanged, so the same hashes hold.
    let odd = get(&running, "/drop/q%22%3Cb%3E'&/", &["-u", ALICE]);
    assert_eq!(odd.status, 200);
    let odd_page = text(&odd);
    assert!(
        odd_page.contains("<title>Index of /drop/q&quot;&lt;b&gt;&#39;&amp;/</title>"),
        "{odd_page}"
    );
    assert!(!odd_page.contains("<b>"));
    assert!(odd_page.contains(CONTROL));
    assert_listing_policy(&odd, Some(&odd_page));
    // A listing no write rule covers has it too.
    let public = get(&running, "/public/", &[]);
    assert_listing_policy(&public, Some(&text(&public)));
    // An uploaded index.html served as the directory's page is a file
    // someone uploaded: sandboxed, whoever reads it.
    let evil = b"<script>fetch('/drop/').then(r => r.text()).then(alert)</script>";
    assert_eq!(
        put(&running, "/drop/index.html", evil, &["-u", ALICE]).status,
        201
    );
    for as_whom in [ALICE, BOB] {
        let served = get(&running, "/drop/", &["-u", as_whom]);
        assert_eq!(served.status, 200);
        assert_eq!(served.body, evil);
        assert_eq!(served.all("content-security-policy"), ["sandbox"]);
        assert_eq!(served.header("x-content-type-options"), Some("nosniff"));
    }
}

#[test]
fn a_writes_only_rule_gives_its_writers_the_control_and_a_sign_in() {
    let site = Site::new();
    std::fs::create_dir(site.root.join("open")).unwrap();
    std::fs::write(site.root.join("open/a.txt"), b"open").unwrap();
    let running = site.serve(&format!("{RULES}{OPEN}"));
    // A reader without credentials: the plain listing, with a way to sign in.
    let plain = get(&running, "/open/", &[]);
    assert_eq!(plain.status, 200);
    let page = text(&plain);
    assert!(!page.contains(CONTROL) && page.contains(SIGN_IN), "{page}");
    assert_listing_policy(&plain, Some(&page));
    // A writer's credentials on the read are checked: the control.
    let alice = get(&running, "/open/", &["-u", ALICE]);
    assert_eq!(alice.status, 200);
    let page = text(&alice);
    assert!(page.contains(CONTROL) && !page.contains(SIGN_IN), "{page}");
    assert_eq!(alice.header("cache-control"), Some("private"));
    assert_ne!(alice.header("etag"), plain.header("etag"));
    // Twice: the second from the table of verified credentials.
    assert!(text(&get(&running, "/open/", &["-u", ALICE])).contains(CONTROL));
    // Wrong credentials, or a user who is not a writer: the plain listing,
    // never a 401.
    for wrong in ["alice:wrong", "nobody:x", BOB] {
        let seen = get(&running, "/open/", &["-u", wrong]);
        assert_eq!(seen.status, 200, "{wrong}");
        let page = text(&seen);
        assert!(!page.contains(CONTROL) && page.contains(SIGN_IN), "{wrong}");
        assert_eq!(seen.header("www-authenticate"), None);
    }
    // A file of the folder is read by anyone, whatever credentials come.
    assert_eq!(
        get(&running, "/open/a.txt", &["-u", "alice:wrong"]).body,
        b"open"
    );
    // Signing in: 401 until a writer's credentials verify, then back to
    // the listing.
    for wrong in [None, Some("alice:wrong"), Some(BOB)] {
        let args: Vec<&str> = wrong.iter().flat_map(|w| ["-u", w]).collect();
        let seen = get(&running, "/open/?sign-in", &args);
        assert_eq!(seen.status, 401, "{wrong:?}");
        assert_eq!(
            seen.header("www-authenticate"),
            Some("Basic realm=\"restricted\", charset=\"UTF-8\"")
        );
    }
    let signed = get(&running, "/open/?sign-in", &["-u", ALICE]);
    assert_eq!(signed.status, 303);
    assert_eq!(signed.header("location"), Some("./"));
    // Where the reader writes already (the drop folder's rule protects
    // reads too), or where nobody may sign in to write, back at once.
    assert_eq!(get(&running, "/drop/?sign-in", &["-u", ALICE]).status, 303);
    assert_eq!(get(&running, "/public/?sign-in", &[]).status, 303);
    // Bob reads the drop folder but writes nowhere: he may sign in as
    // someone who does.
    let bob = text(&get(&running, "/drop/", &["-u", BOB]));
    assert!(!bob.contains(CONTROL) && bob.contains(SIGN_IN), "{bob}");
    // Anyone may create in the inbox: the control, no sign-in.
    let inbox = text(&get(&running, "/inbox/", &[]));
    assert!(inbox.contains(CONTROL) && !inbox.contains(SIGN_IN));
    assert!(!text(&get(&running, "/public/", &[])).contains(SIGN_IN));
}

/// The `Allow` of an answer to `method` on `path`, and its status, over
/// HTTP/1.1 and over HTTP/2 (h2c): both must agree.
fn allow(running: &nikaia_std::http::Running, method: &str, path: &str) -> (u16, String) {
    let mut seen = Vec::new();
    for version in ["--http1.1", "--http2-prior-knowledge"] {
        let mut args = vec![version, "-X", method];
        if method != "OPTIONS" && method != "DELETE" {
            args.extend(["--data-binary", "body"]);
        }
        let s = curl(&url(running, path), &args);
        seen.push((s.status, s.header("allow").unwrap_or("").to_owned()));
    }
    assert_eq!(seen[0], seen[1], "{method} {path}: HTTP/1.1 and HTTP/2");
    seen.remove(0)
}

#[test]
fn every_405_and_options_lists_the_methods_the_name_allows() {
    let site = Site::new();
    let everywhere = "[[write]]\nmatch = \"**\"\nanyone = true\nplain-http = true\n";
    let running = site.serve(RULES);
    // The same rules, and anyone may create any name the others leave.
    let all = site.serve(&format!("{RULES}{everywhere}"));
    let both = "GET, HEAD, OPTIONS, PUT, DELETE";
    let puts = "GET, HEAD, OPTIONS, PUT";
    let reads = "GET, HEAD, OPTIONS";
    for (server, path, allowed) in [
        (&running, "/drop/x.txt", both),
        (&running, "/drop/", both),
        (&running, "/inbox/n.txt", puts),
        (&running, "/public/a.txt", reads),
        (&running, "/", reads),
        (&all, "/public/a.txt", puts),
        // The served directory itself is never written.
        (&all, "/", reads),
    ] {
        let (status, allow_options) = allow(server, "OPTIONS", path);
        assert_eq!(
            (status, allow_options.as_str()),
            (204, allowed),
            "OPTIONS {path}"
        );
        for method in ["POST", "PATCH", "PROPFIND", "PUT", "DELETE"] {
            if allowed.contains(method) {
                continue;
            }
            let (status, allow_405) = allow(server, method, path);
            assert_eq!(
                (status, allow_405.as_str()),
                (405, allowed),
                "{method} {path}"
            );
        }
    }
    // The tus endpoint's paths say what each takes, in both answers too
    // (a method no path of it takes is 405 before the protocol version).
    std::fs::create_dir(site.tmp.path().join("partial")).unwrap();
    let tus = site.serve(&format!("{RULES}\n[resumable]\ndir = \"partial\"\n"));
    let upload = "/.tus/0123456789abcdef0123456789abcdef";
    for (path, allowed) in [
        ("/.tus/", "OPTIONS, POST"),
        (upload, "DELETE, HEAD, OPTIONS, PATCH"),
    ] {
        let (status, allow_options) = allow(&tus, "OPTIONS", path);
        assert_eq!(
            (status, allow_options.as_str()),
            (204, allowed),
            "OPTIONS {path}"
        );
        for method in ["GET", "PUT", "PROPFIND", "POST", "PATCH", "DELETE"] {
            if allowed.contains(method) {
                continue;
            }
            let (status, allow_405) = allow(&tus, method, path);
            assert_eq!(
                (status, allow_405.as_str()),
                (405, allowed),
                "{method} {path}"
            );
        }
    }
}
