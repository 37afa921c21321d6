//! In-memory rustls 0.23 benchmark: aws-lc-rs vs ring.
//!
//! Build with exactly one of `--features aws` or `--features ring`.
//! Usage: provider-bench [RUNS] [FULL_N] [RESUMED_N] [BULK_1M_N] [BULK_4K_N]
//!
//! All "server" numbers are thread CPU time (CLOCK_THREAD_CPUTIME_ID) measured
//! around server-side rustls calls only (ServerConnection::new, read_tls,
//! process_new_packets, write_tls, writer().write); the timer's own overhead is
//! calibrated and subtracted. "total" numbers are thread CPU time of the whole
//! single-threaded loop (client + server + buffer shuffling).

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, HandshakeKind, RootCertStore, ServerConfig, ServerConnection};

#[cfg(all(feature = "aws", feature = "ring"))]
compile_error!("enable exactly one of the features `aws` and `ring`");
#[cfg(not(any(feature = "aws", feature = "ring")))]
compile_error!("enable exactly one of the features `aws` and `ring`");

#[cfg(feature = "aws")]
use rustls::crypto::aws_lc_rs as prov;
#[cfg(feature = "ring")]
use rustls::crypto::ring as prov;

#[cfg(feature = "aws")]
const PROVIDER: &str = "aws-lc-rs";
#[cfg(feature = "ring")]
const PROVIDER: &str = "ring";

static CA_DER: &[u8] = include_bytes!("../certs/ca.der");
static EE_DER: &[u8] = include_bytes!("../certs/ee.der");
static EE_KEY_DER: &[u8] = include_bytes!("../certs/ee.key.der");

// ---- thread CPU clock ------------------------------------------------------

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}
extern "C" {
    fn clock_gettime(clk: i32, ts: *mut Timespec) -> i32;
}
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;

#[inline(always)]
fn cpu_ns() -> u64 {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Average cost (ns) that one `let t = cpu_ns(); ...; acc += cpu_ns() - t` adds
/// to the measured interval. Median of a few calibration rounds.
fn timer_overhead_ns() -> f64 {
    let mut v = Vec::new();
    for _ in 0..7 {
        let n = 20_000u64;
        let mut acc = 0u64;
        for _ in 0..n {
            let t = cpu_ns();
            acc += cpu_ns() - t;
        }
        v.push(acc as f64 / n as f64);
    }
    median(&mut v)
}

// ---- stats -----------------------------------------------------------------

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn summary(name: &str, unit: &str, v: &[f64]) {
    let mut s = v.to_vec();
    let med = median(&mut s);
    println!(
        "RESULT {PROVIDER:<9} {name:<34} median {med:>10.2} {unit:<8} min {:>10.2} max {:>10.2}  runs {:?}",
        s[0],
        s[s.len() - 1],
        v.iter().map(|x| (x * 100.0).round() / 100.0).collect::<Vec<_>>()
    );
}

// ---- configs ---------------------------------------------------------------

fn provider() -> Arc<CryptoProvider> {
    Arc::new(CryptoProvider {
        cipher_suites: vec![prov::cipher_suite::TLS13_AES_128_GCM_SHA256],
        kx_groups: vec![prov::kx_group::X25519],
        ..prov::default_provider()
    })
}

fn server_config() -> Arc<ServerConfig> {
    let chain = vec![CertificateDer::from(EE_DER.to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(EE_KEY_DER.to_vec()));
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    // Stateless TLS 1.3 tickets from the provider's own Ticketer
    // (aws-lc-rs: AES-256-CBC + HMAC-SHA256; ring: ChaCha20-Poly1305).
    cfg.ticketer = prov::Ticketer::new().unwrap();
    // send_tls13_tickets stays at its default (2).
    Arc::new(cfg)
}

fn client_config(resume: bool) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from(CA_DER.to_vec())).unwrap();
    let mut cfg = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.resumption = if resume { Resumption::in_memory_sessions(256) } else { Resumption::disabled() };
    Arc::new(cfg)
}

// ---- in-memory pump ----------------------------------------------------------

fn feed<C: std::ops::DerefMut<Target = rustls::ConnectionCommon<D>>, D>(conn: &mut C, mut data: &[u8]) {
    while !data.is_empty() {
        let n = conn.read_tls(&mut data).unwrap();
        assert!(n > 0);
    }
}

fn drain<C: std::ops::DerefMut<Target = rustls::ConnectionCommon<D>>, D>(conn: &mut C, out: &mut Vec<u8>) {
    while conn.wants_write() {
        conn.write_tls(out).unwrap();
    }
}

struct Bufs {
    c2s: Vec<u8>,
    s2c: Vec<u8>,
}

/// Runs one handshake to completion (including delivery of the server's
/// NewSessionTicket messages to the client). Returns (server, server_ns, timed_blocks).
fn handshake(
    ccfg: &Arc<ClientConfig>,
    scfg: &Arc<ServerConfig>,
    bufs: &mut Bufs,
) -> (ClientConnection, ServerConnection, u64, u64) {
    let name = ServerName::try_from("localhost").unwrap();
    let mut client = ClientConnection::new(ccfg.clone(), name).unwrap();

    let t = cpu_ns();
    let mut server = ServerConnection::new(scfg.clone()).unwrap();
    let mut server_ns = cpu_ns() - t;
    let mut blocks = 1u64;

    loop {
        bufs.c2s.clear();
        drain(&mut client, &mut bufs.c2s);

        // server side: consume client flight, produce server flight
        let t = cpu_ns();
        if !bufs.c2s.is_empty() {
            feed(&mut server, &bufs.c2s);
            server.process_new_packets().unwrap();
        }
        bufs.s2c.clear();
        drain(&mut server, &mut bufs.s2c);
        server_ns += cpu_ns() - t;
        blocks += 1;

        if !bufs.s2c.is_empty() {
            feed(&mut client, &bufs.s2c);
            client.process_new_packets().unwrap();
        }

        if !client.is_handshaking()
            && !server.is_handshaking()
            && !client.wants_write()
            && !server.wants_write()
            && bufs.c2s.is_empty()
            && bufs.s2c.is_empty()
        {
            break;
        }
    }
    (client, server, server_ns, blocks)
}

// ---- benches -----------------------------------------------------------------

struct HsResult {
    server_us: f64,
    total_us: f64,
    wall_us: f64,
}

fn bench_handshakes(
    ccfg: &Arc<ClientConfig>,
    scfg: &Arc<ServerConfig>,
    n: u32,
    expect: HandshakeKind,
    overhead: f64,
) -> HsResult {
    let mut bufs = Bufs { c2s: Vec::with_capacity(1 << 16), s2c: Vec::with_capacity(1 << 16) };
    let mut server_ns = 0u64;
    let mut blocks = 0u64;
    let wall = Instant::now();
    let t_total = cpu_ns();
    for _ in 0..n {
        let (client, server, s, b) = handshake(ccfg, scfg, &mut bufs);
        assert_eq!(client.handshake_kind(), Some(expect));
        assert_eq!(server.handshake_kind(), Some(expect));
        server_ns += s;
        blocks += b;
        drop(client);
        let t = cpu_ns();
        drop(server); // server-side teardown counts as server work
        server_ns += cpu_ns() - t;
        blocks += 1;
    }
    let total_ns = cpu_ns() - t_total;
    let wall_ns = wall.elapsed().as_nanos() as f64;
    let server_ns = server_ns as f64 - overhead * blocks as f64;
    HsResult {
        server_us: server_ns / n as f64 / 1000.0,
        total_us: total_ns as f64 / n as f64 / 1000.0,
        wall_us: wall_ns / n as f64 / 1000.0,
    }
}

/// Server encrypts `size` bytes of application data and writes the TLS records
/// into a Vec. Returns server CPU microseconds per `size`-byte write.
fn bench_bulk(server: &mut ServerConnection, size: usize, n: u32, overhead: f64) -> f64 {
    let payload = vec![0x5au8; size];
    let mut out: Vec<u8> = Vec::with_capacity(size + size / 8 + 4096);
    let mut server_ns = 0u64;
    for _ in 0..n {
        out.clear();
        let t = cpu_ns();
        server.writer().write_all(&payload).unwrap();
        while server.wants_write() {
            server.write_tls(&mut out).unwrap();
        }
        server_ns += cpu_ns() - t;
        assert!(out.len() > size);
    }
    (server_ns as f64 - overhead * n as f64) / n as f64 / 1000.0
}

fn arg(i: usize, default: u32) -> u32 {
    std::env::args().nth(i).map(|s| s.parse().unwrap()).unwrap_or(default)
}

fn main() {
    let runs = arg(1, 5);
    let full_n = arg(2, 2000);
    let resumed_n = arg(3, 4000);
    let bulk_1m_n = arg(4, 300);
    let bulk_4k_n = arg(5, 30000);

    let overhead = timer_overhead_ns();
    println!("provider={PROVIDER} runs={runs} full_n={full_n} resumed_n={resumed_n} bulk_1m_n={bulk_1m_n} bulk_4k_n={bulk_4k_n}");
    println!("timer overhead (subtracted per timed block): {overhead:.1} ns");

    let scfg = server_config();
    let c_full = client_config(false);
    let c_res = client_config(true);
    let mut bufs = Bufs { c2s: Vec::new(), s2c: Vec::new() };

    // Sanity check the negotiated parameters once.
    {
        let (client, server, _, _) = handshake(&c_full, &scfg, &mut bufs);
        println!(
            "negotiated: {:?} {:?} kx={:?} kind={:?}",
            server.protocol_version().unwrap(),
            server.negotiated_cipher_suite().unwrap().suite(),
            server.negotiated_key_exchange_group().map(|g| g.name()),
            client.handshake_kind()
        );
    }

    // warm-up
    bench_handshakes(&c_full, &scfg, full_n / 10 + 1, HandshakeKind::Full, overhead);
    handshake(&c_res, &scfg, &mut bufs); // seeds the client's ticket cache
    bench_handshakes(&c_res, &scfg, resumed_n / 10 + 1, HandshakeKind::Resumed, overhead);

    let (mut fs, mut ft, mut fw) = (vec![], vec![], vec![]);
    let (mut rs, mut rt, mut rw) = (vec![], vec![], vec![]);
    let (mut b1m, mut b4k) = (vec![], vec![]);
    for run in 0..runs {
        let f = bench_handshakes(&c_full, &scfg, full_n, HandshakeKind::Full, overhead);
        let r = bench_handshakes(&c_res, &scfg, resumed_n, HandshakeKind::Resumed, overhead);
        let (_client, mut server, _, _) = handshake(&c_full, &scfg, &mut bufs);
        server.set_buffer_limit(None);
        bench_bulk(&mut server, 1 << 20, bulk_1m_n / 10 + 1, overhead); // warm-up
        let m = bench_bulk(&mut server, 1 << 20, bulk_1m_n, overhead);
        bench_bulk(&mut server, 4096, bulk_4k_n / 10 + 1, overhead); // warm-up
        let k = bench_bulk(&mut server, 4096, bulk_4k_n, overhead);
        println!(
            "run {run}: full server {:.2}us total {:.2}us wall {:.2}us | resumed server {:.2}us total {:.2}us wall {:.2}us | 1MiB {:.1}us | 4KiB {:.3}us",
            f.server_us, f.total_us, f.wall_us, r.server_us, r.total_us, r.wall_us, m, k
        );
        fs.push(f.server_us);
        ft.push(f.total_us);
        fw.push(f.wall_us);
        rs.push(r.server_us);
        rt.push(r.total_us);
        rw.push(r.wall_us);
        b1m.push(m);
        b4k.push(k);
    }

    summary("full hs server CPU", "us/hs", &fs);
    summary("full hs server-only rate", "hs/s", &fs.iter().map(|x| 1e6 / x).collect::<Vec<_>>());
    summary("full hs total CPU (client+server)", "us/hs", &ft);
    summary("full hs wall (client+server)", "us/hs", &fw);
    summary("resumed hs server CPU", "us/hs", &rs);
    summary("resumed hs server-only rate", "hs/s", &rs.iter().map(|x| 1e6 / x).collect::<Vec<_>>());
    summary("resumed hs total CPU (client+server)", "us/hs", &rt);
    summary("resumed hs wall (client+server)", "us/hs", &rw);
    summary("bulk 1 MiB server encrypt", "us/MiB", &b1m);
    summary("bulk 1 MiB server throughput", "MiB/s", &b1m.iter().map(|x| 1e6 / x).collect::<Vec<_>>());
    summary("bulk 4 KiB server encrypt", "us/4KiB", &b4k);
}
