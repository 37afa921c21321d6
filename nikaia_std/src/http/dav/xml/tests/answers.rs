//! PROPPATCH values in, and the multistatus they are written back in.

use super::*;

// -- PROPPATCH --

#[test]
fn litmus_propset() {
    let values: Vec<String> = (0..10).map(|n| format!("value{n}")).collect();
    let names: Vec<String> = (0..10).map(|n| format!("prop{n}")).collect();
    let items: Vec<_> = (0..10)
        .map(|n| (NS, names[n].as_str(), Some(values[n].as_str())))
        .collect();
    let changes = proppatch(neon_proppatch(&items).as_bytes()).unwrap();
    let expect: Vec<Change> = (0..10)
        .map(|n| Change::Set(q(NS, &names[n]), Value(values[n].clone(), None)))
        .collect();
    assert_eq!(changes, expect);
    // propdeletes: remove prop0..4.
    let items: Vec<_> = (0..5).map(|n| (NS, names[n].as_str(), None)).collect();
    let changes = proppatch(neon_proppatch(&items).as_bytes()).unwrap();
    assert_eq!(
        changes,
        (0..5)
            .map(|n| Change::Remove(q(NS, &names[n])))
            .collect::<Vec<_>>()
    );
}

#[test]
fn litmus_propnullns() {
    let body = "<?xml version=\"1.0\" encoding=\"utf-8\" ?>\
        <propertyupdate xmlns=\"DAV:\"><set><prop>\
        <nonamespace xmlns=\"\">randomvalue</nonamespace>\
        </prop></set></propertyupdate>";
    let props = sets(proppatch(body.as_bytes()).unwrap());
    assert_eq!(
        props,
        vec![(q("", "nonamespace"), Value("randomvalue".into(), None))]
    );
    // Read back: the answer names it with no namespace, and its value.
    let doc = answer(&props);
    let prop = find(&doc, &q("", "nonamespace")).expect("in the answer");
    assert_eq!(text(prop), "randomvalue");
}

#[test]
fn litmus_prophighunicode() {
    let body = format!(
        "{DECL}<propertyupdate xmlns='DAV:'><set><prop>\
         <high-unicode xmlns='{NS}'>&#65536;</high-unicode>\
         </prop></set></propertyupdate>"
    );
    let props = sets(proppatch(body.as_bytes()).unwrap());
    assert_eq!(props[0].0, q(NS, "high-unicode"));
    assert_eq!(props[0].1 .0.as_bytes(), b"\xF0\x90\x80\x80");
    let doc = answer(&props);
    let prop = find(&doc, &q(NS, "high-unicode")).unwrap();
    assert_eq!(text(prop).as_bytes(), b"\xF0\x90\x80\x80");
    // Hexadecimal references too.
    let body = "<propertyupdate xmlns='DAV:'><set><prop><x>&#x10000;&#x41;&#66;</x></prop></set></propertyupdate>";
    assert_eq!(
        sets(proppatch(body.as_bytes()).unwrap())[0].1 .0,
        "\u{10000}AB"
    );
}

#[test]
fn litmus_propremoveset_and_propsetremove() {
    let body = format!(
        "{DECL}<propertyupdate xmlns='DAV:'>\
         <remove><prop><removeset xmlns='{NS}'/></prop></remove>\
         <set><prop><removeset xmlns='{NS}'>x</removeset></prop></set>\
         <set><prop><removeset xmlns='{NS}'>y</removeset></prop></set>\
         </propertyupdate>"
    );
    let changes = proppatch(body.as_bytes()).unwrap();
    let name = q(NS, "removeset");
    assert_eq!(
        changes,
        vec![
            Change::Remove(name.clone()),
            Change::Set(name.clone(), Value("x".into(), None)),
            Change::Set(name.clone(), Value("y".into(), None)),
        ]
    );
    let mut props = vec![];
    crate::http::dav::dead::apply(&mut props, &changes);
    assert_eq!(props, vec![(name.clone(), Value("y".into(), None))]);

    let body = format!(
        "{DECL}<propertyupdate xmlns='DAV:'>\
         <set><prop><removeset xmlns='{NS}'>x</removeset></prop></set>\
         <remove><prop><removeset xmlns='{NS}'/></prop></remove>\
         </propertyupdate>"
    );
    let changes = proppatch(body.as_bytes()).unwrap();
    assert_eq!(
        changes,
        vec![
            Change::Set(name.clone(), Value("x".into(), None)),
            Change::Remove(name),
        ]
    );
    crate::http::dav::dead::apply(&mut props, &changes);
    assert_eq!(props, vec![]);
}

#[test]
fn litmus_propvalnspace() {
    let body = format!(
        "{DECL}<propertyupdate xmlns='DAV:'><set><prop>\
         <t:valnspace xmlns:t='{NS}'><foo xmlns='http://bar'/></t:valnspace>\
         </prop></set></propertyupdate>"
    );
    let props = sets(proppatch(body.as_bytes()).unwrap());
    assert_eq!(props[0].0, q(NS, "valnspace"));
    // Every namespace in scope where the value was, declared on its element.
    assert_eq!(
        props[0].1 .0,
        format!("<foo xmlns=\"http://bar\" xmlns:t=\"{NS}\"/>")
    );
    // propwformed: the answer holding it is well-formed, and foo is still
    // {http://bar}foo inside {NS}valnspace.
    let doc = answer(&props);
    let prop = find(&doc, &q(NS, "valnspace")).unwrap();
    let Node::E(_, _, kids) = prop else {
        unreachable!()
    };
    assert_eq!(kids, &vec![Node::E(q("http://bar", "foo"), vec![], vec![])]);
}

#[test]
fn litmus_propmanyns() {
    let manyns = [
        "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    ]
    .map(|n| format!("http://example.com/{n}"));
    let items: Vec<_> = manyns
        .iter()
        .map(|ns| (ns.as_str(), "somename", Some("manynsvalue")))
        .collect();
    let props = sets(proppatch(neon_proppatch(&items).as_bytes()).unwrap());
    assert_eq!(props.len(), 10);
    let doc = answer(&props);
    for ns in &manyns {
        let prop = find(&doc, &q(ns, "somename")).unwrap();
        assert_eq!(text(prop), "manynsvalue");
    }
}

#[test]
fn values_keep_their_content() {
    // Mixed content, whitespace, attributes (namespaced ones too), escapes,
    // CDATA, prefixes declared on ancestors, comments dropped.
    let body = "<D:propertyupdate xmlns:D='DAV:' xmlns:z='urn:z'><D:set><D:prop>\
        <z:p xmlns:y='urn:y'> a &amp; b <y:e y:k='1' k='&quot;&lt;&#9;'>in<![CDATA[<x>]]>\
        <!-- gone --><n/></y:e>\n tail </z:p></D:prop></D:set></D:propertyupdate>";
    let props = sets(proppatch(body.as_bytes()).unwrap());
    assert_eq!(props[0].0, q("urn:z", "p"));
    let v = &props[0].1 .0;
    assert_eq!(
        v,
        " a &amp; b <y:e xmlns=\"\" xmlns:D=\"DAV:\" xmlns:y=\"urn:y\" xmlns:z=\"urn:z\" \
         y:k=\"1\" k=\"&quot;&lt;&#9;\">in&lt;x&gt;<n/></y:e>\n tail "
    );
    assert!(well_formed_value(&props[0].1));
    // In an answer, each name resolves as it did in the request.
    let doc = answer(&props);
    let Some(Node::E(_, attrs, kids)) = find(&doc, &q("urn:y", "e")) else {
        panic!()
    };
    assert_eq!(
        attrs,
        &vec![(q("urn:y", "k"), "1".into()), (q("", "k"), "\"<\t".into())]
    );
    assert_eq!(kids[0], Node::T("in<x>".into()));
    assert_eq!(kids[1], Node::E(q("", "n"), vec![], vec![]));
}

// -- Multistatus --

#[test]
fn multistatus_is_well_formed_for_any_name() {
    let names = [
        QName::dav("getcontentlength"),
        q("", "plain"),
        q("urn:a&b\"<c>", "x"),
        q(NS, "D"),
        q("http://p", "p"),
    ];
    let value = Value(
        "<p:v xmlns=\"\" xmlns:p=\"urn:other\">1</p:v><w/>".into(),
        None,
    );
    let props: Vec<Prop<'_>> = vec![
        Prop {
            name: &names[0],
            content: Content::Text("12 & <3>"),
        },
        Prop {
            name: &names[1],
            content: Content::Empty,
        },
        Prop {
            name: &names[2],
            content: Content::Raw(&value),
        },
        Prop {
            name: &names[3],
            content: Content::Collection,
        },
        Prop {
            name: &names[4],
            content: Content::Text("x"),
        },
    ];
    let missing = [Prop {
        name: &names[1],
        content: Content::Empty,
    }];
    // Streamed: the caller takes the bytes after each piece.
    let mut m = Multistatus::begin();
    let mut out = std::mem::take(&mut m.out);
    m.response("/a%20b/&c", &[(200, &props), (404, &missing)]);
    out.append(&mut m.out);
    m.status("/gone", 424);
    out.append(&mut m.out);
    m.status_error("/deep", 403, Some("propfind-finite-depth"));
    m.end();
    out.append(&mut m.out);
    let s = String::from_utf8(out.clone()).unwrap();
    assert!(
        s.starts_with("<?xml version=\"1.0\" encoding=\"utf-8\"?><D:multistatus xmlns:D=\"DAV:\">")
    );
    assert!(s.contains("<D:status>HTTP/1.1 200 OK</D:status>"));
    assert!(s.contains("<D:status>HTTP/1.1 404 Not Found</D:status>"));
    assert!(s.contains("<D:status>HTTP/1.1 424 Failed Dependency</D:status>"));
    assert!(s.ends_with("</D:multistatus>"));
    let doc = tree(&out).unwrap();
    let Node::E(root, _, responses) = &doc else {
        panic!()
    };
    assert_eq!(root, &QName::dav("multistatus"));
    assert_eq!(responses.len(), 3);
    assert_eq!(text(find(&doc, &QName::dav("href")).unwrap()), "/a%20b/&c");
    assert_eq!(text(find(&doc, &names[0]).unwrap()), "12 & <3>");
    assert_eq!(
        find(&doc, &names[1]),
        Some(&Node::E(q("", "plain"), vec![], vec![]))
    );
    let Some(Node::E(_, _, kids)) = find(&doc, &names[2]) else {
        panic!()
    };
    assert_eq!(
        kids[0],
        Node::E(q("urn:other", "v"), vec![], vec![Node::T("1".into())])
    );
    assert_eq!(kids[1], Node::E(q("", "w"), vec![], vec![]));
    let Some(Node::E(_, _, kids)) = find(&doc, &names[3]) else {
        panic!()
    };
    assert_eq!(
        kids,
        &vec![Node::E(QName::dav("collection"), vec![], vec![])]
    );
    assert!(find(&doc, &names[4]).is_some());
    assert!(find(&doc, &QName::dav("propfind-finite-depth")).is_some());
}

#[test]
fn error_body_is_well_formed() {
    let body = error_body("cannot-modify-protected-property");
    assert_eq!(
        body,
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><D:error xmlns:D=\"DAV:\">\
         <D:cannot-modify-protected-property/></D:error>"
    );
    let doc = tree(body.as_bytes()).unwrap();
    assert!(find(&doc, &QName::dav("cannot-modify-protected-property")).is_some());
}

#[test]
fn every_stored_value_writes_back_well_formed() {
    // Whatever PROPPATCH accepted, its value written into an answer parses
    // and means the same.
    let bodies = [
        "<a:x xmlns:a='u'><b:y xmlns:b='v'><c/></b:y></a:x>",
        "<x xmlns='u'><y/><z xmlns=''><w/></z></x>",
        "text only, with &amp; and &lt;",
        "<x xmlns:D='u'><D:y/></x>",
        "",
    ];
    for v in bodies {
        let body = format!(
            "<D:propertyupdate xmlns:D='DAV:'><D:set><D:prop><p xmlns='urn:p'>{v}</p>\
             </D:prop></D:set></D:propertyupdate>"
        );
        let props = sets(proppatch(body.as_bytes()).unwrap());
        assert!(well_formed_value(&props[0].1), "{v}");
        let doc = answer(&props);
        // The same tree as the value read in its own request.
        let alone = tree(format!("<p xmlns='urn:p'>{v}</p>").as_bytes()).unwrap();
        assert_eq!(find(&doc, &q("urn:p", "p")), Some(&alone), "{v}");
    }
}

#[test]
fn each_top_element_of_a_value_declares_the_scope_around_it() {
    // The first element rebinds `a`; the second must still see the outer one.
    let body = "<D:propertyupdate xmlns:D='DAV:' xmlns:a='urn:outer'><D:set><D:prop>\
        <p xmlns='urn:p'><a:x xmlns:a='urn:inner'/><a:y/>t<z/></p>\
        </D:prop></D:set></D:propertyupdate>";
    let props = sets(proppatch(body.as_bytes()).unwrap());
    let doc = answer(&props);
    let Some(Node::E(_, _, kids)) = find(&doc, &q("urn:p", "p")) else {
        panic!()
    };
    assert_eq!(
        kids,
        &vec![
            Node::E(q("urn:inner", "x"), vec![], vec![]),
            Node::E(q("urn:outer", "y"), vec![], vec![]),
            Node::T("t".into()),
            Node::E(q("urn:p", "z"), vec![], vec![]),
        ]
    );
}

#[test]
fn values_cannot_outgrow_their_bound() {
    // 200 declarations in scope, repeated on each of thousands of top
    // elements, would be hundreds of MiB: refused past 1 MiB.
    let decls: String = (0..200).map(|i| format!(" xmlns:n{i}='urn:{i}'")).collect();
    let body = format!(
        "<D:propertyupdate xmlns:D='DAV:'{decls}><D:set><D:prop><p>{}</p>\
         </D:prop></D:set></D:propertyupdate>",
        "<a/>".repeat(50_000)
    );
    assert_eq!(
        proppatch(body.as_bytes()),
        Err(Bad("the property values are too large"))
    );
    // Many small properties are fine.
    let props: String = (0..20_000).map(|i| format!("<p{i}>v</p{i}>")).collect();
    let body = format!(
        "<D:propertyupdate xmlns:D='DAV:'><D:set><D:prop>{props}</D:prop></D:set></D:propertyupdate>"
    );
    let changes = proppatch(body.as_bytes()).unwrap();
    assert_eq!(changes.len(), 20_000);
    let mut set = vec![];
    crate::http::dav::dead::apply(&mut set, &changes);
    assert_eq!(set.len(), 20_000);
}
