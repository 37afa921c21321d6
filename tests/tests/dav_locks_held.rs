//! A lock taken while a write is on its way meets the write when it acts
//! (`spec/site.md`, "Where locks are checked"): a `COPY` onto a file asks
//! the Destination's locks again with the name held when it gives the
//! copy its name, as a `PUT` does. Every commit here waits before its
//! sync (`fs::delay_syncs`, process-wide: this test has its binary to
//! itself), so the `LOCK` lands while the copy waits.

use nikaia_tests::dav::{file, Drive};
use nikaia_tests::site::{base64, USERS};
use nikaia_tests::{read_whole, Client, Reply};
use std::net::SocketAddr;

const RULES: &str = r#"webdav = true

[webdav-locks]
dir = "locks"

[[auth]]
match = ["**"]
htpasswd = "users.htpasswd"
plain-http = true

[[write]]
match = ["**"]
writers = ["alice", "bob"]
create = true
replace = true
delete = true
webdav = true
plain-http = true
"#;

fn send(addr: SocketAddr, user: &str, head: &str, body: &[u8]) -> Reply {
    let mut c = Client::connect(addr);
    let mut bytes = format!(
        "{head}\r\nHost: {addr}\r\nAuthorization: Basic {}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        base64(user),
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(body);
    c.send(bytes);
    read_whole(c.reader(), false).expect("an answer")
}

#[test]
fn a_copy_meets_a_lock_taken_while_it_copied() {
    let d = Drive::new(USERS, RULES);
    file(&d.root().join("src.txt"), b"bob's copy");
    file(&d.root().join("target.txt"), b"alice's file");
    let server = d.serve(None);
    let addr = server.local_addr();
    nikaia_std::fs::delay_syncs(1500);
    let copy = std::thread::spawn(move || {
        send(
            addr,
            "bob:b0b:pass",
            &format!(
                "COPY /src.txt HTTP/1.1\r\nDestination: http://{addr}/target.txt\r\nOverwrite: T"
            ),
            b"",
        )
    });
    // The copy opened its file before this LOCK (its commit waits 1.5 s).
    std::thread::sleep(std::time::Duration::from_millis(400));
    let lockinfo = "<?xml version=\"1.0\"?><D:lockinfo xmlns:D=\"DAV:\"><D:lockscope>\
                    <D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>";
    let lock = send(
        addr,
        "alice:open sesame",
        "LOCK /target.txt HTTP/1.1\r\nDepth: 0",
        lockinfo.as_bytes(),
    );
    assert_eq!(lock.status, 200, "{}", lock.text());
    let copied = copy.join().unwrap();
    nikaia_std::fs::delay_syncs(0);
    assert_eq!(copied.status, 423, "bob's COPY: {}", copied.text());
    assert!(
        copied.text().contains("lock-token-submitted"),
        "{}",
        copied.text()
    );
    assert_eq!(
        std::fs::read(d.root().join("target.txt")).unwrap(),
        b"alice's file"
    );
}
