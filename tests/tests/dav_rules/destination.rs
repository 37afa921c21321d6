//! The Destination corpus: every row sent as a COPY of `drive/a.txt` and
//! as a MOVE of `drive/m.txt` (and some of a collection), each checked
//! for its status and for what it changed.

use super::*;

/// One row: a label, the Destination header (none: left out), more
/// headers, the status it must get, and the source (`None`: the method's
/// file).
struct Row {
    label: &'static str,
    dest: Option<String>,
    headers: Vec<(&'static str, &'static str)>,
    status: u16,
    source: Option<&'static str>,
}

fn row(label: &'static str, dest: &str, status: u16) -> Row {
    Row {
        label,
        dest: Some(dest.to_owned()),
        headers: Vec::new(),
        status,
        source: None,
    }
}

fn rows(port: u16) -> Vec<Row> {
    let here = format!("http://127.0.0.1:{port}");
    let long = "l".repeat(256);
    let mut rows = vec![
        Row {
            label: "no Destination",
            dest: None,
            headers: vec![],
            status: 400,
            source: None,
        },
        row(
            "another host",
            &format!("http://evil.example:{port}/drive/x"),
            502,
        ),
        row("another host, no port", "http://evil.example/drive/x", 502),
        row(
            "localhost for 127.0.0.1",
            &format!("http://localhost:{port}/drive/x"),
            502,
        ),
        row(
            "another port",
            &format!("http://127.0.0.1:{}/drive/x", port ^ 1),
            502,
        ),
        // (`https` to this host and port on a plain listener names this
        // server: TLS may have ended in front, `found.rs`.)
        row(
            "ftp scheme",
            &format!("ftp://127.0.0.1:{port}/drive/x"),
            502,
        ),
        row(
            "userinfo",
            &format!("http://alice@127.0.0.1:{port}/drive/x"),
            502,
        ),
        row(
            "userinfo with password",
            &format!("http://u:p@127.0.0.1:{port}/drive/x"),
            502,
        ),
        row("encoded .. (lower)", "/drive/%2e%2e/public/x", 400),
        row("encoded .. (upper), inside", "/drive/a/%2E%2E/b", 400),
        row(
            "encoded .. in an absolute URI",
            &format!("{here}/drive/%2e%2e/%2e%2e/outside/x"),
            400,
        ),
        row("plain ..", "/drive/../public/x", 400),
        row("/./", "/drive/./x", 400),
        row("encoded .", "/drive/%2e/x", 400),
        row("dot-name .well-known", "/.well-known/x", 403),
        row(
            "dot-name .well-known, deeper",
            "/.well-known/acme-challenge/tok2",
            403,
        ),
        row("dot-name .git", "/drive/.git/config", 403),
        row("dot-name .git, new", "/drive/.git/hooks-x", 403),
        row("dot-name file", "/drive/.htaccess", 403),
        row("dot-name onto .env", "/drive/.env", 403),
        row("the tus endpoint", "/.tus/x", 403),
        row("outside every write rule", "/public/x", 405),
        row("the root", "/x", 405),
        row("the root itself", "/", 405),
        row("no path in the URI", &here, 405),
        row("a network-path reference", "//evil.example/x", 400),
        row("deny 404", "/drive/secret/x", 404),
        row("deny 404 by suffix", "/drive/new.key", 404),
        row("deny 403", "/drive/forbidden/x", 403),
        row("deny 403 by suffix", "/drive/new.forbid", 403),
        row("another auth rule (alice not in it)", "/other/x", 401),
        row(
            "another auth rule inside the drive",
            "/drive/coll/bobs/x",
            401,
        ),
        row("onto the runtime file", "/drive/rt-hard", 403),
        row("onto the users file", "/drive/pw-hard", 403),
        row("a component over 255 bytes", &format!("/drive/{long}"), 400),
        row("a control character", "/drive/x%01y", 400),
        row("a NUL", "/drive/x%00y", 400),
        row(
            "a backslash after .. (a dot-name)",
            "/drive/..%5cpublic%5cx",
            403,
        ),
        row("a bad escape", "/drive/x%zz", 400),
        row("relative", "drive/x", 400),
        row("missing parent", "/drive/nothere/x", 409),
        row("through a link out", "/drive/out-dir/x", 403),
        Row {
            label: "Overwrite F onto a file",
            dest: Some("/drive/b.txt".into()),
            headers: vec![("Overwrite", "F")],
            status: 412,
            source: None,
        },
        Row {
            label: "Overwrite F onto a collection",
            dest: Some("/drive/dir".into()),
            headers: vec![("Overwrite", "F")],
            status: 412,
            source: None,
        },
        Row {
            label: "Overwrite F onto a collection with /",
            dest: Some("/drive/dir/".into()),
            headers: vec![("Overwrite", "F")],
            status: 412,
            source: None,
        },
        Row {
            label: "Overwrite neither T nor F",
            dest: Some("/drive/x".into()),
            headers: vec![("Overwrite", "maybe")],
            status: 400,
            source: None,
        },
        Row {
            label: "a collection into itself",
            dest: Some("/drive/dir/inner".into()),
            headers: vec![],
            status: 403,
            source: Some("/drive/dir/"),
        },
        Row {
            label: "a collection into itself, deeper",
            dest: Some("/drive/dir/sub/inner".into()),
            headers: vec![],
            status: 403,
            source: Some("/drive/dir"),
        },
        Row {
            label: "a collection onto itself",
            dest: Some("/drive/dir/".into()),
            headers: vec![],
            status: 403,
            source: Some("/drive/dir"),
        },
        Row {
            label: "a collection onto its parent",
            dest: Some("/drive".into()),
            headers: vec![],
            status: 403,
            source: Some("/drive/dir"),
        },
    ];
    // The source itself, spelled three ways: per method, below.
    for dest in ["SELF", "SELF-URI", "SELF-ESCAPED"] {
        rows.push(row("onto itself", dest, 403));
    }
    rows
}

/// The Destination of a row for `source`: `SELF` rows name the source.
fn spelled(dest: &str, source: &str, port: u16) -> String {
    match dest {
        "SELF" => source.to_owned(),
        "SELF-URI" => format!("http://127.0.0.1:{port}{source}"),
        "SELF-ESCAPED" => source.replace('.', "%2E").replacen("/drive", "/%64rive", 1),
        other => other.to_owned(),
    }
}

#[test]
fn destinations_are_ruled_as_writes_and_refusals_change_nothing() {
    let mut problems = Vec::new();
    let mut table = Vec::new();
    for method in ["COPY", "MOVE"] {
        let mut d = Drive::new("dest", RULES);
        let mut running = d.serve();
        let mut addr = running.local_addr();
        for i in 0..rows(0).len() {
            // Made for this server's port: a row that changed something
            // gets the next row a new server.
            let r = rows(addr.port()).swap_remove(i);
            let file = if method == "COPY" {
                "/drive/a.txt"
            } else {
                "/drive/m.txt"
            };
            let source = r.source.unwrap_or(file);
            let before = snapshot(d.path());
            let mut q = req(method, source);
            if let Some(dest) = &r.dest {
                q = q.h("Destination", spelled(dest, source, addr.port()));
            }
            for (n, v) in &r.headers {
                q = q.h(n, v);
            }
            let reply = q.send(addr);
            let after = snapshot(d.path());
            let line = format!(
                "{method} {source} -> {:?} {:?}: {} (want {})",
                r.dest.as_deref().map(|x| spelled(x, source, addr.port())),
                r.headers,
                reply.status,
                r.status
            );
            table.push(format!("{:<40} {line}", r.label));
            let mut wrong = Vec::new();
            if reply.status != r.status {
                wrong.push(format!("status {}, want {}", reply.status, r.status));
            }
            if reply.status == 405 && reply.header("allow").is_none() {
                wrong.push("a 405 without Allow".into());
            }
            let changed = changes(&before, &after);
            if !changed.is_empty() {
                wrong.push(format!("changed: {changed:?}"));
            }
            let shown = leaked(&reply.body);
            if !shown.is_empty() {
                wrong.push(format!("its body shows {shown:?}"));
            }
            for w in wrong {
                problems.push(format!("{} ({line}): {w}", r.label));
            }
            // A row that changed something: the next starts afresh.
            if !changed.is_empty() {
                drop(running);
                d = Drive::new("dest", RULES);
                running = d.serve();
                addr = running.local_addr();
            }
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn depth_one_on_copy_is_400_and_moves_nothing() {
    let d = Drive::new("depth", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let before = snapshot(d.path());
    for (method, depth, want) in [
        ("COPY", "1", 400),
        ("COPY", "2", 400),
        ("MOVE", "0", 400),
        ("MOVE", "1", 400),
    ] {
        let reply = req(method, "/drive/dir/")
            .h("Destination", "/drive/dir-copy/")
            .h("Depth", depth)
            .send(addr);
        assert_eq!(reply.status, want, "{method} Depth {depth}");
        assert_eq!(changes(&before, &snapshot(d.path())), Vec::<String>::new());
    }
}

#[test]
fn destinations_that_name_this_server_are_written() {
    let d = Drive::new("dest-ok", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let drive = d.drive();
    // An absolute path, an absolute URI with this authority (its default
    // port left out cannot be: the port is not 80), and one with a query
    // and a fragment left off.
    for (dest, name) in [
        ("/drive/copy1.txt".to_owned(), "copy1.txt"),
        (format!("http://{addr}/drive/copy2.txt"), "copy2.txt"),
        (format!("HTTP://{addr}/drive/copy3.txt?x=1#f"), "copy3.txt"),
        ("/drive/copy%20four.txt".to_owned(), "copy four.txt"),
    ] {
        let reply = req("COPY", "/drive/a.txt")
            .h("Destination", &dest)
            .send(addr);
        assert_eq!(reply.status, 201, "{dest}: {}", reply.text());
        assert_eq!(
            std::fs::read(drive.join(name)).unwrap(),
            b"drive, a",
            "{dest}"
        );
    }
    // Overwrite T (the default) onto a file: 204, replaced.
    let reply = req("COPY", "/drive/a.txt")
        .h("Destination", "/drive/b.txt")
        .send(addr);
    assert_eq!(reply.status, 204);
    assert_eq!(std::fs::read(drive.join("b.txt")).unwrap(), b"drive, a");
    // MOVE: 201, the source gone.
    let reply = req("MOVE", "/drive/m.txt")
        .h("Destination", format!("http://{addr}/drive/dir/m2.txt"))
        .send(addr);
    assert_eq!(reply.status, 201);
    assert!(!drive.join("m.txt").exists());
    assert_eq!(
        std::fs::read(drive.join("dir/m2.txt")).unwrap(),
        b"drive, m (moved)"
    );
    // A collection COPY, members and all.
    let reply = req("COPY", "/drive/dir/")
        .h("Destination", "/drive/dir2/")
        .send(addr);
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(
        std::fs::read(drive.join("dir2/sub/two.txt")).unwrap(),
        b"drive, two"
    );
    // Overwrite F onto nothing: made.
    let reply = req("COPY", "/drive/a.txt")
        .h("Destination", "/drive/f.txt")
        .h("Overwrite", "F")
        .send(addr);
    assert_eq!(reply.status, 201);
}

/// `Overwrite: T` onto a collection with members alice may not remove
/// (hidden, denied, bob's): the COPY or MOVE does not happen, and
/// neither those members nor any other of the Destination is lost.
#[test]
fn overwrite_onto_a_collection_with_members_the_user_may_not_remove_loses_nothing() {
    let mut problems = Vec::new();
    for method in ["COPY", "MOVE"] {
        let d = Drive::new("ow-coll", RULES);
        let running = d.serve();
        let addr = running.local_addr();
        let before = snapshot(d.path());
        let reply = req(method, "/drive/dir/")
            .h("Destination", "/drive/coll/")
            .send(addr);
        let after = snapshot(d.path());
        let line = format!(
            "{method} drive/dir/ onto drive/coll/: {} {}",
            reply.status,
            reply.text()
        );
        eprintln!("{line}");
        let lost: Vec<String> = changes(&before, &after)
            .into_iter()
            .filter(|c| c.starts_with("root/drive/coll/") && c.ends_with("-> nothing"))
            .collect();
        if !lost.is_empty() && !(200..300).contains(&reply.status) {
            problems.push(format!(
                "{line}: refused, yet the Destination lost {lost:?}"
            ));
        }
        for kept in [".env", "x.key", "y.forbid", "bobs/b.txt", "deep/.hid"] {
            let key = Path::new("root/drive/coll").join(kept);
            if before.get(&key) != after.get(&key) {
                problems.push(format!("{line}: {kept} changed"));
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
