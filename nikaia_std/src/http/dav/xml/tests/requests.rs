//! Reading: what a body may be, and what is refused (400).

use super::*;

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
        Ok(vec![Change::Set(
            QName::dav("x"),
            Value("v".into(), Some("en".into()))
        )])
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

#[test]
fn what_quick_xml_lets_through_is_refused() {
    let p = |inner: &str| {
        propfind(format!("<propfind xmlns='DAV:'>{inner}<allprop/></propfind>").as_bytes())
    };
    assert_eq!(
        propfind(b"<propfind xmlns='DAV:' b='1'c='2'><allprop/></propfind>"),
        Err(Bad("attributes not separated by whitespace"))
    );
    assert_eq!(p("]]>"), Err(Bad("']]>' in text")));
    assert_eq!(
        p("<!-- a -- b -->"),
        Err(Bad("the body is not well-formed XML"))
    );
    for r in [
        "&#xD800;",
        "&#xFFFE;",
        "&#;",
        "&#x;",
        "&#12a;",
        "<x y='&#1;'/>",
    ] {
        assert_eq!(
            p(r),
            Err(Bad("a character reference XML does not allow")),
            "{r}"
        );
    }
    for n in ["<:x/>", "<x:/>", "<x/ >", "<.x/>", "<x!/>", "<-x/>"] {
        assert_eq!(
            p(n),
            Err(Bad("an element name that is not an XML name")),
            "{n}"
        );
    }
    assert_eq!(p("<x y=a/>"), Err(Bad("a malformed attribute")));
    assert_eq!(p("<x y/>"), Err(Bad("a malformed attribute")));
    assert_eq!(
        p("<?xml version='1.0'?>"),
        Err(Bad("an XML declaration not at the start"))
    );
    assert_eq!(
        propfind(b"<?xml?><propfind xmlns='DAV:'><allprop/></propfind>"),
        Err(Bad("a bad XML declaration"))
    );
    // And what XML allows still parses.
    for ok in ["<x y='&#60;>'/>", "<x\ty='1'\n/>", "<x y=\"a'b\"></x >"] {
        assert_eq!(p(ok), Ok(Find::AllProp { include: vec![] }), "{ok}");
    }
}

#[test]
fn too_many_attributes_are_refused() {
    let attrs = |n: usize| (0..n).map(|i| format!(" a{i}=''")).collect::<String>();
    let body = |n| format!("<propfind xmlns='DAV:'><allprop{}/></propfind>", attrs(n));
    assert!(propfind(body(255).as_bytes()).is_ok());
    assert_eq!(
        propfind(body(300).as_bytes()),
        Err(Bad("too many attributes on an element"))
    );
}

/// RFC 4918 §4.3: an `xml:lang` on the property element, or around it,
/// stays with the value, through the record and into the answer.
#[test]
fn xml_lang_is_kept_with_the_value() {
    let body = "<D:propertyupdate xmlns:D='DAV:' xml:lang='fr'><D:set><D:prop>\
                <t xmlns='urn:t' xml:lang='en'>hello</t><u xmlns='urn:t'>salut</u>\
                </D:prop></D:set></D:propertyupdate>";
    let changes = proppatch(body.as_bytes()).unwrap();
    let langs: Vec<Option<&str>> = (changes.iter())
        .map(|c| match c {
            Change::Set(_, v) => v.1.as_deref(),
            Change::Remove(_) => None,
        })
        .collect();
    assert_eq!(langs, [Some("en"), Some("fr")]);
    let mut props = Vec::new();
    crate::http::dav::dead::apply(&mut props, &changes);
    let record = crate::http::dav::dead::encode(&props);
    let back = crate::http::dav::dead::decode(&record).unwrap();
    assert_eq!(back, props);
    let mut m = Multistatus::begin();
    let shown: Vec<Prop<'_>> = (back.iter())
        .map(|(n, v)| Prop {
            name: n,
            content: Content::Raw(v),
        })
        .collect();
    m.response("/a", &[(200, &shown)]);
    m.end();
    let text = String::from_utf8(m.out).unwrap();
    assert!(
        text.contains("<p:t xmlns:p=\"urn:t\" xml:lang=\"en\">hello</p:t>"),
        "{text}"
    );
    assert!(text.contains("xml:lang=\"fr\">salut"), "{text}");
}

/// A record written before `xml:lang` was kept (version 1) still reads.
#[test]
fn a_first_version_record_still_reads() {
    let mut v1 = vec![1u8];
    for field in ["urn:t", "t", "hello"] {
        v1.extend_from_slice(&(field.len() as u32).to_le_bytes());
        v1.extend_from_slice(field.as_bytes());
    }
    let props = crate::http::dav::dead::decode(&v1).unwrap();
    assert_eq!(props[0].1, Value("hello".into(), None));
}
