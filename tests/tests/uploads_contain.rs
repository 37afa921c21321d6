//! What a write rule can reach, tried from the wire (`spec/site.md`,
//! "Writes"; `spec/fs-root.md`, "Guarded writes").
//!
//! `nikaia serve` is given one rule, `drop/**`, that lets anyone create,
//! replace and delete files and empty directories and make missing
//! directories, with `drop/secret/**` denied. Next to the served directory
//! lie a folder `outside/`, the runtime file and a users file; inside it,
//! `drop/` holds files, a subdirectory, an empty directory, a FIFO, links
//! out of the root (relative, absolute, to a directory, to a file, to
//! nothing), links within it (to a file, to a directory, to the root
//! itself, to themselves), and hard links of the runtime file, the users
//! file and a file outside; beside `drop/` are `public/` and `private/`
//! (no rule), `.well-known/acme-challenge/tok` and `index.html`.
//!
//! The first test sends a corpus of request targets, raw over TCP so no
//! client tidies them up first, each as a `PUT` with a small body and as a
//! `DELETE`: `..` spelled every way (`%2e`, `%2E`, half encoded, `%2f` and
//! backslashes for the slash, double encoding, overlong UTF-8, `..;`),
//! NULs, absolute names, doubled slashes, `.` segments, trailing slashes,
//! dot-names, other letter cases, sidecars, links in every position, names
//! that are not UTF-8, very long names and deep ones, the runtime file's
//! hard links, the root itself and `drop/` itself. Every request starts
//! from the same tree (`drop/` is rebuilt after any request that changed
//! something), and after each one the whole scratch directory is compared
//! with what it was before. It checks that:
//!
//! - nothing outside the served directory changes: not `outside/`, not
//!   the runtime file, not the users file (content, size, inode, mode and
//!   modification time);
//! - inside it, a request changes at most the one name it asks for, and
//!   only where the rule lets it: under `drop/`, not under `drop/secret/`,
//!   no dot-name, no link on the way, none of the runtime file's own
//!   files; a `PUT` may also make the directories on the way to it
//!   (`make-dirs`), a `DELETE` makes nothing; a directory that is not
//!   empty is never removed;
//! - every answer is one a write may give (201, 204, 400, 403, 404, 405,
//!   409, 412, 413, 414, 415: never a 5xx), a `.`/`..` segment or a NUL is
//!   404 or 400, a name the rule does not let change is never answered
//!   2xx, a 2xx `PUT` left the body at the name and a 2xx `DELETE` left no
//!   name, and a refusal changed nothing at the name;
//! - and, for some rows, the exact status the code gives (`drop/new.txt`
//!   201, `public/x` 405, `drop/.htaccess` 404, `drop/secret/x` 404, a link
//!   on the way 403, the runtime file's hard link 403, ...).
//!
//! On a failure it prints every row with its status.
//!
//! The second test swaps `drop/d` between a real directory and a link to
//! `outside/` thousands of times (the rename dance of `to_file_faults.rs`,
//! and an atomic `RENAME_EXCHANGE`), while `PUT`s of `drop/d/f` and
//! `DELETE`s of `drop/d/victim` go on: `outside/` (which has a `victim` of
//! its own) must come out exactly as it went in, and every answer must be
//! 201, 204, 403, 404 or 409.

use nikaia_std::http::Running;
use nikaia_std::rt::{LogTarget, Runtime};
use nikaia_tests::serve::serve_dir;
use nikaia_tests::{test_runtime, Client, Reply};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::io::Read;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `htpasswd -nbB -C 5 alice 'open sesame'`.
const USERS: &str = "alice:$2y$05$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K\n";

/// One rule that lets anyone do everything under `drop/`, a deny list
/// inside it, a not-found page inside it (one of the runtime file's own
/// files), and a users file (another) for `private/`.
const RULES: &str = r#"
not-found = "drop/404.html"

[[auth]]
match = "private/**"
htpasswd = "users.htpasswd"
plain-http = true

[[write]]
match = "drop/**"
anyone = true
create = true
replace = true
delete = true
delete-dirs = true
make-dirs = true
plain-http = true
durability = "none"

[[deny]]
match = "drop/secret/**"
"#;

/// What every `PUT` sends.
const BODY: &[u8] = b"put by the containment corpus\n";

/// How many `PUT`s, and how many `DELETE`s, go on while `drop/d` swaps.
const SWAP_REQUESTS: usize = 3000;

/// The answers a write may give in this setup.
const ALLOWED: [u16; 11] = [201, 204, 400, 403, 404, 405, 409, 412, 413, 414, 415];

#[path = "uploads_contain/corpus.rs"]
mod corpus;
#[path = "uploads_contain/tree.rs"]
mod tree;

use corpus::{corpus, expected};
use tree::*;

/// The name under the root `target` asks for, worked out as the server
/// should: the path of an origin- or absolute-form target without its
/// query, percent-decoded once, empty segments merged, a trailing `/`
/// kept. `None` where it names nothing: not a path, a bad escape or a
/// NUL, a `.` or `..` segment.
fn named(target: &[u8]) -> Option<Vec<u8>> {
    let path = if target.starts_with(b"/") {
        target
    } else {
        let lower = target.get(..8)?.to_ascii_lowercase();
        let after = if lower.starts_with(b"http://") {
            &target[7..]
        } else if lower == b"https://" {
            &target[8..]
        } else {
            return None;
        };
        let at = after.iter().position(|&b| b == b'/' || b == b'?')?;
        if after[at] != b'/' {
            return None;
        }
        &after[at..]
    };
    let path = path.split(|&b| b == b'?').next().unwrap();
    let mut decoded = Vec::new();
    let mut i = 0;
    while i < path.len() {
        if path[i] == b'%' {
            let hex = std::str::from_utf8(path.get(i + 1..i + 3)?).ok()?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            decoded.push(path[i]);
            i += 1;
        }
    }
    if decoded.contains(&0) {
        return None;
    }
    let tail = &decoded[1..];
    if tail.split(|&b| b == b'/').any(|s| s == b"." || s == b"..") {
        return None;
    }
    let mut name: Vec<u8> = Vec::new();
    for segment in tail.split(|&b| b == b'/').filter(|s| !s.is_empty()) {
        if !name.is_empty() {
            name.push(b'/');
        }
        name.extend_from_slice(segment);
    }
    if tail.ends_with(b"/") && !name.is_empty() {
        name.push(b'/');
    }
    Some(name)
}

/// Whether the rule may let `name` change, with `before` as the tree
/// stands: under `drop/` (or `drop` itself), not under `drop/secret`, no
/// dot-name, no link on the way, none of the runtime file's own files.
fn permitted(name: &[u8], before: &Snapshot) -> bool {
    let bare = name.strip_suffix(b"/").unwrap_or(name);
    let parts: Vec<&[u8]> = bare.split(|&b| b == b'/').collect();
    let own: [&[u8]; 3] = [b"drop/rt-hard", b"drop/pw-hard", b"drop/404.html"];
    let linked = (1..parts.len()).any(|i| {
        let on_the_way = Path::new("root").join(bytes_path(&parts[..i].join(&b'/')));
        matches!(
            before.get(&on_the_way),
            Some(Entry {
                kind: Kind::Link(_),
                ..
            })
        )
    });
    parts[0] == b"drop"
        && parts.get(1) != Some(&&b"secret"[..])
        && !parts.iter().any(|p| p.starts_with(b"."))
        && !own.contains(&bare)
        && !linked
}

/// What is wrong with the answer `status` to `method target`, and with
/// how the tree went from `before` to `after`.
fn judge(
    method: &str,
    target: &[u8],
    status: u16,
    before: &Snapshot,
    after: &Snapshot,
) -> Vec<String> {
    let mut wrong = Vec::new();
    if !ALLOWED.contains(&status) {
        wrong.push(format!("answered {status}, not an answer a write may give"));
    }
    if let Some(want) = expected(method, target) {
        if !want.contains(&status) {
            wrong.push(format!("answered {status}, expected one of {want:?}"));
        }
    }
    let name = named(target);
    if name.is_none() && ![400, 404].contains(&status) {
        wrong.push(format!(
            "names nothing (a dot segment, NUL or bad escape), yet answered {status}"
        ));
    }
    let allowed = name.as_deref().is_some_and(|n| permitted(n, before));
    let done = (200..300).contains(&status);
    if done && !allowed {
        wrong.push(format!(
            "answered {status} for a name the rule must not let change"
        ));
    }
    let key = name.as_deref().map(|n| {
        let bare = n.strip_suffix(b"/").unwrap_or(n);
        Path::new("root").join(bytes_path(bare))
    });
    if let Some(key) = &key {
        match (done, method) {
            (true, "PUT") if allowed => {
                let holds = after.get(key).map(|e| &e.kind) == Some(&Kind::File(BODY.to_vec()));
                if !holds {
                    wrong.push(format!(
                        "answered {status} but {} does not hold the body",
                        shown_path(key)
                    ));
                }
            }
            (true, _) if allowed => {
                if after.contains_key(key) {
                    wrong.push(format!(
                        "answered {status} but {} is still there",
                        shown_path(key)
                    ));
                }
            }
            _ => {
                if before.get(key) != after.get(key) {
                    wrong.push(format!("answered {status} yet {} changed", shown_path(key)));
                }
            }
        }
    }
    let mut changes = 0;
    let keys: BTreeSet<&PathBuf> = before.keys().chain(after.keys()).collect();
    for k in keys {
        let (was, is) = (before.get(k), after.get(k));
        if was == is {
            continue;
        }
        let fine = allowed
            && key.as_ref().is_some_and(|n| {
                // The directories on the way: a PUT may make them, a
                // DELETE only removes from the last one.
                let dir = matches!(
                    is,
                    Some(Entry {
                        kind: Kind::Dir,
                        ..
                    })
                );
                let made = method == "PUT" || was.is_some();
                k == n || (n.starts_with(k) && k.starts_with("root/drop") && dir && made)
            });
        if fine {
            continue;
        }
        changes += 1;
        if changes <= 4 {
            let show = |e: Option<&Entry>| e.map_or("nothing".to_string(), Entry::describe);
            let outside = if k.starts_with("root") {
                ""
            } else {
                " OUTSIDE THE ROOT"
            };
            let made_by_delete = method == "DELETE" && was.is_none();
            let note = if made_by_delete {
                " (made by a DELETE)"
            } else {
                ""
            };
            wrong.push(format!(
                "{}{outside} changed: {} -> {}{}{note}",
                shown_path(k),
                show(was),
                show(is),
                if was.is_some() && is.is_some() {
                    " (inode, mode or time)"
                } else {
                    ""
                }
            ));
        }
    }
    if changes > 4 {
        wrong.push(format!("... and {} more names changed", changes - 4));
    }
    wrong
}

#[test]
fn no_target_writes_or_removes_anything_but_what_the_rule_allows() {
    let started = Instant::now();
    let tree = Tree::new("contain");
    tree.corpus_site();
    let running = tree.serve();
    let addr = running.local_addr();
    let corpus = corpus();
    eprintln!(
        "containment corpus: {} request targets, each sent as PUT and DELETE ({} requests)",
        corpus.len(),
        corpus.len() * 2
    );
    assert!(corpus.len() >= 120, "{}", corpus.len());

    let initial = snapshot(tree.path());
    let mut before = initial.clone();
    let mut table = Vec::new();
    let mut problems = Vec::new();
    let mut counts: BTreeMap<(&str, u16), usize> = BTreeMap::new();
    for row in &corpus {
        for method in ["PUT", "DELETE"] {
            let reply = send(addr, method, &row.target);
            let status = reply.as_ref().map_or(0, |r| r.status);
            let after = snapshot(tree.path());
            let mut wrong = judge(method, &row.target, status, &before, &after);
            // A name with CR LF in it (`x%0d%0aSet-Cookie:...`) stays in
            // its line: `Location` repeats the target as sent.
            if reply.is_some_and(|r| r.header("set-cookie").is_some()) {
                wrong.push("the answer has a Set-Cookie header: a name split a header".into());
            }
            *counts.entry((method, status)).or_default() += 1;
            let line = format!(
                "{method:<6} {status:>3}  {:<44} {}",
                row.label,
                shown(&row.target)
            );
            for w in &wrong {
                problems.push(format!("{line}\n         {w}"));
            }
            table.push(format!(
                "{}{line}",
                if wrong.is_empty() { "  " } else { "! " }
            ));
            if after != before {
                tree.reset_drop();
                before = snapshot(tree.path());
            }
        }
    }
    // Whatever happened on the way: outside the root, as at the start.
    let now = snapshot(tree.path());
    if outside_part(&now) != outside_part(&initial) {
        problems.push("outside the root, the tree is not what it was at the start".into());
    }
    eprintln!("statuses (method, status) -> count: {counts:?}");
    eprintln!("corpus done in {:.1?}", started.elapsed());
    if !problems.is_empty() {
        eprintln!("every row:\n{}", table.join("\n"));
        panic!("{} problem(s):\n{}", problems.len(), problems.join("\n"));
    }
}

// ---------------------------------------------------------------------------
// The symlink swap.

/// Swaps `drop/d` between the real directory and a link to `outside/`
/// until it has done it 2000 times and `stop` is set; refills `victim`
/// into the real directory while it is away from `drop/d`. The rounds
/// done, and how many directories the server made at `drop/d` while it
/// was missing (moved aside as `drop/junk-N`).
fn swap(drop: &Path, outside: &Path, stop: &AtomicBool) -> (usize, usize) {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    let (d, real, link) = (drop.join("d"), drop.join("d.real"), drop.join("d.link"));
    let exchange = || renameat_with(CWD, &d, CWD, &link, RenameFlags::EXCHANGE).unwrap();
    let refill = |dir: &Path| {
        let victim = dir.join("victim");
        if std::fs::symlink_metadata(&victim).is_err() {
            std::fs::write(victim, b"inside, may go").unwrap();
        }
    };
    let mut junk = 0;
    // A directory the server made (make-dirs) at `drop/d` while it was
    // missing: moved aside, inside the root.
    let aside = |junk: &mut usize| {
        let to = drop.join(format!("junk-{junk}"));
        *junk += 1;
        match std::fs::rename(&d, to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("moving aside what the server made at drop/d: {e}"),
        }
    };
    let relative = Path::new("../../outside");
    let mut n = 0;
    while n < 2000 || !stop.load(Ordering::Relaxed) {
        if n % 2 == 0 {
            // The dance of to_file_faults.rs: the directory moved aside, a
            // link out in its place, then the directory back.
            std::fs::rename(&d, &real).unwrap();
            refill(&real);
            let to = if n % 4 == 0 { relative } else { outside };
            while let Err(e) = symlink(to, &d) {
                assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
                aside(&mut junk);
            }
            std::fs::remove_file(&d).unwrap();
            while let Err(e) = std::fs::rename(&real, &d) {
                let kind = e.kind();
                let taken = [
                    std::io::ErrorKind::DirectoryNotEmpty,
                    std::io::ErrorKind::AlreadyExists,
                ];
                assert!(taken.contains(&kind), "{e}");
                aside(&mut junk);
            }
        } else {
            // Atomically: `drop/d` is the directory or the link, never
            // missing.
            exchange();
            refill(&link);
            exchange();
        }
        n += 1;
    }
    (n, junk)
}

#[test]
fn a_directory_swapped_for_a_link_out_takes_no_write_and_loses_nothing_outside() {
    let started = Instant::now();
    let tree = Tree::new("contain-swap");
    let drop = tree.root().join("drop");
    let outside = tree.path().join("outside");
    file(&drop.join("d/victim"), b"inside, may go");
    symlink(&outside, drop.join("d.link")).unwrap();
    let running = tree.serve();
    let addr = running.local_addr();
    let initial = outside_part(&snapshot(tree.path()));

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (drop, outside, stop) = (drop.clone(), outside.clone(), stop.clone());
        std::thread::spawn(move || swap(&drop, &outside, &stop))
    };
    // One client keeps putting `drop/d/f`, another keeps deleting
    // `drop/d/victim`, side by side.
    let deadline = started + Duration::from_secs(25);
    let clients: Vec<_> = [("PUT", "/drop/d/f"), ("DELETE", "/drop/d/victim")]
        .into_iter()
        .map(|(method, target)| {
            std::thread::spawn(move || {
                let mut counts: BTreeMap<(&str, u16), usize> = BTreeMap::new();
                for _ in 0..SWAP_REQUESTS {
                    if Instant::now() > deadline {
                        break;
                    }
                    let status = send(addr, method, target.as_bytes()).map_or(0, |r| r.status);
                    *counts.entry((method, status)).or_default() += 1;
                }
                counts
            })
        })
        .collect();
    let mut counts = BTreeMap::new();
    for client in clients {
        counts.extend(client.join().unwrap());
    }
    let sent: usize = counts.values().sum();
    stop.store(true, Ordering::Relaxed);
    let (rounds, junk) = swapper.join().unwrap();
    eprintln!(
        "swap: {rounds} swaps, {sent} requests in {:.1?}, {junk} directories made at a \
         missing drop/d; (method, status) -> count: {counts:?}",
        started.elapsed()
    );
    assert!(rounds >= 2000, "{rounds}");

    // Outside: exactly as it was, `victim` included.
    let now = outside_part(&snapshot(tree.path()));
    let changed: Vec<_> = (initial.keys().chain(now.keys()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|k| initial.get(*k) != now.get(*k))
        .collect();
    assert!(changed.is_empty(), "changed outside the root: {changed:?}");
    assert!(
        counts
            .keys()
            .all(|(_, s)| [201, 204, 403, 404, 409].contains(s)),
        "{counts:?}"
    );
    let done = counts.keys().any(|(_, s)| [201, 204].contains(s));
    let refused = counts.keys().any(|(_, s)| *s == 403);
    assert!(
        done && refused,
        "the swap was not seen both ways: {counts:?}"
    );

    // Inside: `d` the directory with at most `f` and `victim`, the link
    // still a link, and what the server made while `d` was missing.
    for name in nikaia_tests::names(&drop) {
        let path = drop.join(&name);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        match name.as_str() {
            "404.html" => assert!(meta.is_file()),
            "d.link" => assert_eq!(std::fs::read_link(&path).unwrap(), outside),
            "d" => {
                assert!(meta.is_dir());
                let inside = nikaia_tests::names(&path);
                assert!(
                    inside.iter().all(|n| n == "f" || n == "victim"),
                    "{inside:?}"
                );
            }
            junk if junk.starts_with("junk-") => {
                assert!(meta.is_dir());
                let inside = nikaia_tests::names(&path);
                assert!(inside.iter().all(|n| n == "f"), "{junk}: {inside:?}");
            }
            other => panic!("drop/{other} appeared"),
        }
    }
    if let Ok(f) = std::fs::read(drop.join("d/f")) {
        assert_eq!(f, BODY);
    }
    assert_eq!(nikaia_tests::names(&tree.root()), ["drop"]);
}
