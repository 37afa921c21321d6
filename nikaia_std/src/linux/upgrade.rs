//! SIGUSR2: the program started again from the path it was started from,
//! with every listening socket and the stats socket handed over by the
//! socket-activation protocol; this process drains once the new one says
//! it is ready, and keeps serving if it does not (`spec/listeners.md`,
//! "Upgrade without a refused connection").

use super::activation::{DEFAULT_NAME, FIRST_FD, STATS_NAME, UPGRADE_ENV};
use super::listen::Listener;
use super::unix_path::Claim;
use std::ffi::{CString, OsStr, OsString};
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

/// How long the new process may take to say it is ready.
pub(crate) const READY_WITHIN: Duration = Duration::from_secs(30);

/// The program this process runs, as it was started: the path of its
/// executable when it started (a package upgrade's new file, later), its
/// arguments.
#[derive(Clone, Debug)]
pub(crate) struct Program {
    pub exe: PathBuf,
    pub args: Vec<OsString>,
}

impl Program {
    /// Taken when the server starts, before anything could replace the file.
    pub(crate) fn current() -> io::Result<Program> {
        let exe = std::env::current_exe()?;
        // If the file was already replaced, /proc names the old image so.
        let exe = match exe.to_str().and_then(|s| s.strip_suffix(" (deleted)")) {
            Some(path) => PathBuf::from(path),
            None => exe,
        };
        Ok(Program {
            exe,
            args: std::env::args_os().collect(),
        })
    }
}

/// A new process started with our sockets, not yet ready.
pub(crate) struct Started {
    pub child: Child,
    ready: std::fs::File,
}

/// One socket to hand over: its descriptor, its name, the Unix path it
/// owns.
pub(crate) struct Handed<'a> {
    pub fd: BorrowedFd<'a>,
    pub name: &'a str,
    pub claim: Option<&'a Claim>,
}

impl<'a> Handed<'a> {
    pub(crate) fn listener(l: &'a Listener) -> Handed<'a> {
        Handed {
            fd: l.fd.as_fd(),
            name: if l.name.is_empty() {
                DEFAULT_NAME
            } else {
                &l.name
            },
            claim: l.claim.as_ref(),
        }
    }

    pub(crate) fn stats(fd: BorrowedFd<'a>, claim: &'a Claim) -> Handed<'a> {
        Handed {
            fd,
            name: STATS_NAME,
            claim: Some(claim),
        }
    }
}

/// Starts `program` with `sockets` as descriptors 3…, `LISTEN_FDS`,
/// `LISTEN_FDNAMES`, `LISTEN_PID` (the child's own pid, written between
/// fork and exec) and `NIKAIA_UPGRADE` (the ready pipe, and which Unix
/// paths are ours).
pub(crate) fn spawn(program: &Program, sockets: &[Handed<'_>]) -> io::Result<Started> {
    let n = sockets.len() as RawFd;
    let ready_at = FIRST_FD + n;
    // Every source sits above the numbers the child's descriptors take, so
    // no dup2 in the child overwrites one not yet moved.
    let above = ready_at + 1;
    let (ready_read, ready_write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let mut sources: Vec<OwnedFd> = Vec::with_capacity(sockets.len() + 1);
    for s in sockets {
        sources.push(rustix::io::fcntl_dupfd_cloexec(s.fd, above)?);
    }
    sources.push(rustix::io::fcntl_dupfd_cloexec(&ready_write, above)?);
    drop(ready_write);

    let names: Vec<&str> = sockets.iter().map(|s| s.name).collect();
    let owns: Vec<String> = sockets
        .iter()
        .map(|s| match s.claim {
            Some(c) => format!("{}.{}", c.bound().0, c.bound().1),
            None => "-".to_owned(),
        })
        .collect();
    let mut env: Vec<Vec<u8>> = std::env::vars_os()
        .filter(|(k, _)| {
            !matches!(
                k.to_str(),
                Some("LISTEN_PID" | "LISTEN_FDS" | "LISTEN_FDNAMES" | UPGRADE_ENV)
            )
        })
        .map(|(k, v)| env_entry(&k, &v))
        .collect();
    env.push(format!("LISTEN_FDS={n}").into_bytes());
    env.push(format!("LISTEN_FDNAMES={}", names.join(":")).into_bytes());
    env.push(format!("{UPGRADE_ENV}={ready_at} {}", owns.join(" ")).into_bytes());
    // Room for any pid; the child writes its own digits here.
    const PID: &[u8] = b"LISTEN_PID=";
    let mut pid_entry = PID.to_vec();
    pid_entry.resize(PID.len() + 12, 0);
    let cstrings = |items: Vec<Vec<u8>>| -> io::Result<Vec<CString>> {
        items
            .into_iter()
            .map(|b| CString::new(b).map_err(|_| io::Error::other("a NUL in the environment")))
            .collect()
    };
    let env = cstrings(env)?;
    let exe = CString::new(program.exe.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("a NUL in the program's path"))?;
    let args = cstrings(program.args.iter().map(|a| a.as_bytes().to_vec()).collect())?;

    let mut envp: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
    envp.push(pid_entry.as_ptr().cast());
    envp.push(std::ptr::null());
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let moves: Vec<(RawFd, RawFd)> = sources
        .iter()
        .enumerate()
        .map(|(i, fd)| (fd.as_raw_fd(), FIRST_FD + i as RawFd))
        .collect();
    let exec = Exec {
        exe: exe.as_ptr(),
        argv,
        envp,
    };

    let mut command = Command::new(&program.exe);
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe functions (getpid, dup2, execve) on
    // memory prepared before the fork: it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            let pid = libc::getpid() as u32;
            let digits = &mut pid_entry[PID.len()..];
            let mut len = 0;
            let mut rest = pid;
            loop {
                len += 1;
                rest /= 10;
                if rest == 0 {
                    break;
                }
            }
            let mut rest = pid;
            for i in (0..len).rev() {
                digits[i] = b'0' + (rest % 10) as u8;
                rest /= 10;
            }
            digits[len] = 0;
            for &(from, to) in &moves {
                // dup2 leaves the new descriptor without close-on-exec.
                if libc::dup2(from, to) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            let exec = &exec;
            libc::execve(exec.exe, exec.argv.as_ptr(), exec.envp.as_ptr());
            Err(io::Error::last_os_error())
        });
    }
    let child = command.spawn();
    drop(sources);
    // Kept alive until the spawn is done: the child's exec reads them.
    drop((env, exe, args));
    Ok(Started {
        child: child?,
        ready: std::fs::File::from(ready_read),
    })
}

/// The execve arguments the child uses: pointers into buffers the parent
/// keeps alive until the spawn returns.
struct Exec {
    exe: *const libc::c_char,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the pointers are only read, by the child after the fork, from its
// own copy of the parent's memory; no other thread ever sees them.
unsafe impl Send for Exec {}
// SAFETY: as above; nothing writes through them.
unsafe impl Sync for Exec {}

fn env_entry(k: &OsStr, v: &OsStr) -> Vec<u8> {
    let mut e = k.as_bytes().to_vec();
    e.push(b'=');
    e.extend_from_slice(v.as_bytes());
    e
}

impl Started {
    /// Waits until the new process says ready (`Ok`), or exits, or lets
    /// [`READY_WITHIN`] pass (then it is killed): `Err` says which.
    pub(crate) fn wait_ready(mut self) -> Result<Child, String> {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + READY_WITHIN;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!(
                    "pid {} was not ready within {READY_WITHIN:?} and was killed",
                    self.child.id()
                ));
            }
            let timeout = Timespec::try_from(left).ok();
            let mut fds = [PollFd::new(&self.ready, PollFlags::IN)];
            match poll(&mut fds, timeout.as_ref()) {
                Ok(0) | Err(rustix::io::Errno::INTR) => continue,
                Ok(_) => {}
                Err(e) => return Err(format!("cannot wait for pid {}: {e}", self.child.id())),
            }
            let mut buf = [0u8; 16];
            match self.ready.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => {
                    got.extend_from_slice(&buf[..k]);
                    if got.starts_with(b"READY\n") {
                        return Ok(self.child);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("cannot read pid {}'s answer: {e}", self.child.id())),
            }
        }
        // The pipe closed without a ready: the process ended (or closed
        // it); say how it ended.
        let pid = self.child.id();
        for _ in 0..50 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("pid {pid} exited ({status}) before it was ready"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        Err(format!(
            "pid {pid} closed its ready pipe without saying ready and was killed"
        ))
    }
}

/// What an upgraded process does once it serves: tells the old one.
pub(crate) fn say_ready(ready: OwnedFd) {
    let _ = rustix::io::write(&ready, b"READY\n");
}
