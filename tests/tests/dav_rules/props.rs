//! Dead properties: set by PROPPATCH, kept across a PUT that replaces the
//! file, copied by COPY, kept by MOVE; a value past the bound is 507 and
//! a live property is protected, each with nothing changed.

use super::*;

pub(super) fn set(props: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\
         <D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:z\"><D:set><D:prop>{props}\
         </D:prop></D:set></D:propertyupdate>"
    )
}

/// The value of `Z:name` a PROPFIND of `path` sends (its text between the
/// tags), if one came with 200.
pub(super) fn value(addr: SocketAddr, path: &str, name: &str) -> Option<String> {
    let body = format!(
        "<?xml version=\"1.0\"?><D:propfind xmlns:D=\"DAV:\" xmlns:Z=\"urn:z\">\
         <D:prop><Z:{name}/></D:prop></D:propfind>"
    );
    let reply = req("PROPFIND", path).h("Depth", "0").body(body).send(addr);
    assert_eq!(reply.status, 207, "PROPFIND {path}: {}", reply.text());
    let text = reply.text();
    // The propstat that holds the property, and its status.
    for propstat in text.split("propstat>").filter(|p| p.contains(name)) {
        if !propstat.contains(" 200 ") {
            continue;
        }
        let at = propstat.find(name)?;
        let rest = &propstat[at..];
        let open = rest.find('>')?;
        if rest[..open].ends_with('/') {
            return Some(String::new());
        }
        let close = rest[open..].find('<')?;
        return Some(rest[open + 1..open + close].to_owned());
    }
    None
}

#[test]
fn a_dead_property_survives_put_copy_and_move() {
    let d = Drive::new("dead", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let drive = d.drive();
    let reply = req("PROPPATCH", "/drive/a.txt")
        .body(set("<Z:color>red</Z:color>"))
        .send(addr);
    assert_eq!(reply.status, 207, "{}", reply.text());
    assert!(reply.text().contains(" 200 "), "{}", reply.text());
    assert!(dead(&drive.join("a.txt")).is_some(), "no user.nikaia.dav");
    assert_eq!(value(addr, "/drive/a.txt", "color").as_deref(), Some("red"));

    // A PUT that replaces the file carries them over.
    let put = req("PUT", "/drive/a.txt").body("replaced bytes").send(addr);
    assert_eq!(put.status, 204);
    assert_eq!(
        std::fs::read(drive.join("a.txt")).unwrap(),
        b"replaced bytes"
    );
    assert_eq!(
        value(addr, "/drive/a.txt", "color").as_deref(),
        Some("red"),
        "after a PUT"
    );

    // COPY copies them, onto a new name and onto one that exists.
    for dest in ["/drive/a2.txt", "/drive/b.txt"] {
        let copy = req("COPY", "/drive/a.txt")
            .h("Destination", dest)
            .send(addr);
        assert!([201, 204].contains(&copy.status), "{dest}: {}", copy.status);
        assert_eq!(
            value(addr, dest, "color").as_deref(),
            Some("red"),
            "after a COPY to {dest}"
        );
    }
    // MOVE keeps them.
    let mv = req("MOVE", "/drive/a2.txt")
        .h("Destination", "/drive/dir/a3.txt")
        .send(addr);
    assert_eq!(mv.status, 201);
    assert_eq!(
        value(addr, "/drive/dir/a3.txt", "color").as_deref(),
        Some("red"),
        "after a MOVE"
    );
    // A collection's: copied and moved with it.
    let reply = req("PROPPATCH", "/drive/dir/")
        .body(set("<Z:shape>round</Z:shape>"))
        .send(addr);
    assert_eq!(reply.status, 207);
    let copy = req("COPY", "/drive/dir/")
        .h("Destination", "/drive/dir2/")
        .send(addr);
    assert_eq!(copy.status, 201);
    assert_eq!(
        value(addr, "/drive/dir2/", "shape").as_deref(),
        Some("round")
    );
    assert_eq!(
        value(addr, "/drive/dir2/a3.txt", "color").as_deref(),
        Some("red")
    );
    let mv = req("MOVE", "/drive/dir2/")
        .h("Destination", "/drive/dir3/")
        .send(addr);
    assert_eq!(mv.status, 201);
    assert_eq!(
        value(addr, "/drive/dir3/", "shape").as_deref(),
        Some("round")
    );
}

#[test]
fn a_value_past_the_bound_is_507_and_changes_nothing() {
    let d = Drive::new("dead-507", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let reply = req("PROPPATCH", "/drive/a.txt")
        .body(set("<Z:color>red</Z:color>"))
        .send(addr);
    assert_eq!(reply.status, 207);
    let before = snapshot(d.path());
    let big = "v".repeat(20 << 10);
    let reply = req("PROPPATCH", "/drive/a.txt")
        .body(set(&format!("<Z:small>s</Z:small><Z:big>{big}</Z:big>")))
        .send(addr);
    let text = reply.text();
    assert_eq!(reply.status, 207, "{text}");
    assert!(text.contains(" 507 "), "no 507 in {text}");
    assert!(!text.contains(" 200 "), "a part was done: {text}");
    assert_eq!(changes(&before, &snapshot(d.path())), Vec::<String>::new());
    assert_eq!(value(addr, "/drive/a.txt", "small"), None);
    assert_eq!(value(addr, "/drive/a.txt", "color").as_deref(), Some("red"));
}

#[test]
fn a_live_property_is_protected_and_the_rest_fail_with_it() {
    let d = Drive::new("dead-live", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let before = snapshot(d.path());
    let mut unnamed = Vec::new();
    for live in [
        "getetag",
        "getcontentlength",
        "resourcetype",
        "getlastmodified",
    ] {
        let reply = req("PROPPATCH", "/drive/a.txt")
            .body(set(&format!(
                "<Z:color>red</Z:color><D:{live}>x</D:{live}>"
            )))
            .send(addr);
        let text = reply.text();
        assert_eq!(reply.status, 207, "{live}: {text}");
        assert!(text.contains(" 403 "), "{live}: no 403 in {text}");
        assert!(text.contains(" 424 "), "{live}: no 424 in {text}");
        assert!(!text.contains(" 200 "), "{live}: a part was done: {text}");
        assert_eq!(
            changes(&before, &snapshot(d.path())),
            Vec::<String>::new(),
            "{live}"
        );
        // RFC 4918 §9.2 and spec/site.md: the precondition is named.
        if !text.contains("cannot-modify-protected-property") {
            unnamed.push(live);
        }
    }
    // A remove of a live property too.
    let reply = req("PROPPATCH", "/drive/a.txt")
        .body(
            "<?xml version=\"1.0\"?><D:propertyupdate xmlns:D=\"DAV:\"><D:remove><D:prop>\
             <D:getetag/></D:prop></D:remove></D:propertyupdate>",
        )
        .send(addr);
    assert_eq!(reply.status, 207);
    assert!(reply.text().contains(" 403 "), "{}", reply.text());
    assert_eq!(changes(&before, &snapshot(d.path())), Vec::<String>::new());
    assert!(
        unnamed.is_empty(),
        "no cannot-modify-protected-property for {unnamed:?}"
    );
}

#[test]
fn proppatch_needs_the_rules_a_write_needs() {
    let d = Drive::new("dead-rules", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let mut before = snapshot(d.path());
    let body = set("<Z:color>red</Z:color>");
    let mut problems = Vec::new();
    for (path, auth, label) in [
        ("/drive/a.txt", None, "no credentials"),
        ("/drive/a.txt", Some(BOB), "bob, not a writer"),
        ("/public/p.txt", Some(ALICE), "no write rule"),
        ("/drive/secret/s.txt", Some(ALICE), "denied"),
        ("/drive/.env", Some(ALICE), "hidden"),
        ("/other/o.txt", Some(ALICE), "another auth rule"),
        ("/drive/rt-hard", Some(ALICE), "the runtime file"),
        ("/drive/out-link", Some(ALICE), "a link out"),
        ("/drive/out-dir/keep.txt", Some(ALICE), "through a link out"),
    ] {
        let reply = req("PROPPATCH", path).auth(auth).body(&body).send(addr);
        eprintln!("PROPPATCH {path} ({label}): {}", reply.status);
        let line = format!(
            "PROPPATCH {path} ({label}): {} {}",
            reply.status,
            reply.text()
        );
        // A 207 whose propstat is not 200 did nothing.
        if (200..300).contains(&reply.status) && (reply.status != 207 || line.contains(" 200 ")) {
            problems.push(format!("{line}: done"));
        }
        let after = snapshot(d.path());
        let changed = changes(&before, &after);
        if !changed.is_empty() {
            problems.push(format!("{line}: changed {changed:?}"));
        }
        before = after;
        if !leaked(&reply.body).is_empty() {
            problems.push(format!("{line}: shows {:?}", leaked(&reply.body)));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}
