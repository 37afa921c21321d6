//! The resolver as a differential, for the fuzz target `resolve` and its
//! stable replay: one name, resolved under a tree the input partly
//! generates, by openat2, by the walk over descriptors, by the walk over an
//! in-memory copy of the tree (the wasm32 path), and by a lexical model of
//! `spec/fs-root.md` written here apart from all three; any disagreement,
//! or any name that reaches the secret beside the root, panics. Not part of
//! the language surface.

use super::{force_fallback_walk, Error, MemHost, Root};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

const SECRET: &[u8] = b"SECRET BESIDE THE ROOT";

struct Tree {
    dir: PathBuf,
    root: Root,
}

/// The fixed part of the tree, made once per process: files, directories,
/// symlinks inside, up, out, absolute, looping, and to a directory; a FIFO;
/// the secret beside the root. Each input adds its own entries under
/// `root/g` (see [`generate`]).
fn tree() -> &'static Mutex<Tree> {
    static TREE: OnceLock<Mutex<Tree>> = OnceLock::new();
    TREE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("nikaia-fuzz-{}", std::process::id()));
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("sub/deeper")).expect("fuzz tree");
        let files: [(&str, &[u8]); 4] = [
            ("a.txt", b"a"),
            ("sub/b.txt", b"b"),
            ("sub/deeper/c.txt", b"c"),
            ("sub/.hidden", b"h"),
        ];
        for (name, bytes) in files {
            std::fs::write(root.join(name), bytes).expect("fuzz tree");
        }
        std::fs::write(dir.join("secret"), SECRET).expect("fuzz tree");
        let links = [
            ("up", ".."),
            ("sub/up2", "../.."),
            ("to_sub", "sub"),
            ("to_deeper", "sub/deeper/"),
            ("out", "../secret"),
            ("sub/out2", "../../secret"),
            ("abs", "/etc/hostname"),
            ("loop1", "loop2"),
            ("loop2", "loop1"),
            ("self", "."),
            ("sub/back", "../a.txt"),
            ("dangling", "nowhere"),
            ("empty_target", "sub/deeper/c.txt/"),
        ];
        for (name, target) in links {
            let _ = std::os::unix::fs::symlink(target, root.join(name));
        }
        fifo(&root.join("fifo"));
        Mutex::new(Tree {
            root: Root::dir(&root).expect("fuzz root"),
            dir,
        })
    })
}

fn fifo(path: &Path) {
    let _ = rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    );
}

/// Names and symlink targets the generated entries draw from.
const NAMES: [&str; 8] = ["a", "b", "c", "d.txt", ".h", "x y", "l", "m"];
const TARGETS: [&str; 20] = [
    "a",
    "b",
    "l",
    "m",
    "..",
    "../..",
    "../../..",
    ".",
    "a/b",
    "../a",
    "a/",
    "nowhere",
    "/etc/hostname",
    "../secret",
    "../../secret",
    "../../../secret",
    "../g/a",
    "../../root/a.txt",
    "../a.txt",
    "b/../../sub",
];

/// Makes `root/g` afresh with the entries the input's head asks for: a
/// first byte of 0xE0 or more says how many (its low 3 bits), three bytes
/// each (kind and parent, name, target). The rest of the input is the name
/// to resolve; an input whose first byte is below 0xE0 is all name.
fn generate<'a>(root: &Path, data: &'a [u8]) -> &'a [u8] {
    let g = root.join("g");
    let _ = std::fs::remove_dir_all(&g);
    let Some((&first, rest)) = data.split_first().filter(|(&b, _)| b >= 0xE0) else {
        return data;
    };
    std::fs::create_dir(&g).expect("fuzz tree: g");
    let count = usize::from(first & 7);
    let Some(specs) = rest.get(..count * 3) else {
        return &[];
    };
    let mut dirs = vec![g];
    for (i, spec) in specs.chunks(3).enumerate() {
        let parent = &dirs[usize::from(spec[0] >> 2) % dirs.len()];
        let path = parent.join(NAMES[usize::from(spec[1]) % NAMES.len()]);
        if path.symlink_metadata().is_ok() {
            continue;
        }
        match spec[0] & 3 {
            0 => {
                std::fs::create_dir(&path).expect("fuzz tree: dir");
                dirs.push(path);
            }
            1 => std::fs::write(&path, format!("generated {i}")).expect("fuzz tree: file"),
            2 => {
                let target = TARGETS[usize::from(spec[2]) % TARGETS.len()];
                std::os::unix::fs::symlink(target, &path).expect("fuzz tree: symlink");
            }
            _ => fifo(&path),
        }
    }
    &rest[count * 3..]
}

/// One entry of the tree as `lstat` and `readlink` see it.
enum Entry {
    Dir(BTreeMap<Vec<u8>, Entry>),
    File(Vec<u8>),
    Link(Vec<u8>),
    Other,
}

/// Reads the tree under `path` from disk, following no symlink.
fn scan(path: &Path) -> Entry {
    let meta = path.symlink_metadata().expect("fuzz tree: lstat");
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = std::fs::read_link(path).expect("fuzz tree: readlink");
        Entry::Link(target.into_os_string().into_vec())
    } else if kind.is_dir() {
        let entries = std::fs::read_dir(path).expect("fuzz tree: readdir");
        Entry::Dir(
            entries
                .map(|e| {
                    let e = e.expect("fuzz tree: entry");
                    (e.file_name().into_vec(), scan(&e.path()))
                })
                .collect(),
        )
    } else if kind.is_file() {
        Entry::File(std::fs::read(path).expect("fuzz tree: read"))
    } else {
        Entry::Other
    }
}

/// The same tree in a [`MemHost`], at the same absolute paths.
fn mirror(host: &MemHost, path: &mut Vec<u8>, entry: &Entry) {
    match entry {
        Entry::Dir(entries) => {
            host.dir(&path[..]);
            for (name, e) in entries {
                let len = path.len();
                path.push(b'/');
                path.extend_from_slice(name);
                mirror(host, path, e);
                path.truncate(len);
            }
        }
        Entry::File(bytes) => {
            host.file(&path[..], bytes);
        }
        Entry::Link(target) => {
            host.symlink(&path[..], target);
        }
        Entry::Other => {
            host.other(&path[..]);
        }
    }
}

/// `spec/fs-root.md` as a model over the scanned tree, by the text and
/// nothing else: the lexical refusals, then one component at a time with a
/// stack of directories entered; `..` past the root, an absolute target or
/// a 41st symlink is `Outside`; a trailing `/` is a final `.`.
fn model(root: &Entry, name: &[u8]) -> Outcome {
    if name.is_empty() || name.contains(&0) || name.starts_with(b"/") {
        return Outcome::Outside;
    }
    if name.len() >= 4096 {
        return Outcome::NotFound;
    }
    let mut pending: Vec<&[u8]> = components(name);
    pending.reverse();
    let mut stack = vec![root];
    let mut links = 0;
    while let Some(part) = pending.pop() {
        let last = pending.is_empty();
        let here = stack[stack.len() - 1];
        match part {
            b"." if last => return Outcome::NotAFile,
            b"." => continue,
            b".." => {
                stack.pop();
                if stack.is_empty() {
                    return Outcome::Outside;
                }
                if last {
                    return Outcome::NotAFile;
                }
                continue;
            }
            _ => {}
        }
        let Entry::Dir(entries) = here else {
            unreachable!("only directories are entered")
        };
        match entries.get(part) {
            None => return Outcome::NotFound,
            Some(Entry::Dir(_)) if last => return Outcome::NotAFile,
            Some(d @ Entry::Dir(_)) => stack.push(d),
            Some(Entry::File(bytes)) if last => return Outcome::File(bytes.clone()),
            Some(Entry::Other) if last => return Outcome::NotAFile,
            Some(Entry::File(_) | Entry::Other) => return Outcome::NotFound,
            Some(Entry::Link(target)) => {
                links += 1;
                if links > 40 || target.starts_with(b"/") {
                    return Outcome::Outside;
                }
                if target.is_empty() {
                    return Outcome::NotFound;
                }
                // Resolved from the directory that holds the link.
                pending.extend(components(target).into_iter().rev());
            }
        }
    }
    unreachable!("a name that is not empty has a last component")
}

/// A name's components: split on `/`, empty ones dropped, a trailing `/`
/// read as a final `.`.
fn components(name: &[u8]) -> Vec<&[u8]> {
    let mut parts: Vec<&[u8]> = name
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .collect();
    if name.ends_with(b"/") {
        parts.push(b".");
    }
    parts
}

/// What an open came to, comparable across the three resolvers.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    File(Vec<u8>),
    Outside,
    NotFound,
    NotAFile,
    Other(String),
}

fn outcome<T>(r: Result<T, Error>, read: impl FnOnce(T) -> Vec<u8>) -> Outcome {
    match r {
        Ok(f) => Outcome::File(read(f)),
        Err(Error::Outside(_)) => Outcome::Outside,
        Err(Error::NotFound) => Outcome::NotFound,
        Err(Error::NotAFile { .. }) => Outcome::NotAFile,
        Err(e) => Outcome::Other(e.to_string()),
    }
}

/// Resolves the input's name four ways under the tree it generates; they
/// must agree, and none may return the secret.
pub fn resolve(data: &[u8]) {
    if data.len() > 512 {
        return;
    }
    let tree = tree().lock().unwrap_or_else(|e| e.into_inner());
    let root_path = tree.dir.join("root");
    let name = generate(&root_path, data);
    let name_path = Path::new(OsStr::from_bytes(name));
    let on_disk = scan(&tree.dir);
    let host = MemHost::new();
    mirror(
        &host,
        &mut tree.dir.as_os_str().as_bytes().to_vec(),
        &on_disk,
    );
    let host_root = Root::on_host(&root_path, Arc::new(host)).expect("fuzz host root");
    let read_file = |o: super::Opened| {
        use std::io::Read;
        let mut out = Vec::new();
        let _ = (&o.file).read_to_end(&mut out);
        out
    };
    force_fallback_walk(false);
    let by_openat2 = outcome(tree.root.open(name_path), read_file);
    force_fallback_walk(true);
    let by_walk = outcome(tree.root.open(name_path), read_file);
    force_fallback_walk(false);
    let by_host = outcome(host_root.open_host(name_path), |(file, id)| {
        let mut out = vec![0; id.size as usize];
        let mut got = 0;
        while got < out.len() {
            match file.read_at(&mut out[got..], got as u64) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        out.truncate(got);
        out
    });
    let Entry::Dir(top) = &on_disk else {
        unreachable!("the fuzz tree's top is a directory")
    };
    let by_model = model(&top[&b"root"[..]], name);
    for o in [&by_openat2, &by_walk, &by_host] {
        assert_ne!(
            o,
            &Outcome::File(SECRET.to_vec()),
            "{name_path:?} reached the secret"
        );
    }
    assert_eq!(
        by_openat2, by_walk,
        "{name_path:?}: openat2 and the walk disagree"
    );
    assert_eq!(
        by_walk, by_host,
        "{name_path:?}: the walk on descriptors and on a host disagree"
    );
    assert_eq!(
        by_openat2, by_model,
        "{name_path:?}: openat2 and the model of spec/fs-root.md disagree"
    );
}
