//! A minimal HTTP/2 client (RFC 9113, no HPACK decoding beyond
//! `:status`), and the same bytes through it over h2c and h2.

use super::alpn::{alpn, alpn_config, tls_connect};
use nikaia_tests::corpus::{dir_server, random, write};
use nikaia_tests::{test_runtime, TestPki};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A header field without indexing, name from the static table, no Huffman.
fn literal(name_index: u8, value: &str) -> Vec<u8> {
    assert!(value.len() < 127);
    let mut b = vec![name_index, value.len() as u8];
    b.extend_from_slice(value.as_bytes());
    b
}

/// `:status` from the first field of a header block: the static table's
/// indexed entries (RFC 7541 Appendix A, 8 to 14), after any table size
/// update.
fn status_of(block: &[u8]) -> Option<u16> {
    let mut i = 0;
    while i < block.len() && block[i] & 0xE0 == 0x20 {
        // A dynamic table size update; one byte unless its value is >= 31.
        i += 1;
        if block[i - 1] & 0x1F == 0x1F {
            while i < block.len() && block[i] & 0x80 != 0 {
                i += 1;
            }
            i += 1;
        }
    }
    let statuses = [200, 204, 206, 304, 400, 404, 500];
    match block.get(i)? {
        b @ 0x88..=0x8E => Some(statuses[(b - 0x88) as usize]),
        _ => None,
    }
}

/// What one stream received.
#[derive(Debug, Default)]
pub struct Stream {
    pub status: Option<u16>,
    pub body: Vec<u8>,
    /// END_STREAM came.
    pub done: bool,
    /// RST_STREAM came, with this error code.
    pub reset: Option<u32>,
}

/// One client connection: requests out, frames in, per stream.
pub struct H2<S: Read + Write> {
    io: S,
    authority: String,
    https: bool,
    pub streams: BTreeMap<u32, Stream>,
    next: u32,
    /// Credit is returned for every DATA frame read (else the windows are
    /// set so large none is needed).
    returns_credit: bool,
    /// GOAWAY came, or the server closed the connection.
    pub gone: bool,
}

impl<S: Read + Write> H2<S> {
    /// The preface and SETTINGS: each stream may be sent `window` bytes
    /// before its credit is returned; `None`, 2^31 - 1 and no credit ever.
    pub fn new(mut io: S, authority: &str, https: bool, window: Option<u32>) -> H2<S> {
        let w = window.unwrap_or(0x7FFF_FFFF);
        let mut out = PREFACE.to_vec();
        let mut settings = vec![0, 4];
        settings.extend_from_slice(&w.to_be_bytes());
        out.extend(frame(0x4, 0, 0, &settings));
        // The connection's window: 2^31 - 1.
        out.extend(frame(0x8, 0, 0, &(0x7FFF_FFFFu32 - 65_535).to_be_bytes()));
        io.write_all(&out).unwrap();
        H2 {
            io,
            authority: authority.to_owned(),
            https,
            streams: BTreeMap::new(),
            next: 1,
            returns_credit: window.is_some(),
            gone: false,
        }
    }

    /// Sends a GET for `path`; its stream's id.
    pub fn get(&mut self, path: &str) -> u32 {
        let mut block = vec![0x82]; // :method GET
        block.push(if self.https { 0x87 } else { 0x86 });
        block.extend(literal(0x04, path));
        block.extend(literal(0x01, &self.authority));
        let id = self.next;
        self.next += 2;
        self.io
            .write_all(&frame(0x1, 0x4 | 0x1, id, &block))
            .unwrap();
        self.io.flush().unwrap();
        self.streams.insert(id, Stream::default());
        id
    }

    /// Reads and handles one frame; false when the connection is gone.
    fn step(&mut self) -> bool {
        let mut head = [0u8; 9];
        if self.io.read_exact(&mut head).is_err() {
            self.gone = true;
            return false;
        }
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7FFF_FFFF;
        let mut payload = vec![0; len];
        if self.io.read_exact(&mut payload).is_err() {
            self.gone = true;
            return false;
        }
        let mut body = &payload[..];
        if matches!(kind, 0x0 | 0x1) && flags & 0x8 != 0 {
            let pad = body[0] as usize;
            body = &body[1..body.len() - pad];
        }
        match kind {
            0x0 => {
                let s = self
                    .streams
                    .get_mut(&id)
                    .expect("DATA on a stream asked for");
                assert!(s.status.is_some(), "DATA before HEADERS on {id}");
                assert!(!s.done, "DATA after END_STREAM on {id}");
                s.body.extend_from_slice(body);
                s.done |= flags & 0x1 != 0;
                if self.returns_credit && len > 0 {
                    let credit = (len as u32).to_be_bytes();
                    let mut out = frame(0x8, 0, 0, &credit);
                    if !s.done {
                        out.extend(frame(0x8, 0, id, &credit));
                    }
                    let _ = self.io.write_all(&out);
                }
            }
            0x1 => {
                if flags & 0x20 != 0 {
                    body = &body[5..];
                }
                assert!(flags & 0x4 != 0, "a header block in one frame");
                let s = self
                    .streams
                    .get_mut(&id)
                    .expect("HEADERS on a stream asked for");
                s.status = status_of(body);
                s.done |= flags & 0x1 != 0;
            }
            0x3 => {
                let s = self
                    .streams
                    .get_mut(&id)
                    .expect("RST_STREAM on a stream asked for");
                s.reset = Some(u32::from_be_bytes(payload[..4].try_into().unwrap()));
            }
            0x4 if flags & 0x1 == 0 => {
                let _ = self.io.write_all(&frame(0x4, 0x1, 0, &[]));
            }
            0x6 if flags & 0x1 == 0 => {
                let _ = self.io.write_all(&frame(0x6, 0x1, 0, &payload));
            }
            0x7 => self.gone = true,
            _ => {}
        }
        true
    }

    /// Reads frames until `until` holds or the connection is gone.
    pub fn run(&mut self, until: impl Fn(&BTreeMap<u32, Stream>) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !until(&self.streams) && self.step() {
            assert!(
                Instant::now() < deadline,
                "no end after 30 s: {:?}",
                self.summary()
            );
        }
    }

    /// Per stream: id, status, bytes, ended, reset code; for messages.
    pub fn summary(&self) -> String {
        self.streams
            .iter()
            .map(|(id, s)| {
                let end = match (s.done, s.reset) {
                    (true, _) => "ended".to_owned(),
                    (false, Some(code)) => format!("reset {code}"),
                    (false, None) => "open".to_owned(),
                };
                format!("#{id} {:?} {} B {end}; ", s.status, s.body.len())
            })
            .collect()
    }
}

/// GETs every path on one connection, all streams open at once; (status,
/// body) per path, in order.
fn h2_get_all(
    io: impl Read + Write,
    authority: &str,
    https: bool,
    paths: &[&str],
) -> Vec<(u16, Vec<u8>)> {
    let mut c = H2::new(io, authority, https, None);
    let ids: Vec<u32> = paths.iter().map(|p| c.get(p)).collect();
    c.run(|s| s.values().all(|s| s.done || s.reset.is_some()));
    assert!(!c.gone, "the connection went away: {}", c.summary());
    ids.iter()
        .map(|id| {
            let s = c.streams.remove(id).unwrap();
            assert_eq!(s.reset, None, "stream {id} reset");
            (s.status.expect(":status from the static table"), s.body)
        })
        .collect()
}

#[test]
fn a_hand_written_h2_client_gets_the_same_bytes_over_h2c_and_h2() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let sizes = [0usize, 5000, 16_384, 100_000, (1 << 20) + 3];
    let contents: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| random(n, 50 + i as u64))
        .collect();
    for (i, c) in contents.iter().enumerate() {
        write(&root.join(format!("f{i}.bin")), c);
    }
    std::thread::sleep(Duration::from_millis(30));
    let paths: Vec<String> = (0..sizes.len()).map(|i| format!("/f{i}.bin")).collect();
    let mut paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    paths.push("/missing");
    let check = |label: &str, got: Vec<(u16, Vec<u8>)>| {
        for (i, want) in contents.iter().enumerate() {
            assert_eq!(got[i].0, 200, "{label}: f{i}.bin");
            assert!(
                got[i].1 == *want,
                "{label}: f{i}.bin: {} bytes of {}",
                got[i].1.len(),
                want.len()
            );
        }
        assert_eq!(got[sizes.len()].0, 404, "{label}: /missing");
    };

    let plain = dir_server(test_runtime(), &root, false);
    let sock = TcpStream::connect(plain.local_addr()).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let authority = format!("127.0.0.1:{}", plain.local_addr().port());
    check("h2c", h2_get_all(sock, &authority, false, &paths));

    let pki = TestPki::new();
    let tls = dir_server(pki.runtime(), &root, false);
    let c = tls_connect(tls.local_addr(), alpn_config(&pki, &["h2"]));
    assert_eq!(alpn(&c), Some(&b"h2"[..]));
    check("h2", h2_get_all(c, "localhost", true, &paths));
}
