//! One lock's life (LOCK, writes with and without its token, UNLOCK) over
//! HTTP/2 and over HTTP/1.1, both through TLS with curl: the same
//! answers.

use super::{lockinfo, Drive, ALICE};
use nikaia_std::http::Running;
use nikaia_tests::curl::{curl_answer, CurlAnswer};
use nikaia_tests::TestPki;
use std::path::Path;

/// The statuses (and the 423's body, its name made `NAME`) of one lock's
/// life on `/NAME.txt`, spoken with curl's `flags`; the versions curl
/// spoke.
fn life(server: &Running, work: &Path, flags: &[&str], name: &str) -> (Vec<String>, Vec<String>) {
    let url = format!(
        "https://localhost:{}/{name}.txt",
        server.local_addr().port()
    );
    let mut versions = Vec::new();
    let mut seen = Vec::new();
    let mut ask = |args: &[&str]| -> CurlAnswer {
        let mut all = flags.to_vec();
        all.extend_from_slice(&["-u", ALICE]);
        all.extend_from_slice(args);
        let a = curl_answer(work, &all, &url);
        versions.push(a.version.clone());
        let body = String::from_utf8_lossy(&a.body).replace(name, "NAME");
        seen.push(match a.status {
            423 => format!("423 {body}"),
            s => s.to_string(),
        });
        a
    };
    let info = lockinfo(false, "alice");
    let locked = ask(&[
        "-X",
        "LOCK",
        "-H",
        "Depth: 0",
        "-H",
        "Timeout: Second-600",
        "-H",
        "Content-Type: application/xml",
        "--data-binary",
        &info,
    ]);
    let token = locked
        .header("lock-token")
        .unwrap_or_else(|| panic!("no Lock-Token: {locked:?}"))
        .to_owned();
    let submit = format!("If: ({token})");
    ask(&["-X", "PUT", "--data-binary", "no token"]);
    ask(&[
        "-X",
        "PUT",
        "-H",
        &submit,
        "--data-binary",
        "with the token",
    ]);
    ask(&["-X", "UNLOCK", "-H", &format!("Lock-Token: {token}")]);
    ask(&["-X", "UNLOCK", "-H", &format!("Lock-Token: {token}")]);
    ask(&["-X", "PUT", "--data-binary", "unlocked"]);
    (seen, versions)
}

#[test]
fn a_locks_life_answers_the_same_over_http_2_and_http_1_1() {
    let d = Drive::new("h2", &super::rules("", ""));
    let pki = TestPki::new();
    let server = d.0.serve(Some(&pki));
    let work = d.path().join("curl");
    std::fs::create_dir(&work).unwrap();
    let ca = pki.ca_pem.to_str().unwrap().to_owned();
    let (one, v1) = life(&server, &work, &["--http1.1", "--cacert", &ca], "one");
    let (two, v2) = life(&server, &work, &["--http2", "--cacert", &ca], "two");
    assert!(v1.iter().all(|v| v == "1.1"), "{v1:?}");
    assert!(v2.iter().all(|v| v == "2"), "{v2:?}");
    assert_eq!(one, two, "HTTP/1.1 and HTTP/2 differ");
    let statuses: Vec<&str> = one.iter().map(|s| &s[..3]).collect();
    assert_eq!(
        statuses,
        ["201", "423", "204", "204", "409", "204"],
        "{one:?}"
    );
    assert!(one[1].contains("lock-token-submitted"), "{}", one[1]);
    assert_eq!(
        std::fs::read(d.root().join("two.txt")).unwrap(),
        b"unlocked"
    );
}
