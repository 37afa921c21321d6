//! What the tus endpoint refuses from a request's head (`spec/site.md`,
//! "Resumable uploads"): a final name no file can have (a component of
//! 256 bytes or more, a control character) is 400 at the creation, not
//! after the bytes arrived; bytes past an upload's end are 413 and change
//! nothing; and without valid credentials every identifier is 401, live
//! or not, so holding one tells nothing.

use nikaia_tests::names;
use nikaia_tests::tus::Tus;
use nikaia_tests::uploads::{basic, ALICE, BOB};

#[test]
fn a_final_name_no_file_can_have_is_400_at_the_creation() {
    let t = Tus::new("");
    let long = "x".repeat(256);
    let refused = [
        format!("in/{long}"),
        format!("in/{long}/a.bin"),
        "in/a\nb.txt".to_owned(),
        "in/tab\there".to_owned(),
        "in/bell\u{7}".to_owned(),
        "in/del\u{7f}".to_owned(),
        "in/c1\u{85}next-line".to_owned(),
        "in/\u{1b}[31mred".to_owned(),
    ];
    for name in &refused {
        let r = t.create(ALICE, name, 3);
        assert_eq!(r.status, 400, "{name:?}: {}", r.text());
    }
    assert_eq!(t.report().created, 0);
    assert!(names(&t.partial()).is_empty(), "{:?}", names(&t.partial()));
    // The longest component a file system takes is a name like another.
    let longest = format!("in/{}", "y".repeat(255));
    let at = t.created(ALICE, &longest, 3);
    assert_eq!(t.patch(ALICE, &at, 0, b"abc", &[]).status, 204);
    assert_eq!(std::fs::read(t.site.root.join(&longest)).unwrap(), b"abc");
}

#[test]
fn bytes_past_the_end_are_413_and_change_nothing() {
    let t = Tus::new("");
    let at = t.created(ALICE, "in/end.bin", 5);
    assert_eq!(t.patch(ALICE, &at, 0, b"12345", &[]).status, 204);
    let past = t.patch(ALICE, &at, 5, b"6", &[]);
    assert_eq!(past.status, 413, "{past:?}");
    assert_eq!(
        std::fs::read(t.site.root.join("in/end.bin")).unwrap(),
        b"12345"
    );
    assert_eq!(t.offset(ALICE, &at), 5);
    // A client whose answer was lost asks again without bytes: 204.
    assert_eq!(t.patch(ALICE, &at, 5, b"", &[]).status, 204);
    // Whole but not yet named (the process that wrote the last byte was
    // killed before it could name the file): the same, and the next
    // request names it.
    let at = t.created(ALICE, "in/unnamed.bin", 3);
    std::fs::write(t.partial().join(format!("{}.part", &at[6..])), b"abc").unwrap();
    let past = t.patch(ALICE, &at, 3, b"d", &[]);
    assert_eq!(past.status, 413, "{past:?}");
    assert_eq!(t.offset(ALICE, &at), 3);
    assert_eq!(
        std::fs::read(t.site.root.join("in/unnamed.bin")).unwrap(),
        b"abc"
    );
}

#[test]
fn without_valid_credentials_every_identifier_is_401() {
    let t = Tus::new("");
    let live = t.created(ALICE, "in/live.bin", 10);
    assert_eq!(t.patch(ALICE, &live, 0, b"12345", &[]).status, 204);
    let ended = t.created(ALICE, "in/ended.bin", 10);
    let auth = format!("Authorization: Basic {}", basic(ALICE));
    assert_eq!(t.ask("DELETE", &ended, &[auth], b"").status, 204);
    let unknown = format!("/.tus/{}", "0123456789abcdef".repeat(2));
    let wrong = format!("Authorization: Basic {}", basic("alice:wrong"));
    let stranger = format!("Authorization: Basic {}", basic("mallory:x"));
    let patch = [
        "Content-Type: application/offset+octet-stream".to_owned(),
        "Upload-Offset: 5".to_owned(),
    ];
    for at in [&live, &ended, &unknown] {
        for creds in [None, Some(&wrong), Some(&stranger)] {
            let mut head: Vec<String> = creds.into_iter().cloned().collect();
            let r = t.ask("HEAD", at, &head, b"");
            assert_eq!(r.status, 401, "HEAD {at} {creds:?}");
            assert!(r.header("www-authenticate").is_some());
            assert_eq!(t.ask("DELETE", at, &head, b"").status, 401, "DELETE {at}");
            head.extend_from_slice(&patch);
            let r = t.ask("PATCH", at, &head, b"67890");
            assert_eq!(r.status, 401, "PATCH {at} {creds:?}");
        }
        // Valid credentials of another writer: 404 for all alike.
        assert_eq!(t.head(BOB, at).status, 404, "{at}");
    }
    // The same over HTTP/2.
    let url = format!("http://127.0.0.1:{}{unknown}", t.port());
    let out = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-I"])
        .args([
            "--http2-prior-knowledge",
            "-H",
            "Tus-Resumable: 1.0.0",
            &url,
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "401");
    // Alice's own upload is as she left it.
    assert_eq!(t.offset(ALICE, &live), 5);
    assert_eq!(t.head(ALICE, &ended).status, 404);
    assert_eq!(t.head(ALICE, &unknown).status, 404);
}
