use super::*;
use std::collections::HashMap;

mod headers;

const T: &str = "opaquelocktoken:919a6bee-dd9b-40e6-82e7-e0ae626b8a8e";
const U1: &str = "urn:uuid:181d4fae-7d8c-11d0-a765-00a0c91e6bf2";
const U2: &str = "urn:uuid:58f202ac-22cf-11d1-b12d-002035b29092";

fn ok(v: &str) -> If {
    parse(v.as_bytes()).unwrap_or_else(|e| panic!("{v:?}: {e:?}"))
}

fn bad(v: &[u8]) -> &'static str {
    match parse(v) {
        Err(Bad(why)) => why,
        Ok(h) => panic!("{:?} parsed: {h:?}", String::from_utf8_lossy(v)),
    }
}

fn tok(not: bool, t: &str) -> Condition {
    Condition {
        not,
        test: Test::Token(t.into()),
    }
}

fn etag(not: bool, e: &str) -> Condition {
    Condition {
        not,
        test: Test::ETag(e.into()),
    }
}

fn list(tag: Option<&str>, conditions: Vec<Condition>) -> List {
    List {
        tag: tag.map(Into::into),
        conditions,
    }
}

/// A little server: resources by tag (None = the Request-URI), each with
/// an etag (None: no file there) and the tokens of the locks covering it.
/// A tag it does not know names nothing here (`about` gives None).
#[derive(Default)]
struct Server {
    at: HashMap<Option<String>, (Option<String>, Vec<String>)>,
}

impl Server {
    fn with(mut self, tag: Option<&str>, etag: Option<&str>, tokens: &[&str]) -> Self {
        self.at.insert(
            tag.map(Into::into),
            (
                etag.map(Into::into),
                tokens.iter().map(|t| t.to_string()).collect(),
            ),
        );
        self
    }

    /// The way the lead will call it: the state is built inside the
    /// closure (an etag computed there, owned) and the lock check borrows
    /// the table from outside.
    fn holds(&self, h: &If) -> bool {
        let mut calls = 0;
        let r = h.holds(&mut |tag| {
            calls += 1;
            let (etag, tokens) = self.at.get(&tag.map(str::to_owned))?;
            Some(State {
                etag: etag.clone(),
                locked_by: Box::new(move |t| tokens.iter().any(|x| x == t)),
            })
        });
        assert!(calls <= h.lists.len());
        r
    }
}

fn request_uri(etag: Option<&str>, tokens: &[&str]) -> Server {
    Server::default().with(None, etag, tokens)
}

// ---- litmus (research note §1.2), as neon sends them ----

#[test]
fn litmus_cond_put() {
    let h = ok(&format!("(<{T}> [\"5-abc\"])"));
    assert_eq!(
        h.lists,
        [list(None, vec![tok(false, T), etag(false, "\"5-abc\"")])]
    );
    assert!(request_uri(Some("\"5-abc\""), &[T]).holds(&h));
    assert_eq!(h.submitted(), [T]);
}

#[test]
fn litmus_fail_cond_put() {
    let h = ok("(<DAV:no-lock> [\"5-abc\"])");
    assert!(!request_uri(Some("\"5-abc\""), &[T]).holds(&h));
    assert!(h.submitted().is_empty());
}

#[test]
fn litmus_cond_put_with_not() {
    let h = ok(&format!("(<{T}>) (Not <DAV:no-lock>)"));
    assert_eq!(
        h.lists,
        [
            list(None, vec![tok(false, T)]),
            list(None, vec![tok(true, "DAV:no-lock")])
        ]
    );
    assert!(request_uri(Some("\"e\""), &[T]).holds(&h));
    assert_eq!(h.submitted(), [T]);
}

#[test]
fn litmus_cond_put_corrupt_token() {
    // True (second list), but the lock's token is not submitted: the
    // caller answers 423, not 412 and not 400.
    let corrupt = format!("{T}x");
    let h = ok(&format!("(<{corrupt}>) (Not <DAV:no-lock>)"));
    assert!(request_uri(Some("\"e\""), &[T]).holds(&h));
    assert_eq!(h.submitted(), [corrupt.as_str()]);
    assert!(!h.submitted().contains(&T));
}

#[test]
fn litmus_complex_cond_put() {
    let h = ok(&format!(
        "(<{T}> [\"5-abc\"]) (Not <DAV:no-lock> [\"5-abc\"])"
    ));
    assert!(request_uri(Some("\"5-abc\""), &[T]).holds(&h));
    assert_eq!(h.submitted(), [T]);
}

#[test]
fn litmus_fail_complex_cond_put() {
    // The etag's third-from-last character changed in both lists: 412.
    let h = ok(&format!(
        "(<{T}> [\"5-acc\"]) (Not <DAV:no-lock> [\"5-acc\"])"
    ));
    assert!(!request_uri(Some("\"5-abc\""), &[T]).holds(&h));
    assert_eq!(h.submitted(), [T]);
}

#[test]
fn litmus_refresh_and_fail_cond_put_unlocked() {
    let refresh = ok(&format!("(<{T}>)"));
    assert!(request_uri(Some("\"e\""), &[T]).holds(&refresh));
    let h = ok("(<DAV:no-lock>)");
    assert!(!request_uri(Some("\"e\""), &[]).holds(&h));
}

#[test]
fn litmus_tagged_absolute_uris() {
    for tag in [
        "http://127.0.0.1:8080/litmus/lockme",
        "https://127.0.0.1:8443/litmus/lockme",
        "http://127.0.0.1:8080/litmus/lockcoll/",
    ] {
        let h = ok(&format!("<{tag}> (<{T}>)"));
        assert_eq!(h.lists, [list(Some(tag), vec![tok(false, T)])]);
        assert_eq!(h.submitted(), [T]);
        // The caller maps the tag to this server's resource.
        assert!(Server::default()
            .with(Some(tag), Some("\"e\""), &[T])
            .holds(&h));
        // A tag naming nothing here makes its list false.
        assert!(!request_uri(Some("\"e\""), &[T]).holds(&h));
    }
}

#[test]
fn neon_several_tags_for_move() {
    let h = ok(&format!(
        "<http://h/litmus/a> (<{U1}>) <http://h/litmus/> (<{U2}>) (<{U1}>)"
    ));
    assert_eq!(
        h.lists,
        [
            list(Some("http://h/litmus/a"), vec![tok(false, U1)]),
            list(Some("http://h/litmus/"), vec![tok(false, U2)]),
            list(Some("http://h/litmus/"), vec![tok(false, U1)]),
        ]
    );
    assert_eq!(h.submitted(), [U1, U2]);
}

// ---- RFC 4918 §10.4 examples (folded lines given unfolded, as the HTTP
// layer hands them over) ----

#[test]
fn rfc_10_4_6_no_tag() {
    let h = ok(&format!(
        "(<{U1}>  [\"I am an ETag\"])  ([\"I am another ETag\"])"
    ));
    assert_eq!(
        h.lists,
        [
            list(None, vec![tok(false, U1), etag(false, "\"I am an ETag\"")]),
            list(None, vec![etag(false, "\"I am another ETag\"")]),
        ]
    );
    assert!(request_uri(Some("\"I am an ETag\""), &[U1]).holds(&h));
    assert!(!request_uri(Some("\"I am an ETag\""), &[]).holds(&h));
    assert!(request_uri(Some("\"I am another ETag\""), &[]).holds(&h));
    assert!(!request_uri(Some("\"third\""), &[U1]).holds(&h));
}

#[test]
fn rfc_10_4_7_not() {
    let h = ok(&format!("(Not <{U1}>  <{U2}>)"));
    assert_eq!(h.lists, [list(None, vec![tok(true, U1), tok(false, U2)])]);
    assert!(request_uri(None, &[U2]).holds(&h));
    assert!(!request_uri(None, &[U1, U2]).holds(&h));
    // The negated token submits nothing.
    assert_eq!(h.submitted(), [U2]);
}

#[test]
fn rfc_10_4_8_always_true() {
    let h = ok(&format!("(<{U1}>)  (Not <DAV:no-lock>)"));
    assert!(request_uri(Some("\"x\""), &[]).holds(&h));
    assert!(request_uri(None, &[U2]).holds(&h));
    assert_eq!(h.submitted(), [U1]);
}

#[test]
fn rfc_10_4_9_tagged_copy() {
    let h = ok(&format!(
        "</resource1>  (<{U1}>  [W/\"A weak ETag\"]) ([\"strong ETag\"])"
    ));
    assert_eq!(
        h.lists,
        [
            list(
                Some("/resource1"),
                vec![tok(false, U1), etag(false, "W/\"A weak ETag\"")]
            ),
            list(Some("/resource1"), vec![etag(false, "\"strong ETag\"")]),
        ]
    );
    let s = |e| Server::default().with(Some("/resource1"), Some(e), &[U1]);
    // Weak comparison: the server's strong "A weak ETag" matches W/"A weak ETag".
    assert!(s("\"A weak ETag\"").holds(&h));
    assert!(s("\"strong ETag\"").holds(&h));
    assert!(!s("\"other\"").holds(&h));
}

#[test]
fn rfc_10_4_10_collection_lock() {
    let h = ok(&format!("<http://www.example.com/specs/>  (<{U1}>)"));
    assert!(Server::default()
        .with(Some("http://www.example.com/specs/"), None, &[U1])
        .holds(&h));
    assert_eq!(h.submitted(), [U1]);
}

#[test]
fn rfc_10_4_11_unmapped() {
    let unmapped = || Server::default().with(Some("/specs/rfc2518.doc"), None, &[]);
    assert!(!unmapped().holds(&ok("</specs/rfc2518.doc> ([\"4217\"])")));
    assert!(unmapped().holds(&ok("</specs/rfc2518.doc> (Not [\"4217\"])")));
    assert!(!request_uri(None, &[]).holds(&ok("([\"4217\"])")));
    assert!(request_uri(None, &[]).holds(&ok("(Not [\"4217\"])")));
}

// ---- the finer grammar ----

#[test]
fn lws_where_allowed() {
    let h = ok(&format!(
        " \t(\t<{T}>\t[\"a\"] ) \t( Not\t<DAV:no-lock> )\t "
    ));
    assert_eq!(h.lists.len(), 2);
    assert_eq!(ok(&format!("(<{T}>[\"a\"])([\"b\"])")).lists.len(), 2);
    assert_eq!(ok(&format!("</a>(<{T}>)</b>(<{T}>)")).lists.len(), 2);
    assert_eq!(
        ok("(Not<DAV:no-lock>)").lists[0].conditions,
        [tok(true, "DAV:no-lock")]
    );
}

#[test]
fn not_in_any_case() {
    for not in ["Not", "not", "NOT", "nOt"] {
        let h = ok(&format!("({not} <DAV:no-lock>)"));
        assert_eq!(h.lists[0].conditions, [tok(true, "DAV:no-lock")]);
    }
    assert_eq!(
        bad(b"(Not Not <DAV:no-lock>)"),
        "If: \"Not\" not followed by a condition"
    );
    assert_eq!(bad(b"(Not)"), "If: \"Not\" not followed by a condition");
    assert_eq!(bad(b"(Nothing)"), "If: \"Not\" not followed by a condition");
}

#[test]
fn entity_tags() {
    for e in [
        "\"\"",
        "W/\"\"",
        "\"a!#~\"",
        "W/\"x\"",
        "\"é\"",
        "\"a b\tc\"",
    ] {
        assert_eq!(
            ok(&format!("([{e}])")).lists[0].conditions,
            [etag(false, e)]
        );
    }
    for e in [
        &b"[W/]"[..],
        b"[]",
        b"[abc]",
        b"[\"a]",
        b"[\"a\"b\"]",
        b"[w/\"a\"]",
        b"[ \"a\"]",
        b"[\"a\" ]",
        b"[\"\xff\"]",
    ] {
        let v = [&b"("[..], e, b")"].concat();
        assert!(parse(&v).is_err(), "{:?}", String::from_utf8_lossy(&v));
    }
}

#[test]
fn refused() {
    let cases: &[(&[u8], &str)] = &[
        (b"", "If: empty"),
        (b" \t ", "If: empty"),
        (b"()", "If: a list with no condition"),
        (b"( )", "If: a list with no condition"),
        (b"(", "If: a list with no \")\""),
        (b"(<a:b>", "If: a list with no \")\""),
        (b"(<a:b>))", "If: a \")\" with no \"(\""),
        (b")", "If: a list or a tag must come first"),
        (
            b"<>",
            "If: a tag that is neither an absolute URI nor a path",
        ),
        (
            b"<> (<a:b>)",
            "If: a tag that is neither an absolute URI nor a path",
        ),
        (b"(<>)", "If: a state token that is not an absolute URI"),
        (b"(<a:b)", "If: a state token with no \">\""),
        (b"(<a:b", "If: a state token with no \">\""),
        (b"([\"a\"", "If: an entity-tag with no \"]\""),
        (
            b"(<opaquelocktoken>)",
            "If: a state token that is not an absolute URI",
        ),
        (b"(<1a:b>)", "If: a state token that is not an absolute URI"),
        (b"(<:b>)", "If: a state token that is not an absolute URI"),
        (b"(< a:b>)", "If: a state token that is not an absolute URI"),
        (
            b"(<a:b c>)",
            "If: a state token that is not an absolute URI",
        ),
        (
            b"(<a:{b}>)",
            "If: a state token that is not an absolute URI",
        ),
        (
            b"(a:b)",
            "If: a condition that is neither <token> nor [etag]",
        ),
        (
            b"(<a:b>) <http://h/> (<a:b>)",
            "If: tagged and untagged lists mixed",
        ),
        (b"<http://h/>", "If: a tag with no list"),
        (
            b"<http://h/a> <http://h/b> (<a:b>)",
            "If: a tag with no list",
        ),
        (b"<http://h/ a> (<a:b>)", "If: a tag with spaces in it"),
        (b"<http://h/\ta> (<a:b>)", "If: a tag with spaces in it"),
        (
            b"<relative/path> (<a:b>)",
            "If: a tag that is neither an absolute URI nor a path",
        ),
        (b"<http://h/ (<a:b>)", "If: a tag with spaces in it"),
        (b"<http://h/", "If: a tag with no \">\""),
        (b"(<a:b>) x", "If: stray characters between lists"),
        (b"(<a:b>) ,", "If: stray characters between lists"),
        (b"(<a:b>)\0", "If: stray characters between lists"),
        (b"(<a:b>)\r\n (<c:d>)", "If: stray characters between lists"),
        (
            b"(<a:\0b>)",
            "If: a state token that is not an absolute URI",
        ),
        (
            b"(<a:\xc3\xa9>)",
            "If: a state token that is not an absolute URI",
        ),
        (b"</\xff> (<a:b>)", "If: a tag that is not UTF-8"),
        (
            b"</\x01> (<a:b>)",
            "If: a tag that is neither an absolute URI nor a path",
        ),
        (b"\xff", "If: a list or a tag must come first"),
        (b"If: (<a:b>)", "If: a list or a tag must come first"),
    ];
    for (v, why) in cases {
        assert_eq!(bad(v), *why, "{:?}", String::from_utf8_lossy(v));
    }
}

#[test]
fn tagged_then_untagged_is_mixing() {
    // A list after a tag's lists belongs to that tag (§10.4.2: the tag
    // stays in force), so this is two lists of one tag, not a mix.
    let h = ok("<http://h/> (<a:b>) ([\"x\"])");
    assert!(h
        .lists
        .iter()
        .all(|l| l.tag.as_deref() == Some("http://h/")));
    assert_eq!(
        bad(b"(<a:b>) </x> (<a:b>)"),
        "If: tagged and untagged lists mixed"
    );
}

#[test]
fn tags_kept_as_sent() {
    let h = ok("</dir%20x/caf%C3%A9?q=1> (<a:b>) <http://h:1/\u{e9}> (<a:b>)");
    assert_eq!(h.lists[0].tag.as_deref(), Some("/dir%20x/caf%C3%A9?q=1"));
    assert_eq!(h.lists[1].tag.as_deref(), Some("http://h:1/\u{e9}"));
}

#[test]
fn bounds() {
    let lists = |n: usize| "([\"\"])".repeat(n);
    assert_eq!(ok(&lists(64)).lists.len(), 64);
    assert_eq!(bad(lists(65).as_bytes()), "If: more than 64 lists");
    let conds = |n: usize| format!("({})", "[\"\"]".repeat(n));
    assert_eq!(ok(&conds(64)).lists[0].conditions.len(), 64);
    assert_eq!(
        bad(conds(65).as_bytes()),
        "If: more than 64 conditions in a list"
    );
    let long = format!("(<a:{}>)", "b".repeat(MAX_LEN - 6));
    assert_eq!(long.len(), MAX_LEN);
    assert!(parse(long.as_bytes()).is_ok());
    let longer = format!("(<a:{}>)", "b".repeat(MAX_LEN - 5));
    assert_eq!(bad(longer.as_bytes()), "If: the value is longer than 8 KiB");
    assert_eq!(
        bad("(<a:b>)".repeat(10_000).as_bytes()),
        "If: the value is longer than 8 KiB"
    );
    assert_eq!(
        bad("(".repeat(8000).as_bytes()),
        "If: a condition that is neither <token> nor [etag]"
    );
    assert_eq!(bad(&[b'<'; 8000]), "If: a tag with no \">\"");
}

#[test]
fn submitted_in_order_once() {
    let h = ok(&format!(
        "<http://h/a> (<{U2}> [\"e\"]) (Not <{T}>) <http://h/b> (<{U1}>) (<{U2}>) (<DAV:no-lock>) (<{T}>)"
    ));
    assert_eq!(h.submitted(), [U2, U1, T]);
    assert!(ok("(Not <a:b>)").submitted().is_empty());
}

#[test]
fn holds_asks_each_list_in_order_until_one_holds() {
    let h = ok("</a> (<a:1>) </b> (<a:2>) </c> (<a:3>)");
    let mut asked = Vec::new();
    let yes = h.holds(&mut |tag| {
        asked.push(tag.map(str::to_owned));
        Some(State {
            etag: None,
            locked_by: Box::new(move |t| t == "a:2"),
        })
    });
    assert!(yes);
    assert_eq!(asked, [Some("/a".to_owned()), Some("/b".to_owned())]);
}

#[test]
fn no_lock_never_matches() {
    // Even a caller whose lock check says yes to anything.
    let h = ok("(<DAV:no-lock>)");
    assert!(!h.holds(&mut |_| Some(State {
        etag: None,
        locked_by: Box::new(|_| true),
    })));
}

#[test]
fn weak_etags() {
    let s = request_uri(Some("\"v1\""), &[]);
    assert!(s.holds(&ok("([W/\"v1\"])")));
    assert!(s.holds(&ok("([\"v1\"])")));
    assert!(!s.holds(&ok("([\"V1\"])")));
    assert!(!s.holds(&ok("([W/\"v\"])")));
    assert!(request_uri(Some("W/\"v1\""), &[]).holds(&ok("([\"v1\"])")));
}

/// parse never panics, whatever the bytes; what it accepts submits tokens
/// that appear in the value.
#[test]
fn random_bytes_never_panic() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) as u32
    };
    // Even rounds: pieces of the grammar (and some of its mistakes) in
    // random order; odd rounds: any bytes.
    let pieces: &[&[u8]] = &[
        b"(",
        b")",
        b"(",
        b")",
        b"<a:b>",
        b"<DAV:no-lock>",
        b"[\"x\"]",
        b"[W/\"y\"]",
        b"Not ",
        b"not",
        b" ",
        b"\t",
        b"<http://h/p>",
        b"</q>",
        b"<",
        b">",
        b"[",
        b"]",
        b"\"",
        b"W/",
        b"\0",
        b"\xff",
        b"\xc3\xa9",
        b"a:",
        b",",
    ];
    let mut parsed = 0;
    for round in 0..20_000 {
        let len = (next() % 24) as usize;
        let v: Vec<u8> = if round % 2 == 0 {
            (0..len)
                .flat_map(|_| pieces[next() as usize % pieces.len()].iter().copied())
                .collect()
        } else {
            (0..len * 3).map(|_| next() as u8).collect()
        };
        if let Ok(h) = parse(&v) {
            parsed += 1;
            let text = String::from_utf8_lossy(&v).into_owned();
            for t in h.submitted() {
                assert!(text.contains(t));
            }
            h.holds(&mut |_| None);
        }
        let _ = timeout(Some(&v), 3600);
        let _ = lock_token(&v);
    }
    assert!(parsed > 0, "the alphabet should make some valid values");
}
