//! The two tables of RFC 7541 §2.3: the static table (Appendix A) and the
//! dynamic table, which the decoder and the encoder each keep in step with
//! their peer's.

use std::collections::VecDeque;

/// The static table of RFC 7541 Appendix A: entry `i` (from 0) has the
/// wire index `i + 1`.
pub(crate) const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// The number of static entries: dynamic entries start at wire index
/// `STATIC_LEN + 1`.
pub(crate) const STATIC_LEN: usize = STATIC.len();

/// The wire index of the first static entry named `name`, if there is one.
/// Entries of the same name are adjacent in the static table, so the rest
/// follow it.
pub(crate) fn static_name(name: &[u8]) -> Option<usize> {
    let index = match name {
        b":authority" => 1,
        b":method" => 2,
        b":path" => 4,
        b":scheme" => 6,
        b":status" => 8,
        b"accept-charset" => 15,
        b"accept-encoding" => 16,
        b"accept-language" => 17,
        b"accept-ranges" => 18,
        b"accept" => 19,
        b"access-control-allow-origin" => 20,
        b"age" => 21,
        b"allow" => 22,
        b"authorization" => 23,
        b"cache-control" => 24,
        b"content-disposition" => 25,
        b"content-encoding" => 26,
        b"content-language" => 27,
        b"content-length" => 28,
        b"content-location" => 29,
        b"content-range" => 30,
        b"content-type" => 31,
        b"cookie" => 32,
        b"date" => 33,
        b"etag" => 34,
        b"expect" => 35,
        b"expires" => 36,
        b"from" => 37,
        b"host" => 38,
        b"if-match" => 39,
        b"if-modified-since" => 40,
        b"if-none-match" => 41,
        b"if-range" => 42,
        b"if-unmodified-since" => 43,
        b"last-modified" => 44,
        b"link" => 45,
        b"location" => 46,
        b"max-forwards" => 47,
        b"proxy-authenticate" => 48,
        b"proxy-authorization" => 49,
        b"range" => 50,
        b"referer" => 51,
        b"refresh" => 52,
        b"retry-after" => 53,
        b"server" => 54,
        b"set-cookie" => 55,
        b"strict-transport-security" => 56,
        b"transfer-encoding" => 57,
        b"user-agent" => 58,
        b"vary" => 59,
        b"via" => 60,
        b"www-authenticate" => 61,
        _ => return None,
    };
    Some(index)
}

/// The wire index of the static entry that is exactly `name: value`, if
/// there is one (14 entries have a value).
pub(crate) fn static_field(name: &[u8], value: &[u8]) -> Option<usize> {
    let first = static_name(name)?;
    STATIC
        .iter()
        .enumerate()
        .skip(first - 1)
        .take_while(|(_, (n, _))| *n == name)
        .find(|(_, (_, v))| *v == value)
        .map(|(i, _)| i + 1)
}

/// The octets an entry counts for in a table's size, besides its name and
/// value (RFC 7541 §4.1).
pub(crate) const ENTRY_OVERHEAD: usize = 32;

/// The size of an entry of a name and a value of these lengths (§4.1).
pub(crate) fn entry_size(name: usize, value: usize) -> usize {
    name.saturating_add(value).saturating_add(ENTRY_OVERHEAD)
}

/// Where an entry's bytes lie in [`Dynamic::bytes`]: its name at `at`,
/// its value right after.
#[derive(Clone, Copy, Debug)]
struct Entry {
    at: usize,
    name: usize,
    value: usize,
}

/// The name of an entry about to be inserted: bytes from elsewhere, or the
/// name of an entry of this table (by its position, 0 the newest), which
/// stays readable even when the insertion evicts that entry (§4.4).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Name<'a> {
    /// Bytes outside the table.
    Bytes(&'a [u8]),
    /// The name of the entry at this position (0 the newest).
    Entry(usize),
}

/// A dynamic table (RFC 7541 §2.3.2, §4): entries newest first, evicted
/// oldest first to keep the size (§4.1) within the maximum.
///
/// The entries' names and values lie back to back in one buffer, oldest
/// first; an eviction only moves the start of the live part, and the dead
/// part is dropped once it is as long as the live part, so between
/// operations the buffer holds at most twice the maximum size.
#[derive(Debug)]
pub(crate) struct Dynamic {
    /// The entries' bytes; those before `head` belong to evicted entries.
    bytes: Vec<u8>,
    /// Where the oldest live entry starts in `bytes` (`bytes.len()` when
    /// there is none).
    head: usize,
    /// The live entries, oldest first.
    entries: VecDeque<Entry>,
    /// The sum of the entries' sizes (§4.1).
    size: usize,
    /// The maximum size (§4.2).
    max: usize,
}

impl Dynamic {
    /// An empty table of this maximum size.
    pub(crate) fn new(max: usize) -> Dynamic {
        Dynamic {
            bytes: Vec::new(),
            head: 0,
            entries: VecDeque::new(),
            size: 0,
            max,
        }
    }

    /// The maximum size (§4.2).
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// The current size: the sum of the entries' sizes (§4.1).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The octets the table's buffer holds, live or not yet dropped: at most
    /// twice the maximum size.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn held(&self) -> usize {
        self.bytes.len()
    }

    /// The name and value of the entry at `position` (0 the newest, that is
    /// wire index 62), or `None` past the last.
    pub(crate) fn get(&self, position: usize) -> Option<(&[u8], &[u8])> {
        let i = self.entries.len().checked_sub(position.checked_add(1)?)?;
        let e = self.entries.get(i)?;
        self.bytes
            .get(e.at..e.at.checked_add(e.name)?.checked_add(e.value)?)?
            .split_at_checked(e.name)
    }

    /// The entries, newest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        (0..self.len()).filter_map(|p| self.get(p))
    }

    /// Changes the maximum size, evicting the oldest entries until the size
    /// is within it (§4.3).
    pub(crate) fn set_max(&mut self, max: usize) {
        self.max = max;
        while self.size > self.max {
            self.evict();
        }
        self.compact();
    }

    /// Empties the table (what adding an entry larger than the maximum size
    /// does, §4.4).
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.bytes.clear();
        self.head = 0;
        self.size = 0;
    }

    /// Adds an entry (§4.4): evicts the oldest entries until it fits, or
    /// empties the table when it is larger than the maximum size.
    pub(crate) fn insert(&mut self, name: Name<'_>, value: &[u8]) {
        // Where the name lies, read before any eviction; the evicted bytes
        // stay in the buffer until after the copy.
        let (name_len, within) = match name {
            Name::Bytes(n) => (n.len(), None),
            Name::Entry(position) => {
                let Some(e) = self
                    .entries
                    .len()
                    .checked_sub(position.saturating_add(1))
                    .and_then(|i| self.entries.get(i))
                else {
                    debug_assert!(false, "a name from an entry that is not there");
                    return;
                };
                (e.name, Some(e.at..e.at.saturating_add(e.name)))
            }
        };
        let size = entry_size(name_len, value.len());
        if size > self.max {
            self.clear();
            return;
        }
        while self.size.saturating_add(size) > self.max {
            self.evict();
        }
        let at = self.bytes.len();
        match (name, within) {
            (Name::Entry(_), Some(range)) if range.end <= at => {
                self.bytes.extend_from_within(range)
            }
            (Name::Bytes(n), _) => self.bytes.extend_from_slice(n),
            _ => {
                debug_assert!(false, "a name outside the buffer");
                return;
            }
        }
        self.bytes.extend_from_slice(value);
        self.entries.push_back(Entry {
            at,
            name: name_len,
            value: value.len(),
        });
        self.size = self.size.saturating_add(size);
        self.compact();
    }

    /// Drops the oldest entry (its bytes stay until [`Dynamic::compact`]).
    fn evict(&mut self) {
        let Some(e) = self.entries.pop_front() else {
            self.size = 0;
            return;
        };
        self.size = self.size.saturating_sub(entry_size(e.name, e.value));
        self.head = self.entries.front().map_or(self.bytes.len(), |f| f.at);
    }

    /// Drops the evicted entries' bytes once they are at least as many as
    /// the live ones (so each byte is moved at most once per byte evicted).
    fn compact(&mut self) {
        if self.entries.is_empty() {
            self.bytes.clear();
            self.head = 0;
            return;
        }
        let head = self.head;
        let Some(live) = self.bytes.len().checked_sub(head) else {
            debug_assert!(false, "the head past the buffer");
            return;
        };
        if head == 0 || head < live {
            return;
        }
        self.bytes.copy_within(head.., 0);
        self.bytes.truncate(live);
        for e in &mut self.entries {
            e.at = e.at.saturating_sub(head);
        }
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_table_spot_checks() {
        assert_eq!(STATIC.len(), 61);
        let check = [
            (1, ":authority", ""),
            (2, ":method", "GET"),
            (3, ":method", "POST"),
            (4, ":path", "/"),
            (5, ":path", "/index.html"),
            (6, ":scheme", "http"),
            (7, ":scheme", "https"),
            (8, ":status", "200"),
            (14, ":status", "500"),
            (16, "accept-encoding", "gzip, deflate"),
            (24, "cache-control", ""),
            (31, "content-type", ""),
            (33, "date", ""),
            (46, "location", ""),
            (54, "server", ""),
            (55, "set-cookie", ""),
            (61, "www-authenticate", ""),
        ];
        for (index, name, value) in check {
            assert_eq!(
                STATIC[index - 1],
                (name.as_bytes(), value.as_bytes()),
                "{index}"
            );
        }
        // Only :method, :path, :scheme, :status and accept-encoding carry
        // values.
        assert_eq!(STATIC.iter().filter(|(_, v)| !v.is_empty()).count(), 14);
    }

    #[test]
    fn static_lookups_agree_with_the_table() {
        for (i, (name, value)) in STATIC.iter().enumerate() {
            let first = STATIC.iter().position(|(n, _)| n == name).unwrap() + 1;
            assert_eq!(static_name(name), Some(first), "{:?}", name);
            if !value.is_empty() {
                assert_eq!(static_field(name, value), Some(i + 1));
            }
        }
        assert_eq!(static_name(b"x-custom"), None);
        assert_eq!(static_name(b"Content-Type"), None);
        assert_eq!(static_field(b":status", b"201"), None);
        assert_eq!(static_field(b":status", b"404"), Some(13));
        assert_eq!(static_field(b"content-type", b""), Some(31));
    }

    fn contents(t: &Dynamic) -> Vec<(String, String)> {
        t.iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn eviction_is_oldest_first_and_exact() {
        let mut t = Dynamic::new(100);
        t.insert(Name::Bytes(b"a"), b"1"); // 34
        t.insert(Name::Bytes(b"b"), b"2"); // 68
        assert_eq!(t.size(), 68);
        t.insert(Name::Bytes(b"c"), b"3"); // 102 > 100: a goes
        assert_eq!(
            contents(&t),
            [("c".into(), "3".into()), ("b".into(), "2".into())]
        );
        assert_eq!(t.size(), 68);
        // Exactly the maximum fits.
        t.insert(Name::Bytes(b""), b""); // 32
        assert_eq!((t.len(), t.size()), (3, 100));
        t.set_max(34);
        assert_eq!(contents(&t), [("".into(), "".into())]);
        // Larger than the table: it empties.
        t.insert(Name::Bytes(b"x"), &[b'y'; 100]);
        assert_eq!((t.len(), t.size(), t.held()), (0, 0, 0));
        t.set_max(0);
        t.insert(Name::Bytes(b""), b"");
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn a_name_from_an_entry_the_insertion_evicts() {
        let mut t = Dynamic::new(80);
        t.insert(Name::Bytes(b"long-name"), b"v"); // 42
        t.insert(Name::Entry(0), b"other value"); // 52: evicts its source
        assert_eq!(contents(&t), [("long-name".into(), "other value".into())]);
        assert_eq!(t.size(), 52);
    }

    #[test]
    fn the_buffer_stays_within_twice_the_maximum() {
        let mut t = Dynamic::new(4096);
        for i in 0..10_000usize {
            let value = vec![b'v'; i % 300];
            let name = format!("n{}", i % 17);
            if i % 5 == 0 && t.len() > 0 {
                t.insert(Name::Entry(i % t.len()), &value);
            } else {
                t.insert(Name::Bytes(name.as_bytes()), &value);
            }
            assert!(t.held() <= 2 * t.max(), "{} at {i}", t.held());
            assert!(t.size() <= t.max());
            let live: usize = t.iter().map(|(n, v)| entry_size(n.len(), v.len())).sum();
            assert_eq!(live, t.size());
            if i % 1000 == 999 {
                t.set_max(i % 3000);
                assert!(t.size() <= t.max() && t.held() <= 2 * t.max());
                t.set_max(4096);
            }
        }
    }
}
