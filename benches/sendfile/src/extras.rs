//! Two small experiments beside the vehicles: (a) what the residency probe
//! nikaia_std runs before a send costs per call, and (b) two ways of
//! coalescing a response head with a small file's `sendfile`.

use crate::link::Link;
use crate::meter::{Reading, Spent};
use crate::vehicles::sendfile_all;
use crate::Opts;
use nikaia_std::fs::Root;
use rustix::io::ReadWriteFlags;
use std::fs::File;
use std::io::{self, IoSliceMut};
use std::net::TcpStream;

/// The rows, as `--only` names them.
pub const NAMES: [&str; 6] = [
    "probe_nowait",
    "pread_1",
    "root_stat",
    "head_plain",
    "head_msg_more",
    "head_cork",
];

/// Which experiment a row belongs to.
pub const PROBE: &str = "probe";
pub const COALESCE: &str = "coalesce";

pub struct ExtraSample {
    pub experiment: &'static str,
    pub row: &'static str,
    pub repeat: usize,
    pub calls: u64,
    pub spent: Spent,
}

const PROBE_CALLS: u64 = 200_000;
const COALESCE_SENDS: u64 = 20_000;
const FILE_LEN: usize = 4 << 10;
const HEAD_LEN: usize = 200;

fn wanted(o: &Opts, row: &str) -> bool {
    o.only
        .as_ref()
        .is_none_or(|only| only.iter().any(|n| n == row))
}

pub fn run(o: &Opts) -> io::Result<Vec<ExtraSample>> {
    let dir = o.dir.join("extras");
    std::fs::create_dir_all(&dir)?;
    let body: Vec<u8> = (0..FILE_LEN).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(dir.join("small.txt"), &body)?;
    let file = File::open(dir.join("small.txt"))?;
    let root = Root::dir(&dir)?;
    let calls = ((PROBE_CALLS as f64 * o.scale).round() as u64).max(1);
    let sends = ((COALESCE_SENDS as f64 * o.scale).round() as u64).max(1);
    let head = {
        let mut h = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n".to_vec();
        h.extend_from_slice(format!("Content-Length: {FILE_LEN}\r\n").as_bytes());
        while h.len() < HEAD_LEN - 4 {
            h.push(b'x');
        }
        h.extend_from_slice(b"\r\n\r\n");
        h.truncate(HEAD_LEN);
        h
    };

    let mut out = Vec::new();
    for rep in 0..o.repeats {
        let mut probe_rows: Vec<&'static str> = NAMES[..3].to_vec();
        probe_rows.rotate_left(rep % 3);
        for row in probe_rows {
            if !wanted(o, row) {
                continue;
            }
            let spent = match row {
                "probe_nowait" => probe(&file, calls, true)?,
                "pread_1" => probe(&file, calls, false)?,
                _ => stat(&root, calls)?,
            };
            eprintln!(
                "repeat {}/{} {row:<22} thread {:.3} µs/call",
                rep + 1,
                o.repeats,
                spent.thread_us
            );
            out.push(ExtraSample {
                experiment: PROBE,
                row,
                repeat: rep,
                calls,
                spent,
            });
        }
        let mut head_rows: Vec<&'static str> = NAMES[3..].to_vec();
        head_rows.rotate_left(rep % 3);
        for row in head_rows {
            if !wanted(o, row) {
                continue;
            }
            let spent = coalesce(row, &file, &head, sends)?;
            eprintln!(
                "repeat {}/{} {row:<22} machine {:.2} µs/req",
                rep + 1,
                o.repeats,
                spent.machine_us
            );
            out.push(ExtraSample {
                experiment: COALESCE,
                row,
                repeat: rep,
                calls: sends,
                spent,
            });
        }
    }
    Ok(out)
}

/// One byte at offset 0, `calls` times: `preadv2(RWF_NOWAIT)` (the probe) or
/// a plain `pread` for scale.
fn probe(file: &File, calls: u64, nowait: bool) -> io::Result<Spent> {
    let mut byte = [0u8; 1];
    let flags = if nowait {
        ReadWriteFlags::NOWAIT
    } else {
        ReadWriteFlags::empty()
    };
    // Warm the page and the path once.
    rustix::io::pread(file, &mut byte, 0)?;
    let start = Reading::now();
    for _ in 0..calls {
        let mut iov = [IoSliceMut::new(&mut byte)];
        let n = rustix::io::preadv2(file, &mut iov, 0, flags)?;
        if n != 1 {
            return Err(io::Error::other("the probe read nothing"));
        }
    }
    Ok(start.until_now(calls))
}

/// `Root::stat` of one name: the statx the kept table pays per hit.
fn stat(root: &Root, calls: u64) -> io::Result<Spent> {
    let first = root.stat("small.txt").map_err(io::Error::other)?;
    let start = Reading::now();
    for _ in 0..calls {
        let id = root.stat("small.txt").map_err(io::Error::other)?;
        if id != first {
            return Err(io::Error::other("small.txt changed under the bench"));
        }
    }
    Ok(start.until_now(calls))
}

/// A 200-byte head then a 4 KiB `sendfile`, `sends` times, coalesced three
/// ways: not at all, `MSG_MORE` on the head, or `TCP_CORK` around both.
fn coalesce(row: &str, file: &File, head: &[u8], sends: u64) -> io::Result<Spent> {
    let link = Link::open()?;
    let one = |sock: &TcpStream| -> io::Result<u64> {
        match row {
            "head_cork" => {
                rustix::net::sockopt::set_tcp_cork(sock, true)?;
                send_all(sock, head, rustix::net::SendFlags::empty())?;
                sendfile_all(sock, file, FILE_LEN as u64)?;
                rustix::net::sockopt::set_tcp_cork(sock, false)?;
            }
            "head_msg_more" => {
                send_all(sock, head, rustix::net::SendFlags::MORE)?;
                sendfile_all(sock, file, FILE_LEN as u64)?;
            }
            _ => {
                send_all(sock, head, rustix::net::SendFlags::empty())?;
                sendfile_all(sock, file, FILE_LEN as u64)?;
            }
        }
        Ok((head.len() + FILE_LEN) as u64)
    };
    let mut warm = 0;
    for _ in 0..128 {
        warm += one(&link.sock)?;
    }
    link.wait_for(warm)?;
    let start = Reading::now();
    let mut sent = 0;
    for _ in 0..sends {
        sent += one(&link.sock)?;
    }
    let got = link.finish()?;
    let spent = start.until_now(sends);
    let want = sends * (head.len() + FILE_LEN) as u64;
    if sent != want || got != warm + want {
        return Err(io::Error::other(format!(
            "{row}: the far end counted {} of {want} bytes",
            got.saturating_sub(warm)
        )));
    }
    Ok(spent)
}

fn send_all(sock: &TcpStream, mut bytes: &[u8], flags: rustix::net::SendFlags) -> io::Result<()> {
    while !bytes.is_empty() {
        let n = rustix::net::send(sock, bytes, flags)?;
        bytes = &bytes[n..];
    }
    Ok(())
}
