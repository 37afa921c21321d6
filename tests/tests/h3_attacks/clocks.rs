//! HTTP/3's clocks (`spec/http3.md`, "Clocks") against clients that make
//! the server wait: a request head that never ends (header-timeout on its
//! stream), an answer the client stops acknowledging (send-timeout on its
//! stream), and `keepalive-timeout = 0` (the connection closes once its
//! last answer is acknowledged). Each also shows the connection, or a
//! fresh one, still served.

use super::harness::{one_at_a_time, H3Server, SMALL};
use std::time::Duration;

/// A GET answered on the connection (so its own header-timeout is over),
/// then a stream whose HEADERS frame says 100 octets and brings 10: after
/// header-timeout (1 s) that stream is reset with H3_REQUEST_INCOMPLETE,
/// the connection goes on and answers a GET after it.
const SLOW_HEAD: &str = r#"
import argparse, json, sys, time
import h3attacks, h3wire
args = argparse.Namespace(connect=sys.argv[1], authority="localhost", cafile=sys.argv[2],
                          insecure=False, alpn="h3", wait=None, path="/index.html")
deadline = time.monotonic() + 8
d = h3attacks.open_h3(args, deadline)
resp = h3attacks.Responses(d)
first = h3attacks.get(d, args)
d.pump(lambda: resp.finished(first), timeout=2)
slow = h3wire.new_stream(d.quic)
d.quic.send_stream_data(slow, h3wire.varint(0x01) + h3wire.varint(100) + bytes(10))
d.flush()
d.pump(lambda: slow in d.resets or d.quic.peer_close is not None, timeout=4)
after = h3attacks.get(d, args)
d.pump(lambda: resp.finished(after), timeout=2)
print(json.dumps(h3attacks.report(d, first=resp.status.get(first),
    slow=h3attacks.reset_info(d, slow), after=resp.status.get(after))))
d.close()
"#;

#[test]
fn a_request_head_that_never_ends_is_reset_at_header_timeout() {
    let _one = one_at_a_time();
    let s = H3Server::start(|rt| rt.header_timeout = Duration::from_secs(1));
    let before = s.h3().header_timeouts;
    let r = s.python(SLOW_HEAD);
    assert_eq!(r["first"], 200, "{r}");
    assert_eq!(r["slow"]["code"], 0x10d, "H3_REQUEST_INCOMPLETE: {r}");
    assert!(r["close"].is_null(), "the connection goes on: {r}");
    assert_eq!(r["after"], 200, "{r}");
    assert_eq!(s.h3().header_timeouts, before + 1);
}

/// A download of a file larger than what the server may have unacknowledged
/// (8 MiB), from a client that stops acknowledging: once quinn takes no
/// more of the answer for send-timeout (1 s), its stream is reset and
/// counted as stalled; other clients are served.
#[test]
fn an_answer_that_makes_no_progress_is_reset_at_send_timeout() {
    let _one = one_at_a_time();
    let s = H3Server::start(|rt| rt.send_timeout = Duration::from_secs(1));
    std::fs::write(
        s.root().join("huge.bin"),
        nikaia_tests::https::pattern(24 << 20, 3),
    )
    .unwrap();
    let before = s.h3().stalled;
    let r = s.attack(
        "ack-withhold",
        &[
            "--path",
            "/huge.bin",
            "--acked-packets",
            "200",
            "--timeout",
            "6",
        ],
    );
    assert_eq!(r["complete"], false, "{r}");
    assert!(s.h3().stalled > before, "counted as stalled: {r}");
    s.assert_served(SMALL, "after a stalled answer");
}

/// `keepalive-timeout = 0`: a connection closes once its last answer is
/// acknowledged (never QUIC's `max_idle_timeout = 0`, which would mean no
/// timeout), with H3_NO_ERROR; its answer arrives whole first.
const ONE_THEN_WAIT: &str = r#"
import argparse, json, sys, time
import h3attacks, h3wire
args = argparse.Namespace(connect=sys.argv[1], authority="localhost", cafile=sys.argv[2],
                          insecure=False, alpn="h3", wait=None, path="/big.bin")
deadline = time.monotonic() + 8
d = h3attacks.open_h3(args, deadline)
resp = h3attacks.Responses(d)
sid = h3attacks.get(d, args)
d.pump(lambda: d.quic.peer_close is not None, timeout=5)
print(json.dumps(h3attacks.report(d, status=resp.status.get(sid), body=resp.body[sid],
    ended=sid in resp.ended)))
d.close()
"#;

#[test]
fn keepalive_timeout_0_closes_once_the_last_answer_is_acknowledged() {
    let _one = one_at_a_time();
    let s = H3Server::start(|rt| rt.keepalive_timeout = Duration::ZERO);
    let r = s.python(ONE_THEN_WAIT);
    assert_eq!(r["status"], 200, "{r}");
    assert_eq!(r["body"], super::harness::BIG_LEN, "{r}");
    assert_eq!(r["ended"], true, "{r}");
    assert_eq!(r["close"]["code"], 0x100, "H3_NO_ERROR: {r}");
    s.assert_served(SMALL, "after a keepalive-timeout close");
}
