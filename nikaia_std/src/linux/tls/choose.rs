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
use std::time::SystemTime;

/// Where a pair comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Files the runtime file names.
    File(CertFiles),
    /// Obtained by ACME for this name.
    Acme(String),
}

/// One pair as the server serves it.
pub(crate) struct Served {
    pub(crate) pair: Arc<Pair>,
    pub(crate) source: Source,
    /// The configuration of the handshakes it answers: the server's
    /// (ALPN, resumption) with this pair's certificate.
    pub(crate) config: Arc<ServerConfig>,
    /// Handshakes completed with it; carried over a reload that keeps the
    /// pair's source.
    pub(crate) handshakes: Arc<AtomicU64>,
}

impl Served {
    /// Whether it is marked `default` in the runtime file.
    fn marked_default(&self) -> bool {
        matches!(&self.source, Source::File(f) if f.default)
    }

    /// How it ranks against another pair covering the same name, at `now`:
    /// a pair still valid beats an expired one; then a file pair beats an
    /// ACME one (the operator's choice); then the one that ends later.
    fn rank(&self, now: SystemTime) -> (bool, bool, Option<SystemTime>) {
        let valid = self.pair.not_after.is_none_or(|end| end > now);
        (
            valid,
            matches!(self.source, Source::File(_)),
            self.pair.not_after,
        )
    }
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
    /// Indexes `served`, in the runtime file's order (the ACME pairs
    /// after). Where two pairs cover one name, [`Served::rank`] at `now`
    /// decides (the first, when they rank alike): so the later of two
    /// certificates serves, and a file pair beats an ACME one until it has
    /// expired.
    pub(crate) fn new(served: Vec<Served>, now: SystemTime) -> Certs {
        let served: Vec<Arc<Served>> = served.into_iter().map(Arc::new).collect();
        let mut certs = Certs {
            exact: HashMap::new(),
            wildcard: HashMap::new(),
            ips: HashMap::new(),
            default: served.iter().position(|s| s.marked_default()),
            served: Vec::new(),
        };
        if served.len() == 1 {
            certs.default = Some(0);
        }
        for (i, s) in served.iter().enumerate() {
            let later = |slot: &mut usize| {
                if s.rank(now) > served[*slot].rank(now) {
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

    /// The handshake counter a pair from this source had in this set, to
    /// carry over a rebuild.
    pub(crate) fn handshakes_of(&self, source: &Source) -> Option<Arc<AtomicU64>> {
        self.served
            .iter()
            .find(|s| same(&s.source, source))
            .map(|s| s.handshakes.clone())
    }

    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    /// The earliest end of a pair in the set, after `now`: when the choice
    /// may change without a new pair (an expired one stops winning).
    pub(crate) fn next_expiry(&self, now: SystemTime) -> Option<SystemTime> {
        (self.served.iter())
            .filter_map(|s| s.pair.not_after)
            .filter(|end| *end > now)
            .min()
    }
}

/// Whether two sources are the same pair's: the same files (whether or not
/// marked default), or the same ACME name.
fn same(a: &Source, b: &Source) -> bool {
    match (a, b) {
        (Source::File(a), Source::File(b)) => a.cert == b.cert && a.key == b.key,
        (Source::Acme(a), Source::Acme(b)) => a == b,
        _ => false,
    }
}
