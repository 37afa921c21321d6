//! Which certificate a handshake gets (`spec/tls.md`, "Several
//! certificates"): chosen from memory, when the ClientHello has arrived,
//! by the name the client asks for or, without one, by the address it
//! reached. Nothing here reads a file.

use super::pair::{normal, Pair};
use crate::rt::CertFiles;
use rustls::ServerConfig;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// One pair as the server serves it.
pub(crate) struct Served {
    pub(crate) pair: Pair,
    /// Where it was read from, as the runtime file names it.
    pub(crate) files: CertFiles,
    /// The configuration of the handshakes it answers: the server's
    /// (ALPN, resumption) with this pair's certificate.
    pub(crate) config: Arc<ServerConfig>,
    /// Handshakes completed with it; carried over a reload that keeps the
    /// pair's files.
    pub(crate) handshakes: Arc<AtomicU64>,
}

/// The pairs a server holds, indexed by the names they cover; swapped whole
/// by a reload (a connection keeps the set it was accepted with).
pub(crate) struct Certs {
    served: Vec<Arc<Served>>,
    /// An exact DNS name → the pair that covers it.
    exact: HashMap<String, usize>,
    /// `*.example.org` covers one label under `example.org`: keyed by
    /// `example.org`.
    wildcard: HashMap<String, usize>,
    ips: HashMap<IpAddr, usize>,
    /// The pair marked `default`, or the only pair there is.
    default: Option<usize>,
}

impl Certs {
    /// Indexes `served`, in the runtime file's order. Where two pairs cover
    /// one name, the one that expires later serves it (the first, when
    /// they end together).
    pub(crate) fn new(served: Vec<Served>) -> Certs {
        let served: Vec<Arc<Served>> = served.into_iter().map(Arc::new).collect();
        let mut certs = Certs {
            exact: HashMap::new(),
            wildcard: HashMap::new(),
            ips: HashMap::new(),
            default: served.iter().position(|s| s.files.default),
            served: Vec::new(),
        };
        if served.len() == 1 {
            certs.default = Some(0);
        }
        for (i, s) in served.iter().enumerate() {
            let later = |slot: &mut usize| {
                if s.pair.not_after > served[*slot].pair.not_after {
                    *slot = i;
                }
            };
            for name in &s.pair.dns {
                let table = match name.strip_prefix("*.") {
                    Some(parent) => certs.wildcard.entry(parent.to_owned()),
                    None => certs.exact.entry(name.clone()),
                };
                table.and_modify(later).or_insert(i);
            }
            for ip in &s.pair.ips {
                certs
                    .ips
                    .entry(ip.to_canonical())
                    .and_modify(later)
                    .or_insert(i);
            }
        }
        certs.served = served;
        certs
    }

    /// The pair for a ClientHello naming `sni` (or none), on a connection
    /// that reached `local` (asked only without a name): an exact name,
    /// then a wildcard one label up, then the default; without a name, a
    /// pair covering the local address, then the default. `None`: refuse
    /// the handshake (`unrecognized_name`).
    pub(crate) fn choose(
        &self,
        sni: Option<&str>,
        local: impl FnOnce() -> Option<IpAddr>,
    ) -> Option<&Arc<Served>> {
        let found = match sni {
            Some(name) => {
                let lower;
                let name = match name.ends_with('.') || name.bytes().any(|b| b.is_ascii_uppercase())
                {
                    true => {
                        lower = normal(name);
                        lower.as_str()
                    }
                    false => name,
                };
                self.exact.get(name).or_else(|| {
                    let (_, parent) = name.split_once('.')?;
                    self.wildcard.get(parent)
                })
            }
            None => local().and_then(|ip| self.ips.get(&ip.to_canonical())),
        };
        found.copied().or(self.default).map(|i| &self.served[i])
    }

    /// Whether the `i`th pair answers names no pair covers: marked
    /// `default`, or the only pair.
    pub(crate) fn is_default(&self, i: usize) -> bool {
        self.default == Some(i)
    }

    /// Every pair, in the runtime file's order.
    pub(crate) fn served(&self) -> &[Arc<Served>] {
        &self.served
    }

    /// The handshake counter a pair with these files had in this set, to
    /// carry over a reload.
    pub(crate) fn handshakes_of(&self, files: &CertFiles) -> Option<Arc<AtomicU64>> {
        self.served
            .iter()
            .find(|s| s.files.cert == files.cert && s.files.key == files.key)
            .map(|s| s.handshakes.clone())
    }
}
