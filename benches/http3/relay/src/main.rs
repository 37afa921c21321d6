//! A wire with a delay and a link rate between two network namespaces,
//! for benches/http3's one-stream measurement (#48): there is no netem
//! here, so this relay makes one TUN device in each namespace and copies
//! every IP packet from one to the other after holding it, TCP and UDP
//! alike.
//!
//! ```text
//! tun-relay NS_A DEV_A NS_B DEV_B [--delay-ms 10] [--rate-mbit 200] [--queue-bytes N]
//! ```
//!
//! Each direction is a link of `--rate-mbit` (every packet's IP bytes take
//! their time on it, one after another) followed by `--delay-ms` of
//! propagation; packets that find more than `--queue-bytes` waiting for
//! the link are dropped (a drop-tail buffer; by default one bandwidth-delay
//! product of the round trip, rate × 2 × delay). A direction is two
//! threads: one reads its device as fast as packets come and stamps each
//! with its delivery time, the other writes each at that time, or up to
//! 250 µs before it together with the packets due before then.
//!
//! The devices exist while the relay runs. It prints `ready` on stdout when
//! both are made (the caller then gives them addresses and brings them
//! up); for each line on its stdin it prints its counters as one JSON line
//! on stdout, and again when its stdin closes, then exits: per direction the packets and bytes carried, the
//! packets dropped at the queue, the deepest queue, and how late packets
//! were written past their delivery time (the relay's own lag: near zero
//! when it is not the bottleneck). The counters add up from the start,
//! the two maxima (queue, lateness) since the last print.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// How early a packet may be written: the ones due within this are written
/// together rather than each after its own sleep (at 1 Gbit/s, 20 packets).
const SLACK: Duration = Duration::from_micros(250);

struct Opts {
    delay: Duration,
    /// Link rate, bytes per second.
    rate: f64,
    queue_bytes: u64,
}

#[derive(Default)]
struct Counters {
    packets: AtomicU64,
    bytes: AtomicU64,
    dropped: AtomicU64,
    max_queue: AtomicU64,
    /// Packets written more than 1 ms / 5 ms after their delivery time.
    late_1ms: AtomicU64,
    late_5ms: AtomicU64,
    max_late_us: AtomicU64,
    /// The sum of every packet's lateness, µs.
    late_us_sum: AtomicU64,
}

/// One direction's packets waiting: (delivery time, packet).
struct Line {
    queue: Mutex<VecDeque<(Instant, Vec<u8>)>>,
    ready: Condvar,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut plain = Vec::new();
    let (mut delay_ms, mut rate_mbit, mut queue_bytes) = (10.0f64, 200.0f64, None::<u64>);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .unwrap_or_else(|| die(&format!("{a} needs a value")))
                .clone()
        };
        match a.as_str() {
            "--delay-ms" => {
                delay_ms = val()
                    .parse()
                    .unwrap_or_else(|_| die("--delay-ms: a number"))
            }
            "--rate-mbit" => {
                rate_mbit = val()
                    .parse()
                    .unwrap_or_else(|_| die("--rate-mbit: a number"))
            }
            "--queue-bytes" => {
                queue_bytes = Some(
                    val()
                        .parse()
                        .unwrap_or_else(|_| die("--queue-bytes: a number")),
                )
            }
            _ => plain.push(a.clone()),
        }
    }
    if plain.len() != 4 {
        die("usage: tun-relay NS_A DEV_A NS_B DEV_B [--delay-ms 10] [--rate-mbit 200] [--queue-bytes N]");
    }
    let rate = rate_mbit * 1e6 / 8.0;
    let opts = Arc::new(Opts {
        delay: Duration::from_secs_f64(delay_ms / 1e3),
        rate,
        queue_bytes: queue_bytes.unwrap_or((rate * 2.0 * delay_ms / 1e3) as u64),
    });
    let a = tun_in(&plain[0], &plain[1]);
    let b = tun_in(&plain[2], &plain[3]);
    let a2 = a.try_clone().unwrap_or_else(|e| die(&format!("dup: {e}")));
    let b2 = b.try_clone().unwrap_or_else(|e| die(&format!("dup: {e}")));
    let ab = Arc::new(Counters::default());
    let ba = Arc::new(Counters::default());
    direction(a, b2, opts.clone(), ab.clone());
    direction(b, a2, opts.clone(), ba.clone());
    println!("ready");
    let _ = std::io::stdout().flush();
    // Each line on stdin asks for the counters; the end of stdin ends the relay.
    let mut line = String::new();
    loop {
        line.clear();
        let n = std::io::stdin().read_line(&mut line).unwrap_or(0);
        println!(
            "{{\"rate_mbit\": {rate_mbit}, \"delay_ms\": {delay_ms}, \"queue_bytes\": {}, \"a_to_b\": {}, \"b_to_a\": {}}}",
            opts.queue_bytes,
            json(&ab),
            json(&ba)
        );
        let _ = std::io::stdout().flush();
        if n == 0 {
            std::process::exit(0);
        }
    }
}

/// The counters as JSON; the two maxima start again from zero.
fn json(c: &Counters) -> String {
    let g = |x: &AtomicU64| x.load(Ordering::Relaxed);
    let (max_queue, max_late) = (
        c.max_queue.swap(0, Ordering::Relaxed),
        c.max_late_us.swap(0, Ordering::Relaxed),
    );
    format!(
        "{{\"packets\": {}, \"bytes\": {}, \"dropped\": {}, \"max_queue_bytes\": {}, \"late_over_1ms\": {}, \
         \"late_over_5ms\": {}, \"max_late_us\": {}, \"late_us_sum\": {}}}",
        g(&c.packets),
        g(&c.bytes),
        g(&c.dropped),
        max_queue,
        g(&c.late_1ms),
        g(&c.late_5ms),
        max_late,
        g(&c.late_us_sum)
    )
}

fn die(msg: &str) -> ! {
    eprintln!("tun-relay: {msg}");
    std::process::exit(2)
}

/// Opens a TUN device named `dev` (IP packets, no packet-information
/// header) inside the network namespace `ns` (/run/netns/NS, as `ip netns
/// add` makes it), then returns the thread to its own namespace; the
/// device stays in `ns`.
fn tun_in(ns: &str, dev: &str) -> File {
    let own =
        File::open("/proc/self/ns/net").unwrap_or_else(|e| die(&format!("/proc/self/ns/net: {e}")));
    let there = File::open(format!("/run/netns/{ns}"))
        .unwrap_or_else(|e| die(&format!("/run/netns/{ns}: {e}")));
    // SAFETY: setns on a namespace file we hold open; it changes only this
    // thread's network namespace, and we change it back below.
    if unsafe { libc::setns(there.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        die(&format!("setns {ns}: {}", std::io::Error::last_os_error()));
    }
    let path = c"/dev/net/tun";
    // SAFETY: open(2) with a NUL-terminated path; the fd is owned below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        die(&format!(
            "/dev/net/tun: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: fd was just opened and is owned by nothing else.
    let file = unsafe { File::from_raw_fd(fd) };
    // SAFETY: an all-zero ifreq is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    if dev.len() >= req.ifr_name.len() {
        die(&format!("{dev}: name too long"));
    }
    for (d, s) in req.ifr_name.iter_mut().zip(dev.bytes()) {
        *d = s as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes the ifreq we pass, which lives
    // across the call.
    if unsafe { libc::ioctl(fd, TUNSETIFF as _, &mut req) } != 0 {
        die(&format!(
            "TUNSETIFF {dev}: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: as above, back to the namespace the thread began in.
    if unsafe { libc::setns(own.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        die(&format!("setns back: {}", std::io::Error::last_os_error()));
    }
    file
}

/// Starts one direction: `from`'s packets written to `to`, each after its
/// time on the link and the delay.
fn direction(mut from: File, mut to: File, opts: Arc<Opts>, c: Arc<Counters>) {
    let line = Arc::new(Line {
        queue: Mutex::new(VecDeque::new()),
        ready: Condvar::new(),
    });
    let rl = line.clone();
    let rc = c.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        // When the link finishes sending what it holds.
        let mut link_free = Instant::now();
        loop {
            let n = match from.read(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => die(&format!("read: {e}")),
            };
            let now = Instant::now();
            if link_free < now {
                link_free = now;
            }
            // Bytes still waiting for the link, at its rate.
            let backlog = ((link_free - now).as_secs_f64() * opts.rate) as u64;
            if backlog + n as u64 > opts.queue_bytes {
                rc.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            rc.max_queue
                .fetch_max(backlog + n as u64, Ordering::Relaxed);
            link_free += Duration::from_secs_f64(n as f64 / opts.rate);
            let at = link_free + opts.delay;
            let mut q = rl.queue.lock().unwrap();
            q.push_back((at, buf[..n].to_vec()));
            // The writer waits on the condvar only when it has nothing.
            if q.len() == 1 {
                rl.ready.notify_one();
            }
        }
    });
    std::thread::spawn(move || {
        let mut mine = VecDeque::new();
        loop {
            if mine.is_empty() {
                let mut q = line.queue.lock().unwrap();
                while q.is_empty() {
                    q = line.ready.wait(q).unwrap();
                }
                std::mem::swap(&mut *q, &mut mine);
            }
            let (at, pkt) = mine.pop_front().expect("not empty");
            // Packets due within SLACK go at once: a sleep per packet
            // would cost more than the relay's other work.
            let now = Instant::now();
            if at > now + SLACK {
                std::thread::sleep(at - now);
            }
            write(&mut to, &pkt, at, &c);
        }
    });
}

/// Writes one packet and counts it; `at` is when it was due.
fn write(to: &mut File, pkt: &[u8], at: Instant, c: &Counters) {
    if let Err(e) = to.write(pkt) {
        // A device not yet up refuses packets (EIO); count them as dropped.
        if e.raw_os_error() != Some(libc::EIO) {
            die(&format!("write: {e}"));
        }
        c.dropped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let late = Instant::now().saturating_duration_since(at).as_micros() as u64;
    c.packets.fetch_add(1, Ordering::Relaxed);
    c.bytes.fetch_add(pkt.len() as u64, Ordering::Relaxed);
    c.late_us_sum.fetch_add(late, Ordering::Relaxed);
    c.max_late_us.fetch_max(late, Ordering::Relaxed);
    if late > 1000 {
        c.late_1ms.fetch_add(1, Ordering::Relaxed);
    }
    if late > 5000 {
        c.late_5ms.fetch_add(1, Ordering::Relaxed);
    }
}
