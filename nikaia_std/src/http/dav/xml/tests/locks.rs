//! `LOCK` bodies as litmus, davfs2 and Finder send them, the refusals, and
//! the lock answers parsed back as neon reads them.

use super::*;
use crate::http::dav::xml::lock::condition;

/// neon 0.32's `ne_lock` body (litmus 0.13 and davfs2 1.6.1), verbatim.
fn neon_lockinfo(scope: &str, owner: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<lockinfo xmlns='DAV:'>\n \
         <lockscope><{scope}/></lockscope>\n<locktype><write/></locktype>\
         <owner>{owner}</owner>\n</lockinfo>\n"
    )
}

/// macOS webdavfs's `network_lock` body, verbatim.
const FINDER: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n\
    <D:lockinfo xmlns:D=\"DAV:\">\n\
    <D:lockscope><D:exclusive/></D:lockscope>\n\
    <D:locktype><D:write/></D:locktype>\n\
    <D:owner>\n<D:href>http://www.apple.com/webdav_fs/</D:href>\n</D:owner>\n\
    </D:lockinfo>\n";

/// A lockinfo with this scope and type markup and an owner's content.
fn body(scope: &str, kind: &str, owner: &str) -> String {
    format!(
        "<D:lockinfo xmlns:D='DAV:'><D:lockscope>{scope}</D:lockscope>\
         <D:locktype>{kind}</D:locktype><D:owner>{owner}</D:owner></D:lockinfo>"
    )
}

fn elements(n: &Node) -> Vec<&Node> {
    match n {
        Node::E(_, _, kids) => kids.iter().filter(|k| matches!(k, Node::E(..))).collect(),
        Node::T(_) => vec![],
    }
}

fn name(n: &Node) -> &str {
    match n {
        Node::E(q, _, _) => {
            assert_eq!(q.ns, DAV, "{q:?}");
            &q.local
        }
        Node::T(_) => panic!("text"),
    }
}

/// A whole body parsed back, or a panic naming it.
fn parsed(doc: &[u8]) -> Node {
    tree(doc).unwrap_or_else(|e| panic!("{e:?}: {}", String::from_utf8_lossy(doc)))
}

/// An owner's content, put back in a `LOCK` answer and parsed: the
/// `DAV:owner` element read back.
fn owner_back(owner: &str) -> Node {
    let a = Active {
        shared: false,
        infinity: false,
        owner: Some(owner),
        timeout: Some(3600),
        token: Some("urn:uuid:1"),
        root: "/r",
    };
    let doc = parsed(&lock_answer(&[a]));
    find(&doc, &QName::dav("owner")).unwrap().clone()
}

// -- lockinfo --

#[test]
fn litmus_lockinfo() {
    for (scope, shared) in [("exclusive", false), ("shared", true)] {
        let info = lockinfo(neon_lockinfo(scope, "litmus test suite").as_bytes()).unwrap();
        assert_eq!(
            info,
            LockInfo {
                shared,
                owner: Some("litmus test suite".into()),
            }
        );
        // neon compares the owner's text content with what it sent.
        assert_eq!(
            text(&owner_back(info.owner.as_deref().unwrap())),
            "litmus test suite"
        );
    }
}

#[test]
fn davfs2_lockinfo() {
    let info = lockinfo(neon_lockinfo("exclusive", "u").as_bytes()).unwrap();
    assert_eq!(
        info,
        LockInfo {
            shared: false,
            owner: Some("u".into()),
        }
    );
}

#[test]
fn finder_lockinfo() {
    let info = lockinfo(FINDER.as_bytes()).unwrap();
    assert!(!info.shared);
    let owner = info.owner.unwrap();
    assert_eq!(
        owner,
        "\n<D:href xmlns=\"\" xmlns:D=\"DAV:\">http://www.apple.com/webdav_fs/</D:href>\n"
    );
    let back = owner_back(&owner);
    let kids = elements(&back);
    assert_eq!(kids.len(), 1);
    assert_eq!(name(kids[0]), "href");
    assert_eq!(text(kids[0]), "http://www.apple.com/webdav_fs/");
    assert_eq!(text(&back), "\nhttp://www.apple.com/webdav_fs/\n");
}

#[test]
fn owner_in_other_namespaces_keeps_them() {
    // A prefix of its own, an attribute in it, escaped text.
    let x = "http://example.com/x";
    let b = format!(
        "<D:lockinfo xmlns:D='DAV:' xmlns:x='{x}'><D:lockscope><D:shared/></D:lockscope>\
         <D:locktype><D:write/></D:locktype>\
         <D:owner><x:person x:id='7'>Ann &amp; Bob &lt;ab@x&gt;</x:person></D:owner></D:lockinfo>"
    );
    let info = lockinfo(b.as_bytes()).unwrap();
    assert!(info.shared);
    let back = owner_back(info.owner.as_deref().unwrap());
    let Node::E(_, _, kids) = &back else {
        unreachable!()
    };
    let [Node::E(person, attrs, _)] = &kids[..] else {
        panic!("{kids:?}")
    };
    assert_eq!(person, &q(x, "person"));
    assert_eq!(attrs, &vec![(q(x, "id"), "7".to_owned())]);
    assert_eq!(text(&back), "Ann & Bob <ab@x>");

    // The default namespace DAV: (neon's, davfs2's form) stays DAV:.
    let b = "<lockinfo xmlns='DAV:'><lockscope><exclusive/></lockscope>\
             <locktype><write/></locktype><owner><href>mailto:u@x</href></owner></lockinfo>";
    let info = lockinfo(b.as_bytes()).unwrap();
    let back = owner_back(info.owner.as_deref().unwrap());
    let kids = elements(&back);
    assert_eq!(name(kids[0]), "href");
    assert_eq!(text(kids[0]), "mailto:u@x");

    // A name in no namespace stays in none inside `D:owner`.
    let info = lockinfo(body("<D:exclusive/>", "<D:write/>", "<who>u</who>").as_bytes()).unwrap();
    let back = owner_back(info.owner.as_deref().unwrap());
    let Node::E(who, _, _) = elements(&back)[0] else {
        unreachable!()
    };
    assert_eq!(who, &q("", "who"));
}

#[test]
fn owner_xml_lang_is_not_kept_its_text_is() {
    let b = "<D:lockinfo xmlns:D='DAV:' xml:lang='fr'><D:lockscope><D:exclusive/></D:lockscope>\
             <D:locktype><D:write/></D:locktype><D:owner xml:lang='de'>Jürgen</D:owner></D:lockinfo>";
    assert_eq!(
        lockinfo(b.as_bytes()).unwrap().owner.as_deref(),
        Some("Jürgen")
    );
    // On an element inside the owner it is content, kept.
    let info = lockinfo(body("<D:exclusive/>", "<D:write/>", "<n xml:lang='de'>J</n>").as_bytes())
        .unwrap();
    assert_eq!(
        info.owner.as_deref(),
        Some("<n xmlns=\"\" xmlns:D=\"DAV:\" xml:lang=\"de\">J</n>")
    );
}

#[test]
fn no_owner_and_empty_owner() {
    let b = "<lockinfo xmlns='DAV:'><lockscope><exclusive/></lockscope>\
             <locktype><write/></locktype></lockinfo>";
    assert_eq!(
        lockinfo(b.as_bytes()),
        Ok(LockInfo {
            shared: false,
            owner: None,
        })
    );
    let b = "<lockinfo xmlns='DAV:'><owner/><locktype><write/></locktype>\
             <lockscope> <shared/> </lockscope></lockinfo>";
    assert_eq!(
        lockinfo(b.as_bytes()),
        Ok(LockInfo {
            shared: true,
            owner: Some(String::new()),
        })
    );
}

#[test]
fn unknown_elements_are_ignored() {
    let b = "<lockinfo xmlns='DAV:' xmlns:x='urn:x'><x:extra><y/></x:extra>\
             <lockscope><exclusive/></lockscope><locktype><write/></locktype>\
             <depth>1</depth></lockinfo>";
    assert_eq!(lockinfo(b.as_bytes()).map(|i| i.shared), Ok(false));
}

#[test]
fn lockinfo_refusals() {
    let w = "<D:write/>";
    let x = "<D:exclusive/>";
    let cases: Vec<(String, &str)> = vec![
        (
            "<D:propfind xmlns:D='DAV:'><D:allprop/></D:propfind>".into(),
            "the root element is not DAV:lockinfo",
        ),
        (
            "<lockinfo><lockscope><exclusive/></lockscope><locktype><write/></locktype></lockinfo>"
                .into(),
            "the root element is not DAV:lockinfo",
        ),
        (
            "<D:lockinfo xmlns:D='DAV:'><D:locktype><D:write/></D:locktype></D:lockinfo>".into(),
            "no DAV:lockscope",
        ),
        (
            "<D:lockinfo xmlns:D='DAV:'><D:lockscope><D:shared/></D:lockscope></D:lockinfo>".into(),
            "no DAV:locktype",
        ),
        (
            body("<D:exclusive/><D:shared/>", w, ""),
            "DAV:lockscope does not hold exactly one element",
        ),
        (
            body("", w, ""),
            "DAV:lockscope does not hold exactly one element",
        ),
        (
            body("exclusive", w, ""),
            "DAV:lockscope does not hold exactly one element",
        ),
        (
            body("<exclusive/>", w, ""),
            "a DAV:lockscope other than DAV:exclusive or DAV:shared",
        ),
        (
            format!(
                "<D:lockinfo xmlns:D='DAV:'><D:lockscope>{x}</D:lockscope>\
                 <D:lockscope><D:shared/></D:lockscope><D:locktype>{w}</D:locktype></D:lockinfo>"
            ),
            "DAV:lockscope given twice",
        ),
        (
            body(x, "<D:read/>", ""),
            "a DAV:locktype other than DAV:write",
        ),
        (
            body(x, "<D:write/><D:read/>", ""),
            "DAV:locktype does not hold exactly one element",
        ),
        (
            body(x, "", ""),
            "DAV:locktype does not hold exactly one element",
        ),
        (
            format!(
                "<D:lockinfo xmlns:D='DAV:'><D:lockscope>{x}</D:lockscope>\
                 <D:locktype>{w}</D:locktype><D:owner>a</D:owner><D:owner>b</D:owner></D:lockinfo>"
            ),
            "DAV:owner given twice",
        ),
        (body(x, w, "<u:x/>"), "an unbound namespace prefix"),
        (String::new(), "no root element"),
    ];
    for (b, why) in cases {
        assert_eq!(lockinfo(b.as_bytes()), Err(Bad(why)), "{b}");
    }
}

#[test]
fn lockinfo_doctype_is_refused() {
    let b = format!(
        "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>{}",
        body("<D:exclusive/>", "<D:write/>", "&e;")
    );
    assert_eq!(lockinfo(b.as_bytes()), Err(Bad("a DOCTYPE")));
    let b = body("<D:exclusive/>", "<D:write/>", "&e;");
    assert_eq!(lockinfo(b.as_bytes()), Err(Bad("an undefined entity")));
}

#[test]
fn lockinfo_deep_nesting_is_refused() {
    // lockinfo, owner, then depth − 2 more.
    let doc = |depth: usize| {
        let inner = "<a>".repeat(depth - 2) + &"</a>".repeat(depth - 2);
        body("<D:exclusive/>", "<D:write/>", &inner)
    };
    assert!(lockinfo(doc(64).as_bytes()).is_ok());
    assert_eq!(
        lockinfo(doc(65).as_bytes()),
        Err(Bad("elements nested too deep"))
    );
}

#[test]
fn owner_past_4_kib_is_refused() {
    let ok = "a".repeat(4 << 10);
    let info = lockinfo(body("<D:exclusive/>", "<D:write/>", &ok).as_bytes()).unwrap();
    assert_eq!(info.owner.unwrap().len(), 4 << 10);
    let long = "a".repeat((4 << 10) + 1);
    assert_eq!(
        lockinfo(body("<D:exclusive/>", "<D:write/>", &long).as_bytes()),
        Err(Bad("DAV:owner longer than 4 KiB"))
    );
    // Counted as written again: 1 000 `&` are 5 000 bytes.
    let amps = "&amp;".repeat(1_000);
    assert_eq!(
        lockinfo(body("<D:exclusive/>", "<D:write/>", &amps).as_bytes()),
        Err(Bad("DAV:owner longer than 4 KiB"))
    );
}

// -- the answers --

#[test]
fn lock_answer_reads_back_as_neon_needs() {
    let token = "urn:uuid:0c2f6a4e-2b1d-4f7e-9a53-5d9b1c0e8f21";
    let locks = [
        Active {
            shared: false,
            infinity: true,
            owner: Some("litmus test suite"),
            timeout: Some(3600),
            token: Some(token),
            root: "/litmus/lockcoll/",
        },
        Active {
            shared: true,
            infinity: false,
            owner: None,
            timeout: None,
            token: None,
            root: "/litmus/lockcoll/",
        },
    ];
    let bytes = lock_answer(&locks);
    assert!(
        bytes.starts_with(b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:prop xmlns:D=\"DAV:\">")
    );
    let doc = parsed(&bytes);
    assert_eq!(name(&doc), "prop");
    let discovery = elements(&doc);
    assert_eq!(discovery.len(), 1);
    assert_eq!(name(discovery[0]), "lockdiscovery");
    let actives = elements(discovery[0]);
    assert_eq!(actives.len(), 2);

    // The first: every child, in the DTD's order.
    let kids = elements(actives[0]);
    let names: Vec<&str> = kids.iter().map(|k| name(k)).collect();
    assert_eq!(
        names,
        [
            "lockscope",
            "locktype",
            "depth",
            "owner",
            "timeout",
            "locktoken",
            "lockroot"
        ]
    );
    assert_eq!(name(elements(kids[0])[0]), "exclusive");
    assert_eq!(name(elements(kids[1])[0]), "write");
    assert_eq!(text(kids[2]), "infinity");
    assert_eq!(text(kids[3]), "litmus test suite");
    assert_eq!(text(kids[4]), "Second-3600");
    let href = elements(kids[5]);
    assert_eq!(name(href[0]), "href");
    assert_eq!(text(href[0]), token, "equal to the Lock-Token header's");
    assert_eq!(text(elements(kids[6])[0]), "/litmus/lockcoll/");

    // The second: no owner, no token shown.
    let kids = elements(actives[1]);
    let names: Vec<&str> = kids.iter().map(|k| name(k)).collect();
    assert_eq!(
        names,
        ["lockscope", "locktype", "depth", "timeout", "lockroot"]
    );
    assert_eq!(name(elements(kids[0])[0]), "shared");
    assert_eq!(text(kids[2]), "0");
    assert_eq!(text(kids[3]), "Infinite");
}

#[test]
fn activelock_escapes_hrefs_and_caps_the_timeout() {
    let mut s = String::from("<D:lockdiscovery xmlns:D=\"DAV:\">");
    activelock(
        &mut s,
        &Active {
            shared: false,
            infinity: false,
            owner: None,
            timeout: Some(u64::MAX),
            token: Some("urn:x&<y>"),
            root: "/a&b/<c>/\r",
        },
    );
    s.push_str("</D:lockdiscovery>");
    let doc = parsed(s.as_bytes());
    assert_eq!(
        text(find(&doc, &QName::dav("lockroot")).unwrap()),
        "/a&b/<c>/\r"
    );
    assert_eq!(
        text(find(&doc, &QName::dav("locktoken")).unwrap()),
        "urn:x&<y>"
    );
    assert_eq!(
        text(find(&doc, &QName::dav("timeout")).unwrap()),
        "Second-4294967295"
    );
}

#[test]
fn supportedlock_and_lockdiscovery_in_a_propfind_answer() {
    let mut active = String::new();
    activelock(
        &mut active,
        &Active {
            shared: true,
            infinity: false,
            owner: Some("u"),
            timeout: Some(1),
            token: None,
            root: "/f",
        },
    );
    let (sl, ld) = (QName::dav("supportedlock"), QName::dav("lockdiscovery"));
    let props = [
        Prop {
            name: &sl,
            content: Content::Markup(SUPPORTED_LOCK),
        },
        Prop {
            name: &ld,
            content: Content::Markup(&active),
        },
    ];
    let mut m = Multistatus::begin();
    m.response("/f", &[(200, &props)]);
    m.end();
    let doc = parsed(&m.out);
    let entries = elements(find(&doc, &sl).unwrap());
    assert_eq!(entries.len(), 2);
    for (entry, scope) in entries.iter().zip(["exclusive", "shared"]) {
        assert_eq!(name(entry), "lockentry");
        let kids = elements(entry);
        assert_eq!(name(kids[0]), "lockscope");
        assert_eq!(name(elements(kids[0])[0]), scope);
        assert_eq!(name(kids[1]), "locktype");
        assert_eq!(name(elements(kids[1])[0]), "write");
    }
    let discovery = find(&doc, &ld).unwrap();
    assert_eq!(name(elements(discovery)[0]), "activelock");
    assert_eq!(text(find(discovery, &QName::dav("owner")).unwrap()), "u");
}

#[test]
fn error_bodies_naming_hrefs() {
    let b = error_hrefs("lock-token-submitted", &["/a&b/", "/c"]);
    assert_eq!(
        b,
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:error xmlns:D=\"DAV:\">\
         <D:lock-token-submitted><D:href>/a&amp;b/</D:href><D:href>/c</D:href>\
         </D:lock-token-submitted></D:error>"
    );
    let doc = parsed(b.as_bytes());
    let cond = elements(&doc)[0];
    assert_eq!(name(cond), "lock-token-submitted");
    let hrefs: Vec<String> = elements(cond).into_iter().map(text).collect();
    assert_eq!(hrefs, ["/a&b/", "/c"]);

    let b = error_hrefs("lock-token-matches-request-uri", &[]);
    let doc = parsed(b.as_bytes());
    let cond = elements(&doc);
    assert_eq!(cond.len(), 1);
    assert_eq!(name(cond[0]), "lock-token-matches-request-uri");
    assert!(elements(cond[0]).is_empty());
}

#[test]
fn multistatus_member_refused_423_names_the_lock_root() {
    let mut error = String::new();
    condition(&mut error, "lock-token-submitted", &["/dir/"]);
    let mut m = Multistatus::begin();
    m.status_error_markup("/dir/f", 423, &error);
    m.status_error("/dir/", 424, None);
    m.status_error("/x", 403, Some("propfind-finite-depth"));
    m.end();
    let doc = parsed(&m.out);
    let responses = elements(&doc);
    assert_eq!(responses.len(), 3);
    let kids = elements(responses[0]);
    assert_eq!(text(kids[0]), "/dir/f");
    assert_eq!(text(kids[1]), "HTTP/1.1 423 Locked");
    assert_eq!(name(kids[2]), "error");
    let cond = elements(kids[2])[0];
    assert_eq!(name(cond), "lock-token-submitted");
    assert_eq!(text(elements(cond)[0]), "/dir/");
    // The forms there were keep their bytes.
    let out = String::from_utf8(m.out).unwrap();
    assert!(out.contains(
        "<D:response><D:href>/dir/</D:href><D:status>HTTP/1.1 424 Failed Dependency</D:status></D:response>"
    ));
    assert!(out.contains(
        "<D:status>HTTP/1.1 403 Forbidden</D:status><D:error><D:propfind-finite-depth/></D:error>"
    ));
}
