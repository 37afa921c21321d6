//! One TLS connection's session, driven from an edge-triggered loop: read
//! ciphertext until the socket is empty, decrypt, hand the plaintext to the
//! connection's buffer before waiting again; encrypt what the connection
//! writes and push the records out, arming EPOLLOUT (by returning `EAGAIN`)
//! when the socket is full.
//!
//! One answer, one record: plaintext written in one call becomes one record
//! per 16 KiB (rustls fragments a vectored write, not each slice), and a
//! head written with `more` (a file body follows at once: the plaintext
//! twin of `MSG_MORE`) is held back and encrypted with that body's first
//! bytes, so a small answer read from its file leaves as one record in one
//! `sendmsg` too, as a kept one does.

use super::choose::{Certs, Served};
use super::hello::{Hello, Step, UNRECOGNIZED_NAME};
use crate::linux::challenges::Challenges;
use crate::linux::out::Wire;
use bytes::BytesMut;
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendAncillaryBuffer, SendFlags};
use rustls::{HandshakeKind, ServerConnection};
use std::fs::File;
use std::io::{self, BufRead, IoSlice, Write as _};
use std::os::fd::BorrowedFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A connection's TLS state.
pub(crate) struct Session {
    stage: Stage,
    /// An alert to send before closing, when the hello was refused.
    alert: Vec<u8>,
    /// The first byte was looked at (a plain HTTP request is told apart).
    sniffed: bool,
    /// The handshake's end was reported.
    established: bool,
    /// `close_notify` is queued.
    notified: bool,
    /// Plaintext taken but not yet encrypted: a head waiting for the body
    /// that follows it ([`TlsWire`]'s `more`), at most [`HOLD_MAX`] bytes.
    /// Kept (cleared, not freed) for the connection's next head.
    held: Vec<u8>,
}

/// Where the handshake is.
enum Stage {
    /// Waiting for the ClientHello, which chooses the pair.
    Hello(Box<Hello>),
    /// The session with the pair chosen for it (none: a TLS-ALPN-01
    /// validation, closed once its handshake is done).
    Serving {
        conn: Box<ServerConnection>,
        pair: Option<Arc<Served>>,
    },
    /// The hello was refused; the alert goes, then the connection closes.
    Refused,
}

/// The most plaintext held back for the bytes that follow it: one record's
/// worth (a TLS record carries at most 16 KiB).
const HOLD_MAX: usize = 16 << 10;
/// The most slices one write into the session carries (the queue's own
/// bound, and the held head before them).
const MAX_IOV: usize = 64;

/// What one [`Session::read`] found.
#[derive(Debug)]
pub(crate) enum Input {
    /// Plaintext was appended to the buffer.
    Data,
    /// The peer closed (with or without `close_notify`).
    Eof,
    /// Nothing more until epoll reports the socket readable.
    Blocked,
    /// The first bytes are a plain HTTP request, not a TLS handshake.
    PlainHttp,
    /// No certificate covers the name the hello asked for (or, without a
    /// name, the address it reached); `unrecognized_name` was sent.
    Unrecognized { name: String },
    /// A CA's TLS-ALPN-01 hello for a name with no validation in flight:
    /// its alert was sent; neither counted nor logged.
    Refused,
    /// A protocol error; its alert was sent. `handshake`: it happened
    /// before the handshake finished.
    Failed {
        error: rustls::Error,
        handshake: bool,
    },
    /// The socket failed.
    Broken,
}

impl Session {
    /// A session that chooses its pair from `certs` when the hello comes
    /// (or a validation's certificate from `challenges`).
    pub(crate) fn new(certs: Arc<Certs>, challenges: Arc<Challenges>) -> Session {
        Session {
            stage: Stage::Hello(Box::new(Hello::new(certs, challenges))),
            alert: Vec::new(),
            sniffed: false,
            established: false,
            notified: false,
            held: Vec::new(),
        }
    }

    /// Whether ALPN chose HTTP/2.
    pub(crate) fn alpn_h2(&self) -> bool {
        match &self.stage {
            Stage::Serving { conn, .. } => conn.alpn_protocol() == Some(b"h2"),
            _ => false,
        }
    }

    /// The session, once the hello chose its pair.
    fn conn(&mut self) -> Option<&mut ServerConnection> {
        match &mut self.stage {
            Stage::Serving { conn, .. } => Some(conn),
            _ => None,
        }
    }

    /// Reads the hello and chooses the pair (`None`: chosen, go on to the
    /// session), or says why the connection cannot go on.
    fn hello(
        &mut self,
        fd: BorrowedFd<'_>,
        drained: &mut bool,
        peer_closed: bool,
    ) -> Option<Input> {
        let Stage::Hello(hello) = &mut self.stage else {
            return None;
        };
        match hello.read(fd, drained, peer_closed) {
            Step::Blocked => Some(Input::Blocked),
            Step::Closed => Some(Input::Eof),
            Step::Chosen(mut conn, pair) => {
                // Records that came with the hello are taken now: the
                // socket may say nothing more until the reply is read.
                let processed = conn.process_new_packets();
                self.stage = Stage::Serving {
                    conn,
                    pair: Some(pair),
                };
                if let Err(error) = processed {
                    return Some(Input::Failed {
                        error,
                        handshake: true,
                    });
                }
                None
            }
            Step::Challenge(conn) => {
                self.stage = Stage::Serving { conn, pair: None };
                None
            }
            Step::NoChallenge { alert } => {
                self.stage = Stage::Refused;
                self.alert = alert;
                Some(Input::Refused)
            }
            Step::Unrecognized { name } => {
                self.stage = Stage::Refused;
                self.alert = UNRECOGNIZED_NAME.to_vec();
                Some(Input::Unrecognized { name })
            }
            Step::Failed { error, alert } => {
                self.stage = Stage::Refused;
                self.alert = alert;
                Some(Input::Failed {
                    error,
                    handshake: true,
                })
            }
        }
    }

    /// Moves what the socket has through the session into `rbuf`. `drained`
    /// is the connection's "the socket is empty until the next EPOLLIN";
    /// `peer_closed`: the peer's FIN was reported, so reads go on to EOF.
    ///
    /// A refusal or a failure has its alert written before it is returned,
    /// whichever way it came: the connection closes right after.
    pub(crate) fn read(
        &mut self,
        fd: BorrowedFd<'_>,
        rbuf: &mut BytesMut,
        drained: &mut bool,
        peer_closed: bool,
    ) -> Input {
        let input = self.take(fd, rbuf, drained, peer_closed);
        if let Input::Refused | Input::Unrecognized { .. } | Input::Failed { .. } = input {
            // The socket is fresh and the alert a few bytes: it goes now,
            // or (the peer gone) not at all.
            let _ = self.push(fd);
        }
        input
    }

    /// [`Session::read`] but for the alert.
    fn take(
        &mut self,
        fd: BorrowedFd<'_>,
        rbuf: &mut BytesMut,
        drained: &mut bool,
        peer_closed: bool,
    ) -> Input {
        loop {
            if let Stage::Hello(_) = self.stage {
                if !self.sniffed {
                    if *drained {
                        return Input::Blocked;
                    }
                    match sniff(fd) {
                        Sniff::Tls => self.sniffed = true,
                        Sniff::PlainHttp => return Input::PlainHttp,
                        Sniff::Empty => {
                            *drained = true;
                            return Input::Blocked;
                        }
                        Sniff::Eof => return Input::Eof,
                        Sniff::Broken => return Input::Broken,
                    }
                }
                if let Some(input) = self.hello(fd, drained, peer_closed) {
                    return input;
                }
                // The pair is chosen: its reply goes out at once.
                if self.push(fd).is_err() {
                    return Input::Broken;
                }
            }
            // A validation is done once its handshake is: the CA closes.
            if let Stage::Serving { conn, pair: None } = &self.stage {
                if !conn.is_handshaking() {
                    return Input::Eof;
                }
            }
            // Plaintext decrypted earlier goes first.
            match self.drain_plaintext(rbuf) {
                Ok(true) => return Input::Data,
                Ok(false) => {}
                Err(()) => return Input::Eof,
            }
            if *drained {
                return Input::Blocked;
            }
            let Some(conn) = self.conn() else {
                return Input::Eof;
            };
            let mut src = FdRead { fd, short: false };
            match conn.read_tls(&mut src) {
                Ok(_) => *drained = src.short && !peer_closed,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    *drained = true;
                    return Input::Blocked;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Input::Broken,
            }
            if let Err(error) = conn.process_new_packets() {
                return Input::Failed {
                    error,
                    handshake: conn.is_handshaking(),
                };
            }
            // Handshake messages (or a key update's) to send back.
            if self.push(fd).is_err() {
                return Input::Broken;
            }
        }
    }

    /// Appends decrypted plaintext to `rbuf`. `Ok(true)`: some was there.
    /// `Err(())`: the peer closed and nothing is left.
    fn drain_plaintext(&mut self, rbuf: &mut BytesMut) -> Result<bool, ()> {
        let mut got = false;
        let Some(conn) = self.conn() else {
            return Err(());
        };
        let mut reader = conn.reader();
        loop {
            let n = match reader.fill_buf() {
                Ok([]) if got => return Ok(true),
                Ok([]) => return Err(()),
                Ok(chunk) => {
                    rbuf.extend_from_slice(chunk);
                    chunk.len()
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(got),
                Err(_) if got => return Ok(true),
                Err(_) => return Err(()),
            };
            reader.consume(n);
            got = true;
        }
    }

    /// Writes what the session holds to the socket: a held head is
    /// encrypted on its own (the body it waited for did not come in the
    /// same flush), then the queued records go out. `Ok(true)`: nothing
    /// remains; `Ok(false)`: the socket is full.
    pub(crate) fn push(&mut self, fd: BorrowedFd<'_>) -> Result<bool, Errno> {
        loop {
            let before = self.held.len();
            if before > 0 {
                self.write_plaintext(&[]).map_err(|_| Errno::PIPE)?;
            }
            if !self.push_records(fd)? {
                return Ok(false);
            }
            match self.held.len() {
                0 => return Ok(true),
                // rustls takes no more plaintext with its records all out:
                // the session cannot send it (it is closing).
                left if left == before => return Err(Errno::PIPE),
                _ => {}
            }
        }
    }

    /// Hands the held plaintext and then `iov` to rustls in one vectored
    /// write (records of up to 16 KiB across the slices). Returns how much
    /// of `iov` was taken; what rustls took of the held bytes leaves them.
    fn write_plaintext(&mut self, iov: &[IoSlice<'_>]) -> io::Result<usize> {
        let Stage::Serving { conn, .. } = &mut self.stage else {
            return Err(io::ErrorKind::BrokenPipe.into());
        };
        if self.held.is_empty() {
            return conn.writer().write_vectored(iov);
        }
        let mut all = [IoSlice::new(&[]); MAX_IOV + 1];
        all[0] = IoSlice::new(&self.held);
        let n_iov = iov.len().min(MAX_IOV);
        all[1..=n_iov].copy_from_slice(&iov[..n_iov]);
        let took = conn.writer().write_vectored(&all[..=n_iov])?;
        let of_held = took.min(self.held.len());
        self.held.drain(..of_held);
        Ok(took - of_held)
    }

    /// Writes queued records to the socket. `Ok(true)`: none remain;
    /// `Ok(false)`: the socket is full.
    fn push_records(&mut self, fd: BorrowedFd<'_>) -> Result<bool, Errno> {
        if !self.push_alert(fd)? {
            return Ok(false);
        }
        let Some(conn) = self.conn() else {
            return Ok(true);
        };
        while conn.wants_write() {
            match conn.write_tls(&mut FdWrite { fd }) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(e
                        .raw_os_error()
                        .map_or(Errno::PIPE, Errno::from_raw_os_error))
                }
            }
        }
        Ok(true)
    }

    /// Writes the refusal's alert. `Ok(true)`: none is left.
    fn push_alert(&mut self, fd: BorrowedFd<'_>) -> Result<bool, Errno> {
        while !self.alert.is_empty() {
            match rustix::net::send(fd, &self.alert, SendFlags::NOSIGNAL) {
                Ok(n) => drop(self.alert.drain(..n)),
                Err(Errno::AGAIN) => return Ok(false),
                Err(Errno::INTR) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Whether records (or a held head, or an alert) wait to be written.
    pub(crate) fn pending(&self) -> bool {
        let records = match &self.stage {
            Stage::Serving { conn, .. } => conn.wants_write(),
            _ => false,
        };
        records || !self.held.is_empty() || !self.alert.is_empty()
    }

    /// Sends what the session holds, then `close_notify` (once): it is the
    /// last record, after every byte of the answers. `Ok(false)`: the
    /// socket is full; call again when it is writable.
    pub(crate) fn close_notify(&mut self, fd: BorrowedFd<'_>) -> Result<bool, Errno> {
        if !self.push(fd)? {
            return Ok(false);
        }
        if !self.notified {
            self.notified = true;
            // Before a session there is nothing to close.
            if let Some(conn) = self.conn() {
                conn.send_close_notify();
            }
        }
        self.push_records(fd)
    }

    /// The kind of handshake, once, when it has just finished; counted for
    /// the pair that made it.
    pub(crate) fn established(&mut self) -> Option<HandshakeKind> {
        let Stage::Serving { conn, pair } = &self.stage else {
            return None;
        };
        if self.established || conn.is_handshaking() {
            return None;
        }
        self.established = true;
        pair.as_ref()?.handshakes.fetch_add(1, Ordering::Relaxed);
        conn.handshake_kind()
    }
}

enum Sniff {
    Tls,
    PlainHttp,
    Empty,
    Eof,
    Broken,
}

/// Looks at the first byte without taking it: a TLS handshake record starts
/// with 0x16; an HTTP request with a method's capital letter.
fn sniff(fd: BorrowedFd<'_>) -> Sniff {
    let mut byte = [0u8; 1];
    loop {
        return match rustix::net::recv(fd, &mut byte, RecvFlags::PEEK) {
            Ok((_, 0)) => Sniff::Eof,
            Ok(_) if byte[0].is_ascii_uppercase() => Sniff::PlainHttp,
            Ok(_) => Sniff::Tls,
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => Sniff::Empty,
            Err(_) => Sniff::Broken,
        };
    }
}

/// The socket as rustls reads it; notes a short read (the socket is empty).
pub(super) struct FdRead<'a> {
    pub(super) fd: BorrowedFd<'a>,
    pub(super) short: bool,
}

impl io::Read for FdRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = rustix::io::read(self.fd, &mut *buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

/// The socket as rustls writes records to it.
struct FdWrite<'a> {
    fd: BorrowedFd<'a>,
}

impl io::Write for FdWrite<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(rustix::net::send(self.fd, buf, SendFlags::NOSIGNAL)?)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let mut control = SendAncillaryBuffer::default();
        Ok(rustix::net::sendmsg(
            self.fd,
            bufs,
            &mut control,
            SendFlags::NOSIGNAL,
        )?)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The socket under a session, as a connection's queue writes to it:
/// plaintext goes into the session (up to its buffer limit) and the records
/// out to the socket. Never `sendfile` (kTLS is not built: `spec/tls.md`).
pub(crate) struct TlsWire<'a> {
    pub fd: BorrowedFd<'a>,
    pub session: &'a mut Session,
}

impl Wire for TlsWire<'_> {
    /// `more`: a file body follows at once. Then a head that fits a record
    /// is held, not encrypted, and goes out in the body's first record.
    fn send(&mut self, iov: &[IoSlice<'_>], more: bool) -> Result<usize, Errno> {
        let session = &mut *self.session;
        session.push_records(self.fd)?;
        let len: usize = iov.iter().map(|s| s.len()).sum();
        if more && session.held.len() + len <= HOLD_MAX {
            for s in iov {
                session.held.extend_from_slice(s);
            }
            return Ok(len);
        }
        let n = session.write_plaintext(iov).map_err(|_| Errno::PIPE)?;
        session.push_records(self.fd)?;
        if n == 0 {
            Err(Errno::AGAIN)
        } else {
            Ok(n)
        }
    }

    fn sendfile(&mut self, _: &File, _: &mut u64, _: usize) -> Result<usize, Errno> {
        // The vehicle is never chosen under TLS (`send::choose`).
        Err(Errno::NOTSUP)
    }
}
