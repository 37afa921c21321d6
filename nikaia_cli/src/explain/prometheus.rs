//! `nikaia explain --prometheus`: the report in the Prometheus text
//! exposition format.

mod disk;

use super::n;
use serde_json::Value;

/// The report in the Prometheus text exposition format (0.0.4): a HELP and
/// a TYPE line per metric, names prefixed `nikaia_`, counters ending in
/// `_total`. Metrics of a part the server does not have (TLS) are left out.
pub fn prometheus(r: &Value) -> String {
    let mut p = Exposition::default();
    p.metric(
        "nikaia_uptime_seconds",
        "gauge",
        "Seconds since the server started.",
        &[(vec![], n(&r["uptime_ms"]) as f64 / 1000.0)],
    );
    let classes = ["1xx", "2xx", "3xx", "4xx", "5xx"];
    p.counter(
        "nikaia_responses_total",
        "Responses by status class (refused requests included).",
        classes
            .iter()
            .map(|c| (vec![("class", c.to_string())], n(&r["statuses"][c])))
            .collect(),
    );
    let tls = &r["tls"];
    let mut requests = Vec::new();
    let mut bytes = Vec::new();
    for (transport, list) in [("plain", &r["vehicles"]), ("tls", &tls["vehicles"])] {
        for v in list.as_array().into_iter().flatten() {
            let labels = vec![
                ("vehicle", v["vehicle"].as_str().unwrap_or("?").to_owned()),
                ("transport", transport.to_owned()),
            ];
            requests.push((labels.clone(), n(&v["requests"])));
            bytes.push((labels, n(&v["bytes"])));
        }
    }
    p.counter(
        "nikaia_vehicle_responses_total",
        "Responses whose last byte was written, by how the body travelled.",
        requests,
    );
    p.counter(
        "nikaia_vehicle_body_bytes_total",
        "Body bytes written, by how the body travelled.",
        bytes,
    );
    table(
        &mut p,
        "kept",
        &r["cache"],
        &[
            ("hits", "Files answered from the kept table."),
            ("misses", "Files opened while the kept table is on."),
            ("evictions", "Kept entries dropped for room."),
            (
                "invalidations",
                "Kept entries dropped because the file changed.",
            ),
            (
                "checks",
                "statx calls that checked a kept name (shared by the requests read before each).",
            ),
        ],
        [
            "Entries in the kept table.",
            "Bytes of files the kept table holds.",
        ],
    );
    table(
        &mut p,
        "compressed",
        &r["compressed"],
        &[
            ("hits", "Answers sent from a kept compressed variant."),
            ("misses", "Lookups of a compressed variant not kept."),
            ("made", "Compressed variants made."),
            (
                "no_gain",
                "Compressions that did not make the file smaller.",
            ),
            ("evictions", "Compressed variants dropped for room."),
            (
                "invalidations",
                "Compressed variants dropped because the file changed.",
            ),
            ("dropped", "Compressions not queued: the queue was full."),
        ],
        [
            "Compressed variants kept.",
            "Bytes of compressed variants kept.",
        ],
    );
    p.gauge(
        "nikaia_connections",
        "Connections open now.",
        n(&r["connections"]),
    );
    p.counter(
        "nikaia_io_pool_opens_total",
        "Opens finished on the io pool (not from the kernel's caches).",
        vec![(vec![], n(&r["pool_opens"]))],
    );
    p.counter(
        "nikaia_io_pool_cold_reads_total",
        "File windows read on the io pool (pages not in the page cache).",
        vec![(vec![], n(&r["cold_reads"]))],
    );
    p.gauge(
        "nikaia_io_pool_queued",
        "Jobs waiting for an io-pool thread now.",
        n(&r["pool_queued"]),
    );
    p.counter(
        "nikaia_idle_closed_total",
        "Idle connections closed to admit new ones at max-connections.",
        vec![(vec![], n(&r["idle_closed"]))],
    );
    p.counter(
        "nikaia_send_timeouts_total",
        "Connections closed because an answer made no progress for send-timeout.",
        vec![(vec![], n(&r["send_timeouts"]))],
    );
    p.counter(
        "nikaia_truncated_total",
        "File bodies cut short after their head went out.",
        vec![(vec![], n(&r["truncated"]))],
    );
    let h2 = &r["h2"];
    if h2.is_object() {
        p.counter(
            "nikaia_h2_connections_total",
            "Connections that spoke HTTP/2 (h2 and h2c).",
            vec![(vec![], n(&h2["connections"]))],
        );
        p.counter(
            "nikaia_h2_streams_total",
            "HTTP/2 streams clients opened.",
            vec![(vec![], n(&h2["streams"]))],
        );
        p.counter(
            "nikaia_h2_resets_total",
            "HTTP/2 RST_STREAM frames, sent or received.",
            vec![
                (
                    vec![("direction", "sent".to_owned())],
                    n(&h2["resets_sent"]),
                ),
                (
                    vec![("direction", "received".to_owned())],
                    n(&h2["resets_received"]),
                ),
            ],
        );
        let goaway: Vec<_> = h2["goaway"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(code, count)| (vec![("code", code.clone())], n(count)))
            .collect();
        if !goaway.is_empty() {
            p.counter(
                "nikaia_h2_goaway_total",
                "HTTP/2 GOAWAY frames sent, by error code.",
                goaway,
            );
        }
        p.counter(
            "nikaia_h2_flood_closes_total",
            "HTTP/2 connections closed for a flood (ENHANCE_YOUR_CALM).",
            vec![(vec![], n(&h2["floods"]))],
        );
        p.counter(
            "nikaia_h2_stalled_streams_total",
            "HTTP/2 streams reset because they made no progress for send-timeout.",
            vec![(vec![], n(&h2["stalled"]))],
        );
    }
    h3(&mut p, &r["h3"]);
    let b = &r["bodies"];
    if b.is_object() {
        p.counter(
            "nikaia_request_bodies_total",
            "Request bodies, by what became of them: read whole, streamed to a sink, refused from their head, thrown away unread, timed out (408), ended early (a sink's abort).",
            [
                ("whole", "whole"),
                ("streamed", "streamed"),
                ("refused", "refused"),
                ("drained", "drained"),
                ("timed_out", "timeouts"),
                ("aborted", "aborted"),
            ]
            .iter()
            .map(|(outcome, key)| (vec![("outcome", outcome.to_string())], n(&b[key])))
            .collect(),
        );
        p.counter(
            "nikaia_request_body_bytes_total",
            "Bytes of request bodies handed to handlers and sinks.",
            vec![(vec![], n(&b["bytes"]))],
        );
        p.counter(
            "nikaia_files_written_total",
            "Request bodies written to files, by outcome: the name given, refused (a precondition, the name, the space, max-writes), failed mid-body (no space, I/O).",
            [
                ("written", "files_written"),
                ("refused", "files_refused"),
                ("failed", "files_failed"),
            ]
            .iter()
            .map(|(outcome, key)| (vec![("outcome", outcome.to_string())], n(&b[key])))
            .collect(),
        );
    }
    let pr = &r["produced"];
    if pr.is_object() {
        p.counter(
            "nikaia_produced_bodies_total",
            "Response bodies programs produced, by how they ended: whole, failed by the producer, cancelled (client gone, reset, send-timeout, stopping).",
            ["ended", "failed", "cancelled"]
                .iter()
                .map(|outcome| (vec![("outcome", outcome.to_string())], n(&pr[*outcome])))
                .collect(),
        );
        p.counter(
            "nikaia_produced_pulls_total",
            "Pulls of produced bodies: each asked the producer for its next piece.",
            vec![(vec![], n(&pr["pulls"]))],
        );
    }
    disk::writes(&mut p, r);
    if tls.is_object() {
        p.counter(
            "nikaia_tls_handshakes_total",
            "TLS handshakes: full, resumed, or failed (connections ended by a protocol error).",
            [
                ("full", "handshakes_full"),
                ("resumed", "handshakes_resumed"),
                ("failed", "failures"),
            ]
            .iter()
            .map(|(result, key)| (vec![("result", result.to_string())], n(&tls[key])))
            .collect(),
        );
        p.counter(
            "nikaia_tls_plain_http_total",
            "Plain HTTP requests answered 400 on the TLS port.",
            vec![(vec![], n(&tls["plain_http"]))],
        );
        p.counter(
            "nikaia_tls_unrecognized_name_total",
            "TLS handshakes refused because no certificate covers the name asked for.",
            vec![(vec![], n(&tls["unrecognized"]))],
        );
        certificates(&mut p, &tls["certificates"]);
    }
    let sites: Vec<_> = r["anywhere"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let site = s["site"].as_str().unwrap_or("?").to_owned();
            (vec![("site", site)], n(&s["opens"]))
        })
        .collect();
    if !sites.is_empty() {
        p.counter(
            "nikaia_anywhere_opens_total",
            "Files opened through roots made at each Root::anywhere() site.",
            sites,
        );
    }
    p.0
}

/// What QUIC connections and their HTTP/3 did (all zero while `http3` is
/// off).
fn h3(p: &mut Exposition, h3: &Value) {
    if !h3.is_object() {
        return;
    }
    let one = |key: &str| vec![(vec![], n(&h3[key]))];
    p.counter(
        "nikaia_h3_connections_total",
        "QUIC connections accepted (HTTP/3).",
        one("connections"),
    );
    p.counter(
        "nikaia_h3_refused_handshakes_total",
        "QUIC handshakes refused at max-connections (CONNECTION_REFUSED).",
        one("refused"),
    );
    p.counter(
        "nikaia_h3_retries_total",
        "QUIC Retry packets sent to have a handshake prove its address.",
        one("retries"),
    );
    p.counter(
        "nikaia_h3_streams_total",
        "HTTP/3 request streams clients opened.",
        one("streams"),
    );
    p.counter(
        "nikaia_h3_resets_total",
        "HTTP/3 request streams reset by the server (sent) or by the client (received: RESET_STREAM or STOP_SENDING).",
        vec![
            (
                vec![("direction", "sent".to_owned())],
                n(&h3["resets_sent"]),
            ),
            (
                vec![("direction", "received".to_owned())],
                n(&h3["resets_received"]),
            ),
        ],
    );
    p.counter(
        "nikaia_h3_flood_closes_total",
        "QUIC connections closed for a flood (H3_EXCESSIVE_LOAD).",
        one("floods"),
    );
    p.counter(
        "nikaia_h3_stalled_streams_total",
        "HTTP/3 streams reset because they made no progress for send-timeout.",
        one("stalled"),
    );
    p.counter(
        "nikaia_h3_header_timeouts_total",
        "QUIC connections closed by header-timeout before a request head.",
        one("header_timeouts"),
    );
    p.counter(
        "nikaia_h3_datagrams_received_total",
        "UDP datagrams read on the HTTP/3 sockets.",
        one("datagrams"),
    );
    p.counter(
        "nikaia_h3_handed_datagrams_total",
        "UDP datagrams a worker read for another worker's QUIC connection: handed to it, or lost (its inbox full).",
        vec![
            (vec![("outcome", "handed".to_owned())], n(&h3["handed"])),
            (vec![("outcome", "lost".to_owned())], n(&h3["handed_lost"])),
        ],
    );
    p.counter(
        "nikaia_h3_path_changes_total",
        "Times a QUIC connection's client address changed (migration, NAT rebinding).",
        one("path_changes"),
    );
    p.counter(
        "nikaia_h3_stateless_resets_total",
        "QUIC stateless resets sent.",
        one("stateless_resets"),
    );
    p.counter(
        "nikaia_h3_upgrade_datagrams_total",
        "UDP datagrams carried between an upgrade's two processes, by direction (lost: the pair full or the other process gone).",
        vec![
            (vec![("direction", "out".to_owned())], n(&h3["forwarded"])),
            (vec![("direction", "in".to_owned())], n(&h3["forwarded_in"])),
            (vec![("direction", "lost".to_owned())], n(&h3["forward_lost"])),
        ],
    );
    p.counter(
        "nikaia_h3_drained_connections_total",
        "QUIC connections that finished in this process after an upgrade's handover.",
        one("drained"),
    );
}

/// A table's families (the kept table, the compressed variants): a
/// counter `nikaia_{name}_{key}_total` per counter of `obj`, and the
/// gauges `nikaia_{name}_entries` and `nikaia_{name}_bytes`.
fn table(
    p: &mut Exposition,
    name: &str,
    obj: &Value,
    counters: &[(&str, &str)],
    [entries, bytes]: [&str; 2],
) {
    for (key, help) in counters {
        p.counter(
            &format!("nikaia_{name}_{key}_total"),
            help,
            vec![(vec![], n(&obj[key]))],
        );
    }
    p.gauge(
        &format!("nikaia_{name}_entries"),
        entries,
        n(&obj["entries"]),
    );
    p.gauge(&format!("nikaia_{name}_bytes"), bytes, n(&obj["bytes"]));
}

/// Per certificate: its end, the seconds left to it, its handshakes;
/// labelled by the chain's file and the names it serves.
fn certificates(p: &mut Exposition, list: &Value) {
    let list = list.as_array().cloned().unwrap_or_default();
    let labels = |c: &Value| -> Labels {
        let names: Vec<&str> = (c["names"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        vec![
            ("cert", c["cert"].as_str().unwrap_or("?").to_owned()),
            ("names", names.join(",")),
            ("source", c["source"].as_str().unwrap_or("?").to_owned()),
        ]
    };
    let each = |key: &str| -> Vec<(Labels, f64)> {
        (list.iter())
            .map(|c| (labels(c), c[key].as_f64().unwrap_or(0.0)))
            .collect()
    };
    p.metric(
        "nikaia_tls_certificate_not_after_seconds",
        "gauge",
        "The end of a certificate's validity, in seconds since the Unix epoch.",
        &each("not_after"),
    );
    p.metric(
        "nikaia_tls_certificate_expiry_seconds",
        "gauge",
        "Seconds left until a certificate's end of validity (negative: expired).",
        &each("expires_in"),
    );
    p.metric(
        "nikaia_tls_certificate_handshakes_total",
        "counter",
        "TLS handshakes completed with a certificate.",
        &each("handshakes"),
    );
    // ACME's schedule, for its certificates only.
    let acme: Vec<Value> = list
        .iter()
        .filter(|c| c["source"] == "acme")
        .cloned()
        .collect();
    if acme.is_empty() {
        return;
    }
    let each = |key: &str| -> Vec<(Labels, f64)> {
        (acme.iter())
            .map(|c| (labels(c), c[key].as_f64().unwrap_or(0.0)))
            .collect()
    };
    p.metric(
        "nikaia_acme_next_renewal_seconds",
        "gauge",
        "When ACME looks at a certificate next (renews it, or asks the CA for its window), in seconds since the Unix epoch.",
        &each("next_renewal"),
    );
    p.metric(
        "nikaia_acme_last_attempt_seconds",
        "gauge",
        "When ACME last asked the CA about a certificate, in seconds since the Unix epoch (0: never).",
        &each("last_attempt"),
    );
    let failing: Vec<(Labels, f64)> = (acme.iter())
        .map(|c| {
            (
                labels(c),
                f64::from(c["last_error"].as_str().is_some_and(|e| !e.is_empty())),
            )
        })
        .collect();
    p.metric(
        "nikaia_acme_failing",
        "gauge",
        "1 while a certificate's last ACME attempt failed (its error in nikaia explain).",
        &failing,
    );
    p.metric(
        "nikaia_acme_orders_total",
        "counter",
        "Orders ACME placed for a certificate.",
        &each("orders"),
    );
    p.metric(
        "nikaia_acme_failures_total",
        "counter",
        "ACME attempts for a certificate that failed.",
        &each("failures"),
    );
}

type Labels = Vec<(&'static str, String)>;

#[derive(Default)]
struct Exposition(String);

impl Exposition {
    fn counter(&mut self, name: &str, help: &str, samples: Vec<(Labels, u64)>) {
        let samples: Vec<_> = samples.into_iter().map(|(l, v)| (l, v as f64)).collect();
        self.metric(name, "counter", help, &samples);
    }

    fn gauge(&mut self, name: &str, help: &str, value: u64) {
        self.metric(name, "gauge", help, &[(vec![], value as f64)]);
    }

    fn metric(&mut self, name: &str, kind: &str, help: &str, samples: &[(Labels, f64)]) {
        use std::fmt::Write;
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
        for (labels, value) in samples {
            self.0.push_str(name);
            if !labels.is_empty() {
                self.0.push('{');
                for (i, (key, value)) in labels.iter().enumerate() {
                    if i > 0 {
                        self.0.push(',');
                    }
                    let value = value
                        .replace('\\', "\\\\")
                        .replace('"', "\\\"")
                        .replace('\n', "\\n");
                    let _ = write!(self.0, "{key}=\"{value}\"");
                }
                self.0.push('}');
            }
            let _ = writeln!(self.0, " {value}");
        }
    }
}
