//! Attacks before or at the handshake: damaged transport parameters,
//! amplification, Retry under a handshake flood, `max-connections`, and the
//! busy-port rule over UDP.

use super::harness::{assert_closed, one_at_a_time, site, H3Server, SMALL};
use nikaia_std::http::Server;
use nikaia_std::rt::Http3Retry;
use nikaia_tests::TestPki;
use serde_json::Value;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A ClientHello whose quic_transport_parameters extension is damaged
/// (quinn RUSTSEC-2026-0037: an `unwrap` on them panicked from one
/// Initial): cut short, a parameter longer than what follows, a cut
/// varint, a parameter twice, none at all. Each is refused with
/// TRANSPORT_PARAMETER_ERROR before any handshake, and the server goes on.
#[test]
fn damaged_transport_parameters_are_transport_parameter_error() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    let mut bystander = s.bystander();

    for variant in ["cut", "len", "varint", "dup", "empty"] {
        let r = s.attack("truncated-transport-params", &["--variant", variant]);
        assert_eq!(r["handshake"], false, "{variant}: {r}");
        assert_closed(&r, "transport", 0x08);
    }

    s.assert_bystander_served(&mut bystander);
    s.assert_served(SMALL, "after the damaged handshakes");
}

/// An Initial flood's figures, checked for amplification: no connection
/// got more than 3 times the bytes it sent (RFC 9000 §8.1: before its
/// address is validated, and none of these ever is).
#[track_caller]
fn assert_not_amplified(r: &Value) {
    assert_eq!(r["over_3x"], 0, "{r}");
    assert!(r["max_ratio"].as_f64().unwrap() <= 3.0, "{r}");
    let (sent, got) = (r["sent_bytes"].as_u64(), r["received_bytes"].as_u64());
    assert!(got.unwrap() <= 3 * sent.unwrap(), "{r}");
}

/// Amplification: 50 handshakes begun and never continued, with Retry off
/// so that the server answers each with its own first flight. It sends
/// each at most 3 times what it received, and nothing more however long
/// it waits: neither its loss probes nor the close that ends each at
/// `header-timeout` (1 s here, within the attacker's 2.5 s of listening)
/// pass that budget.
#[test]
fn before_address_validation_the_server_sends_at_most_three_times() {
    let _one = one_at_a_time();
    let s = H3Server::start(|rt| {
        rt.http3_retry = Http3Retry::Never;
        rt.header_timeout = Duration::from_secs(1);
    });
    let mut bystander = s.bystander();

    let flood = s.spawn_attack("initial-flood", &["--count", "50", "--wait", "2.5"]);
    s.assert_served(SMALL, "during the unvalidated handshakes");
    let r = flood.report();
    assert_eq!(r["count"], 50, "{r}");
    assert_eq!(r["answered"], 50, "each got the server's first flight: {r}");
    assert_eq!(r["retried"], 0, "{r}");
    assert_not_amplified(&r);

    s.assert_bystander_served(&mut bystander);
    s.assert_served(SMALL, "after the unvalidated handshakes");
}

/// Retry under a handshake flood. `http3-retry = "auto"` with
/// `http3-retry-handshakes = 4`: four handshakes are taken, every one
/// past them (the attacker never finishes its own) is answered with a
/// stateless Retry, a well-behaved client included, which comes back with
/// its token and is served; `retries` counts each. `"always"`: every new
/// handshake gets Retry; `"never"`: none does. (`header-timeout` ends the
/// attacker's handshakes: 5 s, well after the client that follows the
/// flood, and 2 s where nothing follows; a graceful stop waits for them.)
#[test]
fn retry_answers_handshakes_past_the_threshold() {
    let _one = one_at_a_time();
    let flood_args = ["--count", "20", "--first-only", "--wait", "0.5"];

    // auto, 4.
    let s = H3Server::start(|rt| {
        rt.http3_retry = Http3Retry::Auto;
        rt.http3_retry_handshakes = 4;
        rt.header_timeout = Duration::from_secs(5);
    });
    s.assert_served(SMALL, "below the threshold");
    assert_eq!(s.h3().retries, 0, "no Retry below the threshold");
    let r = s.attack("initial-flood", &flood_args);
    assert_eq!(r["count"], 20, "{r}");
    assert_eq!(r["retried"], 16, "all past the first four: {r}");
    assert_eq!(r["packets"]["retry"], 16, "{r}");
    assert_not_amplified(&r);
    assert_eq!(s.h3().retries, 16);
    // The four are still handshaking: a new client is retried, and served.
    s.assert_served(SMALL, "past the threshold");
    assert_eq!(s.h3().retries, 17);
    drop(s);

    // always.
    let s = H3Server::start(|rt| rt.http3_retry = Http3Retry::Always);
    s.assert_served(SMALL, "with Retry always");
    assert_eq!(s.h3().retries, 1);
    let r = s.attack("initial-flood", &["--count", "10", "--wait", "1"]);
    assert_eq!(r["retried"], 10, "{r}");
    assert_eq!(s.h3().retries, 11);
    s.assert_served_by_gtlsclient(SMALL);
    assert_eq!(s.h3().retries, 12);
    drop(s);

    // never.
    let s = H3Server::start(|rt| {
        rt.http3_retry = Http3Retry::Never;
        rt.header_timeout = Duration::from_secs(2);
    });
    let r = s.attack("initial-flood", &flood_args);
    assert_eq!(r["retried"], 0, "{r}");
    assert_eq!(r["answered"], 20, "{r}");
    assert_not_amplified(&r);
    s.assert_served(SMALL, "with Retry never");
    assert_eq!(s.h3().retries, 0);
}

/// A graceful stop closes QUIC handshakes in progress at once, as it
/// closes a TCP connection that has sent no request within its drain
/// (1 s): an attacker's half-open handshakes must not hold a shutdown or
/// an upgrade's old process. This is a hang check, not a timing: the
/// handshakes' own end (`header-timeout`) is set to 60 s, and the stop is
/// given 20.
#[test]
fn a_graceful_stop_does_not_wait_for_half_open_handshakes() {
    let _one = one_at_a_time();
    let s = H3Server::start(|rt| {
        rt.http3_retry = Http3Retry::Never;
        rt.header_timeout = Duration::from_secs(60);
    });
    let r = s.attack("initial-flood", &["--count", "5", "--wait", "0.5"]);
    assert_eq!(r["answered"], 5, "{r}");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        s.running.shutdown();
        s.running.wait();
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(20)).is_ok(),
        "the graceful stop still waits for the half-open handshakes after 20 s"
    );
}

/// Two connections that finished their handshake and ask nothing (not
/// idle: none was served yet), then a third handshake: its close, and
/// whether the first two still answer.
const TWO_SILENT_THEN_ONE: &str = r#"
import argparse, json, sys, time
import h3attacks
args = argparse.Namespace(connect=sys.argv[1], authority="localhost", cafile=sys.argv[2],
                          insecure=False, alpn="h3", wait=None, path="/index.html")
deadline = time.monotonic() + 8
one = h3attacks.open_h3(args, deadline)
two = h3attacks.open_h3(args, deadline)
three = h3attacks.open_h3(args, deadline)
out = h3attacks.report(three, one=one.handshake, two=two.handshake, three=three.handshake)
for name, d in (("one_after", one), ("two_after", two)):
    resp = h3attacks.Responses(d)
    sid = h3attacks.get(d, args)
    d.pump(lambda: resp.finished(sid), timeout=2)
    out[name] = resp.status.get(sid)
print(json.dumps(out))
one.close()
two.close()
"#;

/// `max-connections` counts QUIC connections. At the limit a new
/// handshake takes the place of the connection idle longest (served,
/// every answer acknowledged, nothing arriving), TCP or QUIC, as a TCP
/// connection does; with none idle, it is refused with CONNECTION_REFUSED
/// (counted as `refused`) and the connections open are served on.
#[test]
fn past_max_connections_a_handshake_is_refused() {
    let _one = one_at_a_time();
    let s = H3Server::start(|rt| rt.max_connections = 2);

    // Two served connections, idle now: a third takes the older's place.
    let first = s.bystander();
    let second = s.bystander();
    let closed = s.running.report().idle_closed;
    let answer = s.get(SMALL);
    assert_eq!(answer["status"], 200, "{answer}");
    assert_eq!(s.h3().refused, 0);
    assert_eq!(s.running.report().idle_closed, closed + 1);
    drop(first);
    drop(second);

    // Two that were never served are not idle: a third is refused.
    let deadline = Instant::now() + Duration::from_secs(8);
    while s.running.report().connections > 0 {
        assert!(
            Instant::now() < deadline,
            "the bystanders' connections did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = s.python(TWO_SILENT_THEN_ONE);
    assert_eq!(
        (r["one"].clone(), r["two"].clone()),
        (true.into(), true.into()),
        "{r}"
    );
    assert_eq!(r["three"], false, "{r}");
    assert_eq!(r["close"]["code"], 0x02, "CONNECTION_REFUSED: {r}");
    assert_eq!(s.h3().refused, 1);
    assert_eq!(
        (r["one_after"].clone(), r["two_after"].clone()),
        (200.into(), 200.into()),
        "{r}"
    );
}

/// A UDP socket bound to `addr` with SO_REUSEADDR and SO_REUSEPORT, as a
/// program that means to share a port would bind it.
fn foreign_udp(addr: SocketAddr) -> rustix::io::Result<std::os::fd::OwnedFd> {
    use rustix::net::{sockopt, AddressFamily, SocketType};
    let fd = rustix::net::socket(AddressFamily::INET, SocketType::DGRAM, None)?;
    sockopt::set_socket_reuseaddr(&fd, true)?;
    sockopt::set_socket_reuseport(&fd, true)?;
    rustix::net::bind(&fd, &addr)?;
    Ok(fd)
}

/// The busy-port rule over UDP (`spec/listeners.md`): our UDP socket sets
/// neither SO_REUSEADDR nor SO_REUSEPORT, so a foreign socket with both
/// cannot bind our address after we started, and one bound before us
/// makes our start fail with an error naming the address.
#[test]
fn a_foreign_udp_socket_cannot_share_our_address() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    let ours = SocketAddr::from(([127, 0, 0, 1], s.port));
    let err = foreign_udp(ours).expect_err("a foreign socket bound our UDP address");
    assert_eq!(err, rustix::io::Errno::ADDRINUSE);
    s.assert_served(SMALL, "after the foreign bind");
    drop(s);

    // Bound first, on a port whose TCP side is free: our start fails.
    let (foreign, port) = loop {
        let fd = foreign_udp(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        let bound = SocketAddr::try_from(rustix::net::getsockname(&fd).unwrap()).unwrap();
        let port = bound.port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            break (fd, port);
        }
    };
    let pki = TestPki::new();
    let (dir, _) = site();
    let mut rt = super::harness::runtime(&pki);
    rt.listen = vec![SocketAddr::from(([127, 0, 0, 1], port)).into()];
    let root = nikaia_std::fs::Root::dir(dir.path()).unwrap();
    let err = match Server::with_runtime(rt)
        .serve_dir(root, false, false)
        .start()
    {
        Ok(_) => panic!("started on a UDP address a foreign socket holds"),
        Err(e) => e.to_string(),
    };
    let named = format!("127.0.0.1:{port}");
    assert!(err.contains(&named), "{err}");
    assert!(err.contains("UDP"), "{err}");
    assert!(err.contains("address already in use"), "{err}");
    drop(foreign);
}
