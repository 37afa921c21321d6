//! Hostile XML in PROPPATCH and PROPFIND bodies: each 400 (413 past the
//! bound), no property written, no entity expanded, no file read.

use super::*;

const SET_OPEN: &str =
    r#"<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:z"><D:set><D:prop>"#;
const SET_CLOSE: &str = "</D:prop></D:set></D:propertyupdate>";

/// The bodies, each with what it is.
fn bodies() -> Vec<(&'static str, Vec<u8>)> {
    let laughs = {
        let mut s =
            String::from("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n<!ENTITY lol \"lol\">\n");
        for i in 1..10 {
            let prev = if i == 1 {
                "lol".to_owned()
            } else {
                format!("lol{}", i - 1)
            };
            s.push_str(&format!(
                "<!ENTITY lol{i} \"{}\">\n",
                format!("&{prev};").repeat(10)
            ));
        }
        s.push_str("]>\n");
        s.push_str(&format!(
            "<D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:z\"><D:set><D:prop><Z:p>&lol9;</Z:p>{SET_CLOSE}"
        ));
        s
    };
    let external = format!(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>\n\
         <D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:z\"><D:set><D:prop><Z:p>&e;</Z:p>{SET_CLOSE}"
    );
    let parameter =
        "<?xml version=\"1.0\"?>\n<!DOCTYPE x [<!ENTITY % p SYSTEM \"file:///etc/passwd\"> %p;]>\n\
         <D:propertyupdate xmlns:D=\"DAV:\"/>"
            .to_owned();
    let undefined = format!("{SET_OPEN}<Z:p>&nothere;</Z:p>{SET_CLOSE}");
    let empty_prefix = format!(
        "<?xml version=\"1.0\"?><D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop>\
         <x:p xmlns:x=\"\">v</x:p>{SET_CLOSE}"
    );
    let unbound = format!("{SET_OPEN}<Q:p>v</Q:p>{SET_CLOSE}");
    let unclosed = format!("{SET_OPEN}<Z:p>v</Z:p></D:prop></D:set>");
    let mismatched = format!("{SET_OPEN}<Z:p>v</Z:q>{SET_CLOSE}");
    let two_roots = format!("{SET_OPEN}<Z:p>v</Z:p>{SET_CLOSE}<D:x/>");
    let nested = format!(
        "{SET_OPEN}<Z:p>{}{}</Z:p>{SET_CLOSE}",
        "<Z:n>".repeat(1000),
        "</Z:n>".repeat(1000)
    );
    let huge = {
        let mut s = String::from(SET_OPEN);
        let mut i = 0;
        while s.len() < 2 << 20 {
            s.push_str(&format!("<Z:p{i}>{}</Z:p{i}>", "v".repeat(1000)));
            i += 1;
        }
        s.push_str(SET_CLOSE);
        s
    };
    let bad_utf8 = {
        let mut b = format!("{SET_OPEN}<Z:p>").into_bytes();
        b.extend_from_slice(b"\xff\xfe");
        b.extend_from_slice(format!("</Z:p>{SET_CLOSE}").as_bytes());
        b
    };
    let nul = format!("{SET_OPEN}<Z:p>a\u{0}b</Z:p>{SET_CLOSE}");
    vec![
        ("billion laughs", laughs.into_bytes()),
        ("an external entity", external.into_bytes()),
        ("a parameter entity", parameter.into_bytes()),
        ("an undefined entity", undefined.into_bytes()),
        ("xmlns:x=\"\"", empty_prefix.into_bytes()),
        ("an unbound prefix", unbound.into_bytes()),
        ("an unclosed root", unclosed.into_bytes()),
        ("mismatched tags", mismatched.into_bytes()),
        ("two roots", two_roots.into_bytes()),
        ("1000 levels deep", nested.into_bytes()),
        ("2 MiB", huge.into_bytes()),
        ("not UTF-8", bad_utf8),
        ("a NUL", nul.into_bytes()),
    ]
}

#[test]
fn hostile_xml_is_refused_and_writes_no_property() {
    let d = Drive::new("xml", RULES);
    let running = d.serve();
    let addr = running.local_addr();
    let target = d.drive().join("a.txt");
    // The extended attributes work here (a user xattr set and read by
    // hand), so "none written" means something.
    rustix::fs::setxattr(&target, "user.probe", b"1", rustix::fs::XattrFlags::empty())
        .expect("user extended attributes on the test's file system");
    rustix::fs::removexattr(&target, "user.probe").unwrap();
    let mut problems = Vec::new();
    for (label, body) in bodies() {
        for method in ["PROPPATCH", "PROPFIND"] {
            let before = snapshot(d.path());
            let mut q = req(method, "/drive/a.txt").body(&body);
            if method == "PROPFIND" {
                q = q.h("Depth", "0");
            }
            let reply = q.send(addr);
            let after = snapshot(d.path());
            let want: &[u16] = if label == "2 MiB" { &[413] } else { &[400] };
            let line = format!("{method} with {label}: {}", reply.status);
            eprintln!("{line}");
            if !want.contains(&reply.status) {
                problems.push(format!("{line}, want {want:?}: {}", reply.text()));
            }
            let changed = changes(&before, &after);
            if !changed.is_empty() {
                problems.push(format!("{line}: changed {changed:?}"));
            }
            if dead(&target).is_some() {
                problems.push(format!("{line}: a dead property was written"));
            }
            let text = reply.text();
            if text.contains("root:") || text.contains("lollol") {
                problems.push(format!("{line}: an entity was expanded: {text}"));
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
