//! What every worker's QUIC endpoint shares (`spec/http3.md`, "Workers"):
//! the UDP sockets, each worker's inbox of datagrams handed to it, this
//! process's place (its process bit, how many workers run QUIC), one
//! reset key and one token key, the server configuration of the current
//! runtime, and — during an upgrade — the pair to the other process.

use super::pair::Pair;
use super::route::{Issuer, Place, MAX_QUIC_WORKERS};
use super::socket::Udp;
use crate::linux::pool::Mailbox;
use crate::linux::tls::Tls;
use crate::rt::Runtime;
use bytes::BytesMut;
use quinn_proto::{EndpointConfig, ServerConfig};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};

/// A datagram one worker read for another's connection.
pub(crate) struct Handed {
    pub socket: usize,
    pub data: BytesMut,
    pub from: SocketAddr,
    pub to: Option<IpAddr>,
    pub ecn: Option<quinn_proto::EcnCodepoint>,
}

/// Where a worker finds the datagrams handed to it.
pub(crate) type Inbox = Mailbox<Handed>;

pub(crate) struct Common {
    pub sockets: Vec<Arc<Udp>>,
    /// One per worker that runs QUIC, by worker number.
    pub inboxes: Vec<Arc<Inbox>>,
    pub place: Place,
    /// The reset key (one per process) and the IDs' issuer come from here.
    endpoint: EndpointConfig,
    /// The first configuration (its token key is the process's), and the
    /// one of the current runtime with its generation.
    first: ServerConfig,
    current: Mutex<(u64, Arc<ServerConfig>)>,
    /// Handshakes in progress in every worker (`http3-retry = "auto"`).
    pub handshaking: AtomicUsize,
    /// Connections not yet closed by us, in every worker.
    pub live: AtomicUsize,
    /// The other process of an upgrade, while there is one.
    pub pair: Mutex<Option<Arc<Pair>>>,
    /// An upgrade's new process is ready: this one stops reading the UDP
    /// sockets, and keeps its connections.
    pub handed: AtomicBool,
}

impl Common {
    /// What the workers share over `sockets`; `None` without sockets.
    pub(crate) fn new(
        sockets: Vec<Udp>,
        tls: Arc<Tls>,
        rt: &Runtime,
        workers: usize,
        process: bool,
        pair: Option<Pair>,
        generation: u64,
    ) -> io::Result<Option<Common>> {
        if sockets.is_empty() {
            return Ok(None);
        }
        let first = super::config::server(tls, rt).map_err(io::Error::other)?;
        let workers = workers.clamp(1, MAX_QUIC_WORKERS);
        let inboxes = (0..workers)
            .map(|_| {
                let waker = rustix::event::eventfd(
                    0,
                    rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
                )?;
                Ok(Arc::new(Mailbox::new(waker)))
            })
            .collect::<io::Result<_>>()?;
        Ok(Some(Common {
            sockets: sockets.into_iter().map(Arc::new).collect(),
            inboxes,
            place: Place { process, workers },
            endpoint: EndpointConfig::default(),
            current: Mutex::new((generation, Arc::new(first.clone()))),
            first,
            handshaking: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
            pair: Mutex::new(pair.map(Arc::new)),
            handed: AtomicBool::new(false),
        }))
    }

    /// Worker `worker`'s endpoint configuration: the shared reset key, its
    /// own issuer of IDs.
    pub(crate) fn endpoint(&self, worker: usize) -> EndpointConfig {
        let mut config = self.endpoint.clone();
        let process = self.place.process;
        config.cid_generator(move || Box::new(Issuer::new(process, worker)));
        config
    }

    /// The server configuration of runtime `generation`: the first one's
    /// TLS and token key, the runtime's transport.
    pub(crate) fn server(&self, rt: &Runtime, generation: u64) -> Arc<ServerConfig> {
        let mut current = crate::sync::lock(&self.current);
        if current.0 != generation {
            let mut config = self.first.clone();
            config.transport_config(Arc::new(super::config::transport(rt)));
            *current = (generation, Arc::new(config));
        }
        current.1.clone()
    }

    /// The pair, if the other process is there.
    pub(crate) fn pair(&self) -> Option<Arc<Pair>> {
        crate::sync::lock(&self.pair).clone()
    }

    /// A new pair for an upgrade: ours kept, the new process's end
    /// returned with the name it is handed under.
    pub(crate) fn open_pair(&self) -> io::Result<(OwnedFd, String)> {
        let (ours, theirs) = Pair::new()?;
        *crate::sync::lock(&self.pair) = Some(Arc::new(ours));
        let bit = u8::from(!self.place.process);
        Ok((theirs, format!("{PAIR_NAME}-{bit}")))
    }

    /// The socket bound to `address`.
    pub(crate) fn socket_at(&self, address: SocketAddr) -> Option<usize> {
        self.sockets.iter().position(|s| s.address == address)
    }
}

/// The name the pair's end is handed over under, and the new process's
/// bit after a dash.
pub(crate) const PAIR_NAME: &str = "nikaia-h3-peer";

/// The process bit a handed pair's name gives (`nikaia-h3-peer-1`).
pub(crate) fn bit_of(name: &str) -> Option<bool> {
    match name.strip_prefix(PAIR_NAME)? {
        "-0" => Some(false),
        "-1" => Some(true),
        _ => None,
    }
}
