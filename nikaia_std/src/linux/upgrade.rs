//! SIGUSR2: the program started again from the path it was started from,
//! with every listening socket and the stats socket handed over by the
//! socket-activation protocol; this process drains once the new one says
//! it is ready, and keeps serving if it does not (`spec/listeners.md`,
//! "Upgrade without a refused connection").

use super::activation::{DEFAULT_NAME, FIRST_FD, STATS_NAME, UDP_NAME, UPGRADE_ENV};
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
    /// Taken when the server starts, before anything could replace the
    /// file: the path the program was started by (its `argv[0]` made
    /// absolute, or found on `PATH`), with no symbolic link resolved, so
    /// an upgrade that repoints `/usr/bin/nikaia` runs the new target;
    /// else the executable the kernel names.
    pub(crate) fn current() -> io::Result<Program> {
        let args: Vec<OsString> = std::env::args_os().collect();
        let exe = match args.first().and_then(|a| started_as(a)) {
            Some(exe) => exe,
            None => {
                let exe = std::env::current_exe()?;
                // If the file was already replaced, /proc says so.
                match exe.to_str().and_then(|s| s.strip_suffix(" (deleted)")) {
                    Some(path) => PathBuf::from(path),
                    None => exe,
                }
            }
        };
        Ok(Program { exe, args })
    }
}

/// The file `argv0` names as a shell would find it: a path with a `/`
/// against the working directory, a bare name on `PATH`.
fn started_as(argv0: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let name = std::path::Path::new(argv0);
    if argv0.as_bytes().contains(&b'/') {
        let path = std::path::absolute(name).ok()?;
        return runnable(&path).then_some(path);
    }
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs)
        .map(|d| d.join(name))
        .find(|p| runnable(p))
        .and_then(|p| std::path::absolute(p).ok())
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

    /// An HTTP/3 UDP socket: the new process finds it by its address.
    pub(crate) fn udp(fd: BorrowedFd<'a>) -> Handed<'a> {
        Handed {
            fd,
            name: UDP_NAME,
            claim: None,
        }
    }

    /// A descriptor handed under `name` (HTTP/3's pair).
    pub(crate) fn named(fd: BorrowedFd<'a>, name: &'a str) -> Handed<'a> {
        Handed {
            fd,
            name,
            claim: None,
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
    // Every free number up to `ready_at` is taken for the spawn, so that
    // std's own pipe (which reports a failed exec) is not among the
    // numbers the child's dup2 writes over.
    let mut placeholders = Vec::new();
    loop {
        let fd = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        if fd.as_raw_fd() > ready_at {
            break;
        }
        placeholders.push(fd);
    }
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

    // One pointer for both: the environment reads it, the child writes it.
    let pid_ptr: *mut u8 = pid_entry.as_mut_ptr();
    let mut envp: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
    envp.push(pid_ptr.cast_const().cast());
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
        pid: pid_ptr.wrapping_add(PID.len()),
    };

    let mut command = Command::new(&program.exe);
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe functions (getpid, dup2, execve) on
    // memory prepared before the fork: it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            let exec = &exec;
            let pid = libc::getpid() as u32;
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
                // (writes within the 12 bytes reserved after `LISTEN_PID=`)
                *exec.pid.add(i) = b'0' + (rest % 10) as u8;
                rest /= 10;
            }
            *exec.pid.add(len) = 0;
            for &(from, to) in &moves {
                // dup2 leaves the new descriptor without close-on-exec.
                if libc::dup2(from, to) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            libc::execve(exec.exe, exec.argv.as_ptr(), exec.envp.as_ptr());
            Err(io::Error::last_os_error())
        });
    }
    let child = command.spawn();
    drop((sources, placeholders));
    // Kept alive until the spawn is done: the child's exec reads them.
    drop((env, exe, args, pid_entry));
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
    /// Where the child writes its pid's digits: the bytes after
    /// `LISTEN_PID=` in the last entry of `envp`.
    pid: *mut u8,
}

// SAFETY: the pointers are only used by the child after the fork, in its
// own copy of the parent's memory; no other thread ever sees them.
unsafe impl Send for Exec {}
// SAFETY: as above; only the child writes, through `pid`, in its copy.
unsafe impl Sync for Exec {}

fn env_entry(k: &OsStr, v: &OsStr) -> Vec<u8> {
    let mut e = k.as_bytes().to_vec();
    e.push(b'=');
    e.extend_from_slice(v.as_bytes());
    e
}

impl Started {
    /// Waits until the new process says ready (`Ok`, with the indexes of
    /// the sockets it took), or exits, or lets [`READY_WITHIN`] pass (then
    /// it is killed): `Err` says which.
    pub(crate) fn wait_ready(mut self) -> Result<(Child, Vec<usize>), String> {
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
            let mut buf = [0u8; 256];
            match self.ready.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => {
                    got.extend_from_slice(&buf[..k]);
                    if let Some(end) = got.iter().position(|&b| b == b'\n') {
                        let line = String::from_utf8_lossy(&got[..end]).into_owned();
                        let mut words = line.split(' ');
                        if words.next() == Some("READY") {
                            let adopted = words.filter_map(|w| w.parse().ok()).collect();
                            return Ok((self.child, adopted));
                        }
                        let _ = self.child.kill();
                        let _ = self.child.wait();
                        return Err(format!(
                            "pid {} said {line:?}, not ready; killed",
                            self.child.id()
                        ));
                    }
                    if got.len() > 4096 {
                        let _ = self.child.kill();
                        let _ = self.child.wait();
                        return Err(format!(
                            "pid {} said too much on its ready pipe; killed",
                            self.child.id()
                        ));
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

/// What an upgraded process does once it serves: tells the old one, with
/// the `LISTEN_FDS` indexes of the sockets it took (`READY 0 1 2`).
pub(crate) fn say_ready(ready: OwnedFd, adopted: &[usize]) {
    let mut line = String::from("READY");
    for i in adopted {
        line.push_str(&format!(" {i}"));
    }
    line.push('\n');
    let _ = rustix::io::write(&ready, line.as_bytes());
}
