//! The vehicles: each a way of putting the same file's bytes on the socket,
//! with what it may do once done in `build` and what it pays per request in
//! `send`.

use crate::uring::Splice;
use memmap2::Mmap;
use nikaia_std::bench::{AutoSender, BenchRequest};
use nikaia_std::fs::{Identity, Root};
use nikaia_std::rt::Runtime;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

/// The files one size is served from: one startup-named file and `NAMED`
/// request-named ones, all of `size` bytes, in `dir`.
pub struct Files {
    pub dir: PathBuf,
    pub size: usize,
    /// The startup family's one file.
    pub one: PathBuf,
    /// The request-named family's files, by name under `dir`.
    pub names: Vec<String>,
}

/// How many files the request-named family cycles over.
pub const NAMED: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// The path is a constant: what may be done once is done once.
    Startup,
    /// The request names the file, one of `NAMED`.
    Named,
    /// nikaia_std's own path, request-named.
    Ours,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Startup => "startup",
            Family::Named => "named",
            Family::Ours => "ours",
        }
    }
}

/// Every vehicle, in the order the tables list them.
pub const VEHICLES: [(&str, Family); 11] = [
    ("read_each", Family::Startup),
    ("cached", Family::Startup),
    ("mapped", Family::Startup),
    ("sendfile", Family::Startup),
    ("splice", Family::Startup),
    ("read_named", Family::Named),
    ("mapped_named", Family::Named),
    ("sendfile_named", Family::Named),
    ("mapped_kept", Family::Named),
    ("mapped_kept_validated", Family::Ours),
    ("auto", Family::Ours),
];

/// Sends request `i`'s bytes on `sock`; returns how many it sent.
pub trait Vehicle {
    fn send(&mut self, sock: &TcpStream, i: usize) -> io::Result<u64>;

    /// Which path the sends took, where the vehicle can tell (printed
    /// under the table).
    fn path_note(&self) -> Option<String> {
        None
    }
}

/// A vehicle ready to send, or why this machine cannot run it.
pub enum Built {
    Ready(Box<dyn Vehicle>),
    Unavailable(String),
}

/// Does what `name` may do once (outside the measured block).
pub fn build(name: &str, files: &Files) -> io::Result<Built> {
    let paths: Vec<PathBuf> = files.names.iter().map(|n| files.dir.join(n)).collect();
    let v: Box<dyn Vehicle> = match name {
        "read_each" => Box::new(ReadEach(files.one.clone())),
        "cached" => Box::new(Cached(std::fs::read(&files.one)?)),
        "mapped" => Box::new(Mapped(map(&files.one)?)),
        "sendfile" => Box::new(Sendfile {
            file: File::open(&files.one)?,
            len: files.size as u64,
        }),
        "splice" => match Splice::new(&files.one, files.size) {
            Ok(s) => Box::new(s),
            Err(e) => return Ok(Built::Unavailable(e.to_string())),
        },
        "read_named" => Box::new(ReadNamed(paths)),
        "mapped_named" => Box::new(MappedNamed(paths)),
        "sendfile_named" => Box::new(SendfileNamed(paths)),
        "mapped_kept" => {
            let mut table = HashMap::new();
            for (n, p) in files.names.iter().zip(&paths) {
                table.insert(n.clone(), map(p)?);
            }
            Box::new(MappedKept {
                names: files.names.clone(),
                table,
            })
        }
        "mapped_kept_validated" => {
            let root = Root::dir(&files.dir)?;
            let mut table = HashMap::new();
            for (n, p) in files.names.iter().zip(&paths) {
                let id = root.stat(n).map_err(io::Error::other)?;
                table.insert(n.clone(), (map(p)?, id));
            }
            Box::new(MappedKeptValidated {
                names: files.names.clone(),
                root,
                table,
            })
        }
        "auto" => {
            let root = Root::dir(&files.dir)?;
            let sender = AutoSender::new(Runtime::default())?;
            let requests = files
                .names
                .iter()
                .map(|n| sender.request(&root, n))
                .collect();
            Box::new(Auto { sender, requests })
        }
        other => return Err(io::Error::other(format!("no vehicle named {other}"))),
    };
    Ok(Built::Ready(v))
}

/// Maps a whole file read-only.
fn map(path: &Path) -> io::Result<Mmap> {
    let file = File::open(path)?;
    // SAFETY: the bench wrote these files and nothing writes or truncates
    // them while they are mapped.
    unsafe { Mmap::map(&file) }
}

/// `sendfile` from offset 0 until `len` bytes went out.
pub fn sendfile_all(sock: &TcpStream, file: &File, len: u64) -> io::Result<u64> {
    let mut offset = 0u64;
    while offset < len {
        let want = (len - offset) as usize;
        let n = rustix::fs::sendfile(sock, file, Some(&mut offset), want)?;
        if n == 0 {
            return Err(io::Error::other(
                "sendfile: the file is shorter than it was",
            ));
        }
    }
    Ok(len)
}

fn write(sock: &TcpStream, bytes: &[u8]) -> io::Result<u64> {
    (&*sock).write_all(bytes)?;
    Ok(bytes.len() as u64)
}

/// open, read, UTF-8 validate, write, close — per request.
struct ReadEach(PathBuf);
impl Vehicle for ReadEach {
    fn send(&mut self, sock: &TcpStream, _: usize) -> io::Result<u64> {
        let text = std::fs::read_to_string(&self.0)?;
        write(sock, text.as_bytes())
    }
}

/// Read once at startup; the heap buffer written per request.
struct Cached(Vec<u8>);
impl Vehicle for Cached {
    fn send(&mut self, sock: &TcpStream, _: usize) -> io::Result<u64> {
        write(sock, &self.0)
    }
}

/// Mapped once at startup; the mapping written per request.
struct Mapped(Mmap);
impl Vehicle for Mapped {
    fn send(&mut self, sock: &TcpStream, _: usize) -> io::Result<u64> {
        write(sock, &self.0)
    }
}

/// The descriptor opened once; `sendfile` per request.
struct Sendfile {
    file: File,
    len: u64,
}
impl Vehicle for Sendfile {
    fn send(&mut self, sock: &TcpStream, _: usize) -> io::Result<u64> {
        sendfile_all(sock, &self.file, self.len)
    }
}

/// open, read, write, close.
struct ReadNamed(Vec<PathBuf>);
impl Vehicle for ReadNamed {
    fn send(&mut self, sock: &TcpStream, i: usize) -> io::Result<u64> {
        let bytes = std::fs::read(&self.0[i % self.0.len()])?;
        write(sock, &bytes)
    }
}

/// open, mmap, write, munmap, close.
struct MappedNamed(Vec<PathBuf>);
impl Vehicle for MappedNamed {
    fn send(&mut self, sock: &TcpStream, i: usize) -> io::Result<u64> {
        let m = map(&self.0[i % self.0.len()])?;
        write(sock, &m)
    }
}

/// open, fstat (the length is needed before a status line), sendfile, close.
struct SendfileNamed(Vec<PathBuf>);
impl Vehicle for SendfileNamed {
    fn send(&mut self, sock: &TcpStream, i: usize) -> io::Result<u64> {
        let file = File::open(&self.0[i % self.0.len()])?;
        let st = rustix::fs::fstat(&file)?;
        sendfile_all(sock, &file, st.st_size as u64)
    }
}

/// All files mapped up front; a lookup per request, no validation.
struct MappedKept {
    names: Vec<String>,
    table: HashMap<String, Mmap>,
}
impl Vehicle for MappedKept {
    fn send(&mut self, sock: &TcpStream, i: usize) -> io::Result<u64> {
        let name = &self.names[i % self.names.len()];
        let m = self
            .table
            .get(name)
            .ok_or_else(|| io::Error::other("miss"))?;
        write(sock, m)
    }
}

/// `MappedKept` plus the per-hit `Root::stat` nikaia_std's kept table pays.
struct MappedKeptValidated {
    names: Vec<String>,
    root: Root,
    table: HashMap<String, (Mmap, Identity)>,
}
impl Vehicle for MappedKeptValidated {
    fn send(&mut self, sock: &TcpStream, i: usize) -> io::Result<u64> {
        let name = &self.names[i % self.names.len()];
        let (m, id) = self
            .table
            .get(name)
            .ok_or_else(|| io::Error::other("miss"))?;
        let now = self.root.stat(name).map_err(io::Error::other)?;
        if now != *id {
            return Err(io::Error::other(format!("{name} changed under the bench")));
        }
        write(sock, m)
    }
}

/// nikaia_std's own send path, default runtime.
struct Auto {
    sender: AutoSender,
    requests: Vec<BenchRequest>,
}
impl Vehicle for Auto {
    fn send(&mut self, sock: &TcpStream, i: usize) -> io::Result<u64> {
        let r = &self.requests[i % self.requests.len()];
        self.sender.send(sock, r)
    }

    fn path_note(&self) -> Option<String> {
        let (hits, misses) = self.sender.kept_counts();
        Some(format!(
            "kept-table hits {hits}, misses {misses} (warm-up included)"
        ))
    }
}
