//! One measured transfer: ready the file and the sender, move the body with
//! one vehicle, and read the meters around it.

use crate::measure::{rusage_cpu, Snapshot};
use crate::vehicles::{
    broken, make_pipe, open_tmpfile, rw_single, rw_split, splice_single, splice_split, Durability,
    Vehicle, RW_BUF,
};
use crate::Config;
use std::io::{self, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// One measured transfer.
pub struct Sample {
    pub round: usize,
    pub slot: usize,
    pub vehicle: Vehicle,
    pub durability: Durability,
    pub wall: f64,
    /// seconds of non-idle CPU on the whole machine.
    pub machine_cpu: f64,
    /// seconds of CPU used by this process (all its threads).
    pub self_cpu: f64,
    /// seconds of CPU used by the sender child.
    pub sender_cpu: f64,
    /// socket-side calls (read or splice socket -> pipe).
    pub calls_in: u64,
    /// file-side calls (write or splice pipe -> file).
    pub calls_out: u64,
}

pub struct Bench {
    pub listener: TcpListener,
    pub port: u16,
    pub exe: PathBuf,
    pub dir: PathBuf,
    pub ticks: f64,
    pub pipe_size: usize,
}

impl Bench {
    pub fn transfer(
        &self,
        cfg: &Config,
        vehicle: Vehicle,
        durability: Durability,
        round: usize,
        slot: usize,
    ) -> io::Result<Sample> {
        if cfg.settle {
            // SAFETY: sync(2) takes no arguments and cannot fail.
            unsafe { libc::sync() };
            std::thread::sleep(Duration::from_millis(100));
        }
        // Everything a server would have ready before the body arrives is
        // made outside the measured window: the file, the pipe, the buffers.
        let file = open_tmpfile(&self.dir)?;
        let mut pipe = None;
        let mut bufs = Vec::new();
        match vehicle {
            Vehicle::Rw1 => bufs.push(vec![1u8; RW_BUF]),
            Vehicle::Rw2 => bufs.extend((0..cfg.pool).map(|_| vec![1u8; RW_BUF])),
            Vehicle::Splice1 | Vehicle::Splice2 => {
                let (r, w, size) = make_pipe(cfg.pipe_want)?;
                if size != self.pipe_size {
                    return Err(broken("pipe size changed between transfers"));
                }
                pipe = Some((r, w));
            }
        }
        let children_before = rusage_cpu(libc::RUSAGE_CHILDREN)?;
        let mut child = Command::new(&self.exe)
            .arg("--sender")
            .arg(self.port.to_string())
            .arg(cfg.bytes.to_string())
            .stdin(Stdio::null())
            .spawn()?;
        let (mut sock, _) = self.listener.accept()?;

        let before = Snapshot::take()?;
        sock.write_all(b"g")?;
        let (inn, out) = match (vehicle, pipe) {
            (Vehicle::Rw1, _) => rw_single(&mut sock, &file, &mut bufs[0], durability)?,
            (Vehicle::Rw2, _) => rw_split(&mut sock, &file, bufs, durability)?,
            (Vehicle::Splice1, Some((r, w))) => {
                splice_single(&sock, &file, &r, &w, self.pipe_size, durability)?
            }
            (Vehicle::Splice2, Some((r, w))) => {
                splice_split(&sock, &file, r, w, self.pipe_size, durability)?
            }
            _ => unreachable!("splice vehicles always get a pipe"),
        };
        let size = file.metadata()?.len();
        drop(file); // close: the O_TMPFILE goes away
        let after = Snapshot::take()?;

        let status = child.wait()?;
        if !status.success() {
            return Err(broken(&format!("sender exited with {status}")));
        }
        let sender = rusage_cpu(libc::RUSAGE_CHILDREN)? - children_before;
        if inn.bytes != cfg.bytes || size != cfg.bytes {
            return Err(broken(&format!(
                "{}: expected {} bytes, received {}, file holds {size}",
                vehicle.name(),
                cfg.bytes,
                inn.bytes
            )));
        }
        Ok(Sample {
            round,
            slot,
            vehicle,
            durability,
            wall: (after.at - before.at).as_secs_f64(),
            machine_cpu: after.machine.saturating_sub(before.machine) as f64 / self.ticks,
            self_cpu: (after.own - before.own).as_secs_f64(),
            sender_cpu: sender.as_secs_f64(),
            calls_in: inn.calls,
            calls_out: out.calls,
        })
    }
}
