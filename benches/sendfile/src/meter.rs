//! The instruments: thread CPU, process CPU, machine CPU and wall time, read
//! before and after a block, and the load average beside them.

use std::time::{Duration, Instant};

/// CPU time of the calling thread (`RUSAGE_THREAD`) or of the whole process
/// (`RUSAGE_SELF`), user + system.
fn rusage(who: libc::c_int) -> Duration {
    // SAFETY: `getrusage` only writes the struct it is handed; an all-zero
    // `rusage` is a valid value of that plain C struct.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(who, &mut ru) != 0 {
            panic!("getrusage: {}", std::io::Error::last_os_error());
        }
        ru
    };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Non-idle jiffies of the whole machine, summed over every CPU: the `cpu`
/// line of `/proc/stat` less `idle` and `iowait` (`guest` is already inside
/// `user`, so it is not added again).
fn machine_jiffies() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let line = stat.lines().next().expect("a cpu line");
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().expect("a jiffy count"))
        .collect();
    // user nice system idle iowait irq softirq steal [guest guest_nice]
    let busy = f[0] + f[1] + f[2] + f[5] + f[6] + f.get(7).copied().unwrap_or(0);
    busy
}

/// The three load averages from `/proc/loadavg`.
pub fn loadavg() -> [f64; 3] {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut it = s.split_whitespace().map(|v| v.parse().unwrap_or(f64::NAN));
    [
        it.next().unwrap_or(f64::NAN),
        it.next().unwrap_or(f64::NAN),
        it.next().unwrap_or(f64::NAN),
    ]
}

/// Clock ticks per second, for turning jiffies into time.
fn clk_tck() -> u64 {
    rustix::param::clock_ticks_per_second()
}

/// A CPU clock (`clock_gettime`): the scheduler's exact runtime, kept as a
/// cross-check on `getrusage`, whose user/system split is rescaled from
/// tick samples.
fn cpu_clock(id: rustix::time::ClockId) -> Duration {
    let t = rustix::time::clock_gettime(id);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// One reading of every instrument.
pub struct Reading {
    wall: Instant,
    thread: Duration,
    process: Duration,
    thread_clock: Duration,
    process_clock: Duration,
    machine: u64,
}

impl Reading {
    /// Reads all instruments; the thread instrument is the calling thread's.
    pub fn now() -> Reading {
        // Machine first and wall last on the way in, the reverse on the way
        // out (`Reading::until`), so the window of each wraps the others'.
        let machine = machine_jiffies();
        let process = rusage(libc::RUSAGE_SELF);
        let process_clock = cpu_clock(rustix::time::ClockId::ProcessCPUTime);
        let thread = rusage(libc::RUSAGE_THREAD);
        let thread_clock = cpu_clock(rustix::time::ClockId::ThreadCPUTime);
        Reading {
            wall: Instant::now(),
            thread,
            process,
            thread_clock,
            process_clock,
            machine,
        }
    }

    /// What was spent since `self`, per request when divided by `n`.
    pub fn until_now(&self, n: u64) -> Spent {
        let wall = self.wall.elapsed();
        let thread_clock = cpu_clock(rustix::time::ClockId::ThreadCPUTime) - self.thread_clock;
        let thread = rusage(libc::RUSAGE_THREAD) - self.thread;
        let process_clock = cpu_clock(rustix::time::ClockId::ProcessCPUTime) - self.process_clock;
        let process = rusage(libc::RUSAGE_SELF) - self.process;
        let jiffies = machine_jiffies() - self.machine;
        let machine = jiffies as f64 * 1e6 / clk_tck() as f64;
        let per = |us: f64| us / n as f64;
        Spent {
            machine_us: per(machine),
            process_us: per(process.as_secs_f64() * 1e6),
            thread_us: per(thread.as_secs_f64() * 1e6),
            wall_us: per(wall.as_secs_f64() * 1e6),
            thread_clock_us: per(thread_clock.as_secs_f64() * 1e6),
            process_clock_us: per(process_clock.as_secs_f64() * 1e6),
        }
    }
}

/// Microseconds per request on each instrument.
#[derive(Clone, Copy, Debug)]
pub struct Spent {
    pub machine_us: f64,
    pub process_us: f64,
    pub thread_us: f64,
    pub wall_us: f64,
    /// `CLOCK_THREAD_CPUTIME_ID` of the sender: the cross-check on `thread_us`.
    pub thread_clock_us: f64,
    /// `CLOCK_PROCESS_CPUTIME_ID`: the cross-check on `process_us`.
    pub process_clock_us: f64,
}
