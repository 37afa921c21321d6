//! What the load tests share: the server's resident memory and threads,
//! sampled while a load runs (the server runs in the test's process), and
//! the sizes a full mode asks for.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The server runs in this process: its resident memory is the process's.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// The server's threads (its workers, io pool and helpers are named
/// `nikaia-…`).
pub fn server_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("nikaia"))
        .count()
}

/// The server threads' names, for a failure's message.
pub fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("nikaia"))
        .map(|n| n.trim().to_owned())
        .collect()
}

/// Samples the server every 100 ms while `run` goes: the most its
/// resident memory grew by, and every thread count seen.
pub fn sampled(run: impl FnOnce()) -> (u64, Vec<usize>) {
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let threads = Arc::new(Mutex::new(Vec::new()));
    let base = rss_bytes();
    let sampler = {
        let (stop, peak, threads) = (stop.clone(), peak.clone(), threads.clone());
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                peak.fetch_max(rss_bytes().saturating_sub(base), SeqCst);
                let n = server_threads();
                let mut seen = threads.lock().unwrap();
                if !seen.contains(&n) {
                    seen.push(n);
                }
                drop(seen);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    run();
    stop.store(true, SeqCst);
    sampler.join().unwrap();
    let seen = threads.lock().unwrap().clone();
    (peak.load(SeqCst), seen)
}

/// The number the environment variable `name` gives (a full mode's size),
/// else `default`.
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
