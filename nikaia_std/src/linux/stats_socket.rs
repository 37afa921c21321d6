//! The stats socket (`stats-socket`): a Unix socket, mode 0600, on which a
//! running server answers every connection with its [`Report`] as JSON and
//! closes. `nikaia explain` reads it. What may be at its path, and when the
//! path is removed, is `unix_path.rs`'s rule.

use super::unix_path::Claim;
use crate::rt::Report;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

/// How an error about the stats socket at `path` names it.
pub(crate) fn what(path: &Path) -> String {
    format!("stats socket {}", path.display())
}

pub(crate) struct StatsSocket {
    claim: Claim,
    /// The listening socket, kept to wake the accept at shutdown.
    listener: UnixListener,
    /// Written to stop the thread.
    stop: Arc<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl StatsSocket {
    /// Binds `path` (mode 0600 before it listens, so no one else can
    /// connect in between) and answers with `report()` until stopped.
    pub(crate) fn start(
        path: &Path,
        report: impl Fn() -> Report + Send + 'static,
    ) -> io::Result<StatsSocket> {
        let (fd, claim) = Claim::bind(
            path,
            &what(path),
            0o600,
            16,
            rustix::net::SocketFlags::empty(),
        )?;
        StatsSocket::serve(fd, claim, report)
    }

    /// Answers on a socket the process it replaced had bound at `path`.
    pub(crate) fn adopt(
        fd: OwnedFd,
        claim: Claim,
        report: impl Fn() -> Report + Send + 'static,
    ) -> io::Result<StatsSocket> {
        StatsSocket::serve(fd, claim, report)
    }

    /// Answers until stopped. The thread waits in `poll` on the socket and
    /// an eventfd, not in `accept`: the socket may be shared with a
    /// successor (an upgrade), so stopping must not touch it.
    fn serve(
        fd: OwnedFd,
        claim: Claim,
        report: impl Fn() -> Report + Send + 'static,
    ) -> io::Result<StatsSocket> {
        use rustix::event::{eventfd, poll, EventfdFlags, PollFd, PollFlags};
        let flags = rustix::fs::fcntl_getfl(&fd)?;
        rustix::fs::fcntl_setfl(&fd, flags | rustix::fs::OFlags::NONBLOCK)?;
        let listener = UnixListener::from(fd);
        let accepting = listener.try_clone()?;
        let stop = Arc::new(eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?);
        let waker = stop.clone();
        let thread = std::thread::Builder::new()
            .name("nikaia-stats".into())
            .spawn(move || loop {
                let mut fds = [
                    PollFd::new(&accepting, PollFlags::IN),
                    PollFd::new(&*waker, PollFlags::IN),
                ];
                if poll(&mut fds, None).is_err() {
                    continue;
                }
                if !fds[1].revents().is_empty() {
                    break;
                }
                while let Ok((conn, _)) = accepting.accept() {
                    // The answer is written blocking, whole.
                    let _ = conn.set_nonblocking(false);
                    let mut conn = conn;
                    let _ = conn.write_all(report().to_json().as_bytes());
                }
            })?;
        Ok(StatsSocket {
            claim,
            listener,
            stop,
            thread: Some(thread),
        })
    }

    pub(crate) fn claim(&self) -> &Claim {
        &self.claim
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.listener.as_fd()
    }
}

impl Drop for StatsSocket {
    fn drop(&mut self) {
        let _ = rustix::io::write(&*self.stop, &1u64.to_ne_bytes());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The claim removes the path if it is still this socket and was
        // not handed on.
    }
}
