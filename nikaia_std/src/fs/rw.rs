//! Whole-file reads and writes of a name under a root.

use super::{Error, Root};
use std::io;
use std::path::Path;

/// Reads the whole regular file `name` under `root`.
pub fn read(name: impl AsRef<Path>, root: &Root) -> Result<Vec<u8>, Error> {
    #[cfg(target_os = "linux")]
    if !root.on_a_host() {
        use std::io::Read;
        let mut opened = root.open(name)?;
        let mut out = Vec::with_capacity(usize::try_from(opened.id.size).unwrap_or(0));
        opened.file.read_to_end(&mut out).map_err(Error::Io)?;
        return Ok(out);
    }
    let (file, id) = root.open_host(name)?;
    file.read_all(id.size).map_err(Error::Io)
}

/// Reads the whole regular file `name` under `root` as UTF-8; invalid UTF-8
/// is [`Error::Io`] with [`io::ErrorKind::InvalidData`].
pub fn read_string(name: impl AsRef<Path>, root: &Root) -> Result<String, Error> {
    let bytes = read(name, root)?;
    String::from_utf8(bytes).map_err(|e| Error::Io(io::Error::new(io::ErrorKind::InvalidData, e)))
}

/// Writes `data` as the regular file `name` under `root` (mode 0o644
/// before the umask), created or replaced whole: the bytes go to an
/// unnamed file first, synced ([`Durability::Data`]), and then take the
/// name, so the name never holds anything but its old bytes or `data`.
/// The name is confined exactly like a read; nothing is created outside
/// the root. See [`Root::begin_write`] for the other modes.
///
/// Files under a host root are read-only, and so is every root on wasm32:
/// there this is [`Error::Io`] of kind [`io::ErrorKind::ReadOnlyFilesystem`].
pub fn write(name: impl AsRef<Path>, root: &Root, data: impl AsRef<[u8]>) -> Result<(), Error> {
    #[cfg(target_os = "linux")]
    {
        let mut writing = root.begin_write(name, Mode::Replace)?;
        writing.write(data.as_ref())?;
        writing.commit(Durability::Data).map(|_| ())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (name, root, data);
        Err(super::host::read_only())
    }
}

/// How the written file takes its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Only if the name does not exist ([`Error::Exists`] otherwise).
    Create,
    /// Whether or not it exists (a regular file it names is replaced).
    Replace,
    /// Only if it names the version whose ETag is this one (as sent in
    /// `If-Match`, quotes included; a list of them; `*`: any version),
    /// else [`Error::Precondition`].
    ReplaceIf(String),
    /// As a request's preconditions and a site's write rule say, checked
    /// when the write begins and again, with the name held, when it
    /// takes the name.
    Conditional(Conditions),
}

/// What a write (or a removal) asks of the name as it is when it acts: the
/// request's preconditions (RFC 9110 §13.2.2; a false one is
/// [`Error::Precondition`]), then what the rule lets it do (creating a
/// name, replacing a file: [`Error::Denied`]
/// otherwise).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    /// A name that does not exist may be created.
    pub create: bool,
    /// A file that exists may be replaced.
    pub replace: bool,
    /// `If-Match`: `*`, or ETags one of which the file must have.
    pub if_match: Option<String>,
    /// `If-None-Match`: `*` (the name must not exist), or ETags the file
    /// must not have.
    pub if_none_match: Option<String>,
    /// `If-Unmodified-Since`, seconds since the epoch (ignored with
    /// `if_match`).
    pub if_unmodified_since: Option<u64>,
}

impl Conditions {
    /// Whether the preconditions hold for the name as it is: `now` is the
    /// file's ETag and modification time (seconds) when it is a regular
    /// file, `Some(None)` when it is something else (a link, a directory),
    /// `None` when nothing is there.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the writes are Linux's
    pub(crate) fn hold(&self, now: Option<Option<(&str, u64)>>) -> bool {
        if let Some(list) = &self.if_match {
            let matched = match now {
                None => false,
                Some(_) if list.trim() == "*" => true,
                Some(None) => false,
                Some(Some((etag, _))) => etag_listed(list, etag, Compare::Strong),
            };
            if !matched {
                return false;
            }
        } else if let (Some(since), Some(Some((_, modified)))) = (self.if_unmodified_since, now) {
            if modified > since {
                return false;
            }
        }
        match (&self.if_none_match, now) {
            (Some(list), Some(_)) if list.trim() == "*" => false,
            (Some(list), Some(Some((etag, _)))) => !etag_listed(list, etag, Compare::Weak),
            _ => true,
        }
    }
}

/// How two entity tags are compared (RFC 9110 §8.8.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compare {
    /// Both strong and equal: `If-Match` (§13.1.1). A weak tag in the
    /// list never matches.
    Strong,
    /// Equal once `W/` is set aside: `If-None-Match` (§13.1.2), so
    /// `W/"x"` names the file whose tag is `"x"`.
    Weak,
}

/// Whether a list of ETags (as `If-Match` or `If-None-Match` sends it)
/// names `etag` (ours, always strong), by the comparison `how`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the writes are Linux's
pub(crate) fn etag_listed(list: &str, etag: &str, how: Compare) -> bool {
    let mut rest = list.trim();
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        let weak = rest.starts_with("W/");
        let tag = rest.strip_prefix("W/").unwrap_or(rest);
        let Some(body) = tag.strip_prefix('"') else {
            // Not a quoted tag: the rest up to the next comma is skipped.
            rest = rest.split_once(',').map_or("", |(_, r)| r);
            continue;
        };
        let Some(end) = body.find('"') else {
            return false;
        };
        if (!weak || how == Compare::Weak) && tag[..end + 2] == *etag {
            return true;
        }
        rest = &body[end + 1..];
    }
    false
}

/// What is on the disk before the name appears (and the answer goes out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Nothing is waited for: a crash may leave the name on an empty or
    /// partial file's blocks, as the file system orders it.
    None,
    /// The file's data (`fdatasync`) before its name appears.
    #[default]
    Data,
    /// The data, and the directory (`fsync`) after the name appears: the
    /// name survives a crash too.
    Full,
}

/// What became of a written file's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// The new file, as it is under its name now.
    pub id: super::Identity,
    /// The name did not exist before (a create).
    pub created: bool,
}

/// What a guarded write or removal takes care of beyond its name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Guard {
    /// Missing directories on the way are made (mode 0o755 before the
    /// umask), each by the walk, so none is made through a link.
    pub make_dirs: bool,
    /// Files and directories never written into, replaced or removed, by
    /// (device, inode) as they are when the write acts.
    pub protected: Vec<(u64, u64)>,
    /// Asked with the name held, once the preconditions hold (a server's,
    /// none by default).
    pub(crate) held: Held,
}

/// What a guarded write or removal asks with its name held against every
/// other writer, once its preconditions hold: a server's WebDAV locks and
/// `If:` (`spec/site.md`, "WebDAV class 2: locks"). It is told the name's
/// ETag (`None` where no regular file is) and whether anything is there;
/// its refusal ([`Error::Locked`], [`Error::Precondition`]) is the
/// write's. None by default.
#[derive(Clone, Default)]
pub(crate) struct Held(pub(crate) Option<HeldCheck>);

/// The check a [`Held`] makes.
pub(crate) type HeldCheck =
    std::sync::Arc<dyn Fn(Option<&str>, bool) -> Result<(), Error> + Send + Sync>;

impl Held {
    /// Asks the check, if there is one.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the writes are Linux's
    pub(crate) fn ask(&self, etag: Option<&str>, exists: bool) -> Result<(), Error> {
        match &self.0 {
            Some(check) => check(etag, exists),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Held(check)"
        } else {
            "Held(none)"
        })
    }
}

/// Two guards are alike whatever their checks are: a check is a server's,
/// not a value.
impl PartialEq for Held {
    fn eq(&self, other: &Held) -> bool {
        self.0.is_some() == other.0.is_some()
    }
}

impl Eq for Held {}

/// What a removal may take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Removable {
    /// Files (and links, removed themselves).
    pub files: bool,
    /// Empty directories.
    pub dirs: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inm(list: &str) -> Conditions {
        Conditions {
            create: true,
            replace: true,
            if_none_match: Some(list.to_owned()),
            ..Conditions::default()
        }
    }

    /// If-None-Match compares weakly (RFC 9110 §13.1.2): `W/"x"` names the
    /// file whose tag is `"x"`, so a PUT with it does not replace the file
    /// (found from outside: it answered 204 and replaced). If-Match stays
    /// strong.
    #[test]
    fn if_none_match_compares_weakly_and_if_match_strongly() {
        let now = Some(Some(("\"abc-1\"", 10)));
        assert!(!inm("W/\"abc-1\"").hold(now));
        assert!(!inm("\"zz\", W/\"abc-1\"").hold(now));
        assert!(!inm("\"abc-1\"").hold(now));
        assert!(inm("W/\"abc-2\"").hold(now));
        assert!(
            inm("W/\"abc-1\"").hold(None),
            "nothing there: nothing matches"
        );
        let im = |list: &str| Conditions {
            if_match: Some(list.to_owned()),
            ..inm("\"other\"")
        };
        assert!(im("\"abc-1\"").hold(now));
        assert!(
            !im("W/\"abc-1\"").hold(now),
            "If-Match never takes a weak tag"
        );
    }
}
