//! A connection's transport: the socket, read and written plainly or
//! through a rustls session, in both directions. The connection above it
//! reads requests into a buffer and writes its send queue through the
//! [`Wire`] this implements; it never asks which transport it has, only
//! what the transport can do (whether `sendfile` reaches the client).
//!
//! Reads follow the edge-triggered rule: after a short read the socket is
//! taken to be empty until epoll reports it again (no `EAGAIN` read is
//! paid), unless the peer's FIN was reported, when reads go on to EOF.

use super::out::Wire;
use super::tls::{Input as TlsInput, Session, TlsWire};
use bytes::BytesMut;
use rustix::io::Errno;
use rustix::net::{SendAncillaryBuffer, SendFlags};
use std::io::IoSlice;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// The room kept free in the read buffer before a plain read.
const READ_CHUNK: usize = 16 << 10;
/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE: u8 = 0x16;

/// What one [`Transport::read`] found.
#[derive(Debug)]
pub(crate) enum Input {
    /// Bytes were appended to the buffer.
    Data,
    /// Nothing more until epoll reports the socket readable.
    Blocked,
    /// The peer closed, or the socket failed: nothing more will come. (Or
    /// a CA's TLS-ALPN-01 probe was refused, its alert sent: nothing to
    /// count or log.)
    Closed,
    /// A TLS client on a plain listener: it would not understand an HTTP
    /// answer, so the connection closes without one.
    TlsOnPlain,
    /// A plain HTTP request on the TLS listener. The transport is plain
    /// from here on, so the refusal can be written.
    PlainOnTls,
    /// The TLS session failed; its alert was sent (if the socket took
    /// it). `handshake`: before the handshake finished.
    Failed {
        error: rustls::Error,
        handshake: bool,
    },
    /// The TLS hello asked for a name no certificate covers;
    /// `unrecognized_name` was sent.
    Unrecognized { name: String },
}

/// What reading a PROXY protocol header found ([`Transport::proxy_header`]).
#[derive(Debug)]
pub(crate) enum ProxyRead {
    /// Not all of it is here yet.
    Need,
    /// The header was taken off the socket: what it says of the source.
    Done(crate::http::proxy::Source),
    /// Not a header, or longer than the bound: the connection closes.
    Bad(&'static str),
    /// The peer closed, or the socket failed.
    Closed,
}

pub(crate) struct Transport {
    fd: OwnedFd,
    /// The session in front of the socket, on a TLS listener.
    tls: Option<Box<Session>>,
    /// No byte has been read yet.
    fresh: bool,
    /// The last read returned less than it was offered: the socket had no
    /// more. Edge-triggered epoll reports the next arrival, so no read is
    /// tried (and no `EAGAIN` paid) until then.
    drained: bool,
    /// epoll reported the peer's FIN (`EPOLLRDHUP`, often in the same edge
    /// as its last bytes): a short read no longer means "wait for the next
    /// edge" (none will come), so reads go on to EOF (nginx's
    /// `pending_eof`).
    peer_closed: bool,
}

impl Transport {
    pub(crate) fn new(fd: OwnedFd, tls: Option<Box<Session>>) -> Transport {
        Transport {
            fd,
            tls,
            fresh: true,
            drained: false,
            peer_closed: false,
        }
    }

    /// epoll said the socket is readable (or closed): read again.
    /// `closed`: it also said the peer has closed its end.
    pub(crate) fn readable(&mut self, closed: bool) {
        self.drained = false;
        self.peer_closed |= closed;
    }

    /// Whether the peer closed its side (or the socket failed), as epoll
    /// last reported it.
    pub(crate) fn peer_closed(&self) -> bool {
        self.peer_closed
    }

    /// Whether bytes written through it are encrypted in user mode (TLS):
    /// then no `sendfile`, and a mapping is copied by the kernel before it
    /// is read (SIGBUS otherwise, if its file shrank).
    pub(crate) fn encrypts(&self) -> bool {
        self.tls.is_some()
    }

    /// Whether the TLS handshake chose HTTP/2 by ALPN.
    pub(crate) fn alpn_h2(&self) -> bool {
        self.tls.as_ref().is_some_and(|s| s.alpn_h2())
    }

    /// Reads what the socket has into `buf`.
    pub(crate) fn read(&mut self, buf: &mut BytesMut) -> Input {
        if let Some(session) = &mut self.tls {
            let input = session.read(self.fd.as_fd(), buf, &mut self.drained, self.peer_closed);
            return match input {
                TlsInput::Data => Input::Data,
                TlsInput::Blocked => Input::Blocked,
                // A refusal's alert went with it (`Session::read`).
                TlsInput::Eof | TlsInput::Broken | TlsInput::Refused => Input::Closed,
                TlsInput::Failed { error, handshake } => Input::Failed { error, handshake },
                TlsInput::Unrecognized { name } => Input::Unrecognized { name },
                TlsInput::PlainHttp => {
                    self.tls = None;
                    Input::PlainOnTls
                }
            };
        }
        if self.drained {
            return Input::Blocked;
        }
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        loop {
            let spare = buf.spare_capacity_mut();
            let offered = spare.len();
            match rustix::io::read(&self.fd, spare) {
                Ok(([], _)) => return Input::Closed,
                Ok((filled, _)) => {
                    let n = filled.len();
                    let first = filled.first().copied();
                    self.drained = n < offered && !self.peer_closed;
                    // SAFETY: the kernel initialised `n` bytes of the spare
                    // capacity that `read` was given.
                    unsafe { buf.set_len(buf.len() + n) };
                    if std::mem::take(&mut self.fresh) && first == Some(TLS_HANDSHAKE) {
                        return Input::TlsOnPlain;
                    }
                    return Input::Data;
                }
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => {
                    self.drained = true;
                    return Input::Blocked;
                }
                Err(_) => return Input::Closed,
            }
        }
    }

    /// Reads the PROXY protocol header a connection on such a listener
    /// begins with, before anything else reads the socket (the TLS
    /// session's first-byte check, the HTTP/2 preface): looks at what has
    /// arrived without taking it, and takes exactly the header's bytes once
    /// all of it is there, leaving what follows to the protocol.
    pub(crate) fn proxy_header(&mut self) -> ProxyRead {
        use crate::http::proxy::{parse, Malformed, Parse, MAX_HEADER};
        if self.drained {
            return ProxyRead::Need;
        }
        let mut buf = [0u8; MAX_HEADER];
        let n = loop {
            match rustix::net::recv(&self.fd, &mut buf, rustix::net::RecvFlags::PEEK) {
                Ok((0, _)) => return ProxyRead::Closed,
                Ok((n, _)) => break n,
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => {
                    self.drained = true;
                    return ProxyRead::Need;
                }
                Err(_) => return ProxyRead::Closed,
            }
        };
        match parse(&buf[..n]) {
            Ok(Parse::Need) if n == MAX_HEADER => {
                ProxyRead::Bad("the header is longer than the bound")
            }
            // A FIN after part of a header: the rest will never come.
            Ok(Parse::Need) if self.peer_closed => ProxyRead::Closed,
            Ok(Parse::Need) => {
                // The bytes stay in the socket: the next arrival is reported.
                self.drained = true;
                ProxyRead::Need
            }
            Ok(Parse::Done { source, len }) => {
                let mut taken = 0;
                while taken < len {
                    match rustix::io::read(&self.fd, &mut buf[taken..len]) {
                        Ok(0) => return ProxyRead::Closed,
                        Ok(got) => taken += got,
                        Err(Errno::INTR) => continue,
                        Err(_) => return ProxyRead::Closed,
                    }
                }
                ProxyRead::Done(source)
            }
            Err(Malformed(why)) => ProxyRead::Bad(why),
        }
    }

    /// The kind of TLS handshake, once, when it has just finished.
    pub(crate) fn established(&mut self) -> Option<rustls::HandshakeKind> {
        self.tls.as_mut()?.established()
    }

    /// Writes what the transport itself still holds (TLS records).
    /// `Ok(true)`: nothing is left; `Ok(false)`: the socket is full.
    pub(crate) fn push(&mut self) -> Result<bool, Errno> {
        match &mut self.tls {
            Some(session) => session.push(self.fd.as_fd()),
            None => Ok(true),
        }
    }

    /// Whether the transport holds bytes not yet written (TLS records).
    pub(crate) fn pending(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.pending())
    }

    /// Ends the sending side: `close_notify` (TLS), then the socket's FIN.
    /// `Ok(false)`: the socket is full; call again when it is writable.
    pub(crate) fn close_write(&mut self) -> Result<bool, Errno> {
        if let Some(session) = &mut self.tls {
            if !session.close_notify(self.fd.as_fd())? {
                return Ok(false);
            }
        }
        let _ = rustix::net::shutdown(&self.fd, rustix::net::Shutdown::Write);
        Ok(true)
    }

    /// Reads and discards what the socket has (a closing connection drains
    /// the client's input, so its last answer is not destroyed by a reset).
    /// `true` at EOF or on an error; `false` when the socket is empty.
    pub(crate) fn discard(&mut self) -> bool {
        let mut sink = [0u8; 4096];
        loop {
            match rustix::io::read(&self.fd, &mut sink) {
                Ok(0) => return true,
                Ok(_) | Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => return false,
                Err(_) => return true,
            }
        }
    }
}

impl Wire for Transport {
    fn send(&mut self, iov: &[IoSlice<'_>], more: bool) -> Result<usize, Errno> {
        match &mut self.tls {
            Some(session) => TlsWire {
                fd: self.fd.as_fd(),
                session,
            }
            .send(iov, more),
            None => Socket(self.fd.as_fd()).send(iov, more),
        }
    }

    fn sendfile(
        &mut self,
        file: &std::fs::File,
        offset: &mut u64,
        count: usize,
    ) -> Result<usize, Errno> {
        match &mut self.tls {
            // The vehicle is never chosen under TLS (`send::choose`).
            Some(_) => Err(Errno::NOTSUP),
            None => Socket(self.fd.as_fd()).sendfile(file, offset, count),
        }
    }
}

/// A socket written directly: one `sendmsg` (with `MSG_MORE` when a file
/// body follows at once), or `sendfile`.
pub(crate) struct Socket<'a>(pub BorrowedFd<'a>);

impl Wire for Socket<'_> {
    fn send(&mut self, iov: &[IoSlice<'_>], more: bool) -> Result<usize, Errno> {
        let flags = if more {
            SendFlags::NOSIGNAL | SendFlags::MORE
        } else {
            SendFlags::NOSIGNAL
        };
        let mut control = SendAncillaryBuffer::default();
        loop {
            match rustix::net::sendmsg(self.0, iov, &mut control, flags) {
                Err(Errno::INTR) => continue,
                other => return other,
            }
        }
    }

    fn sendfile(
        &mut self,
        file: &std::fs::File,
        offset: &mut u64,
        count: usize,
    ) -> Result<usize, Errno> {
        super::send::sendfile(self.0, file, offset, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    fn pair() -> (Transport, UnixStream) {
        let (ours, theirs) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        (Transport::new(OwnedFd::from(ours), None), theirs)
    }

    #[test]
    fn a_short_read_waits_for_the_next_edge_and_a_fin_reads_on_to_eof() {
        let (mut t, mut peer) = pair();
        let mut buf = BytesMut::new();
        peer.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        assert!(matches!(t.read(&mut buf), Input::Data));
        assert_eq!(&buf[..], b"GET / HTTP/1.1\r\n");
        // Drained: more bytes are not read until epoll says so.
        peer.write_all(b"Host: a\r\n\r\n").unwrap();
        assert!(matches!(t.read(&mut buf), Input::Blocked));
        t.readable(false);
        assert!(matches!(t.read(&mut buf), Input::Data));
        assert!(buf.ends_with(b"Host: a\r\n\r\n"));
        // The last bytes and the FIN in one edge: read on to EOF.
        peer.write_all(b"x").unwrap();
        peer.shutdown(std::net::Shutdown::Write).unwrap();
        t.readable(true);
        assert!(matches!(t.read(&mut buf), Input::Data));
        assert!(matches!(t.read(&mut buf), Input::Closed));
    }

    #[test]
    fn a_tls_handshake_on_a_plain_transport_is_told_apart() {
        let (mut t, mut peer) = pair();
        peer.write_all(&[0x16, 3, 1, 0, 5]).unwrap();
        assert!(matches!(t.read(&mut BytesMut::new()), Input::TlsOnPlain));
    }

    #[test]
    fn close_write_sends_the_fin_and_discard_reads_to_eof() {
        let (mut t, mut peer) = pair();
        assert!(!t.encrypts() && !t.pending());
        let iov = [IoSlice::new(b"bye")];
        assert_eq!(t.send(&iov, false), Ok(3));
        assert_eq!(t.close_write(), Ok(true));
        let mut got = Vec::new();
        peer.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"bye");
        peer.write_all(b"late").unwrap();
        assert!(!t.discard(), "the socket is empty, not closed");
        drop(peer);
        assert!(t.discard());
    }
}
