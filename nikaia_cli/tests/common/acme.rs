//! What the ACME tests share: a CA (Debian's Pebble, with
//! pebble-challtestsrv as its DNS, or the mock in `tests/acme/mock_ca.py`),
//! a site whose runtime file names `[acme]` for it, and a TLS client that
//! trusts the CA's root.
#![allow(dead_code)]

use crate::common::{spawn_serving, Served};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A free TCP port on 127.0.0.1, below the ephemeral range (32768 and
/// up on Linux), so the clients' own connections never take it between
/// the servers that listen on it one after another.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    // Each test process starts somewhere else in 20000..32000.
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id() % 12_000,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    loop {
        let port = 20_000 + (NEXT.fetch_add(1, Ordering::SeqCst) % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Polls `ready` every 50 ms until it says yes; fails the test after
/// `secs` with `what`.
pub fn wait_until(what: &str, secs: u64, mut ready: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(secs);
    while !ready() {
        assert!(Instant::now() < until, "waited {secs} s for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

enum Kind {
    Pebble { mgmt: u16, dns: u16 },
    Mock,
}

/// A CA on 127.0.0.1 that validates HTTP-01 at `http` and TLS-ALPN-01 at
/// `tls` (a site's listeners), killed when dropped.
pub struct Ca {
    pub dir: tempfile::TempDir,
    kind: Kind,
    port: u16,
    pub http: u16,
    pub tls: u16,
    env: Vec<(String, String)>,
    children: Vec<Child>,
}

impl Ca {
    /// Pebble with `env` (`PEBBLE_VA_NOSLEEP=1` and `PEBBLE_WFE_NONCEREJECT=0`
    /// unless it says otherwise), every name at 127.0.0.1.
    pub fn pebble(env: &[(&str, &str)]) -> Ca {
        let dir = tempfile::tempdir().unwrap();
        // Pebble's own HTTPS: a leaf for 127.0.0.1 under a root of the test.
        let pki = nikaia_tests::TestPki::new();
        let (cert, key) = pki.make_for("pebble", &["localhost", "127.0.0.1"], 2100);
        std::fs::write(dir.path().join("tls.pem"), cert).unwrap();
        std::fs::write(dir.path().join("tls.key"), key).unwrap();
        std::fs::copy(&pki.ca_pem, dir.path().join("tls-ca.pem")).unwrap();
        let (port, mgmt, dns) = (free_port(), free_port(), free_port());
        let (http, tls) = (free_port(), free_port());
        let config = serde_json::json!({"pebble": {
            "listenAddress": format!("127.0.0.1:{port}"),
            "managementListenAddress": format!("127.0.0.1:{mgmt}"),
            "certificate": dir.path().join("tls.pem"),
            "privateKey": dir.path().join("tls.key"),
            "httpPort": http, "tlsPort": tls, "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
        }});
        std::fs::write(dir.path().join("pebble.json"), config.to_string()).unwrap();
        let mut env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for (k, v) in [("PEBBLE_VA_NOSLEEP", "1"), ("PEBBLE_WFE_NONCEREJECT", "0")] {
            if !env.iter().any(|(e, _)| e == k) {
                env.push((k.into(), v.into()));
            }
        }
        let mut ca = Ca {
            dir,
            kind: Kind::Pebble { mgmt, dns },
            port,
            http,
            tls,
            env,
            children: Vec::new(),
        };
        ca.start();
        ca
    }

    /// The mock CA (ARI, profiles, lifetimes, Retry-After, down).
    pub fn mock() -> Ca {
        Ca::mock_with(&[])
    }

    /// The mock CA validating at these ports.
    pub fn mock_on(http: u16, tls: u16) -> Ca {
        let mut ca = Ca {
            dir: tempfile::tempdir().unwrap(),
            kind: Kind::Mock,
            port: free_port(),
            http,
            tls,
            env: Vec::new(),
            children: Vec::new(),
        };
        ca.start();
        ca
    }

    /// The mock CA with `env` (a faked clock).
    pub fn mock_with(env: &[(&str, &str)]) -> Ca {
        let dir = tempfile::tempdir().unwrap();
        let mut ca = Ca {
            dir,
            kind: Kind::Mock,
            port: free_port(),
            http: free_port(),
            tls: free_port(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            children: Vec::new(),
        };
        ca.start();
        ca
    }

    fn start(&mut self) {
        let log = |name: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.path().join(name))
                .unwrap()
        };
        match self.kind {
            Kind::Pebble { mgmt, dns } => {
                if self.children.is_empty() {
                    let dns_server = Command::new("pebble-challtestsrv")
                        .args([
                            "-dns01",
                            &format!("127.0.0.1:{dns}"),
                            "-http01",
                            "",
                            "-https01",
                            "",
                            "-tlsalpn01",
                            "",
                        ])
                        .args([
                            "-defaultIPv4",
                            "127.0.0.1",
                            "-defaultIPv6",
                            "",
                            "-management",
                            &format!("127.0.0.1:{}", free_port()),
                        ])
                        .stdout(log("challtestsrv.log"))
                        .stderr(Stdio::null())
                        .spawn()
                        .expect("pebble-challtestsrv runs (./test.sh installs Debian's pebble)");
                    self.children.push(dns_server);
                }
                let pebble = Command::new("pebble")
                    .arg("-config")
                    .arg(self.dir.path().join("pebble.json"))
                    .args(["-dnsserver", &format!("127.0.0.1:{dns}")])
                    .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    .stdout(log("pebble.log"))
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("pebble runs (./test.sh installs Debian's pebble)");
                self.children.push(pebble);
                let _ = mgmt;
            }
            Kind::Mock => {
                let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/acme/mock_ca.py");
                let _ = std::fs::remove_file(self.dir.path().join("ready"));
                let mock = Command::new("python3")
                    .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    .arg(script)
                    .arg(self.dir.path())
                    .args([self.port, self.http, self.tls].map(|p| p.to_string()))
                    .stdout(Stdio::null())
                    .stderr(log("mock.log"))
                    .spawn()
                    .expect("python3 runs the mock CA");
                self.children.push(mock);
                let ready = self.dir.path().join("ready");
                wait_until("the mock CA", 20, || ready.exists());
            }
        }
        let port = self.port;
        wait_until("the CA's port", 20, || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
    }

    /// Stops the CA (Pebble: not its DNS).
    pub fn stop(&mut self) {
        let keep = match self.kind {
            Kind::Pebble { .. } => 1,
            Kind::Mock => 0,
        };
        for mut child in self.children.drain(keep..) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again: Pebble forgets every account and order.
    pub fn restart(&mut self) {
        self.stop();
        self.start();
    }

    pub fn directory(&self) -> String {
        match self.kind {
            Kind::Pebble { .. } => format!("https://127.0.0.1:{}/dir", self.port),
            Kind::Mock => format!("https://127.0.0.1:{}/dir", self.port),
        }
    }

    /// The root of the CA's own HTTPS (`ca-roots`).
    pub fn tls_roots(&self) -> PathBuf {
        self.dir.path().join("tls-ca.pem")
    }

    /// The root the certificates it issues chain to.
    pub fn issuer_root(&self) -> PathBuf {
        let path = self.dir.path().join("issuer.pem");
        match self.kind {
            Kind::Mock => self.dir.path().join("ca.pem"),
            Kind::Pebble { mgmt, .. } => {
                let pem = self.get(&format!("https://127.0.0.1:{mgmt}/roots/0"));
                std::fs::write(&path, pem).unwrap();
                path
            }
        }
    }

    fn get(&self, url: &str) -> Vec<u8> {
        self.curl(&[url])
    }

    /// curl trusting the CA's HTTPS, with `args`: what it printed.
    fn curl(&self, args: &[&str]) -> Vec<u8> {
        let out = Command::new("curl")
            .args(["-sS", "--cacert"])
            .arg(self.tls_roots())
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "curl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// Pebble: the requests to `path` in its log (`POST /order-plz`).
    pub fn count(&self, request: &str) -> usize {
        let log = std::fs::read_to_string(self.dir.path().join("pebble.log")).unwrap_or_default();
        log.lines()
            .filter(|l| l.contains(&format!("{request} -> calling handler()")))
            .count()
    }

    /// The mock: changes its configuration.
    pub fn config(&self, change: serde_json::Value) {
        let url = format!("https://127.0.0.1:{}/control/config", self.port);
        self.curl(&["-X", "POST", "--data-binary", &change.to_string(), &url]);
    }

    /// The mock: every request so far.
    pub fn log(&self) -> Vec<serde_json::Value> {
        serde_json::from_slice(&self.get(&format!("https://127.0.0.1:{}/control/log", self.port)))
            .unwrap()
    }

    /// The mock: every order placed.
    pub fn orders(&self) -> Vec<serde_json::Value> {
        serde_json::from_slice(
            &self.get(&format!("https://127.0.0.1:{}/control/orders", self.port)),
        )
        .unwrap()
    }
}

impl Drop for Ca {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A directory served with `[acme]` for `ca`: its runtime file, the
/// storage, the error log, the stats socket.
pub struct Site {
    pub dir: tempfile::TempDir,
    pub runtime: PathBuf,
    pub storage: PathBuf,
    pub http: u16,
    pub tls: u16,
}

impl Site {
    /// `domains` from `ca`; `acme` adds fields to `[acme]`, `top` keys
    /// before it.
    pub fn new(ca: &Ca, domains: &[&str], acme: &str, top: &str) -> Site {
        Site::on(ca, ca.http, ca.tls, domains, acme, top)
    }

    /// The same, listening on other ports (a second process beside one on
    /// the CA's).
    pub fn on(ca: &Ca, http: u16, tls: u16, domains: &[&str], acme: &str, top: &str) -> Site {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("site")).unwrap();
        std::fs::write(dir.path().join("site/index.html"), "hello").unwrap();
        let storage = dir.path().join("acme");
        let site = Site {
            runtime: dir.path().join("runtime.toml"),
            storage,
            dir,
            http,
            tls,
        };
        site.write(ca, domains, acme, top);
        site
    }

    /// Writes the runtime file again (a reload's).
    pub fn write(&self, ca: &Ca, domains: &[&str], acme: &str, top: &str) {
        let names: Vec<String> = domains.iter().map(|d| format!("{d:?}")).collect();
        let text = format!(
            "listen = [{{ address = \"127.0.0.1:{tls}\", tls = true }}, {{ address = \"127.0.0.1:{http}\", tls = false, https-redirect = true }}]\n\
             workers = 1\naccess-log = \"off\"\nerror-log = \"error.log\"\nstats-socket = \"stats.sock\"\n{top}\n\
             [acme]\ndomains = [{}]\ndirectory = \"{}\"\nca-roots = {:?}\nagree-to-terms = true\nstorage = {:?}\n{acme}\n",
            names.join(", "),
            ca.directory(),
            ca.tls_roots().display().to_string(),
            self.storage.display().to_string(),
            tls = self.tls,
            http = self.http,
        );
        std::fs::write(&self.runtime, text).unwrap();
    }

    /// `nikaia serve` of the site, with `env`.
    pub fn serve_with(&self, env: &[(&str, &str)]) -> Served {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
        cmd.arg("serve")
            .arg(self.dir.path().join("site"))
            .arg("--runtime")
            .arg(&self.runtime);
        cmd.envs(env.iter().copied());
        spawn_serving(cmd).0
    }

    pub fn serve(&self) -> Served {
        self.serve_with(&[])
    }

    /// The error log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }

    /// `nikaia explain --json`.
    pub fn explain(&self) -> serde_json::Value {
        let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
            .args(["explain", "--json", "--runtime"])
            .arg(&self.runtime)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The ACME entry of `name` in `nikaia explain`.
    pub fn acme(&self, name: &str) -> serde_json::Value {
        let report = self.explain();
        (report["tls"]["certificates"]
            .as_array()
            .into_iter()
            .flatten())
        .find(|c| c["source"] == "acme" && c["cert"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no ACME entry for {name}: {report}"))
    }
}

/// Waits until a handshake with `site` for `name` verifies against the
/// CA's root and gives a leaf `accept` takes; the leaf.
pub fn served_when(
    site: &Site,
    ca: &Ca,
    name: &str,
    secs: u64,
    accept: impl Fn(&[u8]) -> bool,
) -> Vec<u8> {
    let config = client(&ca.issuer_root(), &[b"http/1.1"]);
    let mut leaf = Vec::new();
    wait_until(
        &format!("a certificate for {name}\n{}", site.log()),
        secs,
        || match handshake(site.tls, &config, name) {
            Ok(der) if accept(&der) => {
                leaf = der;
                true
            }
            _ => false,
        },
    );
    leaf
}

/// The first certificate `site` serves for `name`, within 30 s.
pub fn served(site: &Site, ca: &Ca, name: &str) -> Vec<u8> {
    served_when(site, ca, name, 30, |_| true)
}

/// A TLS client trusting the PEM roots at `roots`, offering `alpn`.
pub fn client(roots: &Path, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let mut store = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_file_iter(roots).unwrap() {
        store.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config.resumption = rustls::client::Resumption::disabled();
    Arc::new(config)
}

/// A full handshake with the site asking for `name`, verified against
/// the config's roots: the leaf's DER.
pub fn handshake(
    port: u16,
    config: &Arc<rustls::ClientConfig>,
    name: &str,
) -> std::io::Result<Vec<u8>> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut c = nikaia_tests::TlsClient::connect_named(addr, config.clone(), name)?;
    let leaf = c.session().peer_certificates().unwrap()[0].to_vec();
    if c.session().alpn_protocol() != Some(b"h2") {
        c.send(format!(
            "GET / HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n"
        ));
        let reply = c.reply()?;
        if reply.status != 200 {
            return Err(std::io::Error::other(format!("status {}", reply.status)));
        }
    }
    Ok(leaf)
}

/// (status, head) of a plain GET of `path` with `Host: host` at `port`.
pub fn plain_get(port: u16, host: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = String::new();
    let _ = s.read_to_string(&mut all);
    let status = all.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, all)
}

/// Reads a process's stderr lines into a string as they come (for a
/// process whose log goes there).
pub fn drain(stream: impl Read + Send + 'static) -> Arc<std::sync::Mutex<String>> {
    let out = Arc::new(std::sync::Mutex::new(String::new()));
    let sink = out.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let mut s = sink.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    out
}

/// Writes `bytes` to `path`, replacing it.
pub fn put(path: &Path, bytes: &[u8]) {
    std::fs::File::create(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}
