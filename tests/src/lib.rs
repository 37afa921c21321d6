//! Helpers shared by the workspace-level integration tests: a server on an
//! ephemeral loopback port, and a raw HTTP/1.1 client that reads exactly what
//! the server sent.

pub mod bodies;
pub mod chromium;
pub mod corpus;
pub mod curl;
pub mod dav;
pub mod https;
pub mod load;
pub mod serve;
pub mod site;
pub mod tmpfs;
pub mod tus;
pub mod uploads;

use nikaia_std::http::{Running, Server};
use nikaia_std::rt::{LogTarget, Runtime};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// A runtime for tests: loopback, port 0, two workers, quiet logs.
pub fn test_runtime() -> Runtime {
    let mut rt = Runtime::default();
    rt.listen = vec![std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into()];
    rt.workers = 2;
    rt.access_log = LogTarget::Off;
    rt
}

/// The names in `dir`, sorted.
pub fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Starts `server` and returns the running handle.
pub fn start(server: Server) -> Running {
    server.start().expect("server starts")
}

/// A response as read off the wire.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The tokens of a comma-separated header (all its lines), trimmed.
    pub fn tokens(&self, name: &str) -> Vec<String> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(','))
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect()
    }
}

/// One client connection speaking raw bytes over a stream (plain TCP for
/// [`Client`], rustls for [`TlsClient`]), reading exactly what the server
/// sent.
pub struct Conn<S: Read + Write> {
    reader: BufReader<S>,
}

/// A plain HTTP client connection.
pub type Client = Conn<TcpStream>;

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// An HTTPS client connection (rustls).
pub type TlsClient = Conn<TlsStream>;

impl<S: Read + Write> Conn<S> {
    pub fn send(&mut self, bytes: impl AsRef<[u8]>) {
        let s = self.reader.get_mut();
        s.write_all(bytes.as_ref()).expect("send");
        s.flush().expect("flush");
    }

    /// Sends a GET with Host and returns the reply.
    pub fn get(&mut self, path: &str) -> Reply {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
        self.reply().expect("a reply")
    }

    /// Reads one response; `head_only` for a reply to HEAD.
    pub fn read_reply(&mut self, head_only: bool) -> io::Result<Reply> {
        read_reply(&mut self.reader, head_only)
    }

    pub fn reply(&mut self) -> io::Result<Reply> {
        self.read_reply(false)
    }

    /// The buffered stream, to read what the server sent as raw bytes.
    pub fn reader(&mut self) -> &mut BufReader<S> {
        &mut self.reader
    }

    /// True when the server closed the connection (EOF or reset) within the
    /// read timeout, with nothing more sent.
    pub fn is_closed(&mut self) -> bool {
        is_closed(&mut self.reader)
    }
}

impl Conn<TcpStream> {
    pub fn connect(addr: SocketAddr) -> Client {
        Client::from_stream(TcpStream::connect(addr).expect("connect"))
    }

    /// A client over a socket already connected (and perhaps written to).
    pub fn from_stream(s: TcpStream) -> Client {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        Conn {
            reader: BufReader::new(s),
        }
    }

    pub fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    pub fn set_read_timeout(&self, t: Duration) {
        self.stream().set_read_timeout(Some(t)).unwrap();
    }
}

impl Conn<TlsStream> {
    /// Connects and completes the handshake.
    pub fn connect_tls(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> TlsClient {
        TlsClient::over(TcpStream::connect(addr).expect("connect"), config)
    }

    /// Completes a handshake over a socket already connected.
    pub fn over(tcp: TcpStream, config: Arc<rustls::ClientConfig>) -> TlsClient {
        TlsClient::handshake(tcp, config, "localhost").expect("TLS handshake")
    }

    /// Connects and shakes hands asking for `name` (a DNS name is sent as
    /// SNI; an IP address sends none); the handshake's error if it failed.
    pub fn connect_named(
        addr: SocketAddr,
        config: Arc<rustls::ClientConfig>,
        name: &str,
    ) -> io::Result<TlsClient> {
        TlsClient::handshake(TcpStream::connect(addr)?, config, name)
    }

    fn handshake(
        tcp: TcpStream,
        config: Arc<rustls::ClientConfig>,
        name: &str,
    ) -> io::Result<TlsClient> {
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        tcp.set_nodelay(true).unwrap();
        let name = rustls::pki_types::ServerName::try_from(name.to_owned()).unwrap();
        let conn = rustls::ClientConnection::new(config, name).unwrap();
        let mut stream = rustls::StreamOwned::new(conn, tcp);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        Ok(Conn {
            reader: BufReader::new(stream),
        })
    }

    /// The common name of the certificate the server presented.
    pub fn peer_common_name(&self) -> String {
        let der = self.session().peer_certificates().unwrap()[0].to_vec();
        common_name(&der)
    }

    pub fn session(&self) -> &rustls::ClientConnection {
        &self.reader.get_ref().conn
    }
}

/// True when the peer closed (EOF or reset) within the read timeout, with
/// nothing more sent.
fn is_closed(reader: &mut impl Read) -> bool {
    let mut b = [0u8; 1];
    match reader.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ),
    }
}

/// Reads one HTTP/1.1 response off `reader`; `head_only` for a reply to HEAD.
/// A body without `Content-Length` is read to its end as sent (chunks
/// and all: [`read_whole`] decodes them).
pub fn read_reply(reader: &mut impl BufRead, head_only: bool) -> io::Result<Reply> {
    let mut reply = read_head(reader)?;
    if !bodiless(&reply, head_only) {
        read_sized(reader, &mut reply)?;
    }
    Ok(reply)
}

/// Reads one HTTP/1.1 response off `reader` whole: a chunked body decoded
/// (its trailers read and dropped), `Content-Length` read exactly, any
/// other body read until the server closes; `head_only` for a reply to
/// HEAD.
pub fn read_whole(reader: &mut impl BufRead, head_only: bool) -> io::Result<Reply> {
    let mut reply = read_head(reader)?;
    if bodiless(&reply, head_only) {
        return Ok(reply);
    }
    let chunked = reply
        .tokens("transfer-encoding")
        .iter()
        .any(|t| t.eq_ignore_ascii_case("chunked"));
    if chunked {
        let mut line = String::new();
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size, 16)
                .map_err(|_| io::Error::other(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    line.clear();
                    reader.read_line(&mut line)?;
                    if line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let at = reply.body.len();
            reply.body.resize(at + size, 0);
            reader.read_exact(&mut reply.body[at..])?;
            line.clear();
            reader.read_line(&mut line)?;
        }
    } else {
        read_sized(reader, &mut reply)?;
    }
    Ok(reply)
}

/// Reads `reply`'s body: `Content-Length` bytes, or without it all until
/// the server closes.
fn read_sized(reader: &mut impl BufRead, reply: &mut Reply) -> io::Result<()> {
    if let Some(len) = reply.header("content-length") {
        let len: usize = len.parse().map_err(io::Error::other)?;
        reply.body = vec![0; len];
        reader.read_exact(&mut reply.body)?;
    } else {
        reader.read_to_end(&mut reply.body)?;
    }
    Ok(())
}

/// True when a reply with this status (to HEAD when `head_only`) carries
/// no body.
fn bodiless(reply: &Reply, head_only: bool) -> bool {
    head_only || reply.status == 304 || reply.status == 204 || reply.status < 200
}

/// Reads a response's status line and header fields off `reader`: the
/// reply, its body still to read.
fn read_head(reader: &mut impl BufRead) -> io::Result<Reply> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let status: u16 = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("bad status line {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (n, v) = l
            .split_once(':')
            .ok_or_else(|| io::Error::other(format!("bad header {l:?}")))?;
        headers.push((n.to_owned(), v.trim().to_owned()));
    }
    Ok(Reply {
        status,
        headers,
        body: Vec::new(),
    })
}

/// The common name in a certificate's DER, as the test certificates write
/// it (a UTF8String after the commonName OID).
pub fn common_name(der: &[u8]) -> String {
    const CN: [u8; 5] = [0x06, 0x03, 0x55, 0x04, 0x03];
    // The subject's is the last one (the issuer's comes first).
    let at = der
        .windows(5)
        .rposition(|w| w == CN)
        .expect("a common name");
    let len = der[at + 6] as usize;
    String::from_utf8_lossy(&der[at + 7..at + 7 + len]).into_owned()
}

/// A certificate authority and a server certificate for `localhost` and
/// 127.0.0.1 that it signed, made fresh for a test, with the PEM files a
/// runtime file names.
pub struct TestPki {
    pub dir: tempfile::TempDir,
    pub ca_pem: std::path::PathBuf,
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
    ca: rcgen::Issuer<'static, rcgen::KeyPair>,
    ca_der: rustls::pki_types::CertificateDer<'static>,
}

impl TestPki {
    pub fn new() -> TestPki {
        let dir = tempfile::tempdir().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "nikaia test CA");
        let key = rcgen::KeyPair::generate().unwrap();
        let ca_cert = params.self_signed(&key).unwrap();
        let ca_pem = dir.path().join("ca.pem");
        std::fs::write(&ca_pem, ca_cert.pem()).unwrap();
        let mut pki = TestPki {
            cert: dir.path().join("cert.pem"),
            key: dir.path().join("key.pem"),
            ca_pem,
            ca_der: ca_cert.der().clone(),
            ca: rcgen::Issuer::new(params, key),
            dir,
        };
        pki.issue("server one");
        pki
    }

    /// Writes a new server certificate (and key) signed by the CA, with
    /// `name` as its common name, over `cert` and `key`.
    pub fn issue(&mut self, name: &str) {
        let (cert, key) = self.make(name, 2100);
        std::fs::write(&self.cert, cert).unwrap();
        std::fs::write(&self.key, key).unwrap();
    }

    /// (certificate PEM, key PEM) of a server certificate valid until the
    /// first day of `until_year`.
    pub fn make(&self, name: &str, until_year: i32) -> (String, String) {
        self.make_for(name, &["localhost", "127.0.0.1"], until_year)
    }

    /// Writes a pair for `names` (DNS names, `*.` wildcards, IP addresses)
    /// with the common name `cn`, valid until the first day of
    /// `until_year`, to `STEM.pem` and `STEM.key` in the PKI's directory;
    /// their paths.
    pub fn write_pair(
        &self,
        stem: &str,
        cn: &str,
        names: &[&str],
        until_year: i32,
    ) -> (std::path::PathBuf, std::path::PathBuf) {
        let (cert, key) = self.make_for(cn, names, until_year);
        let paths = (
            self.dir.path().join(format!("{stem}.pem")),
            self.dir.path().join(format!("{stem}.key")),
        );
        std::fs::write(&paths.0, cert).unwrap();
        std::fs::write(&paths.1, key).unwrap();
        paths
    }

    /// (certificate PEM, key PEM) of a certificate for `names` with the
    /// common name `cn`.
    pub fn make_for(&self, cn: &str, names: &[&str], until_year: i32) -> (String, String) {
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(until_year, 1, 1);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// A runtime serving HTTPS with this certificate (loopback, port 0, two
    /// workers, quiet logs).
    pub fn runtime(&self) -> Runtime {
        let mut rt = test_runtime();
        rt.tls_cert = Some(self.cert.clone());
        rt.tls_key = Some(self.key.clone());
        rt
    }

    /// A client configuration trusting the test CA, offering `http/1.1`.
    pub fn client_config(&self) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca_der.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

impl Default for TestPki {
    fn default() -> Self {
        TestPki::new()
    }
}
