//! Links: as a COPY's or MOVE's source, on the way to a source or a
//! Destination, as a collection's member, and a directory swapped for a
//! link out of the root while COPYs and MOVEs run through it.

use super::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn a_link_as_a_source_or_on_the_way_is_never_followed() {
    let d = Drive::new("links", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let mut problems = Vec::new();
    let rows = [
        (
            "COPY",
            "/drive/out-link",
            "/drive/got",
            "a link to a file outside",
        ),
        (
            "MOVE",
            "/drive/out-link",
            "/drive/got",
            "a link to a file outside",
        ),
        (
            "COPY",
            "/drive/deny-link",
            "/drive/got",
            "a link to a denied file",
        ),
        (
            "MOVE",
            "/drive/deny-link",
            "/drive/got",
            "a link to a denied file",
        ),
        (
            "COPY",
            "/drive/out-dir",
            "/drive/got",
            "a link to a directory outside",
        ),
        (
            "MOVE",
            "/drive/out-dir",
            "/drive/got",
            "a link to a directory outside",
        ),
        (
            "COPY",
            "/drive/out-dir/",
            "/drive/got/",
            "a link to a directory outside, as a collection",
        ),
        (
            "COPY",
            "/drive/out-dir/keep.txt",
            "/drive/got",
            "a file through a link out",
        ),
        (
            "MOVE",
            "/drive/out-dir/victim",
            "/drive/got",
            "a file through a link out",
        ),
        (
            "COPY",
            "/drive/a.txt",
            "/drive/out-dir/new",
            "a Destination through a link out",
        ),
        (
            "MOVE",
            "/drive/a.txt",
            "/drive/out-dir/victim",
            "a Destination through a link out",
        ),
        (
            "COPY",
            "/drive/dir/",
            "/drive/out-dir/sub/",
            "a collection into a link out",
        ),
        (
            "MOVE",
            "/drive/coll/link-out",
            "/drive/got",
            "a member link",
        ),
    ];
    for (method, source, dest, label) in rows {
        let before = snapshot(d.path());
        let reply = req(method, source).h("Destination", dest).send(addr);
        let after = snapshot(d.path());
        let line = format!("{method} {source} -> {dest} ({label}): {}", reply.status);
        eprintln!("{line}");
        if (200..300).contains(&reply.status) {
            problems.push(format!("{line}: done"));
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
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn a_copy_onto_a_link_replaces_the_link_and_writes_nothing_outside() {
    let d = Drive::new("onto-link", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let before = outside_part(&snapshot(d.path()));
    let reply = req("COPY", "/drive/a.txt")
        .h("Destination", "/drive/out-link")
        .send(addr);
    eprintln!("COPY onto a link out: {}", reply.status);
    let after = snapshot(d.path());
    assert_eq!(outside_part(&after), before, "outside changed");
    if (200..300).contains(&reply.status) {
        let meta = std::fs::symlink_metadata(d.drive().join("out-link")).unwrap();
        assert!(
            meta.is_file(),
            "the link is still there after {}",
            reply.status
        );
    }
}

/// Swaps `drive/d` between the real directory and a link to `outside/`
/// until it has done it `rounds` times and `stop` is set (atomically,
/// `RENAME_EXCHANGE`, and by the rename dance with a moment of nothing).
fn swap(drive: &Path, outside: &Path, stop: &AtomicBool, rounds: usize) -> usize {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    let (d, link) = (drive.join("d"), drive.join("d.link"));
    let real = drive.join("d.real");
    let exchange = || renameat_with(CWD, &d, CWD, &link, RenameFlags::EXCHANGE).unwrap();
    let mut n = 0;
    while n < rounds || !stop.load(Ordering::Relaxed) {
        if n % 2 == 0 {
            exchange();
            std::thread::yield_now();
            exchange();
        } else {
            std::fs::rename(&d, &real).unwrap();
            symlink(outside, &d).unwrap();
            std::thread::yield_now();
            std::fs::remove_file(&d).unwrap();
            // What a COPY or MOVE made at `drive/d` while it was a
            // link or missing: nothing may be, as `make-dirs` is off.
            if let Err(e) = std::fs::rename(&real, &d) {
                panic!("drive/d was taken while it was away: {e}");
            }
        }
        n += 1;
    }
    n
}

#[test]
fn a_directory_swapped_for_a_link_out_lets_no_copy_or_move_through() {
    let d = Drive::new("dav-swap", RULES);
    let drive = d.drive();
    let outside = d.path().join("outside");
    file(&drive.join("d/victim"), b"inside victim");
    file(&drive.join("d/keep.txt"), b"inside keep");
    symlink(&outside, drive.join("d.link")).unwrap();
    let running = d.serve();
    let addr = running.local_addr();
    let initial = outside_part(&snapshot(d.path()));

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (drive, outside, stop) = (drive.clone(), outside.clone(), stop.clone());
        std::thread::spawn(move || swap(&drive, &outside, &stop, 400))
    };
    // Each client goes on with one act through `drive/d`, as source or
    // Destination, side by side.
    let acts: [(&str, &str, &str); 5] = [
        // Read through it into the tree.
        ("COPY", "/drive/d/victim", "/drive/read-N"),
        ("COPY", "/drive/d/", "/drive/tree-N/"),
        // Write through it.
        ("COPY", "/drive/a.txt", "/drive/d/made-N"),
        // Take from it (the source named through it), and put into it:
        // back and forth.
        ("MOVE", "/drive/d/keep.txt", "/drive/kept"),
        ("MOVE", "/drive/b.txt", "/drive/d/b.txt"),
    ];
    let clients: Vec<_> = acts
        .into_iter()
        .enumerate()
        .map(|(i, (method, source, dest))| {
            std::thread::spawn(move || {
                let mut counts: BTreeMap<(&str, usize, u16), usize> = BTreeMap::new();
                for n in 0..300 {
                    let dest = dest.replace('N', &n.to_string());
                    let (from, to) = match (method, n % 2) {
                        ("MOVE", 1) => (dest.as_str(), source),
                        _ => (source, dest.as_str()),
                    };
                    let status = req(method, from).h("Destination", to).send(addr).status;
                    *counts.entry((method, i, status)).or_default() += 1;
                }
                counts
            })
        })
        .collect();
    let mut counts = BTreeMap::new();
    for client in clients {
        counts.extend(client.join().unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = swapper.join().unwrap();
    eprintln!("swap: {rounds} rounds; (method, act, status) -> count: {counts:?}");

    let now = snapshot(d.path());
    let changed = changes(&initial, &outside_part(&now));
    assert!(changed.is_empty(), "changed outside the root: {changed:?}");
    let read_in = outside_bytes_inside(&now);
    assert!(
        read_in.is_empty(),
        "outside's bytes copied into the tree: {read_in:?}"
    );
    assert!(
        counts
            .keys()
            .all(|(_, _, s)| [201, 204, 207, 403, 404, 409, 412].contains(s)),
        "{counts:?}"
    );
    // The link is still a link, to outside.
    assert_eq!(std::fs::read_link(drive.join("d.link")).unwrap(), outside);
}
