//! Full TLS 1.3 handshakes against a server, as fast as `THREADS` threads
//! can make them: each connects, shakes hands asking for a name taken in
//! turn from `NAMES` (comma-separated; SNI), reads nothing, closes. No
//! resumption, X25519 only, AES-128-GCM only, the server's certificate not
//! verified (the server's cost is what is measured, and verifying would
//! only add the client's).
//!
//! usage: handshakes ADDR NAMES THREADS SECONDS
//! prints: `handshakes=N failures=M seconds=S`

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0
            .signature_verification_algorithms
            .supported_schemes()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, addr, names, threads, seconds] = &args[..] else {
        eprintln!("usage: handshakes ADDR NAMES THREADS SECONDS");
        std::process::exit(2);
    };
    let names: Arc<Vec<String>> = Arc::new(names.split(',').map(str::to_owned).collect());
    let threads: usize = threads.parse().unwrap();
    let seconds: f64 = seconds.parse().unwrap();
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    provider.kx_groups = vec![rustls::crypto::aws_lc_rs::kx_group::X25519];
    provider.cipher_suites = vec![rustls::crypto::aws_lc_rs::cipher_suite::TLS13_AES_128_GCM_SHA256];
    let provider = Arc::new(provider);
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let config = Arc::new(config);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (config, names, addr) = (config.clone(), names.clone(), addr.clone());
            let (stop, done, failed) = (stop.clone(), done.clone(), failed.clone());
            std::thread::spawn(move || {
                let mut i = t;
                while !stop.load(Ordering::Relaxed) {
                    let name = &names[i % names.len()];
                    i += threads;
                    match handshake(&addr, &config, name) {
                        Ok(()) => done.fetch_add(1, Ordering::Relaxed),
                        Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                    };
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    println!(
        "handshakes={} failures={} seconds={:.3}",
        done.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
}

fn handshake(addr: &str, config: &Arc<rustls::ClientConfig>, name: &str) -> std::io::Result<()> {
    let mut tcp = TcpStream::connect(addr)?;
    tcp.set_nodelay(true)?;
    let name = rustls::pki_types::ServerName::try_from(name.to_owned()).map_err(std::io::Error::other)?;
    let mut conn = rustls::ClientConnection::new(config.clone(), name).map_err(std::io::Error::other)?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp)?;
    }
    conn.send_close_notify();
    let _ = conn.write_tls(&mut tcp);
    tcp.flush()
}
