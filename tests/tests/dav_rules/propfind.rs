//! PROPFIND: only finite depths, nothing a listing would hide, the ETag a
//! GET sends, and a directory of 3 000 files answered whole and
//! well-formed.

use super::*;

#[test]
fn infinite_depth_is_403_with_its_precondition() {
    let d = Drive::new("pf-depth", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    for depth in [Some("infinity"), Some("Infinity"), None] {
        let mut q = req("PROPFIND", "/drive/");
        if let Some(depth) = depth {
            q = q.h("Depth", depth);
        }
        let reply = q.send(addr);
        assert_eq!(reply.status, 403, "Depth {depth:?}");
        assert!(
            reply.text().contains("propfind-finite-depth"),
            "Depth {depth:?}: {}",
            reply.text()
        );
    }
    let reply = req("PROPFIND", "/drive/").h("Depth", "2").send(addr);
    assert_eq!(reply.status, 400);
}

#[test]
fn a_depth_one_listing_hides_what_a_listing_hides() {
    let d = Drive::new("pf-hide", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let mut problems = Vec::new();
    for (path, allprop) in [
        ("/drive/", false),
        ("/drive/coll/", false),
        ("/drive/coll/", true),
    ] {
        let mut q = req("PROPFIND", path).h("Depth", "1");
        if allprop {
            q = q.body(
                "<?xml version=\"1.0\"?><D:propfind xmlns:D=\"DAV:\"><D:allprop/></D:propfind>",
            );
        }
        let reply = q.send(addr);
        assert_eq!(reply.status, 207, "{path}: {}", reply.text());
        let told = hrefs(&reply.body);
        eprintln!("PROPFIND {path}: {told:?}");
        for secret in [
            ".env",
            ".git",
            ".hid",
            "secret",
            "forbidden",
            "x.key",
            "y.forbid",
            "bobs",
        ] {
            if told.iter().any(|h| h.contains(secret)) {
                problems.push(format!("PROPFIND {path} names {secret}: {told:?}"));
            }
        }
        if leaked(&reply.body).iter().any(|s| *s != "htpasswd") {
            problems.push(format!("PROPFIND {path} shows {:?}", leaked(&reply.body)));
        }
        assert!(told
            .iter()
            .any(|h| h.ends_with("keep.txt") || h.ends_with("a.txt")));
    }
    // And by name: each 404 (or its deny status, or 401), never a 207.
    for (path, want) in [
        ("/drive/.env", 404),
        ("/drive/.git/", 404),
        ("/drive/secret/", 404),
        ("/drive/x.key", 404),
        ("/drive/forbidden/", 403),
        ("/drive/coll/bobs/", 401),
        ("/other/", 401),
    ] {
        let reply = req("PROPFIND", path).h("Depth", "1").send(addr);
        if reply.status != want {
            problems.push(format!("PROPFIND {path}: {}, want {want}", reply.status));
        }
        if !leaked(&reply.body).is_empty() || !hrefs(&reply.body).is_empty() {
            problems.push(format!("PROPFIND {path} tells: {}", reply.text()));
        }
    }
    // Without credentials: the drive asks for them.
    let reply = req("PROPFIND", "/drive/")
        .h("Depth", "1")
        .auth(None)
        .send(addr);
    if reply.status != 401 {
        problems.push(format!(
            "PROPFIND /drive/ without credentials: {}",
            reply.status
        ));
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The text of the first `getetag` in a multistatus body, unescaped.
fn getetag(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let at = text.find("getetag>")? + "getetag>".len();
    let end = text[at..].find('<')?;
    Some(
        text[at..at + end]
            .replace("&quot;", "\"")
            .replace("&#34;", "\""),
    )
}

#[test]
fn getetag_is_the_etag_a_get_sends() {
    let d = Drive::new("pf-etag", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    for path in ["/drive/a.txt", "/drive/dir/sub/two.txt", "/public/p.txt"] {
        let get = req("GET", path).send(addr);
        assert_eq!(get.status, 200, "{path}");
        let etag = get.header("etag").expect("an ETag").to_owned();
        let body = "<?xml version=\"1.0\"?><D:propfind xmlns:D=\"DAV:\"><D:prop><D:getetag/>\
                    <D:getcontentlength/></D:prop></D:propfind>";
        let reply = req("PROPFIND", path).h("Depth", "0").body(body).send(addr);
        assert_eq!(reply.status, 207, "{path}: {}", reply.text());
        assert_eq!(
            getetag(&reply.body).as_deref(),
            Some(etag.as_str()),
            "{path}: {}",
            reply.text()
        );
        let allprop = req("PROPFIND", path).h("Depth", "0").send(addr);
        assert_eq!(
            getetag(&allprop.body).as_deref(),
            Some(etag.as_str()),
            "{path} allprop"
        );
    }
}

#[test]
fn a_depth_one_of_3000_files_is_whole_and_well_formed() {
    let d = Drive::new("pf-many", RULES);
    let big = d.drive().join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..3000 {
        // Names that need escaping, some of them.
        let name = match i % 3 {
            0 => format!("f{i:05}.txt"),
            1 => format!("f {i:05} & <x>.txt"),
            _ => format!("f{i:05}-\u{e9}%.txt"),
        };
        std::fs::write(big.join(name), i.to_string()).unwrap();
    }
    let running = d.serve();
    let addr = running.local_addr();
    let reply = req("PROPFIND", "/drive/big/").h("Depth", "1").send(addr);
    assert_eq!(reply.status, 207);
    let file = d.path().join("big.xml");
    std::fs::write(&file, &reply.body).unwrap();
    let script = r#"
import sys, urllib.parse, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
rs = doc.getElementsByTagNameNS("DAV:", "response")
hrefs = [urllib.parse.unquote(r.getElementsByTagNameNS("DAV:", "href")[0].firstChild.data) for r in rs]
print(len(rs), len(set(hrefs)))
for h in sorted(hrefs)[:2]: print(h)
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "not well-formed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = stdout.lines().next().unwrap();
    assert_eq!(first, "3001 3001", "{stdout}");
    let told: BTreeSet<String> = hrefs(&reply.body).into_iter().collect();
    for name in ["f00000.txt", "f 00001 & <x>.txt", "f02999-\u{e9}%.txt"] {
        let href = format!("/drive/big/{name}");
        assert!(told.contains(&href), "{href} missing");
    }
}

/// A link out of the root: PROPFIND neither lists through it nor tells
/// what it points at (its size, its ETag).
#[test]
fn propfind_tells_nothing_of_what_a_link_out_points_at() {
    let d = Drive::new("pf-links", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let mut problems = Vec::new();
    for (path, depth) in [
        ("/drive/out-dir/", "1"),
        ("/drive/out-dir/keep.txt", "0"),
        ("/drive/out-link", "0"),
        ("/drive/", "1"),
    ] {
        let reply = req("PROPFIND", path).h("Depth", depth).send(addr);
        let text = reply.text();
        eprintln!("PROPFIND {path}: {} {:?}", reply.status, hrefs(&reply.body));
        // outside/keep.txt is 18 bytes; outside/ holds victim and sub.
        let told = hrefs(&reply.body);
        if told
            .iter()
            .any(|h| h.contains("victim") || h.ends_with("/sub/"))
        {
            problems.push(format!("PROPFIND {path} lists outside: {told:?}"));
        }
        if text.contains("<D:getcontentlength>18<") {
            problems.push(format!(
                "PROPFIND {path} tells outside/keep.txt's size: {text}"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}
