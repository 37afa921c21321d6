//! The resolver as a differential, for the fuzz target `resolve` and its
//! stable replay: one name, resolved under the same tree by openat2, by the
//! walk over descriptors, and by the walk over an in-memory copy of the tree
//! (the wasm32 path); any disagreement, or any name that reaches the secret
//! beside the root, panics. Not part of the language surface.

use super::{force_fallback_walk, Error, MemHost, Root};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

const SECRET: &[u8] = b"SECRET BESIDE THE ROOT";

struct Tree {
    _dir: PathBuf,
    root: Root,
    host_root: Root,
}

/// The tree, made once per process: files, directories, symlinks inside,
/// up, out, absolute, looping, and to a directory; a FIFO; the secret
/// beside the root.
fn tree() -> &'static Mutex<Tree> {
    static TREE: OnceLock<Mutex<Tree>> = OnceLock::new();
    TREE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("nikaia-fuzz-{}", std::process::id()));
        let root = dir.join("root");
        let host = MemHost::new();
        let mk = |p: &Path| std::fs::create_dir_all(p).expect("fuzz tree");
        mk(&root.join("sub/deeper"));
        host.dir(dir.as_os_str().as_bytes())
            .dir(root.as_os_str().as_bytes())
            .dir(root.join("sub").as_os_str().as_bytes())
            .dir(root.join("sub/deeper").as_os_str().as_bytes());
        let files: [(&str, &[u8]); 4] = [
            ("a.txt", b"a"),
            ("sub/b.txt", b"b"),
            ("sub/deeper/c.txt", b"c"),
            ("sub/.hidden", b"h"),
        ];
        for (name, bytes) in files {
            let p = root.join(name);
            std::fs::write(&p, bytes).expect("fuzz tree");
            host.file(p.as_os_str().as_bytes(), bytes);
        }
        let secret = dir.join("secret");
        std::fs::write(&secret, SECRET).expect("fuzz tree");
        host.file(secret.as_os_str().as_bytes(), SECRET);
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
            let p = root.join(name);
            let _ = std::os::unix::fs::symlink(target, &p);
            host.symlink(p.as_os_str().as_bytes(), target);
        }
        let fifo = root.join("fifo");
        let _ = rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        );
        host.other(fifo.as_os_str().as_bytes());
        let host: Arc<dyn super::Host> = Arc::new(host);
        Mutex::new(Tree {
            root: Root::dir(&root).expect("fuzz root"),
            host_root: Root::on_host(&root, host).expect("fuzz host root"),
            _dir: dir,
        })
    })
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

/// Resolves `data` as a name three ways; they must agree, and none may
/// return the secret.
pub fn resolve(data: &[u8]) {
    if data.len() > 512 {
        return;
    }
    let name = Path::new(OsStr::from_bytes(data));
    let tree = tree().lock().unwrap_or_else(|e| e.into_inner());
    let read_file = |o: super::Opened| {
        use std::io::Read;
        let mut out = Vec::new();
        let _ = (&o.file).read_to_end(&mut out);
        out
    };
    force_fallback_walk(false);
    let by_openat2 = outcome(tree.root.open(name), read_file);
    force_fallback_walk(true);
    let by_walk = outcome(tree.root.open(name), read_file);
    force_fallback_walk(false);
    let by_host = outcome(tree.host_root.open_host(name), |(file, id)| {
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
    for o in [&by_openat2, &by_walk, &by_host] {
        assert_ne!(
            o,
            &Outcome::File(SECRET.to_vec()),
            "{name:?} reached the secret"
        );
    }
    assert_eq!(
        by_openat2, by_walk,
        "{name:?}: openat2 and the walk disagree"
    );
    assert_eq!(
        by_walk, by_host,
        "{name:?}: the walk on descriptors and on a host disagree"
    );
}
