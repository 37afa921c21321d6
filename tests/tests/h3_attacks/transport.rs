//! QUIC-layer floods on an established connection: connection IDs,
//! PATH_CHALLENGE, acknowledgements withheld.

use super::harness::{assert_closed, one_at_a_time, H3Server, BIG, BIG_LEN, SMALL};

/// NEW_CONNECTION_ID floods (quic-go CVE-2024-22189: retirements queued
/// without bound). Past our active_connection_id_limit with nothing
/// retired is CONNECTION_ID_LIMIT_ERROR (RFC 9000 §5.1.1); a flood that
/// retires as it goes is answered with RETIRE_CONNECTION_ID frames, and
/// one that would queue more of them than the server keeps is closed with
/// the same code (§5.1.2 allows it) rather than remembered.
#[test]
fn a_new_connection_id_flood_closes_only_its_connection() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    let mut bystander = s.bystander();

    let r = s.attack("new-connection-id-flood", &["--wait", "1"]);
    assert_eq!(r["handshake"], true, "{r}");
    assert_closed(&r, "transport", 0x09);
    assert!(
        r["requested"].as_u64() > r["limit"].as_u64(),
        "the flood passed the limit: {r}"
    );

    // Retiring all but the newest: each is answered, the connection lives.
    let r = s.attack(
        "new-connection-id-flood",
        &[
            "--retire-prior-to",
            "advance",
            "--count",
            "20",
            "--wait",
            "1",
        ],
    );
    assert!(r["close"].is_null(), "{r}");
    assert_eq!(r["alive"], true, "{r}");
    assert_eq!(r["sent"], 20, "{r}");
    assert!(
        r["retire_frames_received"].as_u64() >= Some(20),
        "every retirement answered: {r}"
    );

    // 2 000 of them at once: no unbounded queue of retirements.
    let r = s.attack(
        "new-connection-id-flood",
        &[
            "--retire-prior-to",
            "advance",
            "--count",
            "2000",
            "--wait",
            "1",
        ],
    );
    assert_eq!(r["alive"], true, "{r}");
    if !r["close"].is_null() {
        assert_closed(&r, "transport", 0x09);
    }

    s.assert_bystander_served(&mut bystander);
    s.assert_served(SMALL, "after the flood");
}

/// PATH_CHALLENGE floods with acknowledgements withheld (quic-go
/// CVE-2023-49295: a PATH_RESPONSE queued for each challenge while the
/// attacker keeps the congestion window shut). The server answers at most
/// one challenge per datagram it receives, never one per challenge, and
/// the connection goes on.
#[test]
fn a_path_challenge_flood_queues_no_responses() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    let mut bystander = s.bystander();

    let flood = s.spawn_attack(
        "path-challenge-flood",
        &["--count", "5000", "--withhold-acks", "--wait", "1"],
    );
    s.assert_served(SMALL, "during a PATH_CHALLENGE flood");
    let r = flood.report();
    assert_eq!(r["sent"], 5000, "{r}");
    assert_eq!(r["alive"], true, "{r}");
    assert!(
        r["responses"].as_u64() <= r["counters"]["sent_datagrams"].as_u64(),
        "at most one PATH_RESPONSE per datagram: {r}"
    );
    // Not a reason to close; a request on the flooded connection is served.
    assert!(r["close"].is_null(), "{r}");
    assert_eq!(r["followup"]["status"], 200, "{r}");

    // Without withholding too.
    let r = s.attack("path-challenge-flood", &["--count", "2000", "--wait", "1"]);
    assert_eq!(r["alive"], true, "{r}");
    assert_eq!(r["followup"]["status"], 200, "{r}");

    s.assert_bystander_served(&mut bystander);
    s.assert_served(SMALL, "after the flood");
}

/// What the server sends while its data goes unacknowledged. Bound: 256
/// KiB. What the server has in flight is quinn's congestion window (about
/// 14 KiB at the start, grown by the first acknowledged datagrams) plus a
/// loss probe or two at each probe timeout, which doubles each time: over
/// the attack's seconds that is some 17 KB here. The bound is 15 times
/// that, and 1/16 of the file; a server that kept sending to a silent peer
/// would pass it at once (the 4 MiB file, within the connection's 8 MiB send
/// window).
const UNACKED_BOUND: u64 = 256 << 10;

/// ACK withholding: a download whose acknowledgements stop after the first
/// ten datagrams. The server stops sending new data once its window is
/// full (only loss probes follow), and never finishes the download.
///
/// The attacker's own PING is not asserted answered (`alive`): while data
/// waits and the congestion window is full, quinn-proto sends no ACK-only
/// packet (`poll_transmit` skips the data space when congestion-blocked,
/// ACKs included), so the PING's ACK rides the next loss probe, which the
/// backoff may put past the probe's one second. The server serves others
/// meanwhile, which is what matters.
#[test]
fn withheld_acknowledgements_stop_the_server_sending() {
    let _one = one_at_a_time();
    let s = H3Server::start(|_| {});
    let mut bystander = s.bystander();

    let attack = s.spawn_attack(
        "ack-withhold",
        &["--path", BIG, "--acked-packets", "10", "--timeout", "7"],
    );
    s.assert_served(SMALL, "during ACK withholding");
    s.assert_served_by_gtlsclient(BIG);
    let r = attack.report();
    assert_eq!(r["status"], 200, "{r}");
    assert!(!r["bytes_before"].is_null(), "the withholding began: {r}");
    assert_eq!(r["complete"], false, "{r}");
    let after = r["bytes_after"].as_u64().unwrap();
    assert!(
        after <= UNACKED_BOUND,
        "{after} bytes sent unacknowledged, past {UNACKED_BOUND}: {r}"
    );
    assert!(r["stream_bytes"].as_u64().unwrap() < BIG_LEN as u64, "{r}");
    assert!(
        r["close"].is_null() || r["close"]["by"] == "client",
        "the server did not close it: {r}"
    );

    s.assert_bystander_served(&mut bystander);
    s.assert_served(BIG, "after ACK withholding");
}
