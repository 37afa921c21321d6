//! Reading a directory for its listing: its entries read and stat-ed
//! under the root (`fs::Root`, confined like every open), those a listing
//! never shows left out, the rest sorted. It may wait for the disk, so it
//! runs on the io pool (D9), or in place where opens are synchronous
//! (wasm32).

use super::ask::{Order, Sort};
use crate::fs::{self, ReachedKind, Root};
use crate::rt::Glob;
use std::cmp::Ordering;
use std::ffi::OsString;
use std::path::Path;

/// The most entries read from one directory; past it the listing says it
/// was truncated (`spec/files.md`, "Listings").
pub(crate) const MAX_ENTRIES: usize = 100_000;

/// One entry a listing shows.
#[derive(Debug)]
pub(crate) struct Entry {
    pub name: OsString,
    /// A directory (or a symbolic link to one inside the root).
    pub dir: bool,
    /// In bytes; 0 for a directory (not shown).
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
}

/// What a listing leaves out.
pub(crate) struct Filter<'a> {
    pub show_hidden: bool,
    /// `[[deny]]` patterns: a name one matches is left out.
    pub deny: &'a [Glob],
}

/// The entries of `dir` a listing shows, sorted (directories first), and
/// whether the directory had more than [`MAX_ENTRIES`].
///
/// Left out: names starting with `.` unless `show_hidden`; names a deny
/// pattern matches (matched as `dir/name`, as a request for them would
/// be); symbolic links that lead out of the root or nowhere; anything that
/// is neither a regular file nor a directory (a request for it is 404).
pub(crate) fn read(
    root: &Root,
    dir: &Path,
    filter: &Filter<'_>,
    sort: Sort,
    order: Order,
) -> Result<(Vec<Entry>, bool), fs::Error> {
    let (all, truncated) = root.list_at_most(dir, MAX_ENTRIES)?;
    let prefix = match dir.to_string_lossy() {
        d if d == "." || d.is_empty() => String::new(),
        d => format!("{}/", d.trim_end_matches('/')),
    };
    let mut entries: Vec<Entry> = all
        .into_iter()
        .filter_map(|e| {
            let reached = e.reached?;
            let dir = match reached.kind {
                ReachedKind::Dir => true,
                ReachedKind::File => false,
                ReachedKind::Other => return None,
            };
            let shown = e.name.as_encoded_bytes();
            if shown.first() == Some(&b'.') && !filter.show_hidden {
                return None;
            }
            if !filter.deny.is_empty() {
                let full = format!("{prefix}{}", e.name.to_string_lossy());
                if crate::rt::any_matches(filter.deny, &full) {
                    return None;
                }
            }
            Some(Entry {
                name: e.name,
                dir,
                size: if dir { 0 } else { reached.size },
                mtime_ns: reached.mtime_ns,
            })
        })
        .collect();
    entries.sort_unstable_by(|a, b| compare(a, b, sort, order));
    Ok((entries, truncated))
}

/// Directories first, whatever the order; then by the key, ties by name
/// (names by their bytes), both reversed for `desc`.
fn compare(a: &Entry, b: &Entry, sort: Sort, order: Order) -> Ordering {
    let by_key = match sort {
        Sort::Name => Ordering::Equal,
        Sort::Size => a.size.cmp(&b.size),
        Sort::Mtime => a.mtime_ns.cmp(&b.mtime_ns),
    };
    let within = by_key.then_with(|| a.name.cmp(&b.name));
    let within = match order {
        Order::Asc => within,
        Order::Desc => within.reverse(),
    };
    b.dir.cmp(&a.dir).then(within)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(name: &str, dir: bool, size: u64, mtime_ns: i64) -> Entry {
        Entry {
            name: name.into(),
            dir,
            size,
            mtime_ns,
        }
    }

    fn sorted(sort: Sort, order: Order) -> Vec<String> {
        let mut v = vec![
            e("b", false, 1, 30),
            e("a", false, 3, 10),
            e("z", true, 0, 5),
            e("c", false, 2, 20),
            e("y", true, 0, 50),
            e("d", false, 2, 40),
        ];
        v.sort_unstable_by(|a, b| compare(a, b, sort, order));
        v.into_iter()
            .map(|e| e.name.into_string().unwrap())
            .collect()
    }

    #[test]
    fn directories_first_then_the_key_then_the_name() {
        use Order::*;
        use Sort::*;
        assert_eq!(sorted(Name, Asc), ["y", "z", "a", "b", "c", "d"]);
        assert_eq!(sorted(Name, Desc), ["z", "y", "d", "c", "b", "a"]);
        assert_eq!(sorted(Size, Asc), ["y", "z", "b", "c", "d", "a"]);
        assert_eq!(sorted(Size, Desc), ["z", "y", "a", "d", "c", "b"]);
        assert_eq!(sorted(Mtime, Asc), ["z", "y", "a", "c", "b", "d"]);
        assert_eq!(sorted(Mtime, Desc), ["y", "z", "d", "b", "c", "a"]);
    }
}
