//! body-vehicle: which vehicle lands a request body that arrives on a TCP
//! socket in a file on disk more cheaply, `read`+`write` or `splice`?
//!
//! A sender child process (this same binary, `--sender PORT BYTES`) writes
//! the body over 127.0.0.1. The parent receives it with one of four vehicles
//! into a fresh `O_TMPFILE`, optionally `fdatasync`s it, and closes it. Wall
//! time, machine CPU (/proc/stat) and the receiving process's own CPU
//! (`getrusage(RUSAGE_SELF)`) are taken around each transfer.
//!
//! This file: the command line and the round loop.

mod measure;
mod report;
mod sender;
mod transfer;
mod vehicles;

use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use transfer::Bench;
use vehicles::{make_pipe, Durability, Vehicle};

pub const MIB: f64 = 1024.0 * 1024.0;
pub const GIB: f64 = 1024.0 * MIB;

pub struct Config {
    pub bytes: u64,
    pub rounds: usize,
    pub base_dir: PathBuf,
    pub syncs: Vec<Durability>,
    pub pool: usize,
    pub pipe_want: usize,
    pub settle: bool,
    pub warmup: bool,
    pub vehicles: Vec<Vehicle>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--sender") {
        if let Err(e) = sender::sender_main(&args[1..]) {
            eprintln!("sender: {e}");
            std::process::exit(1);
        }
        return;
    }
    let cfg = match parse_args(&args) {
        Ok(cfg) => cfg,
        Err(msg) => {
            eprintln!("{msg}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&cfg) {
        eprintln!("body-vehicle: {e}");
        std::process::exit(1);
    }
}

const USAGE: &str = "usage: body-vehicle [--gib F] [--rounds N] [--dir DIR] [--sync none|data|both]
                    [--pool 2..4] [--pipe BYTES] [--only LIST] [--no-settle] [--no-warmup]
  --gib F         body size in GiB (default 1; fractions allowed for smoke runs)
  --rounds N      rounds; every variant runs once per round, in rotating order (default 7)
  --dir DIR       base directory on the disk under test; a fresh run-<pid> dir is made
                  in it for the O_TMPFILEs and removed afterwards
                  (default <repo>/target/body-vehicle-tmp)
  --sync MODE     none: close without syncing; data: fdatasync then close; both (default)
  --pool N        128 KiB buffers in the read+write 2T pool (default 4)
  --pipe BYTES    pipe size asked for with F_SETPIPE_SZ (default 1048576)
  --only LIST     comma-separated subset of rw1,rw2,splice1,splice2 (default all;
                  ratios need rw1)
  --no-settle     do not call sync(2) + sleep 100 ms before each transfer
  --no-warmup     skip the unrecorded warm-up transfer of each vehicle";

fn parse_args(args: &[String]) -> Result<Config, String> {
    let default_dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/body-vehicle-tmp"
    ));
    let mut cfg = Config {
        bytes: 1 << 30,
        rounds: 7,
        base_dir: default_dir,
        syncs: vec![Durability::None, Durability::Data],
        pool: 4,
        pipe_want: 1 << 20,
        settle: true,
        warmup: true,
        vehicles: Vehicle::ALL.to_vec(),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--gib" => {
                let gib: f64 = value()?.parse().map_err(|e| format!("--gib: {e}"))?;
                if gib.is_nan() || gib <= 0.0 {
                    return Err("--gib must be positive".into());
                }
                cfg.bytes = (gib * GIB) as u64;
            }
            "--rounds" => {
                cfg.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?;
                if cfg.rounds == 0 {
                    return Err("--rounds must be at least 1".into());
                }
            }
            "--dir" => cfg.base_dir = PathBuf::from(value()?),
            "--sync" => {
                cfg.syncs = match value()?.as_str() {
                    "none" => vec![Durability::None],
                    "data" => vec![Durability::Data],
                    "both" => vec![Durability::None, Durability::Data],
                    other => return Err(format!("--sync: unknown mode {other:?}")),
                }
            }
            "--pool" => {
                cfg.pool = value()?.parse().map_err(|e| format!("--pool: {e}"))?;
                if !(2..=4).contains(&cfg.pool) {
                    return Err("--pool must be 2, 3 or 4".into());
                }
            }
            "--pipe" => {
                cfg.pipe_want = value()?.parse().map_err(|e| format!("--pipe: {e}"))?;
            }
            "--only" => {
                let list = value()?;
                cfg.vehicles = Vec::new();
                for name in list.split(',') {
                    let v = Vehicle::ALL
                        .into_iter()
                        .find(|v| v.short() == name)
                        .ok_or_else(|| format!("--only: unknown vehicle {name:?}"))?;
                    cfg.vehicles.push(v);
                }
            }
            "--no-settle" => cfg.settle = false,
            "--no-warmup" => cfg.warmup = false,
            "-h" | "--help" => return Err("help".into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(cfg)
}

// ---------------------------------------------------------------- the run

fn run(cfg: &Config) -> io::Result<()> {
    std::fs::create_dir_all(&cfg.base_dir)?;
    let base = cfg.base_dir.canonicalize()?;
    let dir = base.join(format!("run-{}", std::process::id()));
    std::fs::create_dir(&dir)?;
    let result = run_in(cfg, &dir);
    let _ = std::fs::remove_dir(&dir);
    result
}

fn run_in(cfg: &Config, dir: &Path) -> io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    let port = listener.local_addr()?.port();
    let (_, _, pipe_size) = make_pipe(cfg.pipe_want)?;
    let bench = Bench {
        listener,
        port,
        exe: std::env::current_exe()?,
        dir: dir.to_path_buf(),
        ticks: measure::clock_ticks(),
        pipe_size,
    };

    let variants: Vec<(Vehicle, Durability)> = cfg
        .syncs
        .iter()
        .flat_map(|&d| cfg.vehicles.iter().map(move |&v| (v, d)))
        .collect();

    report::print_header(cfg, &bench, &variants);

    if cfg.warmup {
        for &v in &cfg.vehicles {
            bench.transfer(cfg, v, Durability::None, 0, 0)?;
            eprintln!("warm-up {:<14} done", v.name());
        }
    }

    let mut samples = Vec::new();
    for round in 0..cfg.rounds {
        let mut order = variants.clone();
        order.rotate_left(round % variants.len());
        for (slot, &(vehicle, durability)) in order.iter().enumerate() {
            let s = bench.transfer(cfg, vehicle, durability, round, slot)?;
            eprintln!("{}", report::raw_line(cfg, &s));
            samples.push(s);
        }
    }

    report::print_tables(cfg, &variants, &samples);
    println!();
    println!("Raw transfers (round, slot in round, variant, sync, wall s, MiB/s, machine CPU s, process CPU s, sender CPU s, socket-side calls and mean KiB per call, file-side calls and mean KiB per call):");
    println!();
    println!("```");
    for s in &samples {
        println!("{}", report::raw_line(cfg, s));
    }
    println!("```");
    Ok(())
}
