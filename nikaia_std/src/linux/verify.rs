//! Checking HTTP Basic credentials against the users of an htpasswd file:
//! bcrypt, slow on purpose and so never on a worker, and the table of
//! credentials verified a moment ago that spares a logged-in client bcrypt
//! on every request.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use aws_lc_rs::hmac;

use crate::rt::Users;

/// The most password bytes bcrypt reads. A longer password is refused
/// rather than cut: the bytes past it would not count.
const BCRYPT_MAX_PASSWORD: usize = 72;

/// The salt and digest of the stand-in hash an unknown user is checked
/// against (`htpasswd -nbB` output with its prefix and cost cut off). What
/// password it is the hash of does not matter: an unknown user never passes.
const STAND_IN: &str = "PhCdIlvA1wS3MvNwTMeLAeMNraKo8IHK57hQICN6jCvvvDjxljwVq";

/// Checks `password` for `user` against `users`: bcrypt, slow on purpose
/// (each cost step doubles it: about 3 ms at htpasswd's default cost 5 and
/// 0.1 s at cost 10 on a 2020s server core), so never call it on a worker.
///
/// Every call runs bcrypt once: an unknown user is checked against a
/// stand-in hash of the file's highest cost, and a password bcrypt cannot
/// take is checked by its first 72 bytes and then refused. So a wrong user
/// and a wrong password take the same time when the file's entries share
/// one cost.
///
/// bcrypt cannot take a password over 72 bytes (it would read only the
/// first 72) or one holding a NUL: bcrypt repeats the password and a NUL
/// after it to fill its key, so `p\0p` would pass for `p`, and htpasswd,
/// which reads C strings, never wrote a hash of a password with a NUL.
pub(crate) fn verify(users: &Users, user: &str, password: &[u8]) -> bool {
    let (hash, known) = match users.hash(user) {
        Some(hash) => (Cow::Borrowed(hash), true),
        None => (Cow::Owned(stand_in(users.cost())), false),
    };
    let fits = password.len() <= BCRYPT_MAX_PASSWORD && !password.contains(&0);
    let head = &password[..password.len().min(BCRYPT_MAX_PASSWORD)];
    // `Users` holds only hashes bcrypt takes: Err would be a bug, and fails.
    let matches = bcrypt::verify(head, &hash).unwrap_or(false);
    known & fits & matches
}

/// A bcrypt hash of `cost` that no user's password is checked against.
fn stand_in(cost: u32) -> String {
    format!("$2b${cost:02}${STAND_IN}")
}

/// A bounded table of credentials verified a moment ago, so a logged-in
/// client does not pay bcrypt per request.
///
/// Keyed by HMAC-SHA256, under a key drawn when the table is made, over the
/// user, a NUL and the password: the table never holds a password, and its
/// keys tell nothing without the key, which never leaves the process.
/// Entries expire `ttl` after they were verified; when the table is full,
/// the oldest goes.
pub(crate) struct Verified {
    hmac: hmac::Key,
    capacity: usize,
    ttl: Duration,
    /// Each key's entry.
    entries: HashMap<[u8; 32], Entry>,
    /// The keys by insertion, oldest first.
    order: BTreeMap<u64, [u8; 32]>,
    /// The insertion number the next entry gets.
    next: u64,
}

/// A verified key's users-table generation, time and insertion number.
struct Entry {
    generation: u64,
    at: Instant,
    number: u64,
}

impl Verified {
    /// An empty table of at most `capacity` entries (0: it holds none), each
    /// counting for `ttl`. Its HMAC key comes from the kernel's random
    /// generator (`/dev/urandom`); a machine that cannot give one cannot
    /// serve TLS either, so that failure panics.
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Verified {
        // From the kernel's generator: aws-lc's own would first seed itself
        // from CPU jitter, some 0.4 G instructions at every start.
        let mut secret = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut secret))
            .expect("the system's random generator gives an HMAC key");
        let hmac = hmac::Key::new(hmac::HMAC_SHA256, &secret);
        Verified {
            hmac,
            capacity,
            ttl,
            entries: HashMap::new(),
            order: BTreeMap::new(),
            next: 0,
        }
    }

    /// The table's key for `user` and `password` checked against the users
    /// of `generation`: HMAC-SHA256 over the generation, the user, a NUL and
    /// the password. Unambiguous for every user `credentials` gives (none
    /// holds a NUL); two rules with different files keep their entries
    /// apart.
    pub(crate) fn key(&self, generation: u64, user: &str, password: &[u8]) -> [u8; 32] {
        let mut context = hmac::Context::with_key(&self.hmac);
        context.update(&generation.to_le_bytes());
        context.update(user.as_bytes());
        context.update(&[0]);
        context.update(password);
        let mut key = [0; 32];
        key.copy_from_slice(context.sign().as_ref());
        key
    }

    /// Whether `key` was verified for the users table `generation` within
    /// `ttl` of `now`. Another users file (or the same one changed) is
    /// another generation: entries of another do not count, and are dropped
    /// with expired ones.
    pub(crate) fn contains(&mut self, key: &[u8; 32], generation: u64, now: Instant) -> bool {
        let Some(entry) = self.entries.get(key) else {
            return false;
        };
        let fresh = now.saturating_duration_since(entry.at) < self.ttl;
        if fresh && entry.generation == generation {
            return true;
        }
        if !fresh || entry.generation != generation {
            let number = entry.number;
            self.entries.remove(key);
            self.order.remove(&number);
        }
        false
    }

    /// Records `key` as verified for `generation` at `now`. A key already
    /// held starts again as the newest; expired entries go first, then the
    /// oldest while the table is full.
    pub(crate) fn insert(&mut self, key: [u8; 32], generation: u64, now: Instant) {
        if self.capacity == 0 {
            return;
        }
        if let Some(old) = self.entries.remove(&key) {
            self.order.remove(&old.number);
        }
        while let Some((&number, &oldest)) = self.order.first_key_value() {
            let expired = now.saturating_duration_since(self.entries[&oldest].at) >= self.ttl;
            if !expired && self.entries.len() < self.capacity {
                break;
            }
            self.entries.remove(&oldest);
            self.order.remove(&number);
        }
        let number = self.next;
        self.next += 1;
        self.order.insert(number, key);
        self.entries.insert(
            key,
            Entry {
                generation,
                at: now,
                number,
            },
        );
    }

    /// How many entries the table holds (expired ones until a lookup or an
    /// insertion drops them).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `htpasswd -nbB -C 5 alice 'correct horse'`.
    const ALICE: &str = "alice:$2y$05$2oQluJ7R/wJx4mo0.J4rs.sIOcoVKLLLWYdHaspUzdg7Vi2.cKbLy";
    /// `htpasswd -nbB -C 4 gina 'p:w'`.
    const GINA: &str = "gina:$2y$04$xLc5mThb714V4kssFBTYGuFaBe9UdApT92F/RvGAeLxgANLxT5v26";
    /// `htpasswd -nbB -C 4 long` with 80 `a`s, which htpasswd cuts to 72.
    const LONG: &str = "long:$2y$04$S0R/58/uXtsV0c6/deOZaOrrQlaBfT2tZyiBrtJGEHyoIY.vyOlsK";

    fn users(text: &str) -> Users {
        Users::parse(text).unwrap()
    }

    #[test]
    fn an_htpasswd_hash() {
        let users = users(&format!("{ALICE}\n{GINA}\n"));
        assert!(verify(&users, "alice", b"correct horse"));
        assert!(!verify(&users, "alice", b"correct horsE"));
        assert!(!verify(&users, "alice", b"correct horse "));
        assert!(!verify(&users, "alice", b""));
        assert!(!verify(&users, "alice", b"p:w"));
        assert!(!verify(&users, "Alice", b"correct horse"));
        assert!(!verify(&users, "mallory", b"correct horse"));
        assert!(verify(&users, "gina", b"p:w"));
    }

    #[test]
    fn a_hash_the_bcrypt_crate_made() {
        let hash = bcrypt::hash("battery staple", 4).unwrap();
        let users = users(&format!("bob:{hash}\n"));
        assert!(verify(&users, "bob", b"battery staple"));
        assert!(!verify(&users, "bob", b"battery stapl"));
        assert!(!verify(&users, "rob", b"battery staple"));
        let empty = bcrypt::hash("", 4).unwrap();
        let users = self::users(&format!("nobody:{empty}\n"));
        assert!(verify(&users, "nobody", b""));
    }

    #[test]
    fn a_password_holding_a_nul_is_refused() {
        // bcrypt's key is the password and a NUL, repeated: these pass for
        // `p:w` and for the empty password, where bcrypt alone checks them.
        let (_, gina) = GINA.split_once(':').unwrap();
        assert!(matches!(bcrypt::verify(b"p:w\0p:w", gina), Ok(true)));
        let users = users(GINA);
        assert!(!verify(&users, "gina", b"p:w\0p:w"));
        assert!(!verify(&users, "gina", b"p:w\0"));
        let empty = bcrypt::hash("", 4).unwrap();
        assert!(matches!(bcrypt::verify(b"\0", &empty), Ok(true)));
        let users = self::users(&format!("nobody:{empty}\n"));
        assert!(!verify(&users, "nobody", b"\0"));
    }

    #[test]
    fn every_accepted_version_verifies() {
        for prefix in ["$2a$", "$2b$", "$2y$"] {
            let users = users(&GINA.replacen("$2y$", prefix, 1));
            assert!(verify(&users, "gina", b"p:w"), "{prefix}");
            assert!(!verify(&users, "gina", b"p:W"), "{prefix}");
        }
    }

    #[test]
    fn a_password_over_72_bytes_is_refused_not_cut() {
        let users = users(LONG);
        assert!(verify(&users, "long", &[b'a'; 72]));
        assert!(!verify(&users, "long", &[b'a'; 73]));
        assert!(!verify(&users, "long", &[b'a'; 80]));
        assert!(!verify(&users, "nobody", &[b'a'; 80]));
    }

    #[test]
    fn no_users_refuses_everyone() {
        let users = users("");
        assert!(!verify(&users, "alice", b"correct horse"));
        assert!(!verify(&users, "", b""));
    }

    #[test]
    fn the_stand_in_is_a_hash_bcrypt_takes() {
        // Were it refused, an unknown user would be answered at once.
        assert!(matches!(bcrypt::verify(b"x", &stand_in(4)), Ok(false)));
        for cost in 4..=31 {
            let users = users(&format!("x:{}", stand_in(cost)));
            assert_eq!(users.cost(), cost);
        }
    }

    #[test]
    fn keys() {
        let table = Verified::new(4, Duration::from_secs(60));
        let key = table.key(1, "alice", b"correct horse");
        assert_eq!(key, table.key(1, "alice", b"correct horse"));
        assert_ne!(key, table.key(1, "alice", b"correct horsE"));
        assert_ne!(key, table.key(1, "alicE", b"correct horse"));
        assert_ne!(table.key(1, "ab", b"c"), table.key(1, "a", b"bc"));
        assert_ne!(table.key(1, "a", b""), table.key(1, "a", b"\0"));
        // Another users file is another key.
        assert_ne!(key, table.key(2, "alice", b"correct horse"));
        // Another table draws another key.
        let other = Verified::new(4, Duration::from_secs(60));
        assert_ne!(key, other.key(1, "alice", b"correct horse"));
    }

    #[test]
    fn the_table_is_bounded_and_the_oldest_goes() {
        let now = Instant::now();
        let mut table = Verified::new(3, Duration::from_secs(60));
        let [a, b, c, d, e] = [1u8, 2, 3, 4, 5].map(|n| [n; 32]);
        for key in [a, b, c] {
            table.insert(key, 1, now);
        }
        assert_eq!(table.len(), 3);
        table.insert(d, 1, now);
        assert_eq!(table.len(), 3);
        assert!(!table.contains(&a, 1, now));
        assert!(table.contains(&b, 1, now));
        // Verified again, `b` is the newest: `c` goes next.
        table.insert(b, 1, now);
        table.insert(e, 1, now);
        assert_eq!(table.len(), 3);
        assert!(!table.contains(&c, 1, now));
        for key in [b, d, e] {
            assert!(table.contains(&key, 1, now));
        }
        assert_eq!(table.order.len(), table.entries.len());
    }

    #[test]
    fn no_capacity_holds_nothing() {
        let now = Instant::now();
        let mut table = Verified::new(0, Duration::from_secs(60));
        table.insert([1; 32], 1, now);
        assert_eq!(table.len(), 0);
        assert!(!table.contains(&[1; 32], 1, now));
    }

    #[test]
    fn entries_expire() {
        let start = Instant::now();
        let ttl = Duration::from_secs(30);
        let mut table = Verified::new(8, ttl);
        table.insert([1; 32], 1, start);
        table.insert([2; 32], 1, start + Duration::from_secs(10));
        assert!(table.contains(&[1; 32], 1, start + ttl - Duration::from_millis(1)));
        assert!(!table.contains(&[1; 32], 1, start + ttl));
        // Dropped when found expired.
        assert_eq!(table.len(), 1);
        // An insertion drops the expired ones first.
        table.insert([3; 32], 1, start + Duration::from_secs(45));
        assert_eq!(table.len(), 1);
        assert!(table.contains(&[3; 32], 1, start + Duration::from_secs(45)));
        // Being found does not make an entry younger.
        let mut table = Verified::new(8, ttl);
        table.insert([1; 32], 1, start);
        assert!(table.contains(&[1; 32], 1, start + Duration::from_secs(29)));
        assert!(!table.contains(&[1; 32], 1, start + Duration::from_secs(31)));
    }

    #[test]
    fn another_users_file_is_another_generation() {
        let now = Instant::now();
        let mut table = Verified::new(8, Duration::from_secs(60));
        table.insert([1; 32], 1, now);
        table.insert([2; 32], 2, now);
        assert!(table.contains(&[2; 32], 2, now));
        // An entry of another generation does not count, and is dropped.
        assert!(!table.contains(&[1; 32], 2, now));
        assert_eq!(table.len(), 1);
        // Verified again for that generation, it counts for it alone.
        table.insert([1; 32], 2, now);
        assert!(table.contains(&[1; 32], 2, now));
        assert!(!table.contains(&[1; 32], 3, now));
    }
}
