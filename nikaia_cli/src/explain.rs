//! `nikaia explain`: what a running server's std decided — requests and
//! bytes per vehicle, the kept table's hit rate, the `Anywhere` sites seen.
//! Read from the server's stats socket (`stats-socket` in its runtime file).

use nikaia_std::rt::{AcmeNames, Runtime, RUNTIME_ENV};
use serde_json::Value;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod prometheus;
pub use prometheus::prometheus;

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
    // Whether the runtime file read for the socket has HTTP/3 on (a TLS
    // listener, and `http3` not false): the text then shows its counters
    // even while they are all zero.
    let mut http3 = false;
    let socket = match args.socket {
        Some(s) => s,
        None => match runtime(args.runtime) {
            Ok(rt) => match &rt.stats_socket {
                Some(s) => {
                    http3 = !rt.http3_addresses().is_empty();
                    s.clone()
                }
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
        print!("{}", render(&socket, &report, http3));
    }
    0
}

/// The runtime file `--runtime` (else `NIKAIA_RUNTIME`) names, read for its
/// `stats-socket`: as `nikaia serve` reads it with `--domain`, since a
/// server's `[acme]` may leave its names to the command line.
fn runtime(file: Option<PathBuf>) -> Result<Runtime, Vec<nikaia_std::rt::ConfigError>> {
    let env = || std::env::var_os(RUNTIME_ENV).filter(|v| !v.is_empty());
    match file.or_else(|| env().map(PathBuf::from)) {
        Some(file) => Runtime::load_with(&file, AcmeNames::CommandLine),
        None => Ok(Runtime::default()),
    }
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

/// The report as a person reads it; `http3`: the server's runtime file
/// has HTTP/3 on (its lines are shown then, else only once a counter
/// moved).
pub fn render(socket: &Path, r: &Value, http3: bool) -> String {
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
    out += &h3(&r["h3"], http3);
    let b = &r["bodies"];
    if b.is_object() {
        out += &format!(
            "bodies        {} read whole, {} streamed; {} handed to handlers\n              {} refused from their head, {} thrown away unread, {} timed out (408), {} streams ended early\n",
            n(&b["whole"]),
            n(&b["streamed"]),
            size(n(&b["bytes"])),
            n(&b["refused"]),
            n(&b["drained"]),
            n(&b["timeouts"]),
            n(&b["aborted"]),
        );
        out += &format!(
            "files in     {} written, {} refused (precondition, name, space, cap), {} failed mid-body\n",
            n(&b["files_written"]),
            n(&b["files_refused"]),
            n(&b["files_failed"]),
        );
    }
    let w = &r["writes"];
    if w.is_object() {
        let refused: Vec<String> = w["refused"]
            .as_object()
            .map(|m| m.iter().map(|(s, c)| format!("{} {s}", n(c))).collect())
            .unwrap_or_default();
        let refused = match refused.is_empty() {
            true => "none refused".to_owned(),
            false => format!("refused: {}", refused.join(", ")),
        };
        out += &format!(
            "uploads      {} created, {} replaced ({} received), {} deleted; {refused}\n",
            n(&w["created"]),
            n(&w["replaced"]),
            size(n(&w["bytes"])),
            n(&w["deleted"]),
        );
        let dav: Vec<String> = w["dav"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(method, c)| format!("{} {method}", n(c)))
                    .collect()
            })
            .unwrap_or_default();
        if !dav.is_empty() {
            out += &format!("webdav       {} answered\n", dav.join(", "));
        }
    }
    let u = &r["resumable"];
    if u.is_object() {
        out += &format!(
            "resumable    {} pending ({} announced); {} created, {} completed ({} received); {} resumed, {} taken over\n             refused: {} offset conflicts, {} checksum mismatches, {} other; {} expired, {} terminated\n",
            n(&u["pending"]),
            size(n(&u["pending_bytes"])),
            n(&u["created"]),
            n(&u["completed"]),
            size(n(&u["bytes"])),
            n(&u["resumed"]),
            n(&u["taken_over"]),
            n(&u["conflicts"]),
            n(&u["checksum_mismatches"]),
            n(&u["refused"]),
            n(&u["expired"]),
            n(&u["terminated"]),
        );
    }
    let l = &r["locks"];
    if l.is_object() {
        out += &format!(
            "locks        {} held; {} taken, {} refreshed, {} released, {} expired; refused: {} LOCKs, {} writes without the token\n",
            n(&l["held"]),
            n(&l["taken"]),
            n(&l["refreshed"]),
            n(&l["released"]),
            n(&l["expired"]),
            n(&l["refused"]),
            n(&l["writes_refused"]),
        );
    }
    let p = &r["produced"];
    if p.is_object() {
        out += &format!(
            "produced     {} bodies, {} pulls ({} sent); {} ended whole, {} failed, {} cancelled\n",
            n(&p["started"]),
            n(&p["pulls"]),
            size(n(&p["bytes"])),
            n(&p["ended"]),
            n(&p["failed"]),
            n(&p["cancelled"]),
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
        out += &certificates(tls);
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

/// The HTTP/3 lines: shown when `on` (the runtime file turns HTTP/3 on)
/// or once any of its counters moved; none while HTTP/3 was never used.
fn h3(h3: &Value, on: bool) -> String {
    let moved = h3.as_object().is_some_and(|m| m.values().any(|v| n(v) > 0));
    if !(h3.is_object() && (on || moved)) {
        return String::new();
    }
    format!(
        "HTTP/3        {} connections, {} streams; resets {} sent, {} received\n              {} handshakes refused at max-connections, {} Retry sent, {} datagrams read\n              {} connections closed for a flood, {} stalled streams reset after send-timeout, {} closed by header-timeout\n              {} datagrams handed between workers ({} dropped, the inbox full), {} path changes, {} stateless resets sent\n              upgrade: {} datagrams carried to the other process, {} from it, {} lost; {} connections finished after the handover\n",
        n(&h3["connections"]),
        n(&h3["streams"]),
        n(&h3["resets_sent"]),
        n(&h3["resets_received"]),
        n(&h3["refused"]),
        n(&h3["retries"]),
        n(&h3["datagrams"]),
        n(&h3["floods"]),
        n(&h3["stalled"]),
        n(&h3["header_timeouts"]),
        n(&h3["handed"]),
        n(&h3["handed_lost"]),
        n(&h3["path_changes"]),
        n(&h3["stateless_resets"]),
        n(&h3["forwarded"]),
        n(&h3["forwarded_in"]),
        n(&h3["forward_lost"]),
        n(&h3["drained"]),
    )
}

/// The certificates handshakes choose among: each one's names, end and
/// handshakes, and the handshakes refused for a name none covers.
fn certificates(tls: &Value) -> String {
    let list = tls["certificates"].as_array().cloned().unwrap_or_default();
    let mut out = format!(
        "certificates ({}; {} handshakes refused for a name none covers):\n",
        list.len(),
        n(&tls["unrecognized"])
    );
    for c in &list {
        let names: Vec<&str> = (c["names"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        let default = if c["default"].as_bool() == Some(true) {
            ", the default"
        } else {
            ""
        };
        let end = match c["not_after"].as_u64() {
            Some(secs) if secs > 0 => {
                let at =
                    nikaia_std::rt::format_utc(std::time::UNIX_EPOCH + Duration::from_secs(secs));
                let left = c["expires_in"].as_i64().unwrap_or(0);
                match left {
                    ..=0 => format!("expired {at}"),
                    _ => format!("not after {at}, in {}", days(left as u64)),
                }
            }
            _ => "no end date".to_owned(),
        };
        out += &format!(
            "  {} ({}{default})\n      {}\n      {end}; {} handshakes\n",
            c["cert"].as_str().unwrap_or("?"),
            c["source"].as_str().unwrap_or("?"),
            names.join(", "),
            n(&c["handshakes"]),
        );
        if c["source"] == "acme" {
            out += &acme(c);
        }
    }
    out
}

/// An ACME certificate's schedule: when it is looked at next, the last
/// attempt and what went wrong, the orders and failures.
fn acme(c: &Value) -> String {
    let at = |key: &str| match c[key].as_u64() {
        Some(secs) if secs > 0 => {
            nikaia_std::rt::format_utc(std::time::UNIX_EPOCH + Duration::from_secs(secs))
        }
        _ => "never".to_owned(),
    };
    let error = match c["last_error"].as_str() {
        Some("") | None => "no error".to_owned(),
        Some(e) => format!("error: {e}"),
    };
    format!(
        "      next renewal {}; last attempt {} ({error})\n      {} orders, {} failed attempts, {} validations answered\n",
        at("next_renewal"),
        at("last_attempt"),
        n(&c["orders"]),
        n(&c["failures"]),
        n(&c["challenges"]),
    )
}

/// A time left, in the two largest units it has: `86d 04h`, `3h 20m`,
/// `29m 59s`, and `42s` under a minute.
fn days(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m {:02}s", secs / 60, secs % 60),
        3600..=86_399 => format!("{}h {:02}m", secs / 3600, secs / 60 % 60),
        _ => format!("{}d {:02}h", secs / 86_400, secs / 3600 % 24),
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

/// An uptime: `5.210s` under a minute, `3m 05s`, `5h 02m 03s`, and
/// `100d 03h 04m` from a day on.
fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{}.{:03}s", s, ms % 1000),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h {:02}m {:02}s", s / 3600, s / 60 % 60, s % 60),
        _ => format!("{}d {:02}h {:02}m", s / 86_400, s / 3600 % 24, s / 60 % 60),
    }
}
