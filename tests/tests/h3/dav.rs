//! WebDAV over HTTP/3 as over HTTP/1.1 and HTTP/2 (`spec/site.md`,
//! "WebDAV class 1": "HTTP/2 and HTTP/3 carry every method as they carry
//! `PUT`"): each protocol makes, props, copies, moves, lists and removes a
//! collection of its own under the same rules, with the same statuses and,
//! names aside, the same bodies; and class 2's `LOCK` and `UNLOCK` reach
//! the locks by each.

use super::equality::{curl_over, h3_request};
use super::{h3_get, sha256, H3Request};
use nikaia_tests::serve::serve_dir;
use nikaia_tests::uploads::{Site, ALICE, RULES};
use nikaia_tests::TestPki;

/// `RULES` with WebDAV on: for reads everywhere, for writes in `drop/`.
fn rules() -> String {
    let drop = "max-size = \"1MiB\"\n";
    assert!(RULES.contains(drop));
    let with = RULES.replacen(drop, &format!("{drop}webdav = true\n"), 1);
    format!("webdav = true\n{with}\n[webdav-locks]\ndir = \"locks\"\n")
}

#[test]
fn webdav_answers_the_same_over_h1_h2_and_h3() {
    let site = Site::new();
    let pki = TestPki::new();
    let mut rt = site.runtime(&rules());
    rt.tls_cert = Some(pki.cert.clone());
    rt.tls_key = Some(pki.key.clone());
    rt.http3 = Some(true);
    let server = serve_dir(&site.root, rt, false, true);
    let port = server.local_addr().port();
    let dir = site.tmp.path();
    let put = dir.join("a.txt");
    std::fs::write(&put, b"over every protocol\n").unwrap();
    let pp = dir.join("pp.xml");
    std::fs::write(
        &pp,
        "<?xml version=\"1.0\"?><D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:x\">\
         <D:set><D:prop><Z:colour>blue</Z:colour></D:prop></D:set></D:propertyupdate>",
    )
    .unwrap();
    let pf = dir.join("pf.xml");
    std::fs::write(
        &pf,
        "<?xml version=\"1.0\"?><D:propfind xmlns:D=\"DAV:\" xmlns:Z=\"urn:x\"><D:prop>\
         <D:resourcetype/><D:getcontentlength/><Z:colour/><Z:none/></D:prop></D:propfind>",
    )
    .unwrap();
    let (put, pp, pf) = (
        put.to_str().unwrap().to_owned(),
        format!("@{}", pp.display()),
        format!("@{}", pf.display()),
    );
    let here = format!("Destination: https://localhost:{port}/drop/NAME/c.txt");
    let steps: Vec<(&str, Vec<&str>, u16)> = vec![
        ("/drop/NAME/", vec!["-X", "MKCOL", "-u", ALICE], 201),
        ("/drop/NAME/", vec!["-X", "MKCOL", "-u", ALICE], 405),
        ("/drop/NAME/a.txt", vec!["-T", &put, "-u", ALICE], 201),
        (
            "/drop/NAME/a.txt",
            vec!["-X", "PROPPATCH", "--data-binary", &pp, "-u", ALICE],
            207,
        ),
        (
            "/drop/NAME/a.txt",
            vec![
                "-X",
                "PROPFIND",
                "-H",
                "Depth: 0",
                "--data-binary",
                &pf,
                "-u",
                ALICE,
            ],
            207,
        ),
        (
            "/drop/NAME/a.txt",
            vec![
                "-X",
                "COPY",
                "-H",
                "Destination: /drop/NAME/b.txt",
                "-u",
                ALICE,
            ],
            201,
        ),
        (
            "/drop/NAME/b.txt",
            vec!["-X", "MOVE", "-H", &here, "-u", ALICE],
            201,
        ),
        (
            "/drop/NAME/c.txt",
            vec![
                "-X",
                "PROPFIND",
                "-H",
                "Depth: 0",
                "--data-binary",
                &pf,
                "-u",
                ALICE,
            ],
            207,
        ),
        (
            "/drop/NAME/c.txt",
            vec![
                "-X",
                "COPY",
                "-H",
                "Destination: https://elsewhere.example/x",
                "-u",
                ALICE,
            ],
            502,
        ),
        ("/drop/NAME/", vec!["-X", "PROPFIND", "-u", ALICE], 403),
        ("/drop/NAME/", vec!["-X", "PROPFIND", "-H", "Depth: 0"], 401),
        (
            "/public/a.txt",
            vec!["-X", "PROPFIND", "-H", "Depth: 0", "--data-binary", &pf],
            207,
        ),
        ("/public/a.txt", vec!["-X", "MKCOL"], 405),
        // Class 2's methods reach the locks by every protocol: a refresh
        // without `If:`, an UNLOCK without or with an unknown token.
        ("/drop/NAME/c.txt", vec!["-X", "LOCK", "-u", ALICE], 400),
        ("/drop/NAME/c.txt", vec!["-X", "UNLOCK", "-u", ALICE], 400),
        (
            "/drop/NAME/c.txt",
            vec![
                "-X",
                "UNLOCK",
                "-H",
                "Lock-Token: <urn:uuid:0>",
                "-u",
                ALICE,
            ],
            409,
        ),
        (
            "/drop/NAME/c.txt",
            vec!["-X", "PUT", "-H", "If: (<urn:uuid:0>", "-u", ALICE],
            400,
        ),
        ("/drop/NAME/", vec!["-X", "DELETE", "-u", ALICE], 204),
    ];
    let name_in = |s: &str, name: &str| s.replace("NAME", name);
    let mut bodies: Vec<[Vec<u8>; 3]> = Vec::new();
    let mut statuses: Vec<[u16; 3]> = Vec::new();
    for (version, name) in [("1.1", "uno1"), ("2", "dos2")] {
        for (i, (path, args, _)) in steps.iter().enumerate() {
            let args: Vec<String> = args.iter().map(|a| name_in(a, name)).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let url = format!("https://localhost:{port}{}", name_in(path, name));
            let a = curl_over(version, &pki, dir, &args, &url);
            let k = usize::from(version == "2");
            if bodies.len() <= i {
                bodies.push(Default::default());
                statuses.push([0; 3]);
            }
            bodies[i][k] = String::from_utf8_lossy(&a.body)
                .replace(name, "NAME")
                .into_bytes();
            statuses[i][k] = a.status;
        }
    }
    let requests: Vec<H3Request> = (steps.iter())
        .map(|(path, args, _)| {
            let args: Vec<String> = args.iter().map(|a| name_in(a, "tres3")).collect();
            h3_request(&name_in(path, "tres3"), &args)
        })
        .collect();
    let (three, stderr) = h3_get(port, &pki.ca_pem, &["--serial", "--bodies"], &requests);
    let mut failures = Vec::new();
    for (i, answer) in three.into_iter().enumerate() {
        statuses[i][2] = answer.status;
        let body = String::from_utf8_lossy(&answer.body).replace("tres3", "NAME");
        bodies[i][2] = body.into_bytes();
        let (path, args, want) = &steps[i];
        if statuses[i] != [*want; 3] {
            failures.push(format!(
                "{path} {args:?}: statuses {:?}, not {want}",
                statuses[i]
            ));
        }
        if bodies[i][0] != bodies[i][1] || bodies[i][1] != bodies[i][2] {
            failures.push(format!(
                "{path} {args:?}: bodies differ (h1 {}, h2 {}, h3 {}):\n{}\n{}",
                sha256(&bodies[i][0]),
                sha256(&bodies[i][1]),
                sha256(&bodies[i][2]),
                String::from_utf8_lossy(&bodies[i][0]),
                String::from_utf8_lossy(&bodies[i][2]),
            ));
        }
    }
    assert!(failures.is_empty(), "{}\n{stderr}", failures.join("\n"));
    // The dead property came through each protocol, and the copies moved.
    let props = String::from_utf8_lossy(&bodies[7][0]).into_owned();
    assert!(props.contains(">blue</"), "{props}");
    for name in ["uno1", "dos2", "tres3"] {
        assert!(
            !site.root.join("drop").join(name).exists(),
            "{name} removed"
        );
    }
}
