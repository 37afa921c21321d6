//! bench_sendfile: what each way of sending a file costs the machine, over
//! one kept-open loopback connection. See README.md beside this crate.

mod extras;
mod link;
mod meter;
mod report;
mod uring;
mod vehicles;

use link::Link;
use meter::{loadavg, Reading, Spent};
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use vehicles::{Built, Family, Files, NAMED, VEHICLES};

/// The sizes a run may use and how many sends each gets at `--scale 1`.
/// The record's three are the default; 8k, 16k and 32k locate the kept
/// table's crossover (`--sizes 4k,8k,16k,32k,64k`).
const SIZES: [(usize, u64); 6] = [
    (4 << 10, 20_000),
    (8 << 10, 20_000),
    (16 << 10, 20_000),
    (32 << 10, 20_000),
    (64 << 10, 20_000),
    (1 << 20, 2_000),
];
const DEFAULT_SIZES: [usize; 3] = [4 << 10, 64 << 10, 1 << 20];

pub struct Opts {
    pub repeats: usize,
    pub scale: f64,
    pub only: Option<Vec<String>>,
    pub sizes: Vec<usize>,
    pub json: Option<PathBuf>,
    pub dir: PathBuf,
    pub extras: bool,
}

const USAGE: &str = "usage: bench_sendfile [--repeats R] [--scale F] [--only NAME[,NAME..]] \
[--sizes 4k,8k,16k,32k,64k,1m] [--json FILE] [--dir DIR] [--no-extras]";

fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim().to_ascii_lowercase();
    let (num, mul) = if let Some(n) = s.strip_suffix('k') {
        (n, 1 << 10)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 1 << 20)
    } else {
        (s.as_str(), 1)
    };
    num.parse::<usize>().ok().map(|n| n * mul)
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        repeats: 1,
        scale: 1.0,
        only: None,
        sizes: DEFAULT_SIZES.to_vec(),
        json: None,
        dir: PathBuf::from("target/bench-sendfile/files"),
        extras: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--repeats" => {
                o.repeats = val()?.parse().map_err(|_| "--repeats: a count")?;
                if o.repeats == 0 {
                    return Err("--repeats: at least 1".into());
                }
            }
            "--scale" => {
                o.scale = val()?.parse().map_err(|_| "--scale: a number")?;
                if o.scale.is_nan() || o.scale <= 0.0 {
                    return Err("--scale: more than 0".into());
                }
            }
            "--only" => o.only = Some(val()?.split(',').map(str::to_owned).collect()),
            "--sizes" => {
                let v = val()?;
                let mut sizes = Vec::new();
                for s in v.split(',') {
                    let n = parse_size(s).ok_or_else(|| format!("--sizes: bad size {s}"))?;
                    if !SIZES.iter().any(|k| k.0 == n) {
                        return Err(format!(
                            "--sizes: {s} is not one of 4k, 8k, 16k, 32k, 64k, 1m"
                        ));
                    }
                    sizes.push(n);
                }
                o.sizes = sizes;
            }
            "--json" => o.json = Some(PathBuf::from(val()?)),
            "--dir" => o.dir = PathBuf::from(val()?),
            "--no-extras" => o.extras = false,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if let Some(only) = &o.only {
        for n in only {
            let known = VEHICLES.iter().any(|v| v.0 == n) || extras::NAMES.contains(&n.as_str());
            if !known {
                return Err(format!("--only: no vehicle named {n}"));
            }
        }
    }
    Ok(o)
}

/// One measured block: one vehicle, one size, one repeat.
pub struct Sample {
    pub vehicle: &'static str,
    pub family: Family,
    pub size: usize,
    pub repeat: usize,
    pub sends: u64,
    /// `Err` when the vehicle cannot run here (the reason).
    pub spent: Result<Spent, String>,
    /// Which path the sends took, where the vehicle can tell.
    pub note: Option<String>,
    pub load_before: [f64; 3],
    pub load_after: [f64; 3],
}

/// Writes the files for one size: text, so `read_each` can validate it.
fn make_files(dir: &std::path::Path, size: usize) -> io::Result<Files> {
    let dir = dir.join(format!("{size}"));
    std::fs::create_dir_all(&dir)?;
    let fill = |seed: usize| {
        let mut v = Vec::with_capacity(size + 64);
        let mut line = 0usize;
        while v.len() < size {
            v.extend_from_slice(format!("nikaia {seed:02} line {line:08}\n").as_bytes());
            line += 1;
        }
        v.truncate(size);
        v
    };
    let one = dir.join("index.txt");
    std::fs::write(&one, fill(99))?;
    let mut names = Vec::new();
    for i in 0..NAMED {
        let name = format!("file-{i:02}.txt");
        std::fs::write(dir.join(&name), fill(i))?;
        names.push(name);
    }
    Ok(Files {
        dir,
        size,
        one,
        names,
    })
}

/// Runs one block; the far end must count every byte.
fn block(
    name: &str,
    files: &Files,
    sends: u64,
) -> io::Result<(Result<Spent, String>, Option<String>)> {
    let mut v = match vehicles::build(name, files)? {
        Built::Ready(v) => v,
        Built::Unavailable(why) => return Ok((Err(why), None)),
    };
    let link = Link::open()?;
    // Warm-up, outside the block: every name sent twice (nikaia_std keeps a
    // file on its second request), and the far end has drained it all.
    let warm = 2 * NAMED as u64;
    let mut warm_bytes = 0;
    for i in 0..warm {
        warm_bytes += v.send(&link.sock, i as usize)?;
    }
    link.wait_for(warm_bytes)?;
    let start = Reading::now();
    let mut sent = 0u64;
    for i in 0..sends {
        sent += v.send(&link.sock, i as usize)?;
    }
    let got = link.finish()?;
    let spent = start.until_now(sends);
    let want = sends * files.size as u64;
    if sent != want || got != warm_bytes + want {
        return Err(io::Error::other(format!(
            "{name} at {} bytes: sent {sent} and the far end counted {} of {want}",
            files.size,
            got.saturating_sub(warm_bytes)
        )));
    }
    let note = v.path_note();
    drop(v);
    Ok((Ok(spent), note))
}

fn run(o: &Opts) -> io::Result<()> {
    let load_start = loadavg();
    let started = report::date();
    let chosen: Vec<(&'static str, Family)> = VEHICLES
        .iter()
        .copied()
        .filter(|v| {
            o.only
                .as_ref()
                .is_none_or(|only| only.iter().any(|n| n == v.0))
        })
        .collect();
    let mut files = Vec::new();
    for &size in &o.sizes {
        files.push(make_files(&o.dir, size)?);
    }
    // nikaia_std does not keep a file whose ctime is within a tick of now.
    std::thread::sleep(std::time::Duration::from_millis(50));

    let mut samples = Vec::new();
    for rep in 0..o.repeats {
        // Interleaved: each repeat starts one vehicle later, so drift over
        // the run lands on every vehicle alike.
        let mut order = chosen.clone();
        if !order.is_empty() {
            let k = rep % order.len();
            order.rotate_left(k);
        }
        for f in &files {
            let sends = SIZES.iter().find(|s| s.0 == f.size).expect("a size").1;
            let sends = ((sends as f64 * o.scale).round() as u64).max(1);
            for &(name, family) in &order {
                eprint!(
                    "repeat {}/{} {:>8} {:<22}",
                    rep + 1,
                    o.repeats,
                    report::size(f.size),
                    name
                );
                let load_before = loadavg();
                let (spent, note) = block(name, f, sends)?;
                let load_after = loadavg();
                match &spent {
                    Ok(s) => eprintln!(" machine {:9.2} µs/req", s.machine_us),
                    Err(why) => eprintln!(" unavailable: {why}"),
                }
                samples.push(Sample {
                    vehicle: name,
                    family,
                    size: f.size,
                    repeat: rep,
                    sends,
                    spent,
                    load_before,
                    load_after,
                    note,
                });
            }
        }
    }
    let extra = if o.extras {
        extras::run(o)?
    } else {
        Vec::new()
    };
    let load_end = loadavg();
    let header = report::Header {
        date: started,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        load_start,
        load_end,
        repeats: o.repeats,
        scale: o.scale,
    };
    let md = report::markdown(&header, &samples, &extra);
    io::stdout().write_all(md.as_bytes())?;
    if let Some(path) = &o.json {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, report::json(&header, &samples, &extra))?;
        eprintln!("raw results: {}", path.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_sendfile: {e}");
            ExitCode::FAILURE
        }
    }
}
