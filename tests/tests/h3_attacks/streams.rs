//! HTTP/3-layer attacks on an established connection: frames and streams
//! (RFC 9114, QPACK RFC 9204).

use super::harness::{assert_closed, one_at_a_time, H3Server, BIG, SMALL};

/// An unknown HTTP/3 frame type is skipped wherever it comes, and the
/// request on the same stream is answered (RFC 9114 §9): reserved types
/// (0x1f·N + 0x21) and types no one reserved, on a request stream and on
/// the control stream. An unknown QUIC frame type (quinn RUSTSEC-2023-0063:
/// a panic) closes its connection with FRAME_ENCODING_ERROR.
#[test]
fn an_unknown_frame_type_is_skipped_and_the_request_answered() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    let mut bystander = s.bystander();
    let small = s.get(SMALL)["body_len"].clone();

    for extra in [
        &["--frame-type", "0x21"][..],
        &["--frame-type", "0x21", "--on", "control"],
        &["--frame-type", "0x3f", "--size", "3000"],
        &[
            "--frame-type",
            "0x1f7f2a",
            "--on",
            "control",
            "--size",
            "100",
        ],
    ] {
        let mut args = vec!["--path", SMALL];
        args.extend_from_slice(extra);
        let r = s.attack("unknown-frame", &args);
        assert_eq!(r["status"], 200, "{extra:?}: {r}");
        assert_eq!(r["body_len"], small, "{extra:?}: {r}");
        assert!(r["close"].is_null(), "{extra:?}: {r}");
        assert!(r["reset"].is_null(), "{extra:?}: {r}");
    }

    // Its QUIC cousin: a QUIC frame type no one defined is
    // FRAME_ENCODING_ERROR (RFC 9000 §12.4), a close of that connection.
    let r = s.python(QUIC_UNKNOWN_FRAME);
    assert_eq!(r["handshake"], true, "{r}");
    assert_closed(&r, "transport", 0x07);
    assert_eq!(r["alive"], true, "{r}");

    s.assert_bystander_served(&mut bystander);
    s.assert_served(SMALL, "after the unknown frames");
}

/// A QUIC frame of type 0x3f00 (undefined) with 8 zero bytes, in a 1-RTT
/// packet of an established connection; the report as the attacks print it.
const QUIC_UNKNOWN_FRAME: &str = r#"
import argparse, json, sys, time
import h3attacks
args = argparse.Namespace(connect=sys.argv[1], authority="localhost", cafile=sys.argv[2],
                          insecure=False, alpn="h3", wait=2.0)
deadline = time.monotonic() + 5
d = h3attacks.open_h3(args, deadline)
d.quic.raw_frames.append((0x3F00, bytes(8)))
d.flush()
h3attacks.watch(d, deadline, args)
print(json.dumps(h3attacks.report(d, alive=h3attacks.alive(d))))
d.close()
"#;

/// A second control, QPACK encoder or QPACK decoder stream is
/// H3_STREAM_CREATION_ERROR; ending or resetting one of them is
/// H3_CLOSED_CRITICAL_STREAM (RFC 9114 §6.2.1, RFC 9204 §4.2). A reopened
/// QPACK stream is the shape of nginx's CVE-2026-42530 (a use-after-free).
#[test]
fn a_second_or_closed_critical_stream_closes_its_connection() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    let mut bystander = s.bystander();

    for kind in ["control", "encoder", "decoder"] {
        let r = s.attack("second-control", &["--stream-type", kind, "--wait", "2"]);
        assert_eq!(r["blocked"], false, "the server saw the stream: {r}");
        assert_closed(&r, "application", 0x103);

        for how in [&[][..], &["--reset"]] {
            let mut args = vec!["--stream-type", kind, "--wait", "2"];
            args.extend_from_slice(how);
            let r = s.attack("close-qpack-encoder", &args);
            assert_closed(&r, "application", 0x104);
        }
    }

    s.assert_bystander_served(&mut bystander);
    s.assert_served(SMALL, "after the critical streams");
}

/// A decoded-header bomb (quic-go CVE-2025-64702: the compressed HEADERS
/// bounded, the decoded ones not): a field section that decodes past
/// `max-header-bytes` (32 KiB) is answered 431 and the connection goes on,
/// whether it is big on the wire (1 000 lines of 1 KiB, one line of 40 KB)
/// or small there and big decoded (5 000 one-byte references to a
/// 64-byte static entry: 5 KB become 320 KB).
#[test]
fn a_decoded_header_bomb_is_431_and_the_connection_lives() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    let mut bystander = s.bystander();

    for extra in [
        &["--lines", "1000", "--line-size", "1024"][..],
        &["--static", "5000"],
        &["--lines", "1", "--line-size", "40000"],
    ] {
        let mut args = vec!["--path", SMALL];
        args.extend_from_slice(extra);
        let r = s.attack("header-bomb", &args);
        assert!(
            r["decoded_size"].as_u64().unwrap() > 32 << 10,
            "{extra:?}: {r}"
        );
        assert_eq!(r["status"], 431, "{extra:?}: {r}");
        assert!(r["close"].is_null(), "{extra:?}: {r}");
        assert_eq!(r["followup"]["status"], 200, "{extra:?}: {r}");
        assert_eq!(r["alive"], true, "{extra:?}: {r}");
        if extra[0] == "--lines" && extra[1] == "1000" {
            // The 1 MB section was refused from its length: the server
            // did not take it in (it stopped the stream, whose window is
            // 256 KiB).
            let sent = r["counters"]["sent_bytes"].as_u64().unwrap();
            assert!(sent < r["frame_bytes"].as_u64().unwrap() / 2, "{r}");
        }
    }

    s.assert_bystander_served(&mut bystander);
    s.assert_served(SMALL, "after the header bombs");
}

/// A reset flood ("rapid reset", CVE-2023-44487 on HTTP/2): requests each
/// cancelled (RESET_STREAM and STOP_SENDING) right after their HEADERS
/// spend the connection's reset budget (100, as HTTP/2's), and the
/// connection closes with H3_EXCESSIVE_LOAD, counted as a flood.
#[test]
fn a_reset_flood_is_h3_excessive_load() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    let mut bystander = s.bystander();

    for _ in 0..2 {
        let floods = s.h3().floods;
        let flood = s.spawn_attack("reset-flood", &["--count", "500", "--path", SMALL]);
        s.assert_served(SMALL, "during a reset flood");
        let r = flood.report();
        assert!(s.h3().floods > floods, "counted as a flood: {r}");
        // The server closes it (H3_EXCESSIVE_LOAD, counted above). While
        // its congestion window is full of answers, quinn-proto 0.11.19
        // does not send the close (quinn#2785, see the ignored test
        // below): the flooder then only stalls, never served again.
        if r["outcome"] == "stalled" {
            assert!(r["close"].is_null(), "{r}");
            continue;
        }
        assert_eq!(r["outcome"], "closed", "{r}");
        assert_closed(&r, "application", 0x107);
    }

    s.assert_bystander_served(&mut bystander);
    s.assert_served_by_gtlsclient(BIG);
}

/// The same flood on requests of a large file: the close reaches the
/// client too.
#[test]
#[ignore = "quinn-proto 0.11.19 never sends CONNECTION_CLOSE while congestion-blocked \
            with stream data pending (quinn#2785, fixed by quinn#2787, not yet released): the \
            server closes (H3_EXCESSIVE_LOAD, logged and counted) and frees the connection, \
            but the flooding client hears it only at its idle timeout; run it again once a \
            quinn-proto with the fix is out (spec/http3.md, \"Known limits\")"]
fn a_reset_flood_on_large_answers_is_h3_excessive_load_too() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    for _ in 0..3 {
        let flood = s.spawn_attack("reset-flood", &["--count", "500", "--path", BIG]);
        s.assert_served(SMALL, "during a reset flood");
        let r = flood.report();
        assert_closed(&r, "application", 0x107);
    }
}

/// A connection closed for a reset flood counts once in `floods`
/// (`nikaia explain`: "connections closed for a flood").
#[test]
fn a_reset_flooded_connection_counts_one_flood() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    for _ in 0..2 {
        let floods = s.h3().floods;
        let r = s.attack("reset-flood", &["--count", "500", "--path", SMALL]);
        assert_closed(&r, "application", 0x107);
        assert_eq!(s.h3().floods, floods + 1, "{r}");
    }
}

/// A client that stops 20 downloads of a large file (STOP_SENDING, as a
/// browser leaving a page does). Each stopped answer is reset (RFC 9000
/// §3.5: a STOP_SENDING MUST be answered with RESET_STREAM), so the server
/// sends nothing more on it and its stream is freed: the client may again
/// open 128 request streams at once.
#[test]
fn a_stopped_answer_is_reset_and_its_stream_comes_back() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    let r = s.python(STOP_TWENTY);
    assert!(r["close"].is_null(), "{r}");
    assert_eq!(r["stopped"], 20, "{r}");
    // Each stop is answered with a reset, unless the whole answer (its
    // end included) was already on its way when the stop left: RFC 9000
    // §3.5 lets a stream whose data is all sent skip it, and the client
    // then has the whole answer first. Under load that happens to one
    // now and then; never to most.
    let resets = r["server_resets_on_stopped"].as_u64().unwrap();
    let whole = r["whole_before_reset"].as_u64().unwrap();
    assert_eq!(resets + whole, 20, "{r}");
    assert!(resets >= 15, "{r}");
    // Freed streams come back as credit in MAX_STREAMS, which quinn
    // announces once more than 1/8 of the 128 are free (16): after 20
    // stops at least 17 came back. Unfreed, it would be 128 - 20.
    let available = r["available"].as_u64().unwrap();
    assert!(available >= 128 - 128 / 8, "{r}");
    s.assert_served(SMALL, "after the stops");
}

/// 20 GETs of /big.bin, one after the other, each stopped
/// (STOP_SENDING H3_REQUEST_CANCELLED) once its head arrived and before
/// its end; then 2 s for the server to answer the stops. `available`:
/// request streams the client may open now; `after_stop_bytes`: body
/// bytes that came on the stopped streams after their stop.
const STOP_TWENTY: &str = r#"
import argparse, json, sys, time
import h3attacks, h3wire
args = argparse.Namespace(connect=sys.argv[1], authority="localhost", cafile=sys.argv[2],
                          insecure=False, alpn="h3", wait=2.0, path="/big.bin")
deadline = time.monotonic() + 9
d = h3attacks.open_h3(args, deadline)
resp = h3attacks.Responses(d)
stopped = {}
while len(stopped) < 20 and time.monotonic() < deadline - 3:
    sid = h3attacks.get(d, args)
    d.pump(lambda: sid in resp.status or d.quic.peer_close is not None, timeout=1)
    if sid in resp.status and sid not in resp.ended:
        d.quic.stop_stream(sid, h3wire.H3_REQUEST_CANCELLED)
        stopped[sid] = resp.body[sid]
    d.flush()
d.pump(timeout=2)
print(json.dumps(h3attacks.report(d,
    stopped=len(stopped),
    server_resets_on_stopped=sum(1 for s in stopped if s in d.resets),
    whole_before_reset=sum(1 for s in stopped if s not in d.resets and s in resp.ended),
    after_stop_bytes=sum(resp.body[s] - b for s, b in stopped.items()),
    available=d.quic._remote_max_streams_bidi - h3wire.new_stream(d.quic) // 4)))
d.close()
"#;

/// A stream-open flood: as many request streams as the credit allows,
/// each left silent (or with one byte of a HEADERS frame). The credit is
/// 128 at once (as HTTP/2's streams) and no more is granted while they
/// stay open; unidirectional streams are 3, all taken by HTTP/3's own.
/// Fresh connections are served while the streams are held.
#[test]
fn a_stream_open_flood_is_bounded_to_128() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    let mut bystander = s.bystander();

    for extra in [&[][..], &["--partial"]] {
        let mut args = vec!["--wait", "2"];
        args.extend_from_slice(extra);
        let flood = s.spawn_attack("stream-open-flood", &args);
        // Most likely while the streams are held (the attack holds them
        // for 2 s after its handshake); served either way.
        std::thread::sleep(std::time::Duration::from_millis(700));
        s.assert_served(SMALL, "during a stream-open flood");
        let r = flood.report();
        assert_eq!(r["allowed"], 128, "{extra:?}: {r}");
        assert_eq!(r["opened"], 128, "{extra:?}: {r}");
        assert_eq!(r["credit_after"], 128, "{extra:?}: {r}");
        assert_eq!(r["alive"], true, "{extra:?}: {r}");
        assert!(r["close"].is_null(), "{extra:?}: {r}");
    }
    for extra in [&["--uni"][..], &["--uni", "--partial"]] {
        let mut args = vec!["--wait", "1"];
        args.extend_from_slice(extra);
        let r = s.attack("stream-open-flood", &args);
        assert_eq!(r["allowed"], 0, "{extra:?}: {r}");
        assert_eq!(r["credit_after"], 3, "{extra:?}: {r}");
        assert_eq!(r["alive"], true, "{extra:?}: {r}");
    }

    s.assert_bystander_served(&mut bystander);
    s.assert_served(SMALL, "after the stream-open floods");
}
