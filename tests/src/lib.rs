//! Helpers shared by the workspace-level integration tests: a server on an
//! ephemeral loopback port, and a raw HTTP/1.1 client that reads exactly what
//! the server sent.

use nikaia_std::http::{Running, Server};
use nikaia_std::rt::{LogTarget, Runtime};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A runtime for tests: loopback, port 0, two workers, quiet logs.
pub fn test_runtime() -> Runtime {
    Runtime {
        listen: "127.0.0.1:0".parse().unwrap(),
        workers: 2,
        access_log: LogTarget::Off,
        ..Runtime::default()
    }
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
}

/// One client connection speaking raw bytes.
pub struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        Client {
            reader: BufReader::new(s),
        }
    }

    pub fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    pub fn send(&mut self, bytes: impl AsRef<[u8]>) {
        self.reader
            .get_mut()
            .write_all(bytes.as_ref())
            .expect("send");
    }

    /// Sends a GET with Host and returns the reply.
    pub fn get(&mut self, path: &str) -> Reply {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
        self.reply().expect("a reply")
    }

    /// Reads one response; `head_only` for a reply to HEAD.
    pub fn read_reply(&mut self, head_only: bool) -> io::Result<Reply> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
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
            self.reader.read_line(&mut line)?;
            let l = line.trim_end_matches(['\r', '\n']);
            if l.is_empty() {
                break;
            }
            let (n, v) = l
                .split_once(':')
                .ok_or_else(|| io::Error::other("bad header"))?;
            headers.push((n.to_owned(), v.trim().to_owned()));
        }
        let mut reply = Reply {
            status,
            headers,
            body: Vec::new(),
        };
        let bodiless = head_only || status == 304 || status == 204 || status < 200;
        if !bodiless {
            if let Some(len) = reply.header("content-length") {
                let len: usize = len.parse().map_err(io::Error::other)?;
                reply.body = vec![0; len];
                self.reader.read_exact(&mut reply.body)?;
            } else {
                self.reader.read_to_end(&mut reply.body)?;
            }
        }
        Ok(reply)
    }

    pub fn reply(&mut self) -> io::Result<Reply> {
        self.read_reply(false)
    }

    /// True when the server closed the connection (EOF or reset) within the
    /// read timeout, with nothing more sent.
    pub fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        match self.reader.read(&mut b) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
        }
    }

    pub fn set_read_timeout(&self, t: Duration) {
        self.stream().set_read_timeout(Some(t)).unwrap();
    }
}
