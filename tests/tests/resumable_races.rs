//! Requests racing one resumable upload (`spec/site.md`, "Resumable
//! uploads", "Who writes an upload"): a `HEAD` reports what was counted
//! and takes nothing over; a `PATCH` whose `Upload-Offset` is not the
//! offset counted is 409 and changes nothing, so a live `PATCH` goes on
//! to its 204; of two `PATCH`es at one offset exactly one wins. Over
//! HTTP/1.1 (a raw client) and HTTP/2 (curl). Nothing here is timed: the
//! statuses, the offsets and the bytes of the file.

use nikaia_tests::tus::{pattern, Tus};
use nikaia_tests::uploads::{basic, ALICE};
use nikaia_tests::Client;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A `PATCH` of `body` from `offset` on a connection of its own, its
/// head sent and none of its body yet.
fn patch_begun(t: &Tus, at: &str, offset: u64, len: usize) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", t.port())).unwrap();
    write!(
        s,
        "PATCH {at} HTTP/1.1\r\nHost: t\r\nTus-Resumable: 1.0.0\r\nAuthorization: Basic {}\r\n\
         Content-Type: application/offset+octet-stream\r\nUpload-Offset: {offset}\r\n\
         Content-Length: {len}\r\n\r\n",
        basic(ALICE)
    )
    .unwrap();
    s
}

/// Waits until the upload's `.part` holds `len` bytes.
fn arrived(t: &Tus, at: &str, len: u64) {
    let part = t.partial().join(format!("{}.part", &at[6..]));
    let end = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(&part).map_or(0, |m| m.len()) < len {
        assert!(Instant::now() < end, "{len} bytes did not arrive");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// curl over HTTP/2 (prior knowledge): `HEAD` (no data) or a `PATCH` of
/// `data` from `offset`; the status and the `Upload-Offset` it saw.
fn h2(t: &Tus, at: &str, patch: Option<(u64, &[u8])>) -> (u16, Option<u64>) {
    let url = format!("http://127.0.0.1:{}{at}", t.port());
    let auth = format!("Authorization: Basic {}", basic(ALICE));
    let file = tempfile::NamedTempFile::new().unwrap();
    let mut args: Vec<String> = [
        "-s",
        "-o",
        "/dev/null",
        "-D",
        "-",
        "--http2-prior-knowledge",
    ]
    .map(String::from)
    .into();
    args.extend([
        "-H".into(),
        "Tus-Resumable: 1.0.0".into(),
        "-H".into(),
        auth,
    ]);
    match patch {
        None => args.push("-I".into()),
        Some((offset, data)) => {
            std::fs::write(file.path(), data).unwrap();
            args.extend(["-X".into(), "PATCH".into(), "--data-binary".into()]);
            args.push(format!("@{}", file.path().display()));
            args.extend(["-H".into(), format!("Upload-Offset: {offset}")]);
            args.extend([
                "-H".into(),
                "Content-Type: application/offset+octet-stream".into(),
            ]);
        }
    }
    args.push(url);
    let out = std::process::Command::new("curl")
        .args(&args)
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&out.stdout).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status from curl: {head}"));
    let offset = head
        .lines()
        .find_map(|l| l.strip_prefix("upload-offset:"))
        .and_then(|v| v.trim().parse().ok());
    assert!(head.starts_with("http/2 "), "{head}");
    (status, offset)
}

#[test]
fn a_head_and_stale_patches_leave_a_live_patch_to_finish() {
    let t = Tus::new("");
    let body = pattern(4 << 20, 3);
    let at = t.created(ALICE, "in/live.bin", body.len() as u64);
    // A: the whole upload from 0, of which three runs (1.5 MiB) arrive and
    // are counted; the rest waits on the client.
    let mut a = patch_begun(&t, &at, 0, body.len());
    let sent = 1536 << 10;
    a.write_all(&body[..sent]).unwrap();
    // A progress HEAD (a second tab) sees the bytes counted so far, over
    // both protocols, and takes nothing over.
    arrived(&t, &at, sent as u64);
    assert_eq!(t.offset(ALICE, &at), sent as u64);
    assert_eq!(h2(&t, &at, None), (200, Some(sent as u64)));
    // A PATCH for an offset that is not the one counted: 409 with the
    // offset, and nothing changes, over both protocols.
    let stale = t.patch(ALICE, &at, 0, b"x", &[]);
    assert_eq!(stale.status, 409, "{stale:?}");
    assert_eq!(stale.header("upload-offset"), Some("1572864"));
    let behind = t.patch(ALICE, &at, 1 << 20, &body[1 << 20..sent], &[]);
    assert_eq!(behind.status, 409, "{behind:?}");
    assert_eq!(h2(&t, &at, Some((0, b"x"))), (409, Some(sent as u64)));
    assert_eq!(t.offset(ALICE, &at), sent as u64);
    // A goes on to its 204, and the file is A's bytes.
    a.write_all(&body[sent..]).unwrap();
    let done = Client::from_stream(a).reply().unwrap();
    assert_eq!(done.status, 204, "{done:?}");
    assert_eq!(done.header("upload-offset"), Some("4194304"));
    assert_eq!(
        std::fs::read(t.site.root.join("in/live.bin")).unwrap(),
        body
    );
    let r = t.report();
    assert_eq!((r.conflicts, r.taken_over, r.completed), (3, 0, 1));
}

#[test]
fn of_two_patches_at_one_offset_exactly_one_wins() {
    let t = Tus::new("");
    let len = (1 << 20) + 4096;
    for round in 0..8u8 {
        let at = t.created(ALICE, &format!("in/race{round}.bin"), len as u64);
        let bodies = [pattern(len, 2 * round), pattern(len, 2 * round + 1)];
        let go = std::sync::Barrier::new(2);
        let statuses: Vec<u16> = std::thread::scope(|s| {
            let racers: Vec<_> = bodies
                .iter()
                .enumerate()
                .map(|(i, body)| {
                    let (t, at, go) = (&t, &at, &go);
                    s.spawn(move || {
                        go.wait();
                        // The second starts a little later each round:
                        // before the first's bytes, among them, after.
                        if i == 1 {
                            std::thread::sleep(Duration::from_micros(700 * round as u64));
                        }
                        t.patch(ALICE, at, 0, body, &[]).status
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let winners: Vec<usize> = (0..2).filter(|&i| statuses[i] == 204).collect();
        assert_eq!(winners.len(), 1, "round {round}: {statuses:?}");
        let loser = 1 - winners[0];
        assert_eq!(statuses[loser], 409, "round {round}: {statuses:?}");
        let file = std::fs::read(t.site.root.join(format!("in/race{round}.bin"))).unwrap();
        assert!(
            file == bodies[winners[0]],
            "round {round}: not the winner's bytes"
        );
    }
    assert_eq!(t.report().completed, 8);
}
