//! The hasher of the table's (dev, ino) keys. They are the kernel's
//! numbers for a root and a kept file, not anything a client names, and
//! the table holds at most `static-cache` entries: no key is needed
//! against collisions someone chose, so the keys are folded by a multiply
//! instead of SipHash's rounds (the names, which clients choose, keep
//! SipHash with its per-process key).

use std::hash::{BuildHasher, Hasher};

/// Builds [`IdHasher`]s.
#[derive(Clone, Copy, Default)]
pub(super) struct Ids;

impl BuildHasher for Ids {
    type Hasher = IdHasher;

    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

/// Each number is mixed in by a 64 × 64 → 128-bit multiply whose halves
/// are folded together, so every input bit reaches the low bits (the
/// bucket) and the high ones (the control byte) alike.
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        let product = u128::from(self.0 ^ n) * 0x9e37_79b9_7f4a_7c15;
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Inode numbers handed out in a row, on one device and on a few:
    /// their hashes spread over the buckets of a table of 1024.
    #[test]
    fn consecutive_inodes_spread() {
        let hash = |k: (u64, u64)| Ids.hash_one(k);
        let buckets: HashSet<u64> = (0..1024u64)
            .flat_map(|ino| [(2049, 1000 + ino), (64769, ino << 12)])
            .map(|k| hash(k) & 1023)
            .collect();
        // 2048 keys thrown at random would fill about 885 of the 1024.
        assert!(
            buckets.len() > 800,
            "{} buckets of 1024 hold 2048 keys",
            buckets.len()
        );
        let tags: HashSet<u64> = (0..1024u64).map(|ino| hash((2049, ino)) >> 57).collect();
        assert!(tags.len() > 100, "{} control bytes of 128", tags.len());
    }
}
