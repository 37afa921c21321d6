//! The locks held, as one process last read them, and the decisions made
//! from them: which locks a write meets and whether the request submitted
//! their tokens as their owner, whether a new lock conflicts with one
//! held. Names are the bytes of a name under the served directory, without
//! a leading or trailing `/` (the served directory itself is empty).

use std::collections::BTreeMap;

/// One write lock (RFC 4918 §6, §7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Lock {
    /// `urn:uuid:…`: 122 random bits from the kernel.
    pub token: String,
    /// The lock's root.
    pub root: Vec<u8>,
    /// The root is a collection (its href ends in `/`).
    pub collection: bool,
    /// Depth infinity: every member of the collection, now and later.
    pub infinity: bool,
    pub shared: bool,
    /// The user who took it (`None`: taken under an `anyone` rule).
    pub user: Option<String>,
    /// The `DAV:owner` the client gave, as XML to write back.
    pub owner: Option<String>,
    /// When it expires, in milliseconds since the epoch.
    pub expires: u64,
    /// The seconds it was granted for.
    pub timeout: u64,
}

impl Lock {
    /// Whether the lock's scope holds `name`.
    pub(crate) fn covers(&self, name: &[u8]) -> bool {
        name == self.root.as_slice() || (self.infinity && under(name, &self.root))
    }

    /// Whether `by` may use its token: the user who took it.
    pub(crate) fn owned_by(&self, user: Option<&str>) -> bool {
        self.user.as_deref() == user
    }
}

/// Whether `name` is strictly under `root`.
pub(crate) fn under(name: &[u8], root: &[u8]) -> bool {
    if root.is_empty() {
        return !name.is_empty();
    }
    name.len() > root.len() && name.starts_with(root) && name[root.len()] == b'/'
}

/// The collection `name` is in (`None` for the served directory).
pub(crate) fn parent(name: &[u8]) -> Option<&[u8]> {
    if name.is_empty() {
        return None;
    }
    Some(
        name.iter()
            .rposition(|&b| b == b'/')
            .map_or(&[][..], |i| &name[..i]),
    )
}

/// `locks` in groups of one root each.
fn by_root(locks: Vec<&Lock>) -> Vec<Vec<&Lock>> {
    let mut groups: Vec<Vec<&Lock>> = Vec::new();
    for l in locks {
        match groups.iter_mut().find(|g| g[0].root == l.root) {
            Some(g) => g.push(l),
            None => groups.push(vec![l]),
        }
    }
    groups
}

/// How far a write reaches from its name (RFC 4918 §7.4, §7.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Its content or its properties: the locks that cover it.
    Own,
    /// It is made or removed: those, and the locks of the collection it
    /// is a member of (a lock protects a collection's member list).
    Member,
    /// It is removed or replaced with its members: those, and the locks
    /// of every member under it.
    Tree,
}

/// Who writes, and the tokens the request submitted (its `If:`).
pub(crate) struct By<'a> {
    pub user: Option<&'a str>,
    pub tokens: &'a [&'a str],
}

/// What a `LOCK` asks for.
pub(crate) struct Asked {
    pub infinity: bool,
    pub shared: bool,
}

/// The locks held, by root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Table {
    by_root: BTreeMap<Vec<u8>, Vec<Lock>>,
    /// The locks file's lines that did not read, kept to be written back.
    pub unread: Vec<Vec<u8>>,
}

impl Table {
    /// Every lock, expired or not.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Lock> {
        self.by_root.values().flatten()
    }

    pub(crate) fn insert(&mut self, lock: Lock) {
        self.by_root
            .entry(lock.root.clone())
            .or_default()
            .push(lock);
    }

    /// Removes the locks `gone` says of; how many went.
    pub(crate) fn remove_if(&mut self, mut gone: impl FnMut(&Lock) -> bool) -> usize {
        let mut n = 0;
        self.by_root.retain(|_, locks| {
            let before = locks.len();
            locks.retain(|l| !gone(l));
            n += before - locks.len();
            !locks.is_empty()
        });
        n
    }

    /// The lock with `token`, live at `now`.
    pub(crate) fn find(&self, token: &str, now: u64) -> Option<&Lock> {
        self.all().find(|l| l.token == token && l.expires > now)
    }

    pub(crate) fn find_mut(&mut self, token: &str, now: u64) -> Option<&mut Lock> {
        (self.by_root.values_mut().flatten()).find(|l| l.token == token && l.expires > now)
    }

    /// The live locks whose scope holds `name`: its own, and those of
    /// depth infinity on a collection above it.
    pub(crate) fn covering<'t>(&'t self, name: &[u8], now: u64) -> Vec<&'t Lock> {
        let mut found = Vec::new();
        let mut at = Some(name);
        while let Some(prefix) = at {
            if let Some(locks) = self.by_root.get(prefix) {
                found.extend(locks.iter().filter(|l| l.expires > now && l.covers(name)));
            }
            at = parent(prefix);
        }
        found
    }

    /// The live locks rooted strictly under `name`.
    pub(crate) fn below<'t>(&'t self, name: &[u8], now: u64) -> Vec<&'t Lock> {
        let from = match name.is_empty() {
            true => Vec::new(),
            false => [name, b"/"].concat(),
        };
        let range = self.by_root.range(from.clone()..);
        range
            .take_while(|(root, _)| root.starts_with(&from))
            .filter(|(root, _)| under(root, name))
            .flat_map(|(_, locks)| locks.iter().filter(|l| l.expires > now))
            .collect()
    }

    /// The live locks rooted at `name`'s collection (of any depth).
    fn of_parent<'t>(&'t self, name: &[u8], now: u64) -> Vec<&'t Lock> {
        let Some(parent) = parent(name) else {
            return Vec::new();
        };
        let locks = self.by_root.get(parent).map(Vec::as_slice).unwrap_or(&[]);
        locks.iter().filter(|l| l.expires > now).collect()
    }

    /// The locks a write of `name` reaching `reach` meets whose token `by`
    /// did not submit as their owner, one per root that blocks it: for
    /// the locks that cover the name, the user's own token of one of
    /// those (of a root's shared locks, any one will do; a token of a
    /// lock there that does not cover the name will not); for the
    /// collection's member list, the user's token of any lock of the
    /// collection; for what is under the name, of any lock of each root.
    /// Empty: the write may go on.
    pub(crate) fn blocking(&self, name: &[u8], reach: Reach, by: &By<'_>, now: u64) -> Vec<&Lock> {
        let mut asked: Vec<Vec<&Lock>> = by_root(self.covering(name, now));
        if reach != Reach::Own {
            asked.push(self.of_parent(name, now));
        }
        if reach == Reach::Tree {
            asked.extend(by_root(self.below(name, now)));
        }
        let unlocked = |l: &&Lock| by.tokens.contains(&l.token.as_str()) && l.owned_by(by.user);
        let mut blocked: Vec<&Lock> = Vec::new();
        for group in asked.iter().filter(|g| !g.is_empty()) {
            let root = &group[0].root;
            if !group.iter().any(unlocked) && !blocked.iter().any(|b| &b.root == root) {
                blocked.push(group[0]);
            }
        }
        blocked
    }

    /// The locks a new lock of `name` would conflict with (RFC 4918
    /// §6.1, §7.4): any that covers it or, for depth infinity, is under
    /// it, where either is exclusive.
    pub(crate) fn conflicts(&self, name: &[u8], asked: &Asked, now: u64) -> Vec<&Lock> {
        let mut met = self.covering(name, now);
        if asked.infinity {
            met.extend(self.below(name, now));
        }
        met.retain(|l| !(l.shared && asked.shared));
        met
    }

    /// Live locks, all users, and `user`'s.
    pub(crate) fn counts(&self, user: Option<&str>, now: u64) -> (usize, usize) {
        let live = self.all().filter(|l| l.expires > now);
        live.fold((0, 0), |(all, own), l| {
            (all + 1, own + usize::from(l.owned_by(user)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(token: &str, root: &str, infinity: bool, shared: bool, user: &str) -> Lock {
        Lock {
            token: token.into(),
            root: root.as_bytes().to_vec(),
            collection: infinity,
            infinity,
            shared,
            user: Some(user.into()),
            owner: None,
            expires: 100,
            timeout: 100,
        }
    }

    fn table(locks: &[Lock]) -> Table {
        let mut t = Table::default();
        locks.iter().cloned().for_each(|l| t.insert(l));
        t
    }

    fn roots(v: Vec<&Lock>) -> Vec<String> {
        v.iter()
            .map(|l| String::from_utf8_lossy(&l.root).into_owned())
            .collect()
    }

    #[test]
    fn names_under_and_parents() {
        assert!(under(b"a/b", b"a"));
        assert!(!under(b"ab", b"a"));
        assert!(!under(b"a", b"a"));
        assert!(under(b"a", b""));
        assert_eq!(parent(b"a/b/c"), Some(&b"a/b"[..]));
        assert_eq!(parent(b"a"), Some(&b""[..]));
        assert_eq!(parent(b""), None);
    }

    #[test]
    fn a_write_needs_the_owners_token_for_each_root_it_meets() {
        let t = table(&[
            lock("t1", "coll", true, false, "u"),
            lock("t2", "coll/f", false, false, "u"),
            lock("t3", "other", false, false, "u"),
        ]);
        let none = By {
            user: Some("u"),
            tokens: &[],
        };
        assert_eq!(
            roots(t.blocking(b"coll/f", Reach::Own, &none, 0)),
            ["coll/f", "coll"]
        );
        let one = By {
            user: Some("u"),
            tokens: &["t1"],
        };
        assert_eq!(
            roots(t.blocking(b"coll/f", Reach::Own, &one, 0)),
            ["coll/f"]
        );
        let both = By {
            user: Some("u"),
            tokens: &["t1", "t2"],
        };
        assert!(t.blocking(b"coll/f", Reach::Own, &both, 0).is_empty());
        // Another user holding the same tokens is refused.
        let thief = By {
            user: Some("v"),
            tokens: &["t1", "t2"],
        };
        assert_eq!(t.blocking(b"coll/f", Reach::Own, &thief, 0).len(), 2);
        // An expired lock blocks nothing.
        assert!(t.blocking(b"other", Reach::Own, &none, 100).is_empty());
        assert_eq!(
            roots(t.blocking(b"other", Reach::Own, &none, 99)),
            ["other"]
        );
    }

    #[test]
    fn a_collections_lock_guards_its_member_list_and_a_tree_its_members() {
        let t = table(&[
            lock("t1", "dir", false, false, "u"),
            lock("t2", "top/deep/f", false, false, "u"),
        ]);
        let none = By {
            user: Some("u"),
            tokens: &[],
        };
        // Depth 0 on `dir`: replacing a member's bytes is not blocked,
        // making or removing one is.
        assert!(t.blocking(b"dir/new", Reach::Own, &none, 0).is_empty());
        assert_eq!(
            roots(t.blocking(b"dir/new", Reach::Member, &none, 0)),
            ["dir"]
        );
        assert_eq!(
            roots(t.blocking(b"top", Reach::Tree, &none, 0)),
            ["top/deep/f"]
        );
        assert!(t.blocking(b"topper", Reach::Tree, &none, 0).is_empty());
        assert_eq!(roots(t.blocking(b"", Reach::Tree, &none, 0)).len(), 2);
    }

    #[test]
    fn a_token_of_a_lock_that_does_not_cover_the_name_does_not_open_it() {
        // alice's shared depth-0 lock of `s`, bob's shared depth-infinity
        // one: alice's token opens `s`'s member list, not `s/f` itself.
        let t = table(&[
            lock("ta", "s", false, true, "alice"),
            lock("tb", "s", true, true, "bob"),
        ]);
        let alice = By {
            user: Some("alice"),
            tokens: &["ta"],
        };
        assert_eq!(roots(t.blocking(b"s/f", Reach::Member, &alice, 0)), ["s"]);
        assert_eq!(roots(t.blocking(b"s/f", Reach::Own, &alice, 0)), ["s"]);
        let bob = By {
            user: Some("bob"),
            tokens: &["tb"],
        };
        assert!(t.blocking(b"s/f", Reach::Member, &bob, 0).is_empty());
    }

    #[test]
    fn shared_locks_share_and_exclusive_ones_do_not() {
        let t = table(&[
            lock("s1", "f", false, true, "u"),
            lock("s2", "f", false, true, "v"),
        ]);
        let shared = Asked {
            infinity: false,
            shared: true,
        };
        let excl = Asked {
            infinity: false,
            shared: false,
        };
        assert!(t.conflicts(b"f", &shared, 0).is_empty());
        assert_eq!(t.conflicts(b"f", &excl, 0).len(), 2);
        // One of the root's shared tokens, the user's own, is enough.
        let v = By {
            user: Some("v"),
            tokens: &["s2"],
        };
        assert!(t.blocking(b"f", Reach::Own, &v, 0).is_empty());
        let deep = Asked {
            infinity: true,
            shared: false,
        };
        assert_eq!(t.conflicts(b"", &deep, 0).len(), 2);
        assert_eq!(t.counts(Some("u"), 0), (2, 1));
    }
}
