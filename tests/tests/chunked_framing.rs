//! A chunked body's framing is read by RFC 9112 §7.1's grammar and
//! nothing looser (`spec/http.md`, "Request bodies"): a size line with
//! anything but extensions after its digits, or a trailer line that is
//! not a field line, is 400 and the connection closes — on a body read
//! for a handler, on one thrown away behind an early answer, and on a PUT
//! under a write rule, which writes nothing. A request pipelined after it
//! is never answered: two parsers that disagree on where a body ends are
//! a smuggling channel behind any proxy.

use nikaia_tests::uploads::{basic, Site, ALICE, RULES};
use nikaia_tests::{read_reply, Client};
use std::io::Read;

/// Bodies whose framing a careful parser refuses, each with a pipelined
/// request after it.
const BROKEN: &[&str] = &[
    "5 5\r\nhello\r\n0\r\n\r\n",
    "5\t5\r\nhello\r\n0\r\n\r\n",
    "5 \r\nhello\r\n0\r\n\r\n",
    "5;a=b c\r\nhello\r\n0\r\n\r\n",
    "5;\r\nhello\r\n0\r\n\r\n",
    "5\r\nhello\r\n0\r\nno colon here\r\n\r\n",
    "5\r\nhello\r\n0\r\nX-A: 1\r\n folded\r\n\r\n",
    "5\r\nhello\r\n0\r\nX-A : 1\r\n\r\n",
    "5\r\nhello\r\n0\r\nX-A: a\x01b\r\n\r\n",
];

/// Sends `head` with `body` and a pipelined GET after it: the one answer
/// the connection gives before it closes.
fn one_answer_then_close(port: u16, head: &str, body: &str) -> u16 {
    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    c.send(format!(
        "{head}Transfer-Encoding: chunked\r\n\r\n{body}GET /public/a.txt HTTP/1.1\r\nHost: t\r\n\r\n"
    ));
    let reply = read_reply(c.reader(), false).expect("an answer");
    assert_eq!(
        reply.header("connection"),
        Some("close"),
        "{body:?}: {reply:?}"
    );
    let mut rest = Vec::new();
    c.reader().read_to_end(&mut rest).unwrap();
    assert!(
        rest.is_empty(),
        "{body:?}: the pipelined request was answered: {}",
        String::from_utf8_lossy(&rest)
    );
    reply.status
}

#[test]
fn a_broken_chunk_line_or_trailer_is_400_and_closes_whatever_the_route() {
    let site = Site::new();
    let running = site.serve(RULES);
    let port = running.local_addr().port();
    for body in BROKEN {
        // No write rule: an early 405 would have been answered; the body
        // thrown away behind it is malformed, so 400.
        let head = "POST /public/a.txt HTTP/1.1\r\nHost: t\r\n";
        assert_eq!(one_answer_then_close(port, head, body), 400, "{body:?}");
        // Under a write rule anyone may create with: nothing is written.
        let head = "PUT /inbox/new.txt HTTP/1.1\r\nHost: t\r\n";
        assert_eq!(one_answer_then_close(port, head, body), 400, "{body:?}");
        assert!(!site.root.join("inbox/new.txt").exists(), "{body:?}");
        // With credentials, over a rule that replaces.
        let head = format!(
            "PUT /drop/kept.txt HTTP/1.1\r\nHost: t\r\nAuthorization: Basic {}\r\n",
            basic(ALICE)
        );
        assert_eq!(one_answer_then_close(port, &head, body), 400, "{body:?}");
        assert!(!site.root.join("drop/kept.txt").exists(), "{body:?}");
    }
    // The same bodies framed rightly are taken.
    let mut c = Client::connect(running.local_addr());
    c.send(concat!(
        "PUT /inbox/new.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n",
        "5 ; a = \"b c\"\r\nhello\r\n0\r\nX-A: 1\r\n\r\n",
        "GET /inbox/new.txt HTTP/1.1\r\nHost: t\r\n\r\n"
    ));
    assert_eq!(c.reply().unwrap().status, 201);
    let read = c.reply().unwrap();
    assert_eq!((read.status, &read.body[..]), (200, &b"hello"[..]));
}
