//! The send path of `http::File`, driven over one blocking socket without
//! the HTTP layer: `benches/sendfile` measures `auto` with it, so the bench
//! prices nikaia_std's own code (the kept table and its statx, the vehicle
//! choice, validators, the residency probe), not a copy of it.

use super::out::{Flushed, Out};
use super::send::FileSend;
use super::shared::{Serving, Shared};
use super::transport::Socket;
use crate::fs::Root;
use crate::http::file::{self, Plan, Step};
use crate::http::h1::parse::parse_head;
use crate::http::router::Router;
use crate::http::{File, Request, Response};
use crate::rt::Runtime;
use bytes::Bytes;
use std::io::{self, Write};
use std::net::TcpStream;

/// Sends files' bodies the way a nikaia_std server would.
#[doc(hidden)]
pub struct AutoSender {
    shared: std::sync::Arc<Shared>,
}

/// A prepared GET for one name (built once, reused per send).
#[doc(hidden)]
pub struct BenchRequest {
    req: Request,
    file: File,
}

impl AutoSender {
    /// A sender with the runtime's `send-file`, `static-cache` and
    /// `static-cache-bytes`.
    pub fn new(rt: Runtime) -> io::Result<AutoSender> {
        Ok(AutoSender {
            shared: std::sync::Arc::new(Shared::new(Router::default(), rt, Vec::new())?),
        })
    }

    /// The kept table's hits and misses so far, so a bench can say which
    /// path its sends took.
    pub fn kept_counts(&self) -> (u64, u64) {
        let c = &self.shared.cache.counters;
        (
            c.hits.load(std::sync::atomic::Ordering::Relaxed),
            c.misses.load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// A GET of `name` under `root`.
    pub fn request(&self, root: &Root, name: &str) -> BenchRequest {
        let head = format!("GET /{name} HTTP/1.1\r\nHost: bench\r\n\r\n");
        let h = parse_head(
            head.as_bytes(),
            1 << 16,
            &mut crate::http::request::Spare::default(),
        )
        .ok()
        .flatten()
        .expect("a well-formed bench request");
        BenchRequest {
            req: h.request(Bytes::from(head), Bytes::new(), crate::http::Peer::Unix),
            file: File::new(name, root),
        }
    }

    /// Resolves the request and writes its body (not its head) to `sock`;
    /// returns the bytes written.
    pub fn send(&self, sock: &TcpStream, r: &BenchRequest) -> io::Result<u64> {
        let user = Response::new(200);
        let rt = self.shared.runtime();
        let window = super::cache::Window::none();
        let files = Serving {
            shared: &self.shared,
            rt: &rt,
            tls: false,
            window: &window,
        };
        let mut step = file::begin(&files, &r.req, &user, &r.file);
        while let Step::Open(name, then) = step {
            let opened = r.file.root.open(&name);
            step = file::opened(&files, &r.req, &user, &r.file, name, then, opened);
        }
        if let Step::List(ask) = step {
            step = Step::Ready(file::listed(ask.run()));
        }
        let Step::Ready(prepared) = step else {
            return Err(io::Error::other("open did not finish"));
        };
        match prepared.plan {
            Plan::None => Ok(0),
            Plan::Kept(bytes) => {
                (&*sock).write_all(&bytes)?;
                Ok(bytes.len() as u64)
            }
            Plan::File {
                file,
                start,
                end,
                vehicle,
            } => {
                let mut out = Out::default();
                out.push_file(FileSend::new(
                    file.clone(),
                    start,
                    end,
                    vehicle,
                    r.req.path(),
                ));
                loop {
                    let mut budget = usize::MAX;
                    let mut progress = false;
                    let forever = std::time::Instant::now() + std::time::Duration::from_secs(3600);
                    let mut wire = Socket(std::os::fd::AsFd::as_fd(sock));
                    let mut make = || crate::http::body::Resume::new(|| {});
                    let flushed = out.flush(
                        &mut wire,
                        &mut budget,
                        forever,
                        &mut progress,
                        |_| {},
                        &mut make,
                    );
                    match flushed {
                        Ok(Flushed::All) => return Ok(end - start),
                        Ok(Flushed::Cold { offset, len }) => {
                            let mut data = vec![0; len];
                            let n = crate::fs::read_full_at(&file, &mut data, offset)?;
                            data.truncate(n);
                            out.fill(Ok(data))
                                .map_err(|e| io::Error::other(format!("{e:?}")))?;
                        }
                        Ok(_) => {}
                        Err(e) => return Err(io::Error::other(format!("{e:?}"))),
                    }
                }
            }
        }
    }
}
