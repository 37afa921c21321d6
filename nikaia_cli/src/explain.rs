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
    #[arg(long)]
    json: bool,
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
    let rate = if hits + misses == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", 100.0 * hits as f64 / (hits + misses) as f64)
    };
    out += &format!(
        "\nkept table    {} entries, {} mapped\n              hits {hits}, misses {misses}, hit rate {rate}, evictions {}, invalidations {}\n",
        n(&c["entries"]),
        size(n(&c["bytes"])),
        n(&c["evictions"]),
        n(&c["invalidations"]),
    );
    out += &format!(
        "io pool       {} opens, {} cold reads\ncut short     {} file bodies (truncated or unreadable mid-transfer)\nmade room     {} idle connections closed at max-connections\n",
        n(&r["pool_opens"]),
        n(&r["cold_reads"]),
        n(&r["truncated"]),
        n(&r["idle_closed"]),
    );
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
