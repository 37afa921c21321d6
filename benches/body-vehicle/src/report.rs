//! The report: the run's header, the raw transfer lines, and the statistics
//! tables (medians and ratios to read+write 1T).

use crate::sender::SEND_BUF;
use crate::transfer::{Bench, Sample};
use crate::vehicles::{Durability, Vehicle, RW_BUF};
use crate::{Config, GIB, MIB};
use std::path::Path;

fn fs_is_ext4(dir: &Path) -> Option<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `c` is a NUL-terminated path and `st` is writable memory of the
    // type statfs fills.
    let rc = unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: zero-initialised (a valid statfs) and filled by a successful call.
    let st = unsafe { st.assume_init() };
    // 0xEF53 is ext4's superblock magic; the literal takes f_type's own
    // integer type, which differs between targets.
    Some(st.f_type == 0xEF53)
}

pub fn print_header(cfg: &Config, bench: &Bench, variants: &[(Vehicle, Durability)]) {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let fs = match fs_is_ext4(&bench.dir) {
        Some(true) => "ext4",
        Some(false) => "not ext4",
        None => "unknown",
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("# body-vehicle");
    println!();
    println!(
        "- kernel {}, {cpus} CPUs, clock ticks {}/s",
        kernel.trim(),
        bench.ticks
    );
    println!(
        "- load average at start: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("- files: O_TMPFILE in {} ({fs})", bench.dir.display());
    println!(
        "- body: {} bytes ({:.3} GiB) per transfer, sender = child process writing {} KiB writes over 127.0.0.1",
        cfg.bytes,
        cfg.bytes as f64 / GIB,
        SEND_BUF / 1024
    );
    println!(
        "- read+write buffer {} KiB; 2T pool of {} buffers; pipe size {} KiB (asked {} KiB)",
        RW_BUF / 1024,
        cfg.pool,
        bench.pipe_size / 1024,
        cfg.pipe_want / 1024
    );
    println!(
        "- {} rounds x {} variants, order rotated by one each round; warm-up: {}",
        cfg.rounds,
        variants.len(),
        if cfg.warmup {
            "one unrecorded transfer per vehicle (sync none)"
        } else {
            "none"
        }
    );
    println!(
        "- between transfers: {}",
        if cfg.settle {
            "sync(2) + 100 ms sleep (outside the measured window)"
        } else {
            "nothing (--no-settle)"
        }
    );
    println!("- window: from the go byte to close() of the file (incl. fdatasync for sync=data)");
    println!();
}

pub fn raw_line(cfg: &Config, s: &Sample) -> String {
    format!(
        "r{} s{} {:<14} {:<4} wall {:7.3} {:8.1} MiB/s  machine {:6.3}  process {:6.3}  sender {:6.3}  in {:6} x {:6.1} KiB  out {:6} x {:6.1} KiB",
        s.round + 1,
        s.slot + 1,
        s.vehicle.name(),
        s.durability.name(),
        s.wall,
        cfg.bytes as f64 / MIB / s.wall,
        s.machine_cpu,
        s.self_cpu,
        s.sender_cpu,
        s.calls_in,
        cfg.bytes as f64 / 1024.0 / s.calls_in.max(1) as f64,
        s.calls_out,
        cfg.bytes as f64 / 1024.0 / s.calls_out.max(1) as f64,
    )
}

/// Median, minimum, maximum.
fn spread(mut xs: Vec<f64>) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let med = if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    };
    (med, xs[0], xs[n - 1])
}

fn cell((med, lo, hi): (f64, f64, f64), prec: usize) -> String {
    format!("{med:.prec$} ({lo:.prec$}–{hi:.prec$})")
}

pub fn print_tables(cfg: &Config, variants: &[(Vehicle, Durability)], samples: &[Sample]) {
    let gib = cfg.bytes as f64 / GIB;
    let of = |v: Vehicle, d: Durability| -> Vec<&Sample> {
        samples
            .iter()
            .filter(|s| s.vehicle == v && s.durability == d)
            .collect()
    };

    println!("## Medians (min–max) over {} rounds", cfg.rounds);
    println!();
    println!("| variant | sync | wall s | MiB/s | machine CPU s/GiB | process CPU s/GiB | sender CPU s/GiB |");
    println!("|---|---|---|---|---|---|---|");
    for &(v, d) in variants {
        let ss = of(v, d);
        let col = |f: &dyn Fn(&Sample) -> f64| spread(ss.iter().map(|s| f(s)).collect());
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            v.name(),
            d.name(),
            cell(col(&|s| s.wall), 3),
            cell(col(&|s| cfg.bytes as f64 / MIB / s.wall), 0),
            cell(col(&|s| s.machine_cpu / gib), 3),
            cell(col(&|s| s.self_cpu / gib), 3),
            cell(col(&|s| s.sender_cpu / gib), 3),
        );
    }
    println!();
    println!(
        "## Ratio to read+write 1T (same sync, same round), median (min–max) over {} rounds",
        cfg.rounds
    );
    println!();
    println!("Below 1 means cheaper / faster than read+write 1T.");
    println!();
    println!("| variant | sync | wall time | machine CPU | process CPU |");
    println!("|---|---|---|---|---|");
    for &(v, d) in variants {
        let base = of(Vehicle::Rw1, d);
        let mine = of(v, d);
        let ratio = |f: &dyn Fn(&Sample) -> f64| {
            let rs: Vec<f64> = mine
                .iter()
                .filter_map(|s| {
                    let b = base.iter().find(|b| b.round == s.round)?;
                    let denom = f(b);
                    (denom > 0.0).then(|| f(s) / denom)
                })
                .collect();
            if rs.is_empty() {
                "n/a".to_string()
            } else {
                cell(spread(rs), 2)
            }
        };
        println!(
            "| {} | {} | {} | {} | {} |",
            v.name(),
            d.name(),
            ratio(&|s| s.wall),
            ratio(&|s| s.machine_cpu),
            ratio(&|s| s.self_cpu),
        );
    }
}
