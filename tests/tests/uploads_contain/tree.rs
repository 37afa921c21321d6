//! The scratch tree the corpus writes to, its snapshots, and the raw
//! client that sends each target.

use super::*;

/// A scratch directory: `root/` (served), `outside/`, `runtime.toml` and
/// `users.htpasswd` side by side.
pub(super) struct Tree {
    pub(super) tmp: tempfile::TempDir,
}

pub(super) fn file(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A path made of raw bytes.
pub(super) fn bytes_path(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

impl Tree {
    pub(super) fn new(tag: &str) -> Tree {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("nikaia-{tag}"))
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let t = tmp.path();
        file(&t.join("outside/keep.txt"), b"outside, keep");
        file(&t.join("outside/victim"), b"outside, must survive");
        file(&t.join("outside/sub/deep.txt"), b"outside, deep");
        file(
            &t.join("outside/hardlinked.txt"),
            b"outside, hard-linked in",
        );
        file(&t.join("users.htpasswd"), USERS.as_bytes());
        file(&t.join("runtime.toml"), RULES.as_bytes());
        file(&t.join("root/drop/404.html"), b"<h1>not here</h1>");
        Tree { tmp }
    }

    pub(super) fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub(super) fn root(&self) -> PathBuf {
        self.path().join("root")
    }

    /// The rest of the corpus's served tree.
    pub(super) fn corpus_site(&self) {
        let root = self.root();
        file(&root.join("index.html"), b"<h1>top</h1>");
        file(&root.join("public/a.txt"), b"public");
        file(&root.join("public/a.txt.gz"), b"public, coded");
        file(&root.join("private/p.txt"), b"private");
        file(&root.join(".well-known/acme-challenge/tok"), b"token");
        self.corpus_drop();
    }

    /// `drop/` as every row of the corpus starts from.
    pub(super) fn corpus_drop(&self) {
        let t = self.path();
        let drop = self.root().join("drop");
        file(&drop.join("404.html"), b"<h1>not here</h1>");
        file(&drop.join("a.txt"), b"drop, a");
        file(&drop.join("keep.txt"), b"drop, keep");
        file(&drop.join("sub/inner.txt"), b"drop, inner");
        file(&drop.join("secret/keep.txt"), b"drop, secret");
        std::fs::create_dir(drop.join("empty")).unwrap();
        file(&drop.join(bytes_path(b"caf\xe9.txt")), b"latin-1 name");
        file(&drop.join("caf\u{FFFD}.txt"), b"replacement-character name");
        for (link, to) in [
            ("out", PathBuf::from("../../outside")),
            ("absout", t.join("outside")),
            ("outfile", PathBuf::from("../../outside/keep.txt")),
            ("dangling", PathBuf::from("../../outside/nothing")),
            ("in", PathBuf::from("a.txt")),
            ("indir", PathBuf::from("sub")),
            ("up", PathBuf::from("..")),
            ("loop", PathBuf::from("loop")),
            ("rt-link", PathBuf::from("../../runtime.toml")),
        ] {
            symlink(to, drop.join(link)).unwrap();
        }
        std::fs::hard_link(t.join("runtime.toml"), drop.join("rt-hard")).unwrap();
        std::fs::hard_link(t.join("users.htpasswd"), drop.join("pw-hard")).unwrap();
        std::fs::hard_link(t.join("outside/hardlinked.txt"), drop.join("outside-hard")).unwrap();
        let fifo = rustix::fs::FileType::Fifo;
        let mode = rustix::fs::Mode::from_raw_mode(0o644);
        rustix::fs::mknodat(rustix::fs::CWD, drop.join("fifo"), fifo, mode, 0).unwrap();
    }

    /// `drop/` rebuilt as the corpus starts from.
    pub(super) fn reset_drop(&self) {
        std::fs::remove_dir_all(self.root().join("drop")).unwrap();
        self.corpus_drop();
    }

    /// `nikaia serve root` (dot-names hidden, no listings) under the
    /// runtime file, on a loopback port.
    pub(super) fn serve(&self) -> Running {
        let mut rt =
            Runtime::load(&self.path().join("runtime.toml")).unwrap_or_else(|e| panic!("{e:?}"));
        rt.listen = test_runtime().listen;
        rt.workers = 2;
        if rt.access_log == LogTarget::Stderr {
            rt.access_log = LogTarget::Off;
        }
        serve_dir(&self.root(), rt, false, false)
    }
}

// ---------------------------------------------------------------------------
// Snapshots of the scratch directory.

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    File(Vec<u8>),
    Dir,
    Link(PathBuf),
    Other,
}

/// What a name is, as far as a write could change it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) kind: Kind,
    pub(super) size: u64,
    pub(super) ino: u64,
    pub(super) mode: u32,
    pub(super) mtime_ns: i128,
}

impl Entry {
    pub(super) fn describe(&self) -> String {
        match &self.kind {
            Kind::File(b) => format!("file {:?}", String::from_utf8_lossy(b)),
            Kind::Dir => "directory".to_string(),
            Kind::Link(to) => format!("link to {}", to.display()),
            Kind::Other => "special file".to_string(),
        }
    }
}

/// Every name under the scratch directory (relative to it), links not
/// followed.
pub(super) type Snapshot = BTreeMap<PathBuf, Entry>;

pub(super) fn snapshot(top: &Path) -> Snapshot {
    let dir = rustix::fs::open(top, DIR, rustix::fs::Mode::empty()).unwrap();
    let mut out = Snapshot::new();
    walk(dir.as_fd(), Path::new(""), &mut out);
    out
}

/// How [`walk`] opens a directory: never through a link.
pub(super) const DIR: rustix::fs::OFlags = rustix::fs::OFlags::RDONLY
    .union(rustix::fs::OFlags::DIRECTORY)
    .union(rustix::fs::OFlags::NOFOLLOW)
    .union(rustix::fs::OFlags::CLOEXEC);

/// Walks the directory `dir` (whose name is `rel`) relative to its
/// descriptor: the deepest names the corpus makes are longer than a path
/// may be.
pub(super) fn walk(dir: BorrowedFd<'_>, rel: &Path, out: &mut Snapshot) {
    use rustix::fs::{openat, readlinkat, statat, AtFlags, FileType, Mode, OFlags};
    let mut names: Vec<std::ffi::CString> = {
        let listed = openat(dir, ".", DIR, Mode::empty()).unwrap();
        let entries = rustix::fs::Dir::read_from(&listed).unwrap();
        let mut names = Vec::new();
        for entry in entries {
            let name = entry.unwrap().file_name().to_owned();
            if name.as_bytes() != b"." && name.as_bytes() != b".." {
                names.push(name);
            }
        }
        names
    };
    names.sort();
    for name in names {
        let rel = rel.join(bytes_path(name.as_bytes()));
        let st = statat(dir, &*name, AtFlags::SYMLINK_NOFOLLOW).unwrap();
        let kind = match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {
                let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                let fd = openat(dir, &*name, flags, Mode::empty()).unwrap();
                let mut bytes = Vec::new();
                std::fs::File::from(fd).read_to_end(&mut bytes).unwrap();
                Kind::File(bytes)
            }
            FileType::Directory => Kind::Dir,
            FileType::Symlink => {
                let to = readlinkat(dir, &*name, Vec::new()).unwrap();
                Kind::Link(bytes_path(to.as_bytes()).to_path_buf())
            }
            _ => Kind::Other,
        };
        let is_dir = kind == Kind::Dir;
        out.insert(
            rel.clone(),
            Entry {
                kind,
                size: st.st_size as u64,
                ino: st.st_ino,
                mode: st.st_mode,
                mtime_ns: i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec),
            },
        );
        if is_dir {
            let sub = openat(dir, &*name, DIR, Mode::empty()).unwrap();
            walk(sub.as_fd(), &rel, out);
        }
    }
}

/// A name of a snapshot as it can be printed (its bytes, escaped).
pub(super) fn shown_path(path: &Path) -> String {
    path.as_os_str().as_bytes().escape_ascii().to_string()
}

/// The part of a snapshot outside the served directory.
pub(super) fn outside_part(s: &Snapshot) -> Snapshot {
    s.iter()
        .filter(|(k, _)| !k.starts_with("root"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

// ---------------------------------------------------------------------------
// The wire.

/// Sends `method target` (raw bytes) on a connection of its own, with
/// [`BODY`] for a `PUT`; the answer, if one came.
pub(super) fn send(addr: SocketAddr, method: &str, target: &[u8]) -> Option<Reply> {
    let mut head = Vec::with_capacity(target.len() + 100);
    head.extend_from_slice(method.as_bytes());
    head.push(b' ');
    head.extend_from_slice(target);
    head.extend_from_slice(b" HTTP/1.1\r\nHost: t\r\n");
    if method == "PUT" {
        head.extend_from_slice(format!("Content-Length: {}\r\n\r\n", BODY.len()).as_bytes());
        head.extend_from_slice(BODY);
    } else {
        head.extend_from_slice(b"\r\n");
    }
    let mut c = Client::connect(addr);
    c.send(&head);
    c.reply().ok()
}

/// A target as it can be printed: escaped, shortened.
pub(super) fn shown(target: &[u8]) -> String {
    let text: String = target.escape_ascii().to_string();
    if text.len() > 110 {
        format!("{}…({} bytes)", &text[..100], target.len())
    } else {
        text
    }
}

// ---------------------------------------------------------------------------
// The corpus.
