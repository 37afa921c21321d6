//! Which worker, and which process, a datagram belongs to
//! (`spec/http3.md`, "Workers"). Every worker runs its own QUIC endpoint
//! over the shared UDP sockets; the connection IDs a worker issues name
//! it, so whoever reads a datagram can tell who owns its connection.
//!
//! An ID is 8 octets: octet 0 is the process bit (bit 7) and the worker
//! (bits 0–6), octets 1–5 are random, octets 6–7 a public check over
//! octets 0–5 that tells our IDs from the ones a client picks for its
//! first Initial.

use quinn_proto::{ConnectionId, ConnectionIdGenerator, InvalidCid};

/// The length of every connection ID we issue (quinn's default).
pub(crate) const CID_LEN: usize = 8;
/// The most workers QUIC runs on: the worker number has 7 bits.
pub(crate) const MAX_QUIC_WORKERS: usize = 128;

/// Who a datagram's connection belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// Worker `n` of this process (already taken modulo the workers).
    Worker(usize),
    /// The other process of an upgrade (its process bit).
    Other,
}

/// FNV-1a, 32 bits: a fixed function, the same in every build, since an
/// upgrade's two processes may be two builds.
fn fnv(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The check octets 6–7 carry.
fn check(head: &[u8]) -> [u8; 2] {
    let h = fnv(head).to_be_bytes();
    [h[0], h[1]]
}

/// Whether `id` is one we issued (or, one time in 65 536, a client's own
/// that looks like it: it is then routed by its octet 0, which is as good
/// as any other place for it).
fn ours(id: &[u8]) -> bool {
    id.len() == CID_LEN && id[6..8] == check(&id[..6])
}

/// Issues the IDs of one worker of one process.
pub(crate) struct Issuer {
    octet0: u8,
}

impl Issuer {
    pub(crate) fn new(process: bool, worker: usize) -> Issuer {
        debug_assert!(worker < MAX_QUIC_WORKERS);
        Issuer {
            octet0: (u8::from(process) << 7) | (worker as u8 & 0x7f),
        }
    }
}

impl ConnectionIdGenerator for Issuer {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut id = [0u8; CID_LEN];
        id[0] = self.octet0;
        if crate::fs::random(&mut id[1..6]).is_err() {
            // No kernel randomness: the clock keeps IDs apart (they are
            // then guessable, which only their privacy needs).
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            id[1..6].copy_from_slice(&t.to_le_bytes()[..5]);
        }
        let c = check(&id[..6]);
        id[6..8].copy_from_slice(&c);
        ConnectionId::new(&id)
    }

    fn validate(&self, cid: &ConnectionId) -> Result<(), InvalidCid> {
        match ours(cid) {
            true => Ok(()),
            false => Err(InvalidCid),
        }
    }

    fn cid_len(&self) -> usize {
        CID_LEN
    }

    fn cid_lifetime(&self) -> Option<std::time::Duration> {
        None
    }
}

/// This process's place: its process bit and how many workers run QUIC.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place {
    pub process: bool,
    pub workers: usize,
}

impl Place {
    /// Who owns the connection of `datagram` (its first packet decides;
    /// the ones coalesced after it share its destination ID). `None`: not
    /// a packet we can route (too short, an unknown form); the worker that
    /// read it keeps it, and its endpoint answers or drops it.
    pub(crate) fn owner(&self, datagram: &[u8]) -> Option<Owner> {
        let first = *datagram.first()?;
        let by_octet0 = |octet0: u8| match (octet0 >> 7 == 1) == self.process {
            true => Owner::Worker(usize::from(octet0 & 0x7f) % self.workers),
            false => Owner::Other,
        };
        if first & 0x80 == 0 {
            // A short header: our ID follows at once.
            let id = datagram.get(1..1 + CID_LEN)?;
            return Some(by_octet0(id[0]));
        }
        // A long header: version (4), then the ID's length and the ID.
        let version = u32::from_be_bytes(datagram.get(1..5)?.try_into().ok()?);
        let len = usize::from(*datagram.get(5)?);
        let id = datagram.get(6..6 + len)?;
        if version != 1 {
            // Version 2, an unknown one (answered with version
            // negotiation), or negotiation itself: the reader's.
            return None;
        }
        match (first >> 4) & 0x3 {
            // Initial and 0-RTT: the client's own ID at first, ours after
            // our first answer reached it.
            0 | 1 if !ours(id) => Some(Owner::Worker(fnv(id) as usize % self.workers.max(1))),
            // Handshake, and Initial or 0-RTT to one of our IDs.
            0..=2 if !id.is_empty() => Some(by_octet0(id[0])),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(id: &[u8]) -> Vec<u8> {
        let mut d = vec![0x40];
        d.extend_from_slice(id);
        d.extend_from_slice(&[0; 30]);
        d
    }

    fn long(kind: u8, id: &[u8]) -> Vec<u8> {
        let mut d = vec![0xc0 | (kind << 4), 0, 0, 0, 1, id.len() as u8];
        d.extend_from_slice(id);
        d.extend_from_slice(&[0; 40]);
        d
    }

    #[test]
    fn an_issued_id_routes_to_its_worker_in_every_packet_form() {
        let place = Place {
            process: false,
            workers: 4,
        };
        for worker in 0..4 {
            let mut issuer = Issuer::new(false, worker);
            for _ in 0..50 {
                let id = issuer.generate_cid();
                assert!(issuer.validate(&id).is_ok());
                assert_eq!(place.owner(&short(&id)), Some(Owner::Worker(worker)));
                for kind in 0..3 {
                    assert_eq!(
                        place.owner(&long(kind, &id)),
                        Some(Owner::Worker(worker)),
                        "kind {kind}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_other_processes_ids_go_to_it() {
        let place = Place {
            process: true,
            workers: 2,
        };
        let id = Issuer::new(false, 1).generate_cid();
        assert_eq!(place.owner(&short(&id)), Some(Owner::Other));
        assert_eq!(place.owner(&long(2, &id)), Some(Owner::Other));
        let mine = Issuer::new(true, 1).generate_cid();
        assert_eq!(place.owner(&short(&mine)), Some(Owner::Worker(1)));
    }

    #[test]
    fn a_clients_own_initial_id_stays_here_and_always_meets_one_worker() {
        let place = Place {
            process: true,
            workers: 3,
        };
        let mut seen = [0usize; 3];
        for i in 0u32..3000 {
            // A client's random ID, with a process bit of either value.
            let id: Vec<u8> = fnv(&i.to_be_bytes())
                .to_le_bytes()
                .iter()
                .chain(&fnv(&(i ^ 0xffff).to_be_bytes()).to_be_bytes())
                .copied()
                .collect();
            let Some(Owner::Worker(w)) = place.owner(&long(0, &id)) else {
                panic!("an Initial with the client's ID goes to a worker here");
            };
            assert_eq!(place.owner(&long(1, &id)), Some(Owner::Worker(w)));
            seen[w] += 1;
        }
        assert!(seen.iter().all(|&n| n > 500), "{seen:?}");
    }

    #[test]
    fn what_cannot_be_routed_stays_with_the_reader() {
        let place = Place {
            process: false,
            workers: 2,
        };
        assert_eq!(place.owner(&[]), None);
        assert_eq!(place.owner(&[0x40, 1, 2]), None);
        let mut vn = long(0, &[1; 8]);
        vn[1..5].copy_from_slice(&[0, 0, 0, 0]);
        assert_eq!(place.owner(&vn), None);
        let mut unknown = long(0, &[1; 8]);
        unknown[1..5].copy_from_slice(&[0x0a, 0x1a, 0x2a, 0x3a]);
        assert_eq!(place.owner(&unknown), None);
        // A Retry is the server's; a client never sends one.
        assert_eq!(place.owner(&long(3, &[1; 8])), None);
    }
}
