//! `MemHost`: a [`Host`] in memory, for tests of the host path on every
//! target. Paths resolve like the kernel's: intermediate symlinks are
//! followed (at most 40), `..` goes to the parent, a relative path starts at
//! `/`.

use super::host::{Host, HostError, HostKind, HostStat};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// Called with the operation (`"lstat"`, `"readlink"`, `"open"`,
/// `"readdir"`) and its path before it runs, without locks held: a test may
/// change the tree there (a swap between two looks).
type Hook = Arc<dyn Fn(&MemHost, &str, &[u8]) + Send + Sync>;

/// An in-memory tree of files, directories, symlinks (any target) and
/// "other" nodes (a FIFO's stand-in), all on device 1. Built with
/// [`MemHost::file`], [`MemHost::dir`], [`MemHost::symlink`],
/// [`MemHost::other`]; each creates missing parent directories (it does
/// not follow symlinks to find them) and replaces what was at the path with
/// a new node (a new inode).
#[doc(hidden)]
pub struct MemHost {
    tree: Mutex<Tree>,
    hook: Mutex<Option<Hook>>,
}

struct Tree {
    nodes: Vec<Node>,
    handles: HashMap<u64, usize>,
    next_handle: u64,
    clock: i64,
}

struct Node {
    kind: Kind,
    /// Nanoseconds; every change of the tree ticks the clock.
    time: i64,
}

enum Kind {
    File(Vec<u8>),
    Dir(BTreeMap<Vec<u8>, usize>),
    Symlink(Vec<u8>),
    Other,
}

const ROOT: usize = 0;

impl Default for MemHost {
    fn default() -> MemHost {
        MemHost::new()
    }
}

impl MemHost {
    /// An empty tree: only `/`.
    pub fn new() -> MemHost {
        MemHost {
            tree: Mutex::new(Tree {
                nodes: vec![Node {
                    kind: Kind::Dir(BTreeMap::new()),
                    time: 0,
                }],
                handles: HashMap::new(),
                next_handle: 3,
                clock: 0,
            }),
            hook: Mutex::new(None),
        }
    }

    fn tree(&self) -> MutexGuard<'_, Tree> {
        self.tree.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A regular file holding `bytes`.
    pub fn file(&self, path: impl AsRef<[u8]>, bytes: impl AsRef<[u8]>) -> &MemHost {
        self.put(path.as_ref(), Kind::File(bytes.as_ref().to_vec()))
    }

    /// An empty directory (a directory already there is kept as it is).
    pub fn dir(&self, path: impl AsRef<[u8]>) -> &MemHost {
        let mut tree = self.tree();
        tree.parents(path.as_ref(), true);
        drop(tree);
        self
    }

    /// A symlink to `target`, taken as is (relative, absolute, dangling).
    pub fn symlink(&self, path: impl AsRef<[u8]>, target: impl AsRef<[u8]>) -> &MemHost {
        self.put(path.as_ref(), Kind::Symlink(target.as_ref().to_vec()))
    }

    /// Something that is neither a file, a directory nor a symlink (a FIFO).
    pub fn other(&self, path: impl AsRef<[u8]>) -> &MemHost {
        self.put(path.as_ref(), Kind::Other)
    }

    /// Removes the entry `path` (not following a final symlink).
    pub fn remove(&self, path: impl AsRef<[u8]>) -> &MemHost {
        let mut tree = self.tree();
        let (dir, name) = tree.parents(path.as_ref(), false);
        if let Some(Kind::Dir(entries)) = dir.map(|d| &mut tree.nodes[d].kind) {
            entries.remove(&name);
        }
        drop(tree);
        self
    }

    /// Calls `hook` with the operation (`"lstat"`, `"readlink"`, `"open"`,
    /// `"readdir"`) and its path before each one runs (no lock held).
    pub fn before(&self, hook: impl Fn(&MemHost, &str, &[u8]) + Send + Sync + 'static) {
        *self.hook.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(hook));
    }

    fn call_hook(&self, op: &str, path: &[u8]) {
        let hook = self.hook.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(hook) = hook {
            hook(self, op, path);
        }
    }

    /// How many handles are open now (tests check that each was closed).
    pub fn open_handles(&self) -> usize {
        self.tree().handles.len()
    }

    fn put(&self, path: &[u8], kind: Kind) -> &MemHost {
        let mut tree = self.tree();
        let (dir, name) = tree.parents(path, false);
        let Some(dir) = dir else {
            panic!(
                "MemHost: no directory for {:?}",
                String::from_utf8_lossy(path)
            );
        };
        tree.clock += 1;
        let node = tree.nodes.len();
        let time = tree.clock * 1000;
        tree.nodes.push(Node { kind, time });
        if let Kind::Dir(entries) = &mut tree.nodes[dir].kind {
            entries.insert(name, node);
        }
        drop(tree);
        self
    }
}

impl Tree {
    /// For the builder: the directory that holds `path`'s last component
    /// (creating missing directories on the way; with `all`, the last one
    /// too) and that component.
    fn parents(&mut self, path: &[u8], all: bool) -> (Option<usize>, Vec<u8>) {
        let parts: Vec<&[u8]> = path
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty())
            .collect();
        let (dirs, last) = match (all, parts.split_last()) {
            (true, _) | (false, None) => (&parts[..], Vec::new()),
            (false, Some((last, dirs))) => (dirs, last.to_vec()),
        };
        let mut at = ROOT;
        for part in dirs {
            let found = match &self.nodes[at].kind {
                Kind::Dir(entries) => entries.get(*part).copied(),
                _ => return (None, last),
            };
            at = match found {
                Some(next) if matches!(self.nodes[next].kind, Kind::Dir(_)) => next,
                // The builder does not follow symlinks.
                Some(_) => return (None, last),
                None => {
                    self.clock += 1;
                    let node = self.nodes.len();
                    let time = self.clock * 1000;
                    self.nodes.push(Node {
                        kind: Kind::Dir(BTreeMap::new()),
                        time,
                    });
                    if let Kind::Dir(entries) = &mut self.nodes[at].kind {
                        entries.insert(part.to_vec(), node);
                    }
                    node
                }
            };
        }
        (Some(at), last)
    }

    /// The node `path` names, like the kernel: intermediate symlinks
    /// followed, the last one only with `follow_last` (or a trailing `/`).
    fn resolve(&self, path: &[u8], follow_last: bool) -> Result<usize, HostError> {
        let trailing = path.ends_with(b"/");
        let follow_last = follow_last || trailing;
        // The directories from `/` to the current one.
        let mut stack = vec![ROOT];
        let mut pending: Vec<Vec<u8>> = Vec::new();
        push_parts(&mut pending, path);
        let mut links = 0;
        let mut result = ROOT;
        while let Some(part) = pending.pop() {
            let last = pending.is_empty();
            let here = *stack.last().unwrap_or(&ROOT);
            result = here;
            if part == b"." {
                continue;
            }
            if part == b".." {
                if stack.len() > 1 {
                    stack.pop();
                }
                result = *stack.last().unwrap_or(&ROOT);
                continue;
            }
            let Kind::Dir(entries) = &self.nodes[here].kind else {
                return Err(HostError::NotDir);
            };
            if part.len() > 255 {
                return Err(HostError::NotFound);
            }
            let Some(&node) = entries.get(&part) else {
                return Err(HostError::NotFound);
            };
            match &self.nodes[node].kind {
                Kind::Symlink(target) if !last || follow_last => {
                    links += 1;
                    if links > 40 {
                        return Err(HostError::Loop);
                    }
                    if target.is_empty() {
                        return Err(HostError::NotFound);
                    }
                    if target[0] == b'/' {
                        stack.truncate(1);
                    }
                    push_parts(&mut pending, target);
                    result = *stack.last().unwrap_or(&ROOT);
                }
                Kind::Dir(_) => {
                    stack.push(node);
                    result = node;
                }
                _ if last => result = node,
                // A file in the middle: the next component cannot be in it.
                _ => return Err(HostError::NotDir),
            }
        }
        if trailing && !matches!(self.nodes[result].kind, Kind::Dir(_)) {
            return Err(HostError::NotDir);
        }
        Ok(result)
    }

    fn stat(&self, node: usize) -> HostStat {
        let n = &self.nodes[node];
        let (kind, size) = match &n.kind {
            Kind::File(bytes) => (HostKind::File, bytes.len() as u64),
            Kind::Dir(_) => (HostKind::Dir, 0),
            Kind::Symlink(target) => (HostKind::Symlink, target.len() as u64),
            Kind::Other => (HostKind::Other, 0),
        };
        HostStat {
            kind,
            dev: 1,
            ino: node as u64 + 1,
            size,
            mtime_ns: n.time,
            ctime_ns: n.time,
        }
    }
}

/// Puts the components of `path` in front of the pending ones.
fn push_parts(pending: &mut Vec<Vec<u8>>, path: &[u8]) {
    let at = pending.len();
    pending.extend(
        path.split(|&b| b == b'/')
            .filter(|c| !c.is_empty())
            .map(<[u8]>::to_vec),
    );
    pending[at..].reverse();
}

impl Host for MemHost {
    fn lstat(&self, path: &[u8]) -> Result<HostStat, HostError> {
        self.call_hook("lstat", path);
        let tree = self.tree();
        let node = tree.resolve(path, false)?;
        Ok(tree.stat(node))
    }

    fn readlink(&self, path: &[u8]) -> Result<Vec<u8>, HostError> {
        self.call_hook("readlink", path);
        let tree = self.tree();
        match &tree.nodes[tree.resolve(path, false)?].kind {
            Kind::Symlink(target) => Ok(target.clone()),
            _ => Err(HostError::NotSymlink),
        }
    }

    fn open(&self, path: &[u8]) -> Result<u64, HostError> {
        self.call_hook("open", path);
        let mut tree = self.tree();
        let node = tree.resolve(path, false)?;
        if let Kind::Symlink(_) = tree.nodes[node].kind {
            return Err(HostError::Loop);
        }
        let handle = tree.next_handle;
        tree.next_handle += 1;
        tree.handles.insert(handle, node);
        Ok(handle)
    }

    fn fstat(&self, handle: u64) -> Result<HostStat, HostError> {
        let tree = self.tree();
        match tree.handles.get(&handle) {
            Some(&node) => Ok(tree.stat(node)),
            None => Err(HostError::Other("EBADF: bad handle".into())),
        }
    }

    fn pread(&self, handle: u64, buf: &mut [u8], offset: u64) -> Result<usize, HostError> {
        let tree = self.tree();
        let Some(&node) = tree.handles.get(&handle) else {
            return Err(HostError::Other("EBADF: bad handle".into()));
        };
        let Kind::File(bytes) = &tree.nodes[node].kind else {
            return Err(HostError::Other("EISDIR: not a file".into()));
        };
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let n = buf.len().min(bytes.len() - start);
        buf[..n].copy_from_slice(&bytes[start..start + n]);
        Ok(n)
    }

    fn close(&self, handle: u64) {
        self.tree().handles.remove(&handle);
    }

    fn readdir(&self, path: &[u8]) -> Result<Vec<(Vec<u8>, HostKind)>, HostError> {
        self.call_hook("readdir", path);
        let tree = self.tree();
        let node = tree.resolve(path, true)?;
        let Kind::Dir(entries) = &tree.nodes[node].kind else {
            return Err(HostError::NotDir);
        };
        Ok(entries
            .iter()
            .map(|(name, &n)| (name.clone(), tree.stat(n).kind))
            .collect())
    }
}
