//! Listening sockets a process is given rather than binds: systemd's socket
//! activation (`LISTEN_FDS`, `LISTEN_PID`, `LISTEN_FDNAMES`), which is also
//! how an upgrade hands its sockets to the new process, with
//! `NIKAIA_UPGRADE` saying which Unix paths were the old process's own and
//! where to say ready (`spec/listeners.md`).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// The first descriptor of the protocol.
pub(crate) const FIRST_FD: RawFd = 3;
/// The name the stats socket is handed over under.
pub(crate) const STATS_NAME: &str = "nikaia-stats";
/// The name HTTP/3's UDP sockets are handed over under.
pub(crate) const UDP_NAME: &str = "nikaia-h3";
/// The name a listener without one is handed over under.
pub(crate) const DEFAULT_NAME: &str = "nikaia";
/// The variable an upgrade adds: `READY_FD OWN…`, one `OWN` per passed
/// descriptor, `-` or `DEV.INO` of the Unix path the old process bound.
pub(crate) const UPGRADE_ENV: &str = "NIKAIA_UPGRADE";

/// One passed socket.
pub(crate) struct Passed {
    pub fd: OwnedFd,
    /// Its place among the passed descriptors (0 for descriptor 3): how
    /// an upgraded process tells the old one which it took.
    pub index: usize,
    /// Its `LISTEN_FDNAMES` name (`unknown` when there is none).
    pub name: String,
    /// The (device, inode) of its Unix path when the process that passed
    /// it had bound it (an upgrade); `None` for systemd's sockets and TCP.
    pub own: Option<(u64, u64)>,
    /// A bound UDP socket (HTTP/3's), not a listening stream socket.
    pub datagram: bool,
}

/// What the environment passed.
pub(crate) struct Activation {
    pub sockets: Vec<Passed>,
    /// Where an upgraded process says it is ready; `None` under systemd.
    pub ready: Option<OwnedFd>,
}

impl Activation {
    pub(crate) fn is_upgrade(&self) -> bool {
        self.ready.is_some()
    }

    /// Takes an upgrade's pair out of the passed ones, if it is there, with
    /// the process bit its name gives this process.
    pub(crate) fn take_pair(&mut self) -> Option<(Passed, bool)> {
        let i = (self.sockets.iter())
            .position(|p| self.ready.is_some() && super::quic::common::bit_of(&p.name).is_some())?;
        let p = self.sockets.remove(i);
        let bit = super::quic::common::bit_of(&p.name)?;
        Some((p, bit))
    }

    /// Takes the stats socket out of the passed ones, if it is there.
    pub(crate) fn take_stats(&mut self) -> Option<Passed> {
        let i = self.sockets.iter().position(|p| p.name == STATS_NAME)?;
        Some(self.sockets.remove(i))
    }

    /// The UDP sockets passed (HTTP/3's), out of the listeners' way.
    pub(crate) fn take_datagrams(&mut self) -> Vec<Passed> {
        let (datagrams, streams) = std::mem::take(&mut self.sockets)
            .into_iter()
            .partition(|p| p.datagram);
        self.sockets = streams;
        datagrams
    }
}

/// Taken once per process: the descriptors are owned by whoever takes them.
static TAKEN: AtomicBool = AtomicBool::new(false);

/// The sockets passed to this process, if `LISTEN_PID` is its pid; taken
/// at most once per process (a second server in the same process binds its
/// own). Each must be a listening stream socket.
pub(crate) fn from_env() -> io::Result<Option<Activation>> {
    let var = |name: &str| std::env::var(name).ok();
    let Some(pid) = var("LISTEN_PID") else {
        return Ok(None);
    };
    if pid.trim().parse::<u32>().ok() != Some(std::process::id()) {
        return Ok(None);
    }
    let count: RawFd = match var("LISTEN_FDS").map(|n| n.trim().parse()) {
        Some(Ok(n)) if (1..=1024).contains(&n) => n,
        Some(Ok(0)) | None => return Ok(None),
        Some(_) => {
            return Err(io::Error::other(
                "socket activation: LISTEN_FDS is not a count of descriptors from 1 to 1024",
            ))
        }
    };
    if TAKEN.swap(true, Ordering::SeqCst) {
        return Ok(None);
    }
    let names: Vec<String> = var("LISTEN_FDNAMES")
        .map(|n| n.split(':').map(str::to_owned).collect())
        .unwrap_or_default();
    let upgrade = var(UPGRADE_ENV);
    let mut words = upgrade.as_deref().unwrap_or("").split_whitespace();
    let ready_fd = words.next().and_then(|w| w.parse::<RawFd>().ok());
    let owns: Vec<Option<(u64, u64)>> = words
        .map(|w| {
            let (dev, ino) = w.split_once('.')?;
            Some((dev.parse().ok()?, ino.parse().ok()?))
        })
        .collect();
    let mut sockets = Vec::with_capacity(count as usize);
    for i in 0..count {
        let raw = FIRST_FD + i;
        // SAFETY: the protocol hands descriptors 3..3+LISTEN_FDS to this
        // process, and TAKEN makes this the one place that takes them.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let datagram = is_bound_udp(&fd);
        let name = names.get(i as usize).filter(|n| !n.is_empty());
        // An upgrade's pair to the process it replaces (`spec/http3.md`,
        // "Lifecycle"): a Unix socket pair's end, no listener.
        let pair =
            upgrade.is_some() && name.is_some_and(|n| super::quic::common::bit_of(n).is_some());
        (if datagram {
            Ok(())
        } else if pair {
            (fd.try_clone().and_then(super::quic::pair::Pair::adopt))
                .map(drop)
                .map_err(|e| e.to_string())
        } else {
            check_listening(&fd)
        })
        .and_then(|()| {
            if pair {
                return Ok(());
            }
            super::listen::socket_address(&fd)
                .map(drop)
                .map_err(|e| e.to_string())
        })
        .map_err(|why| {
            io::Error::other(format!(
                "socket activation: descriptor {raw} (of LISTEN_FDS={count}): {why}"
            ))
        })?;
        rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
        let flags = rustix::fs::fcntl_getfl(&fd)?;
        rustix::fs::fcntl_setfl(&fd, flags | rustix::fs::OFlags::NONBLOCK)?;
        sockets.push(Passed {
            fd,
            index: i as usize,
            name: names
                .get(i as usize)
                .filter(|n| !n.is_empty())
                .cloned()
                .unwrap_or_else(|| "unknown".to_owned()),
            own: owns.get(i as usize).copied().flatten(),
            datagram,
        });
    }
    let ready = match ready_fd {
        Some(raw) if raw >= FIRST_FD + count => {
            // SAFETY: an upgrading parent passes its ready pipe at this
            // number, past the listeners, and names it here; it is taken
            // once, like the listeners.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
            Some(fd)
        }
        _ => None,
    };
    Ok(Some(Activation { sockets, ready }))
}

/// Whether `fd` is a UDP socket bound to an IP address and port (one for
/// HTTP/3, `spec/http3.md`, "Sockets").
fn is_bound_udp(fd: &OwnedFd) -> bool {
    use rustix::net::sockopt;
    sockopt::socket_type(fd) == Ok(rustix::net::SocketType::DGRAM)
        && rustix::net::getsockname(fd)
            .ok()
            .and_then(|a| std::net::SocketAddr::try_from(a).ok())
            .is_some_and(|a| a.port() != 0)
}

/// Whether `fd` is a socket that listens for streams.
fn check_listening(fd: &OwnedFd) -> Result<(), String> {
    use rustix::net::sockopt;
    match sockopt::socket_type(fd) {
        Ok(rustix::net::SocketType::STREAM) => {}
        Ok(_) => return Err("not a stream socket".into()),
        Err(e) => return Err(format!("not a socket ({e})")),
    }
    match sockopt::socket_acceptconn(fd) {
        Ok(true) => Ok(()),
        Ok(false) => Err("a socket that does not listen".into()),
        Err(e) => Err(e.to_string()),
    }
}
