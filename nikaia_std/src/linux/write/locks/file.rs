//! The locks file (`DIR/locks`): every lock held, one per line, written
//! whole to `DIR/locks.new` and renamed over it under the `flock` of
//! `DIR/locks.lock`, so a reader sees the old table or the new one, never
//! part of either, and two writers (two processes of an upgrade) never
//! lose each other's change.
//!
//! ```text
//! nikaia-locks 1
//! TOKEN <TAB> /ROOT <TAB> FLAGS <TAB> USER <TAB> EXPIRES <TAB> TIMEOUT <TAB> OWNER
//! ```
//!
//! ROOT, USER (after `u:`) and OWNER (after `o:`) are percent-encoded
//! (every byte outside `!`..`~`, and `%`); `-` is no user, no owner.
//! FLAGS is three letters: `c`/`f` (collection or not), `i`/`0` (depth),
//! `s`/`x` (shared or exclusive). EXPIRES is in milliseconds since the
//! epoch, TIMEOUT in seconds.

use super::table::{Lock, Table};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags};
use std::io::Write;

/// The first line.
const HEADER: &str = "nikaia-locks 1";
pub(super) const FILE: &str = "locks";
const NEW: &str = "locks.new";
const LOCK: &str = "locks.lock";

/// The table as the file writes it.
pub(super) fn encode(table: &Table) -> Vec<u8> {
    let mut out = String::with_capacity(64 + 160 * table.all().count());
    out.push_str(HEADER);
    out.push('\n');
    for l in table.all() {
        pct(&mut out, l.token.as_bytes());
        out.push_str("\t/");
        pct(&mut out, &l.root);
        out.push('\t');
        out.push(if l.collection { 'c' } else { 'f' });
        out.push(if l.infinity { 'i' } else { '0' });
        out.push(if l.shared { 's' } else { 'x' });
        out.push('\t');
        optional(&mut out, "u:", l.user.as_deref());
        out.push('\t');
        out.push_str(&l.expires.to_string());
        out.push('\t');
        out.push_str(&l.timeout.to_string());
        out.push('\t');
        optional(&mut out, "o:", l.owner.as_deref());
        out.push('\n');
    }
    let mut out = out.into_bytes();
    for line in &table.unread {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out
}

/// `-`, or `tag` and the text percent-encoded.
fn optional(out: &mut String, tag: &str, text: Option<&str>) {
    match text {
        None => out.push('-'),
        Some(t) => {
            out.push_str(tag);
            pct(out, t.as_bytes());
        }
    }
}

/// The table a file holds, and how many lines did not read. A line that
/// does not read (an edit by hand, a newer server's) is kept in the table
/// as it is and written back with it, never dropped; a byte-order mark
/// and `\r\n` line ends are read through, and a file without the header
/// line is read line by line all the same.
pub(super) fn decode(bytes: &[u8]) -> (Table, usize) {
    let mut table = Table::default();
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let mut bad = 0;
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || (i == 0 && line == HEADER.as_bytes()) {
            continue;
        }
        match lock(line) {
            Some(l) => table.insert(l),
            None => {
                table.unread.push(line.to_vec());
                bad += 1;
            }
        }
    }
    (table, bad)
}

/// One line's lock.
fn lock(line: &[u8]) -> Option<Lock> {
    let f: Vec<&[u8]> = line.split(|&b| b == b'\t').collect();
    let [token, root, flags, user, expires, timeout, owner] = f.as_slice() else {
        return None;
    };
    let text = |b: &[u8]| String::from_utf8(unpct(b)?).ok();
    let number = |b: &[u8]| std::str::from_utf8(b).ok()?.parse::<u64>().ok();
    let optional = |b: &[u8], tag: &[u8]| -> Option<Option<String>> {
        match b {
            b"-" => Some(None),
            _ => Some(Some(text(b.strip_prefix(tag)?)?)),
        }
    };
    let (c, d, s) = match flags {
        [c @ (b'c' | b'f'), d @ (b'i' | b'0'), s @ (b's' | b'x')] => (*c, *d, *s),
        _ => return None,
    };
    Some(Lock {
        token: text(token).filter(|t| !t.is_empty())?,
        root: unpct(root.strip_prefix(b"/")?)?,
        collection: c == b'c',
        infinity: d == b'i',
        shared: s == b's',
        user: optional(user, b"u:")?,
        expires: number(expires)?,
        timeout: number(timeout)?,
        owner: optional(owner, b"o:")?,
    })
}

/// Whether the file keeps `b` as it is (else as `%XX`).
fn plain(b: &u8) -> bool {
    matches!(b, b'!'..=b'~') && *b != b'%'
}

/// The length of `bytes` as the file keeps them.
pub(super) fn kept_len(bytes: &[u8]) -> usize {
    bytes.iter().map(|b| if plain(b) { 1 } else { 3 }).sum()
}

/// Appends `bytes`, every byte outside `!`..`~` (and `%`) as `%XX`.
fn pct(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut rest = bytes;
    while !rest.is_empty() {
        let run = rest.iter().position(|b| !plain(b)).unwrap_or(rest.len());
        // A run of printable ASCII is UTF-8.
        out.push_str(std::str::from_utf8(&rest[..run]).unwrap_or_default());
        if let Some(&b) = rest.get(run) {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
            rest = &rest[run + 1..];
        } else {
            rest = &[];
        }
    }
}

fn unpct(s: &[u8]) -> Option<Vec<u8>> {
    crate::text::percent::percent_decode(std::str::from_utf8(s).ok()?)
}

/// The directory's `flock`, held while the table is read, changed and
/// written back: every writer of every process takes it.
pub(super) struct Held(#[allow(dead_code)] OwnedFd);

/// Takes the directory's `flock`, waiting for another process's change
/// (a write of a few hundred kilobytes at most).
pub(super) fn hold(dir: BorrowedFd<'_>) -> std::io::Result<Held> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let fd = rustix::fs::openat(dir, LOCK, flags, Mode::from_raw_mode(0o600))?;
    loop {
        match rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockExclusive) {
            Ok(()) => return Ok(Held(fd)),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// What identifies the file's version: device, inode, modification time.
pub(super) type Seen = (u64, u64, i64, i64);

#[allow(clippy::unnecessary_cast)] // the field types differ between targets
fn seen_of(st: &rustix::fs::Stat) -> Seen {
    (
        st.st_dev as u64,
        st.st_ino as u64,
        st.st_mtime as i64,
        st.st_mtime_nsec as i64,
    )
}

/// The file's version now (`None`: no file yet): a change from the one
/// last read means another writer wrote it.
pub(super) fn seen(dir: BorrowedFd<'_>) -> std::io::Result<Option<Seen>> {
    match rustix::fs::statat(dir, FILE, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(seen_of(&st))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The file's version and bytes, of one open of it (`None` and empty
/// where there is none).
pub(super) fn read(dir: BorrowedFd<'_>) -> std::io::Result<(Option<Seen>, Vec<u8>)> {
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let fd = match rustix::fs::openat(dir, FILE, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok((None, Vec::new())),
        Err(e) => return Err(e.into()),
    };
    let seen = seen_of(&rustix::fs::fstat(&fd)?);
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut bytes)?;
    Ok((Some(seen), bytes))
}

/// Writes the table whole and renames it over the file (synced: a crash
/// leaves the old table or the new one).
pub(super) fn write(dir: BorrowedFd<'_>, table: &Table) -> std::io::Result<()> {
    let flags =
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let fd = rustix::fs::openat(dir, NEW, flags, Mode::from_raw_mode(0o600))?;
    let mut file = std::fs::File::from(fd);
    file.write_all(&encode(table))?;
    file.sync_data()?;
    rustix::fs::renameat(dir, NEW, dir, FILE)?;
    rustix::fs::fsync(dir.as_fd())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_reads_back_whatever_its_bytes() {
        let mut t = Table::default();
        t.insert(Lock {
            token: "urn:uuid:0b8a7e5c-1d2e-4f60-8a9b-0c1d2e3f4a5b".into(),
            root: b"dir with space/caf\xc3\xa9/\xff%\t".to_vec(),
            collection: true,
            infinity: true,
            shared: false,
            user: Some("al ice%".into()),
            owner: Some("<D:href xmlns:D=\"DAV:\">http://x/\tme\n</D:href>".into()),
            expires: 1_800_000_000,
            timeout: 600,
        });
        t.insert(Lock {
            token: "urn:uuid:1".into(),
            root: Vec::new(),
            collection: true,
            infinity: false,
            shared: true,
            user: None,
            owner: None,
            expires: 5,
            timeout: 1,
        });
        let bytes = encode(&t);
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 3);
        assert_eq!(decode(&bytes), (t, 0));
    }

    #[test]
    fn a_line_that_does_not_read_is_counted_and_kept() {
        let text = "nikaia-locks 1\nurn:uuid:2\t/a\tfix\t-\t9\t9\t-\nbroken\nurn:uuid:3\t/b\tzzz\t-\t9\t9\t-\n";
        let (t, bad) = decode(text.as_bytes());
        assert_eq!((t.all().count(), bad), (1, 2));
        // Written back with the table, and read again the same.
        let again = decode(&encode(&t));
        assert_eq!(again, (t, 2));
        assert_eq!(decode(b"").1, 0);
    }

    #[test]
    fn a_file_edited_by_hand_keeps_its_locks() {
        let line = "urn:uuid:2\t/a\tfix\t-\t9\t9\t-";
        let bom = format!("\u{feff}nikaia-locks 1\r\n{line}\r\n");
        assert_eq!(decode(bom.as_bytes()).0.all().count(), 1);
        let headless = format!("{line}\n");
        assert_eq!(
            decode(headless.as_bytes()),
            decode(format!("nikaia-locks 1\n{line}\n").as_bytes())
        );
    }
}
