//! The markdown tables and the raw JSON.

use crate::extras::{ExtraSample, COALESCE, PROBE};
use crate::meter::Spent;
use crate::vehicles::Family;
use crate::Sample;
use std::fmt::Write;

pub struct Header {
    pub date: String,
    pub command: String,
    pub load_start: [f64; 3],
    pub load_end: [f64; 3],
    pub repeats: usize,
    pub scale: f64,
}

/// Now, UTC, from `date` (the bench has no calendar of its own).
pub fn date() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M:%S UTC"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "unknown date".into())
}

pub fn size(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{} KiB", n >> 10)
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn machine() -> String {
    let u = rustix::system::uname();
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{nproc} CPUs (nproc), {} {} {}, {}",
        u.sysname().to_string_lossy(),
        u.release().to_string_lossy(),
        u.machine().to_string_lossy(),
        cpu_model()
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A figure with as many decimals as its size deserves.
fn num(x: f64) -> String {
    if x < 1.0 {
        format!("{x:.3}")
    } else if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

fn with_spread(v: &[f64]) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.len() == 1 {
        num(v[0])
    } else {
        format!("{} ({}–{})", num(median(v.to_vec())), num(min), num(max))
    }
}

fn load(l: [f64; 3]) -> String {
    format!("{:.2}, {:.2}, {:.2}", l[0], l[1], l[2])
}

/// One table row from the repeats of one vehicle: machine and wall with
/// their spread, process and thread as medians.
fn row(name: &str, spent: &[Spent]) -> String {
    let col = |f: fn(&Spent) -> f64| spent.iter().map(f).collect::<Vec<_>>();
    format!(
        "| {name} | {} | {} | {} | {} |\n",
        with_spread(&col(|s| s.machine_us)),
        num(median(col(|s| s.process_us))),
        num(median(col(|s| s.thread_us))),
        with_spread(&col(|s| s.wall_us)),
    )
}

pub fn markdown(h: &Header, samples: &[Sample], extras: &[ExtraSample]) -> String {
    let mut m = String::new();
    let _ = writeln!(m, "# bench_sendfile — {}\n", h.date);
    let _ = writeln!(m, "- machine: {}", machine());
    let _ = writeln!(m, "- command: `{}`", h.command);
    let _ = writeln!(
        m,
        "- build: {}; repeats {}, scale {}; the order of vehicles rotates each repeat",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        h.repeats,
        h.scale
    );
    let _ = writeln!(
        m,
        "- load average (1, 5, 15 min): {} before the run, {} after",
        load(h.load_start),
        load(h.load_end)
    );
    let _ = writeln!(
        m,
        "- µs per request; machine = non-idle jiffies of all CPUs from /proc/stat \
(CLK_TCK {}: other processes' work counts too), process = RUSAGE_SELF (sender, \
drainer, nikaia_std's threads), thread = RUSAGE_THREAD of the sender, wall = elapsed. \
Machine and wall: median (min–max) over repeats; process and thread: median.",
        rustix::param::clock_ticks_per_second()
    );
    let _ = writeln!(
        m,
        "- destination: one loopback TCP connection drained by a thread; the receiver \
copies every byte either way\n"
    );

    let families: [(&str, &[Family]); 2] = [
        ("Named at startup", &[Family::Startup]),
        (
            "Named by the request (64 files), with nikaia_std's own (ours)",
            &[Family::Named, Family::Ours],
        ),
    ];
    let mut sizes: Vec<usize> = samples.iter().map(|s| s.size).collect();
    sizes.sort();
    sizes.dedup();
    for (title, fams) in families {
        let in_fam: Vec<&Sample> = samples
            .iter()
            .filter(|s| fams.contains(&s.family))
            .collect();
        if in_fam.is_empty() {
            continue;
        }
        let _ = writeln!(m, "## {title}\n");
        for &sz in &sizes {
            let here: Vec<&Sample> = in_fam.iter().copied().filter(|s| s.size == sz).collect();
            if here.is_empty() {
                continue;
            }
            let _ = writeln!(m, "### {} ({} sends per block)\n", size(sz), here[0].sends);
            m.push_str("| vehicle | machine µs/req | process µs | thread µs | wall µs |\n");
            m.push_str("|---|---|---|---|---|\n");
            let mut names: Vec<(&str, Family)> = Vec::new();
            for s in &here {
                if !names.iter().any(|n| n.0 == s.vehicle) {
                    names.push((s.vehicle, s.family));
                }
            }
            names.sort_by_key(|n| {
                crate::vehicles::VEHICLES
                    .iter()
                    .position(|v| v.0 == n.0)
                    .unwrap_or(usize::MAX)
            });
            for (name, fam) in names {
                let label = if fam == Family::Ours {
                    format!("{name} (ours)")
                } else {
                    name.to_owned()
                };
                let mine: Vec<&Sample> =
                    here.iter().copied().filter(|s| s.vehicle == name).collect();
                let ok: Vec<Spent> = mine
                    .iter()
                    .filter_map(|s| s.spent.as_ref().ok().copied())
                    .collect();
                if ok.is_empty() {
                    let why = mine
                        .iter()
                        .find_map(|s| s.spent.as_ref().err())
                        .cloned()
                        .unwrap_or_default();
                    let _ = writeln!(m, "| {label} | unavailable: {why} | | | |");
                } else {
                    m.push_str(&row(&label, &ok));
                }
            }
            for s in here.iter().filter(|s| s.repeat == 0) {
                if let Some(note) = &s.note {
                    let _ = writeln!(m, "\n{}, first repeat: {note}", s.vehicle);
                }
            }
            let l1: Vec<f64> = here
                .iter()
                .flat_map(|s| [s.load_before[0], s.load_after[0]])
                .collect();
            let lo = l1.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = l1.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let jiffy_us =
                1e6 / rustix::param::clock_ticks_per_second() as f64 / here[0].sends as f64;
            let _ = writeln!(
                m,
                "\n1-min load around these blocks: {lo:.2}–{hi:.2}; one jiffy of the machine \
column is {} µs/req at this count\n",
                num(jiffy_us)
            );
        }
    }

    for (exp, title, note) in [
        (
            PROBE,
            "Residency probe and revalidation, per call (warm 4 KiB file)",
            "probe_nowait = preadv2(RWF_NOWAIT) of 1 byte (nikaia_std's residency probe); \
pread_1 = plain pread of 1 byte, for scale; root_stat = Root::stat of one name (the statx \
a kept-table hit pays). µs per call.",
        ),
        (
            COALESCE,
            "Head + file coalescing, 4 KiB file, 200-byte head",
            "head_plain = send(head) then sendfile, no hint (reference); head_msg_more = \
send(head, MSG_MORE) then sendfile; head_cork = TCP_CORK on, send(head), sendfile, \
TCP_CORK off. µs per request.",
        ),
    ] {
        let here: Vec<&ExtraSample> = extras.iter().filter(|e| e.experiment == exp).collect();
        if here.is_empty() {
            continue;
        }
        let _ = writeln!(
            m,
            "## {title}\n\n{note} {} calls per block.\n",
            here[0].calls
        );
        m.push_str("| row | machine µs | process µs | thread µs | wall µs |\n");
        m.push_str("|---|---|---|---|---|\n");
        let mut names: Vec<&str> = here.iter().map(|e| e.row).collect();
        names.dedup();
        names.sort_by_key(|n| crate::extras::NAMES.iter().position(|x| x == n));
        names.dedup();
        for name in names {
            let spent: Vec<Spent> = here
                .iter()
                .filter(|e| e.row == name)
                .map(|e| e.spent)
                .collect();
            m.push_str(&row(name, &spent));
        }
        m.push('\n');
    }
    m
}

fn spent_json(s: &Spent) -> serde_json::Value {
    serde_json::json!({
        "machine_us": s.machine_us,
        "process_us": s.process_us,
        "thread_us": s.thread_us,
        "wall_us": s.wall_us,
        "thread_clock_us": s.thread_clock_us,
        "process_clock_us": s.process_clock_us,
    })
}

pub fn json(h: &Header, samples: &[Sample], extras: &[ExtraSample]) -> String {
    let v = serde_json::json!({
        "date": h.date,
        "machine": machine(),
        "command": h.command,
        "repeats": h.repeats,
        "scale": h.scale,
        "clk_tck": rustix::param::clock_ticks_per_second(),
        "load_start": h.load_start,
        "load_end": h.load_end,
        "samples": samples.iter().map(|s| serde_json::json!({
            "vehicle": s.vehicle,
            "family": s.family.name(),
            "size": s.size,
            "repeat": s.repeat,
            "sends": s.sends,
            "per_request": match &s.spent { Ok(p) => spent_json(p), Err(_) => serde_json::Value::Null },
            "unavailable": s.spent.as_ref().err(),
            "load_before": s.load_before,
            "load_after": s.load_after,
            "note": s.note,
        })).collect::<Vec<_>>(),
        "extras": extras.iter().map(|e| serde_json::json!({
            "experiment": e.experiment,
            "row": e.row,
            "repeat": e.repeat,
            "calls": e.calls,
            "per_call": spent_json(&e.spent),
        })).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&v).expect("json") + "\n"
}
