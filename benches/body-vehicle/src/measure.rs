//! The meters: machine CPU from /proc/stat, process and child CPU from
//! getrusage, and the snapshot taken on each side of a transfer.

use std::io;
use std::time::{Duration, Instant};

/// Non-idle jiffies of the whole machine: user+nice+system+irq+softirq of the
/// aggregate `cpu` line of /proc/stat (idle, iowait and steal are left out;
/// guest time is already inside user).
fn machine_jiffies() -> io::Result<u64> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .ok_or_else(|| io::Error::other("no cpu line in /proc/stat"))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    if f.len() < 7 {
        return Err(io::Error::other("short cpu line in /proc/stat"));
    }
    // user nice system idle iowait irq softirq ...
    Ok(f[0] + f[1] + f[2] + f[5] + f[6])
}

pub fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions; it only reads a system constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// utime+stime of `who` (RUSAGE_SELF or RUSAGE_CHILDREN).
pub fn rusage_cpu(who: libc::c_int) -> io::Result<Duration> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` is valid, writable memory of exactly the type getrusage fills.
    let rc = unsafe { libc::getrusage(who, ru.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the memory was zero-initialised (a valid rusage) and getrusage succeeded.
    let ru = unsafe { ru.assume_init() };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok(tv(ru.ru_utime) + tv(ru.ru_stime))
}

pub struct Snapshot {
    pub at: Instant,
    pub machine: u64,
    pub own: Duration,
}

impl Snapshot {
    pub fn take() -> io::Result<Snapshot> {
        Ok(Snapshot {
            machine: machine_jiffies()?,
            own: rusage_cpu(libc::RUSAGE_SELF)?,
            at: Instant::now(),
        })
    }
}
