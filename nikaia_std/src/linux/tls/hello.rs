//! A TLS connection's first step: the ClientHello read whole, before any
//! configuration is chosen, then the pair that serves it chosen from
//! memory ([`Certs::choose`]) or the handshake refused with
//! `unrecognized_name`. A hello offering only `acme-tls/1` is a CA's
//! TLS-ALPN-01 validation: it gets the challenge's certificate, or
//! nothing, and is never a failure.

use super::choose::{Certs, Served};
use super::session::FdRead;
use super::ACME_TLS_ALPN;
use crate::linux::challenges::Challenges;
use rustls::server::{AcceptedAlert, Acceptor};
use rustls::ServerConnection;
use std::io;
use std::net::IpAddr;
use std::os::fd::BorrowedFd;
use std::sync::Arc;

/// A connection waiting for its ClientHello.
pub(super) struct Hello {
    acceptor: Acceptor,
    /// The set the connection was accepted with.
    certs: Arc<Certs>,
    challenges: Arc<Challenges>,
}

/// What one [`Hello::read`] came to.
pub(super) enum Step {
    /// The hello is not whole yet and the socket is empty.
    Blocked,
    /// The peer closed, or the socket failed.
    Closed,
    /// The pair is chosen and the session made; its reply is queued.
    Chosen(Box<ServerConnection>, Arc<Served>),
    /// A TLS-ALPN-01 validation, answered with the challenge's
    /// certificate; the connection closes once the handshake is done.
    Challenge(Box<ServerConnection>),
    /// A TLS-ALPN-01 validation of a name with none in flight: refused
    /// with `unrecognized_name` (or the alert rustls chose, for a hello
    /// the validation's configuration cannot take), neither logged nor
    /// counted.
    NoChallenge { alert: Vec<u8> },
    /// No pair covers the name: `name` is what the client asked for (or
    /// the address it reached, without a name).
    Unrecognized { name: String },
    /// The hello was malformed; `alert` is what to send.
    Failed {
        error: rustls::Error,
        alert: Vec<u8>,
    },
}

/// A fatal `unrecognized_name` (112) alert, in a plaintext record as it is
/// sent before a handshake has keys.
pub(super) const UNRECOGNIZED_NAME: [u8; 7] = fatal_alert(112);

impl Hello {
    pub(super) fn new(certs: Arc<Certs>, challenges: Arc<Challenges>) -> Hello {
        Hello {
            acceptor: Acceptor::default(),
            certs,
            challenges,
        }
    }

    /// Reads what the socket has into the acceptor until the hello is
    /// whole or the socket is empty (`drained`, as the session keeps it).
    pub(super) fn read(
        &mut self,
        fd: BorrowedFd<'_>,
        drained: &mut bool,
        peer_closed: bool,
    ) -> Step {
        loop {
            match self.acceptor.accept() {
                Ok(None) => {}
                Ok(Some(accepted)) => return self.choose(fd, accepted),
                Err((error, alert)) => {
                    let alert = alert_for(&error, alert);
                    return Step::Failed { error, alert };
                }
            }
            if *drained {
                return Step::Blocked;
            }
            let mut src = FdRead { fd, short: false };
            match self.acceptor.read_tls(&mut src) {
                Ok(0) => return Step::Closed,
                Ok(_) => *drained = src.short && !peer_closed,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    *drained = true;
                    return Step::Blocked;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Step::Closed,
            }
        }
    }

    fn choose(&self, fd: BorrowedFd<'_>, accepted: rustls::server::Accepted) -> Step {
        let hello = accepted.client_hello();
        let sni = hello.server_name();
        let validation = hello.alpn().is_some_and(|mut offered| {
            offered.next() == Some(ACME_TLS_ALPN) && offered.next().is_none()
        });
        if validation {
            let config = sni.and_then(|name| self.challenges.alpn(name));
            return match config.map(|config| accepted.into_connection(config)) {
                Some(Ok(conn)) => Step::Challenge(Box::new(conn)),
                Some(Err((error, alert))) => Step::NoChallenge {
                    alert: alert_for(&error, alert),
                },
                None => Step::NoChallenge {
                    alert: UNRECOGNIZED_NAME.to_vec(),
                },
            };
        }
        let Some(served) = self.certs.choose(sni, || local_ip(fd)) else {
            let name = match sni {
                Some(name) => name.to_owned(),
                None => local_ip(fd).map_or_else(|| "no name".to_owned(), |ip| ip.to_string()),
            };
            return Step::Unrecognized { name };
        };
        let served = served.clone();
        match accepted.into_connection(served.config.clone()) {
            Ok(conn) => Step::Chosen(Box::new(conn), served),
            Err((error, alert)) => {
                let alert = alert_for(&error, alert);
                Step::Failed { error, alert }
            }
        }
    }
}

/// The records of the alert rustls chose for a hello it refused; where it
/// chose none (a handshake message past its size bound, records it will
/// not join), a fatal alert made here: `decode_error` for a message that
/// does not parse, else `handshake_failure`. A hello refused always reads
/// an alert.
fn alert_for(error: &rustls::Error, mut alert: AcceptedAlert) -> Vec<u8> {
    let mut bytes = Vec::new();
    let _ = alert.write_all(&mut bytes);
    if bytes.is_empty() {
        let description = match error {
            rustls::Error::InvalidMessage(_) => DECODE_ERROR,
            _ => HANDSHAKE_FAILURE,
        };
        bytes = fatal_alert(description).to_vec();
    }
    bytes
}

/// A fatal alert in a plaintext record, as it is sent before a handshake
/// has keys.
const fn fatal_alert(description: u8) -> [u8; 7] {
    [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, description]
}

const HANDSHAKE_FAILURE: u8 = 40;
const DECODE_ERROR: u8 = 50;

/// The address the connection reached (what a client without SNI asked
/// for), when it is an IP socket.
fn local_ip(fd: BorrowedFd<'_>) -> Option<IpAddr> {
    let addr = rustix::net::getsockname(fd).ok()?;
    std::net::SocketAddr::try_from(addr).ok().map(|a| a.ip())
}
