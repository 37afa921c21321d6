//! `nikaia explain`: what a running server's std decided — requests and
//! bytes per vehicle, the kept table's hit rate, the `Anywhere` sites seen.
//! Read from the server's stats socket (`stats-socket` in its runtime file).

use nikaia_std::rt::Runtime;
use serde_json::Value;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// The server's stats socket (default: `stats-socket` from --runtime)
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// The server's runtime file, to find its stats socket (else $NIKAIA_RUNTIME)
    #[arg(long, value_name = "FILE")]
    runtime: Option<PathBuf>,
    /// Print the report as JSON
    #[arg(long, conflicts_with = "prometheus")]
    json: bool,
    /// Print the report in the Prometheus text exposition format
    #[arg(long)]
    prometheus: bool,
}

pub fn run(args: ExplainArgs) -> u8 {
    let socket = match args.socket {
        Some(s) => s,
        None => match Runtime::from_args(args.runtime.as_deref()) {
            Ok(rt) => match rt.stats_socket {
                Some(s) => s,
                None => {
                    eprintln!(
                        "nikaia explain: no stats socket: give --socket PATH, or --runtime FILE whose `stats-socket` names it"
                    );
                    return 1;
                }
            },
            Err(errors) => {
                for e in errors {
                    eprintln!("{e}");
                }
                return 1;
            }
        },
    };
    let text = match fetch(&socket) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "nikaia explain: no server answers at {}: {e}\n  (is it running, with `stats-socket` set in its runtime file?)",
                socket.display()
            );
            return 1;
        }
    };
    let report: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!(
                "nikaia explain: {} did not answer with a report: {e}",
                socket.display()
            );
            return 1;
        }
    };
    if args.json {
        println!("{text}");
    } else if args.prometheus {
        print!("{}", prometheus(&report));
    } else {
        print!("{}", render(&socket, &report));
    }
    0
}

fn fetch(socket: &Path) -> std::io::Result<String> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    Ok(text)
}

/// A hit rate as a person reads it; `-` before any lookup.
fn rate(hits: u64, misses: u64) -> String {
    if hits + misses == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", 100.0 * hits as f64 / (hits + misses) as f64)
    }
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The report as a person reads it.
pub fn render(socket: &Path, r: &Value) -> String {
    let mut out = format!("nikaia explain — {}\n", socket.display());
    out += &format!("uptime        {}\n\n", duration(n(&r["uptime_ms"])));
    out += &vehicles(&r["vehicles"]);
    let c = &r["cache"];
    let (hits, misses) = (n(&c["hits"]), n(&c["misses"]));
    let kept_rate = rate(hits, misses);
    out += &format!(
        "\nkept table    {} entries, {} held\n              hits {hits}, misses {misses}, hit rate {kept_rate}, evictions {}, invalidations {}, checks {}\n",
        n(&c["entries"]),
        size(n(&c["bytes"])),
        n(&c["evictions"]),
        n(&c["invalidations"]),
        n(&c["checks"]),
    );
    let z = &r["compressed"];
    let (hits, misses) = (n(&z["hits"]), n(&z["misses"]));
    out += &format!(
        "compressed    {} variants, {} held\n              hits {hits}, misses {misses}, hit rate {}, made {}, no gain {}, evictions {}, invalidations {}, not queued {}\n",
        n(&z["entries"]),
        size(n(&z["bytes"])),
        rate(hits, misses),
        n(&z["made"]),
        n(&z["no_gain"]),
        n(&z["evictions"]),
        n(&z["invalidations"]),
        n(&z["dropped"]),
    );
    out += &format!(
        "io pool       {} opens, {} cold reads\ncut short     {} file bodies (truncated or unreadable mid-transfer)\nmade room     {} idle connections closed at max-connections\ntimed out     {} answers closed after send-timeout without progress\n",
        n(&r["pool_opens"]),
        n(&r["cold_reads"]),
        n(&r["truncated"]),
        n(&r["idle_closed"]),
        n(&r["send_timeouts"]),
    );
    let h2 = &r["h2"];
    if h2.is_object() {
        let goaway: Vec<String> = h2["goaway"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(code, count)| format!("{code} {}", n(count)))
            .collect();
        let goaway = if goaway.is_empty() {
            "none".to_owned()
        } else {
            goaway.join(", ")
        };
        out += &format!(
            "HTTP/2        {} connections, {} streams; resets {} sent, {} received\n              GOAWAY sent: {goaway}\n              {} connections closed for a flood, {} stalled streams reset after send-timeout\n",
            n(&h2["connections"]),
            n(&h2["streams"]),
            n(&h2["resets_sent"]),
            n(&h2["resets_received"]),
            n(&h2["floods"]),
            n(&h2["stalled"]),
        );
    }
    let tls = &r["tls"];
    if tls.is_object() {
        out += &format!(
            "\nTLS           {} connections open; handshakes: {} full, {} resumed, {} failed\n              {} plain HTTP requests refused on the TLS port\n",
            n(&tls["connections"]),
            n(&tls["handshakes_full"]),
            n(&tls["handshakes_resumed"]),
            n(&tls["failures"]),
            n(&tls["plain_http"]),
        );
        out += "through TLS:\n";
        out += &vehicles(&tls["vehicles"]);
    }
    let sites = r["anywhere"].as_array().cloned().unwrap_or_default();
    if sites.is_empty() {
        out += "\nAnywhere      no site has made a root in this process\n";
    } else {
        out += "\nAnywhere sites seen at run time (opens through each):\n";
        for s in sites {
            out += &format!(
                "  {}  {}\n",
                s["site"].as_str().unwrap_or("?"),
                n(&s["opens"])
            );
        }
    }
    out
}

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

/// The vehicles table: requests and bytes by the way bodies travelled.
fn vehicles(list: &Value) -> String {
    let mut out = format!("{:<14}{:>12}{:>14}\n", "vehicle", "requests", "bytes");
    for v in list.as_array().into_iter().flatten() {
        out += &format!(
            "{:<14}{:>12}{:>14}\n",
            v["vehicle"].as_str().unwrap_or("?"),
            n(&v["requests"]),
            size(n(&v["bytes"]))
        );
    }
    out
}

fn size(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{}.{:03}s", s, ms % 1000),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m {:02}s", s / 3600, s / 60 % 60, s % 60),
    }
}
