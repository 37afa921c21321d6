//! COPY sources alice may not read, alone and as members of a collection
//! she copies: each refused or left out, nothing made of it, nothing of it
//! revealed.

use super::*;

#[test]
fn a_source_the_user_may_not_read_is_refused_and_nothing_is_made() {
    let d = Drive::new("sources", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let mut problems = Vec::new();
    // (source, the status a GET of it gets, as the COPY must)
    let rows = [
        ("/drive/secret/s.txt", "deny 404"),
        ("/drive/secret/", "a denied collection (404)"),
        ("/drive/x.key", "deny 404 by suffix"),
        ("/drive/forbidden/f.txt", "deny 403"),
        ("/drive/forbidden/", "a denied collection (403)"),
        ("/other/o.txt", "another auth rule alice is not in"),
        ("/other/", "another auth rule's collection"),
        (
            "/drive/coll/bobs/b.txt",
            "another auth rule inside the drive",
        ),
        ("/drive/.env", "a hidden dot-name"),
        ("/drive/.git/config", "inside a hidden dot-directory"),
        ("/drive/.git/", "a hidden dot-directory"),
        ("/drive/rt-hard", "the runtime file"),
        ("/drive/pw-hard", "the users file"),
        ("/drive/nothere.txt", "nothing"),
    ];
    for (method, dest) in [("COPY", "/drive/got"), ("MOVE", "/drive/got")] {
        for (source, label) in rows {
            let get = req("GET", source).send(addr);
            let before = snapshot(d.path());
            let reply = req(method, source).h("Destination", dest).send(addr);
            let after = snapshot(d.path());
            let line = format!(
                "{method} {source} ({label}): {} (a GET: {})",
                reply.status, get.status
            );
            eprintln!("{line}");
            if (200..300).contains(&reply.status) {
                problems.push(format!("{line}: done"));
            }
            // A name a GET does not show must not be told apart from
            // nothing by its COPY.
            if [401, 403, 404].contains(&get.status)
                && reply.status != get.status
                && method == "COPY"
            {
                problems.push(format!(
                    "{line}: a GET says {}, the COPY {}",
                    get.status, reply.status
                ));
            }
            let changed = changes(&before, &after);
            if !changed.is_empty() {
                problems.push(format!("{line}: changed {changed:?}"));
            }
            let shown = leaked(&reply.body);
            if !shown.is_empty() {
                problems.push(format!("{line}: its body shows {shown:?}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// `drive/coll/` holds `keep.txt`, `deep/keep2.txt`, and members alice
/// may not read: `.env` and `deep/.hid` (hidden), `x.key` (denied, 404),
/// `y.forbid` (denied, 403), `bobs/b.txt` (bob's users file), `link-out`
/// (a link out of the root).
#[test]
fn a_collection_copy_leaves_out_the_members_the_user_may_not_read_and_reveals_none() {
    let d = Drive::new("coll-copy", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let drive = d.drive();
    let before = snapshot(d.path());
    let listing = req("PROPFIND", "/drive/coll/").h("Depth", "1").send(addr);
    eprintln!(
        "PROPFIND of drive/coll/: {} {:?}",
        listing.status,
        hrefs(&listing.body)
    );
    let reply = req("COPY", "/drive/coll/")
        .h("Destination", "/drive/copied/")
        .send(addr);
    let body = reply.text();
    eprintln!("COPY drive/coll/: {}\n{body}", reply.status);
    let mut problems = Vec::new();
    // What was copied: the readable members, no more.
    let copied = snapshot(&drive.join("copied"));
    let names: BTreeSet<String> = copied.keys().map(|k| k.display().to_string()).collect();
    let want: BTreeSet<String> = ["keep.txt", "deep", "deep/keep2.txt"]
        .into_iter()
        .map(String::from)
        .collect();
    if names != want {
        problems.push(format!("copied {names:?}, want {want:?}"));
    }
    if std::fs::read(drive.join("copied/keep.txt")).ok().as_deref() != Some(&b"coll, keep"[..]) {
        problems.push("copied/keep.txt is not keep.txt's bytes".into());
    }
    // The source as it was; nothing else changed.
    let after = snapshot(d.path());
    let elsewhere: Vec<String> = changes(&before, &after)
        .into_iter()
        .filter(|c| !c.starts_with("root/drive/copied") && !c.starts_with("root/drive: "))
        .collect();
    if !elsewhere.is_empty() {
        problems.push(format!("changed besides the copy: {elsewhere:?}"));
    }
    // A member left out is in the 207 only where a listing would show it:
    // hidden, denied and another auth rule's names are not told.
    if ![201, 207].contains(&reply.status) {
        problems.push(format!("status {}, want 207 (or 201)", reply.status));
    }
    let told = hrefs(&reply.body);
    for secret in [".env", ".hid", "x.key", "y.forbid", "bobs"] {
        if told.iter().any(|h| h.contains(secret)) {
            problems.push(format!("the 207 names {secret}: {told:?}"));
        }
    }
    let shown = leaked(&reply.body);
    if !shown.is_empty() {
        problems.push(format!("the 207 shows {shown:?}"));
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// A collection MOVE or DELETE whose members include some alice may not
/// touch: those stay, and the answer names none she may not see.
#[test]
fn a_collection_move_or_delete_with_members_the_user_may_not_see_reveals_none() {
    for method in ["MOVE", "DELETE"] {
        let d = Drive::new("coll-move", RULES);
        let running = d.serve();
        let addr = running.local_addr();
        let before = snapshot(d.path());
        let reply = req(method, "/drive/coll/")
            .h("Destination", "/drive/moved/")
            .send(addr);
        eprintln!("{method} drive/coll/: {}\n{}", reply.status, reply.text());
        let after = snapshot(d.path());
        let mut problems = Vec::new();
        // Whatever went, the members alice may not touch stay where they
        // were, byte for byte.
        for kept in [
            ".env",
            "deep/.hid",
            "x.key",
            "y.forbid",
            "bobs/b.txt",
            "link-out",
        ] {
            // A link is a name like any other to a removal: it goes
            // itself (its target untouched, checked below), as a DELETE
            // of it by name takes it.
            if method == "DELETE" && kept == "link-out" {
                continue;
            }
            let key = Path::new("root/drive/coll").join(kept);
            if before.get(&key) != after.get(&key) {
                problems.push(format!("{kept} changed"));
            }
        }
        assert!(
            outside_part(&before) == outside_part(&after),
            "outside changed"
        );
        let told = hrefs(&reply.body);
        for secret in [".env", ".hid", "x.key", "y.forbid", "bobs"] {
            if told.iter().any(|h| h.contains(secret)) {
                problems.push(format!("the {method} answer names {secret}: {told:?}"));
            }
        }
        assert!(
            problems.is_empty(),
            "{method}: {} problem(s):\n{}",
            problems.len(),
            problems.join("\n")
        );
    }
}

/// The runtime file and the users file, hard-linked into a collection
/// alice removes (DELETE, or a COPY or MOVE with `Overwrite: T` onto
/// it): they stay, as a DELETE of either by name is refused.
#[test]
fn a_collection_removal_leaves_the_runtimes_own_files() {
    let mut problems = Vec::new();
    for (method, source) in [
        ("DELETE", None),
        ("COPY", Some("/drive/dir/")),
        ("MOVE", Some("/drive/dir/")),
    ] {
        let d = Drive::new("own-files", RULES);
        let holder = d.drive().join("holder");
        std::fs::create_dir(&holder).unwrap();
        std::fs::hard_link(d.path().join("runtime.toml"), holder.join("rt")).unwrap();
        std::fs::hard_link(d.path().join("users.htpasswd"), holder.join("pw")).unwrap();
        std::fs::write(holder.join("plain.txt"), b"may go").unwrap();
        let running = d.serve();
        let addr = running.local_addr();
        // By name: refused.
        let one = req("DELETE", "/drive/holder/rt").send(addr);
        assert_eq!(one.status, 403, "DELETE of the runtime file's link by name");
        let reply = match source {
            None => req("DELETE", "/drive/holder/").send(addr),
            Some(source) => req(method, source)
                .h("Destination", "/drive/holder/")
                .send(addr),
        };
        eprintln!(
            "{method} onto drive/holder/: {} {}",
            reply.status,
            reply.text()
        );
        let rt = std::fs::symlink_metadata(holder.join("rt"));
        let pw = std::fs::symlink_metadata(holder.join("pw"));
        if rt.is_err() || pw.is_err() {
            problems.push(format!(
                "{method}: the runtime's own files were removed ({}): rt {}, pw {}",
                reply.status,
                rt.is_ok(),
                pw.is_ok()
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
