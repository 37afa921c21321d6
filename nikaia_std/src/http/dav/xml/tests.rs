//! The bodies litmus 0.13's props suite sends (verbatim, or as neon's
//! `ne_proppatch` builds them), the attacks, and the answers parsed back.

use super::read::{Ev, Reader};
use super::*;

const NS: &str = "http://example.com/neon/litmus/";
const DECL: &str = "<?xml version=\"1.0\" encoding=\"utf-8\" ?>";

fn q(ns: &str, local: &str) -> QName {
    QName {
        ns: ns.into(),
        local: local.into(),
    }
}

/// A PROPPATCH body as neon 0.32's `ne_proppatch` writes it.
fn neon_proppatch(items: &[(&str, &str, Option<&str>)]) -> String {
    let mut body = format!("{DECL}\n<D:propertyupdate xmlns:D=\"DAV:\">");
    for (ns, name, value) in items {
        let elm = if value.is_some() { "set" } else { "remove" };
        body += &format!(
            "<D:{elm}><D:prop><{name} xmlns=\"{ns}\">{}",
            value.unwrap_or("")
        );
        body += &format!("</{name}></D:prop></D:{elm}>\n");
    }
    body + "</D:propertyupdate>\n"
}

/// A parsed document, for checking what the writer wrote.
#[derive(Debug, PartialEq)]
enum Node {
    E(QName, Vec<(QName, String)>, Vec<Node>),
    T(String),
}

/// Parses `doc` with the strict reader (quick-xml under it): Err if it is
/// not well-formed or breaks a namespace rule.
fn tree(doc: &[u8]) -> Result<Node, Bad> {
    let mut r = Reader::new(doc)?;
    let mut stack: Vec<Node> = vec![Node::E(q("", ""), vec![], vec![])];
    while let Some(ev) = r.next()? {
        match ev {
            Ev::Start(e) => {
                let attrs = e.attrs.into_iter().map(|a| (a.name, a.value)).collect();
                stack.push(Node::E(e.name, attrs, vec![]));
            }
            Ev::End => {
                let done = stack.pop().unwrap();
                let Some(Node::E(_, _, kids)) = stack.last_mut() else {
                    unreachable!()
                };
                kids.push(done);
            }
            Ev::Text(t) => {
                let Some(Node::E(_, _, kids)) = stack.last_mut() else {
                    unreachable!()
                };
                match kids.last_mut() {
                    Some(Node::T(s)) => s.push_str(&t),
                    _ => kids.push(Node::T(t)),
                }
            }
        }
    }
    let Some(Node::E(_, _, mut kids)) = stack.pop() else {
        unreachable!()
    };
    Ok(kids.pop().unwrap())
}

/// The first element named `name` in document order.
fn find<'a>(n: &'a Node, name: &QName) -> Option<&'a Node> {
    match n {
        Node::E(q, _, kids) => {
            if q == name {
                return Some(n);
            }
            kids.iter().find_map(|k| find(k, name))
        }
        Node::T(_) => None,
    }
}

fn text(n: &Node) -> String {
    match n {
        Node::T(t) => t.clone(),
        Node::E(_, _, kids) => kids.iter().map(text).collect(),
    }
}

/// A one-response multistatus with these dead properties, parsed back.
fn answer(props: &[(QName, Value)]) -> Node {
    let list: Vec<Prop<'_>> = props
        .iter()
        .map(|(name, v)| Prop {
            name,
            content: Content::Raw(v),
        })
        .collect();
    let mut m = Multistatus::begin();
    m.response("/litmus/prop", &[(200, &list)]);
    m.end();
    tree(&m.out).unwrap_or_else(|e| panic!("{e:?}: {}", String::from_utf8_lossy(&m.out)))
}

fn sets(changes: Vec<Change>) -> Vec<(QName, Value)> {
    changes
        .into_iter()
        .map(|c| match c {
            Change::Set(n, v) => (n, v),
            Change::Remove(n) => panic!("remove {n:?}"),
        })
        .collect()
}

// -- PROPFIND --

#[test]
fn propfind_empty_body_is_allprop() {
    for body in [&b""[..], b"  \r\n\t"] {
        assert_eq!(propfind(body), Ok(Find::AllProp { include: vec![] }));
    }
}

#[test]
fn propfind_forms() {
    let body = format!(
        "{DECL}<D:propfind xmlns:D=\"DAV:\"><D:prop><D:getcontentlength/>\
         <D:getlastmodified/><D:displayname/><D:resourcetype/>\
         <foo xmlns=\"{NS}\"/><bar xmlns=\"{NS}\"/></D:prop></D:propfind>"
    );
    let expect = [
        "getcontentlength",
        "getlastmodified",
        "displayname",
        "resourcetype",
    ]
    .iter()
    .map(|l| QName::dav(l))
    .chain([q(NS, "foo"), q(NS, "bar")])
    .collect();
    assert_eq!(propfind(body.as_bytes()), Ok(Find::Prop(expect)));
    assert_eq!(
        propfind(b"<propfind xmlns='DAV:'><propname/></propfind>"),
        Ok(Find::PropName)
    );
    assert_eq!(
        propfind(b"<propfind xmlns='DAV:'><prop/></propfind>"),
        Ok(Find::Prop(vec![]))
    );
    assert_eq!(
        propfind(b"<propfind xmlns='DAV:'><prop><a/><a></a></prop></propfind>"),
        Ok(Find::Prop(vec![QName::dav("a")]))
    );
    assert_eq!(
        propfind(
            b"<D:propfind xmlns:D='DAV:'><D:allprop/><D:include><x:q xmlns:x='u'/>\
              <D:supportedlock/></D:include></D:propfind>"
        ),
        Ok(Find::AllProp {
            include: vec![q("u", "q"), QName::dav("supportedlock")]
        })
    );
    // A property element with content of its own in a PROPFIND is ignored.
    assert_eq!(
        propfind(b"<propfind xmlns='DAV:'><prop><a>text<b/></a></prop></propfind>"),
        Ok(Find::Prop(vec![QName::dav("a")]))
    );
}

#[test]
fn propfind_unknown_elements_are_ignored() {
    // litmus propextended, verbatim.
    let body = format!("{DECL}<propfind xmlns=\"DAV:\"><foobar/><allprop/></propfind>");
    assert_eq!(
        propfind(body.as_bytes()),
        Ok(Find::AllProp { include: vec![] })
    );
    assert_eq!(
        propfind(b"<propfind xmlns='DAV:'><x:y xmlns:x='u'><prop/></x:y><propname/></propfind>"),
        Ok(Find::PropName)
    );
}

#[test]
fn propfind_refusals() {
    let bad: &[&[u8]] = &[
        // litmus propfind_invalid, verbatim.
        b"<foo>",
        // litmus propfind_invalid2, verbatim.
        b"<?xml version=\"1.0\" encoding=\"utf-8\" ?><D:propfind xmlns:D=\"DAV:\">\
          <D:prop><bar:foo xmlns:bar=\"\"/></D:prop></D:propfind>",
        // Well-formed, but not a propfind.
        b"<foo/>",
        b"<propfind/>",
        b"<propfind xmlns='DAV:'/>",
        b"<propfind xmlns='DAV:'><allprop/><propname/></propfind>",
        b"<propfind xmlns='DAV:'><prop/><include/></propfind>",
        b"<propfind xmlns='DAV:'><allprop/><include/><include/></propfind>",
    ];
    for body in bad {
        assert!(propfind(body).is_err(), "{}", String::from_utf8_lossy(body));
    }
    assert_eq!(
        propfind(
            b"<D:propfind xmlns:D=\"DAV:\"><D:prop><bar:foo xmlns:bar=\"\"/></D:prop></D:propfind>"
        ),
        Err(Bad("an empty prefixed namespace declaration"))
    );
    assert_eq!(
        propfind(b"<propfind xmlns='DAV:'><allprop/>"),
        Err(Bad("an element is not closed"))
    );
}

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
        .map(|n| Change::Set(q(NS, &names[n]), Value(values[n].clone())))
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
        vec![(q("", "nonamespace"), Value("randomvalue".into()))]
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
            Change::Set(name.clone(), Value("x".into())),
            Change::Set(name.clone(), Value("y".into())),
        ]
    );
    let mut props = vec![];
    super::super::dead::apply(&mut props, &changes);
    assert_eq!(props, vec![(name.clone(), Value("y".into()))]);

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
            Change::Set(name.clone(), Value("x".into())),
            Change::Remove(name),
        ]
    );
    super::super::dead::apply(&mut props, &changes);
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

#[test]
fn proppatch_refusals() {
    let bad: &[&[u8]] = &[
        b"",
        b"<propfind xmlns='DAV:'/>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x></y></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x>&foo;</x></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x a='&foo;'/></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x>&#0;</x></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x>&#1;</x></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x>\x01</x></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x a='1' a='2'/></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x xmlns:a='u' xmlns:b='u' a:k='' b:k=''/>\
          </prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x a:k=''/></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x xmlns:xmlns='u'/></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x xmlns:xml='u'/></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><x a='<'/></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><1x/></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'><set><prop><a:b:c xmlns:a='u'/></prop></set></propertyupdate>",
        b"<propertyupdate xmlns='DAV:'/><propertyupdate xmlns='DAV:'/>",
        b"<propertyupdate xmlns='DAV:'/>garbage",
        b"garbage<propertyupdate xmlns='DAV:'/>",
        b"<propertyupdate xmlns='DAV:'/>&amp;",
        b"<propertyupdate xmlns='DAV:'/><?xml version='1.0'?>",
        b" <?xml version='1.0'?><propertyupdate xmlns='DAV:'/>",
        b"<?xml version='1.0' encoding='ISO-8859-1'?><propertyupdate xmlns='DAV:'/>",
        b"<propertyupdate xmlns='DAV:'>\xff</propertyupdate>",
        b"<propertyupdate xmlns='DAV:'></propertyupdate></x>",
    ];
    for body in bad {
        assert!(
            proppatch(body).is_err(),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    // Comments, processing instructions and a byte order mark are fine.
    let ok = b"\xEF\xBB\xBF<?xml version='1.0' encoding='UTF-8'?><!-- c --><?pi x?>\
        <propertyupdate xmlns='DAV:'><set><prop><x xml:lang='en'>v</x></prop></set></propertyupdate>\n<!-- c -->";
    assert_eq!(
        proppatch(ok),
        Ok(vec![Change::Set(QName::dav("x"), Value("v".into()))])
    );
}

// -- Attacks --

#[test]
fn billion_laughs_is_refused() {
    let body = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n\
        <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n\
        <!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">\n\
        <!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">\n]>\n\
        <propfind xmlns=\"DAV:\"><prop><x>&lol3;</x></prop></propfind>";
    assert_eq!(propfind(body.as_bytes()), Err(Bad("a DOCTYPE")));
    assert_eq!(proppatch(body.as_bytes()), Err(Bad("a DOCTYPE")));
}

#[test]
fn external_entity_is_refused() {
    let body = "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>\
        <propertyupdate xmlns='DAV:'><set><prop><x>&e;</x></prop></set></propertyupdate>";
    assert_eq!(proppatch(body.as_bytes()), Err(Bad("a DOCTYPE")));
    // A DOCTYPE after the root is refused too.
    let body = b"<propfind xmlns='DAV:'><allprop/></propfind><!DOCTYPE x>";
    assert!(propfind(body).is_err());
}

#[test]
fn undefined_entity_is_refused() {
    let body =
        b"<propertyupdate xmlns='DAV:'><set><prop><x>a&foo;b</x></prop></set></propertyupdate>";
    assert_eq!(proppatch(body), Err(Bad("an undefined entity")));
    // The five predefined ones are expanded.
    let body = b"<propertyupdate xmlns='DAV:'><set><prop><x>&lt;&gt;&amp;&apos;&quot;</x></prop></set></propertyupdate>";
    assert_eq!(sets(proppatch(body).unwrap())[0].1 .0, "&lt;&gt;&amp;'\"");
}

#[test]
fn unbound_prefix_is_refused() {
    let bad: &[&[u8]] = &[
        b"<z:propfind xmlns='DAV:'><allprop/></z:propfind>",
        b"<propfind xmlns='DAV:'><prop><z:foo/></prop></propfind>",
        b"<propfind xmlns='DAV:' z:a='1'><allprop/></propfind>",
        // A prefix is bound only inside the element that declares it.
        b"<propfind xmlns='DAV:'><prop><a:x xmlns:a='u'/><a:y/></prop></propfind>",
    ];
    for body in bad {
        assert_eq!(propfind(body), Err(Bad("an unbound namespace prefix")));
    }
    // xmlns="" undeclares the default namespace: allowed.
    assert_eq!(
        propfind(b"<propfind xmlns='DAV:'><prop><x xmlns=''/></prop></propfind>"),
        Ok(Find::Prop(vec![q("", "x")]))
    );
}

#[test]
fn deep_nesting_is_refused() {
    let doc = |depth: usize| {
        let mut b = String::from("<propertyupdate xmlns='DAV:'><set><prop><x>");
        b += &"<a>".repeat(depth - 4);
        b += &"</a>".repeat(depth - 4);
        b + "</x></prop></set></propertyupdate>"
    };
    assert!(proppatch(doc(64).as_bytes()).is_ok());
    assert_eq!(
        proppatch(doc(65).as_bytes()),
        Err(Bad("elements nested too deep"))
    );
    assert!(proppatch(doc(100_000).as_bytes()).is_err());
}

#[test]
fn two_roots_are_refused() {
    let body =
        b"<propfind xmlns='DAV:'><allprop/></propfind><propfind xmlns='DAV:'><allprop/></propfind>";
    assert_eq!(propfind(body), Err(Bad("more than one root element")));
    assert_eq!(
        propfind(b"<propfind xmlns='DAV:'><allprop/></propfind><x/>"),
        Err(Bad("more than one root element"))
    );
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
    let value = Value("<p:v xmlns=\"\" xmlns:p=\"urn:other\">1</p:v><w/>".into());
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
            content: Content::Xml("<D:x/>"),
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
    assert!(find(&doc, &QName::dav("x")).is_some());
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
fn zz_probe() {
    for b in [
        "<propfind xmlns='DAV:' b='1'c='2'><allprop/></propfind>",
        "<propfind xmlns='DAV:' b><allprop/></propfind>",
        "<propfind xmlns='DAV:'>]]><allprop/></propfind>",
        "<propfind xmlns='DAV:'><!-- a -- b --><allprop/></propfind>",
        "<propfind xmlns='DAV:'><!-- a <allprop/></propfind>",
        "<propfind xmlns='DAV:'><x>&#xD800;</x><allprop/></propfind>",
        "<propfind xmlns='DAV:'><x>&#xFFFE;</x><allprop/></propfind>",
        "<propfind xmlns='DAV:'><:x/><allprop/></propfind>",
        "<propfind xmlns='DAV:'><x:/><allprop/></propfind>",
        "<propfind xmlns='DAV:'><allprop/></propfind ><!-- -->  ",
        "<propfind xmlns='DAV:'><allprop/></propfind><![CDATA[x]]>",
        "<propfind xmlns='DAV:'><allprop/><x y='a\tb'/></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x y=\"a'b\"/></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x y=a/></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x/ ></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x></x y></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x>&amp</x></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x>& amp;</x></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x>&#;</x></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x>&#x;</x></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x>&#12a;</x></propfind>",
        "<propfind xmlns='DAV:'><allprop/><?xml version='1.0'?></propfind>",
        "<?xml version='1.0'?><?xml version='1.0'?><propfind xmlns='DAV:'><allprop/></propfind>",
        "<?xml?><propfind xmlns='DAV:'><allprop/></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x y='&#60;'/></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x y='&#1;'/></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x y='>'/></propfind>",
        "<propfind xmlns='DAV:'><allprop/><x\ty='1'\n/></propfind>",
        "<propfind xmlns = 'DAV:' ><allprop/></propfind>",
    ] {
        eprintln!("{:?} <= {b}", propfind(b.as_bytes()));
    }
}
