//! One connection: its [`Link`] (the transport, the send queue, the
//! deadline — what every protocol shares; `link.rs`: reading through the
//! transport, flushing the queue, work handed off the loop) and its
//! protocol unit, which reads requests off the link and queues their
//! answers (`h1.rs`, `h2.rs`). The worker drives it turn by turn:
//!
//! accept → (TLS handshake) → request → answer → send → keep-alive or close
//! (`spec/http.md`, "A connection's life").

mod access;
mod h1;
mod h2;
pub(crate) mod h3;
mod link;
mod sink;

use super::out::{Flushed, Out, SendError, Sent, COLD_READ};
use super::shared::{Serving, Shared};
use super::tls::Session;
use super::transport::{Input, ProxyRead, Transport};
use crate::fs as nfs;
use crate::http::answer::{self, Answer, Done, Payload};
use crate::http::file::{Fetched, Job};
use crate::http::redirect::ToHttps;
use crate::http::site::{Check, Verdict};
use crate::http::Peer;
use crate::http::{Request, Response};
use crate::linux::send::guarded_copy;
use crate::rt::Runtime;
use h1::H1;
use h2::H2;
use rustix::io::Errno;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a closing connection keeps draining what the client still sends,
/// so its last response is not destroyed by a reset.
const LINGER: Duration = Duration::from_secs(2);
/// Requests one connection may run in one loop turn before others go.
const BATCH_REQUESTS: usize = 32;
/// The longest one connection writes in one loop turn (besides the
/// `send-file-max-chunk` byte bound) before the worker serves the others.
const SLICE: Duration = Duration::from_micros(200);

/// What the worker should do with the connection next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// A syscall said EAGAIN: wait for epoll.
    Wait,
    /// Work remains, but this turn's share is used: run again next turn.
    Yield,
    Close,
}

/// What the io pool sends back to a worker, for one connection.
pub(crate) enum IoDone {
    Opened {
        slot: usize,
        conn: u64,
        /// The HTTP/2 stream waiting for it; 0 on HTTP/1.1.
        stream: u32,
        /// The file opened, or the directory listed.
        fetched: Fetched,
    },
    Read {
        slot: usize,
        conn: u64,
        stream: u32,
        result: Result<Vec<u8>, Errno>,
    },
    /// The verifier threads checked a request's credentials.
    Verified {
        slot: usize,
        conn: u64,
        stream: u32,
        check: Box<Check>,
        verdict: Verdict,
    },
    /// A streamed body's sink resumed the body it paused (`pause`: which
    /// of its pauses).
    Resume {
        slot: usize,
        conn: u64,
        stream: u32,
        pause: u64,
    },
    /// A produced body's producer has more (`stream`: its HTTP/2
    /// stream; 0 on HTTP/1.1).
    Pull { slot: usize, conn: u64, stream: u32 },
    /// A sink that answers later (a body written to a file) answered.
    Answered {
        slot: usize,
        conn: u64,
        stream: u32,
        resp: Box<crate::http::Response>,
    },
}

impl IoDone {
    pub(crate) fn target(&self) -> (usize, u64) {
        match self {
            IoDone::Opened { slot, conn, .. }
            | IoDone::Read { slot, conn, .. }
            | IoDone::Verified { slot, conn, .. }
            | IoDone::Resume { slot, conn, .. }
            | IoDone::Pull { slot, conn, .. }
            | IoDone::Answered { slot, conn, .. } => (*slot, *conn),
        }
    }
}

/// Where the io pool posts a worker's results.
pub(crate) type Mailbox = super::pool::Mailbox<IoDone>;

/// What the worker lends a connection for one turn.
pub(crate) struct Turn<'a> {
    pub shared: &'a Arc<Shared>,
    /// The runtime this worker took at the start of its loop turn.
    pub rt: &'a Runtime,
    pub date: &'a [u8],
    pub access: &'a mut Vec<u8>,
    pub now: Instant,
    /// The worker's window of kept names' checks (`cache::Window`): a read
    /// that brings bytes ends it if a check was made in it.
    pub window: &'a super::cache::Window,
    pub stopping: bool,
    /// Where the io pool posts results for this worker.
    pub mailbox: &'a Arc<Mailbox>,
    /// This connection's slot in the worker.
    pub slot: usize,
}

/// The answer pipeline's ports (`http::port`) for a request of `link`:
/// what its worker shares under the runtime of this turn, through its
/// transport.
pub(super) fn serving<'a>(turn: &Turn<'a>, link: &Link) -> Serving<'a> {
    Serving {
        shared: turn.shared,
        rt: turn.rt,
        tls: link.transport.encrypts(),
        window: turn.window,
    }
}

/// Hands a request of `link` (its body, if any, in it) to the answer
/// pipeline.
pub(super) fn pipeline(
    turn: &Turn<'_>,
    link: &Link,
    req: &mut Request,
    may_keep: bool,
) -> answer::Progress {
    answer::answer(
        &serving(turn, link),
        &turn.shared.router,
        link.redirect.as_ref(),
        req,
        may_keep,
        &mut h1::log_error(turn, link),
    )
}

/// What the head of a request of `link` decides of its body
/// (`answer::before_body`), whatever the protocol.
pub(super) fn before_body(
    turn: &Turn<'_>,
    link: &Link,
    req: &mut Request,
    declared: crate::http::body::Declared,
) -> answer::Before {
    answer::before_body(
        &serving(turn, link),
        &turn.shared.router,
        link.redirect.as_ref(),
        req,
        declared,
    )
}

/// What every protocol unit of a connection shares.
pub(crate) struct Link {
    /// Unique in its worker: io results for a closed connection whose slot
    /// was reused are recognised and dropped.
    id: u64,
    transport: Transport,
    out: Out,
    peer: Peer,
    /// Who the connection is for: the peer, or the address a trusted
    /// proxy's PROXY header gave (`spec/site.md`).
    client: Peer,
    /// The listener it came on answers with a redirect to HTTPS.
    redirect: Option<ToHttps>,
    /// `Alt-Svc`'s value, when HTTP/3 is served on the address it came to.
    alt_svc: Option<bytes::Bytes>,
    deadline: Instant,
    /// When the connection last began to wait for a request (accepted, or
    /// its last response written): the oldest idle one is closed first
    /// when the server is full.
    idle_since: Instant,
    /// A PROXY protocol header must be read before anything else.
    proxy_header: bool,
    /// Close once everything queued is written.
    close_after: bool,
    /// Close at once: a file body failed after its head went out.
    close_now: bool,
    /// The last answer is out and the sending side closed; draining the
    /// client's input until EOF or the deadline.
    lingering: bool,
}

/// What the listener a connection came on decides for it.
pub(crate) struct Via {
    /// Its requests are sent to HTTPS (`spec/listeners.md`).
    pub redirect: Option<ToHttps>,
    /// It begins with a PROXY protocol header (`spec/site.md`).
    pub proxy_header: bool,
    /// `Alt-Svc`'s value, when HTTP/3 is served on its address.
    pub alt_svc: Option<bytes::Bytes>,
}

pub(crate) struct Conn {
    link: Link,
    proto: Proto,
}

/// The protocol a connection speaks: HTTP/1.1 until the client's first
/// bytes are the HTTP/2 preface (h2c) or ALPN chose `h2`.
enum Proto {
    H1(H1),
    H2(Box<H2>),
}

/// What the sweep found at a connection's deadline.
pub(crate) enum Expired {
    /// The connection timed out as a whole; `sending`: an answer was being
    /// written (a send timeout).
    Close { sending: bool },
    /// HTTP/2 streams that made no progress for send-timeout were reset;
    /// the connection goes on (drive it to write the resets).
    Streams(usize),
    /// Request bodies' clocks ran out: their 408s are queued (drive the
    /// connection to write them); how many.
    Bodies(usize),
}

impl Conn {
    pub(crate) fn new(
        id: u64,
        fd: OwnedFd,
        tls: Option<Box<Session>>,
        peer: Peer,
        now: Instant,
        rt: &Runtime,
        via: Via,
    ) -> Conn {
        let Via {
            redirect,
            proxy_header,
            alt_svc,
        } = via;
        Conn {
            link: Link {
                id,
                transport: Transport::new(fd, tls),
                out: Out::default(),
                client: peer.clone(),
                peer,
                redirect,
                alt_svc,
                // The first request's head must arrive within header-timeout.
                deadline: now + rt.header_timeout,
                idle_since: now,
                proxy_header,
                close_after: false,
                close_now: false,
                lingering: false,
            },
            proto: Proto::H1(H1::default()),
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.link.id
    }

    /// The server stops before this connection's request is done: a body
    /// still streaming tells its sink so.
    pub(crate) fn stop(&mut self) {
        match &mut self.proto {
            Proto::H1(h) => h.abort_sink(crate::http::Aborted::Stopping),
            Proto::H2(h) => h.stop_bodies(),
        }
    }

    /// epoll said the socket is readable (or closed): read again. `closed`:
    /// it also said the peer has closed its end.
    pub(crate) fn readable(&mut self, closed: bool) {
        self.link.transport.readable(closed);
    }

    /// Whether the connection speaks HTTP/2.
    pub(crate) fn is_h2(&self) -> bool {
        matches!(self.proto, Proto::H2(_))
    }

    /// Idle: no request in progress and nothing to write.
    pub(crate) fn is_idle(&self) -> bool {
        let proto_idle = match &self.proto {
            Proto::H1(h) => h.is_idle(),
            Proto::H2(h) => h.is_idle(),
        };
        !self.link.lingering
            && proto_idle
            && self.link.out.is_empty()
            && !self.link.transport.pending()
    }

    /// Since when it has been idle (waiting for a request, nothing of it
    /// arrived, nothing to write), if it is.
    /// A graceful stop: an HTTP/1.1 connection kept alive between answers
    /// is closed at `by` unless its next request comes first (it is then
    /// answered with `Connection: close`): its client may be sending that
    /// request right now, and a close under it is an error the client sees.
    /// A connection whose first request has not come keeps its
    /// header-timeout, for the same reason.
    pub(crate) fn drain_by(&mut self, by: Instant) {
        let kept = match &self.proto {
            Proto::H1(h) => !h.is_fresh(),
            Proto::H2(_) => false,
        };
        if kept && self.is_idle() {
            self.link.deadline = self.link.deadline.min(by);
        }
    }

    /// The server stops: produced bodies end where their protocol can end
    /// them (`spec/http.md`, "Produced bodies"), their producers told so,
    /// and an HTTP/1.1 connection closes after the last chunk. Whether
    /// there was one.
    pub(crate) fn stop_producing(&mut self) -> bool {
        match &mut self.proto {
            Proto::H1(_) => {
                let ended = self.link.out.end_produced();
                self.link.close_after |= ended;
                ended
            }
            Proto::H2(h) => h.stop_producing(),
        }
    }

    pub(crate) fn idle_since(&self) -> Option<Instant> {
        self.is_idle().then_some(self.link.idle_since)
    }

    /// Called when the deadline passed: a slow head, an idle keep-alive, a
    /// reader that stopped reading, or a linger that ran out.
    pub(crate) fn expired(&self, now: Instant) -> bool {
        now >= self.link.deadline
    }

    /// An answer is partly out and the client has not taken the rest: past
    /// the deadline, this is a send timeout (the client stopped reading, or
    /// reads slower than the socket drains), not an idle or slow client.
    pub(crate) fn is_sending(&self) -> bool {
        !self.link.lingering && (!self.link.out.is_empty() || self.link.transport.pending())
    }

    pub(crate) fn peer(&self) -> &Peer {
        &self.link.peer
    }

    /// The deadline passed: what it means for this connection.
    pub(crate) fn expire(&mut self, turn: &mut Turn<'_>) -> Expired {
        if self.link.lingering {
            return Expired::Close { sending: false };
        }
        match &mut self.proto {
            Proto::H2(h) => {
                let late = h.bodies_expired(&mut self.link, turn);
                if late > 0 {
                    return Expired::Bodies(late);
                }
                let reset = h.expire(&mut self.link, turn);
                if reset > 0 {
                    return Expired::Streams(reset);
                }
            }
            Proto::H1(h) => {
                if h.body_expired(&mut self.link, turn) {
                    return Expired::Bodies(1);
                }
            }
        }
        let sending = self.is_sending();
        if sending {
            self.link
                .out
                .cancel_produced(crate::http::Cancelled::TimedOut);
        }
        Expired::Close { sending }
    }

    /// Reads what arrived, without answering it yet, where the protocol
    /// would read next anyway (HTTP/1.1 between requests or inside a head,
    /// HTTP/2 below its output mark). The worker reads every connection a
    /// wait reported before it drives any, so the requests of one wait are
    /// all read before the first kept name's check and share it
    /// (`cache::Window`). What the read ends in (EOF, an error) is left for
    /// [`Conn::drive`].
    pub(crate) fn prefetch(&mut self, turn: &mut Turn<'_>) {
        let link = &mut self.link;
        if link.lingering || link.close_now || link.close_after {
            return;
        }
        let read = match &mut self.proto {
            Proto::H1(h) => h.prefetch(link, turn),
            Proto::H2(h) => h.prefetch(link, turn),
        };
        if read == Err(Next::Close) {
            link.close_now = true;
        }
    }

    /// Runs the connection as far as it can go without waiting.
    pub(crate) fn drive(&mut self, turn: &mut Turn<'_>) -> Next {
        let h1 = match &mut self.proto {
            Proto::H2(h) => return h.drive(&mut self.link, turn),
            Proto::H1(h) => h,
        };
        let next = h1::drive(h1, &mut self.link, turn);
        match &mut self.proto {
            Proto::H1(h) if h.switch_to_h2 => {
                let rbuf = std::mem::take(&mut h.rbuf);
                self.proto = Proto::H2(Box::new(H2::new(turn, rbuf)));
                self.drive(turn)
            }
            _ => next,
        }
    }

    /// A result from the io pool (or the verifier threads) for this
    /// connection.
    pub(crate) fn io_done(&mut self, turn: &mut Turn<'_>, done: IoDone) {
        let (stream, resumed) = match done {
            IoDone::Opened {
                stream, fetched, ..
            } => (stream, Done::Opened(fetched)),
            IoDone::Verified {
                stream,
                check,
                verdict,
                ..
            } => (stream, Done::Verified(check, verdict)),
            IoDone::Resume { stream, pause, .. } => {
                match &mut self.proto {
                    Proto::H2(h) => h.resume_body(&mut self.link, turn, stream, pause),
                    Proto::H1(h) => h.resume_body(&mut self.link, turn, pause),
                }
                return;
            }
            IoDone::Pull { stream, .. } => {
                // HTTP/1.1: the queue's flush pulls again (the drive after
                // this); HTTP/2: the stream's.
                if let Proto::H2(h) = &mut self.proto {
                    h.pull_again(&mut self.link, turn, stream);
                }
                return;
            }
            IoDone::Answered { stream, resp, .. } => {
                match &mut self.proto {
                    Proto::H2(h) => h.answered(&mut self.link, turn, stream, *resp),
                    Proto::H1(h) => h.answered(&mut self.link, turn, *resp),
                }
                return;
            }
            IoDone::Read { stream, result, .. } => {
                match &mut self.proto {
                    Proto::H2(h) => h.read_done(&mut self.link, turn, stream, result),
                    Proto::H1(_) => {
                        if let Err(e) = self.link.out.fill(result) {
                            self.link.log_send_error(turn, e);
                            self.link.close_now = true;
                        }
                    }
                }
                return;
            }
        };
        match &mut self.proto {
            Proto::H2(h) => h.resumed(&mut self.link, turn, stream, resumed),
            Proto::H1(h) => h.resumed(&mut self.link, turn, resumed),
        }
    }
}

/// An answer as this link sends it: with `Alt-Svc` where HTTP/3 is
/// served on its address, its body one it can send as it is (see
/// [`user_mode`]).
fn readable(link: &Link, turn: &Turn<'_>, req: &Request, mut decided: Answer) -> Answer {
    link.advertise(&mut decided.resp);
    user_mode(turn, &link.peer, link.transport.encrypts(), req, decided)
}

impl Link {
    /// `Alt-Svc` on an answer of this link, where HTTP/3 is served on the
    /// address it came to: every answer says so, refusals too.
    fn advertise(&self, resp: &mut Response) {
        if let Some(alt) = &self.alt_svc {
            resp.push_header("Alt-Svc", alt.clone());
        }
    }
}

/// An answer whose body can be read in user mode when `copied` (through
/// TLS, rustls reads it; over QUIC, quinn does until it is acknowledged):
/// a program's mapping is copied by the kernel first, where a file cut
/// short is an error and not SIGBUS (then the answer is a logged 500).
fn user_mode(turn: &Turn<'_>, peer: &Peer, copied: bool, req: &Request, decided: Answer) -> Answer {
    let (Payload::Mapped(b), true) = (&decided.payload, copied) else {
        return decided;
    };
    match guarded_copy(b) {
        Ok(copy) => Answer {
            payload: Payload::Memory(bytes::Bytes::from(copy)),
            ..decided
        },
        Err(e) => {
            let why = format!(
                "the mapped body could not be read ({}); did its file shrink?",
                std::io::Error::from(e)
            );
            h1::log_error_by(turn, peer)(req, &why);
            answer::page(req, Response::status_page(500), decided.close)
        }
    }
}
