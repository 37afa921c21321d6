//! The per-component resolution, written once for every target: the Linux
//! fallback runs it over descriptors it opened itself (`fd.rs`), wasm32 runs
//! it over a host adapter's paths (`host.rs`).
//!
//! No name is ever handed whole to what is below: each component is looked
//! up relative to the directory reached so far, symlinks are read and their
//! targets' components spliced in front of the remaining ones, and `..` pops
//! a stack of the directories entered, so it can never rise above the root.

use super::open::{Purpose, PATH_MAX};
use super::{Error, Outside};
use std::path::Path;

/// Stands for a trailing `/` among the pending components (a real component
/// never contains `/`). Before the last component it is skipped; as the last
/// it is `.`, so the name before it must be a directory.
const TRAILING: &[u8] = b"/";

/// The kernel's limit on symlinks followed in one lookup (`MAXSYMLINKS`).
pub(crate) const MAX_LINKS: usize = 40;

/// Why one step of a [`Lookup`] did not give what was asked.
#[derive(Debug)]
pub(crate) enum Miss {
    /// The component was refused because it is a symlink (opened without
    /// following it: `ELOOP`). The walk reads it; if it turns out not to be
    /// one after all, this is `Outside` (as the kernel's `ELOOP`).
    Symlink,
    /// The component is not a directory, or may be a symlink that was
    /// refused as one (`ENOTDIR` from `O_DIRECTORY`). The walk reads it; if
    /// it is not a symlink, this is `NotFound`.
    NotDir,
    /// From [`Lookup::readlink`] only: the component is not a symlink.
    NotALink,
    /// No such component.
    NotFound,
    /// The lookup refuses to go there (a procfs directory on Linux; a file
    /// swapped between two looks on a host).
    Outside,
    /// Any other outcome, already decided.
    Other(Error),
}

/// What the walk needs from below: directories entered one component at a
/// time, a final open that never follows a symlink, and `readlink`.
///
/// `component` never contains `/`, and is never `..`; it is `.` only for the
/// final open (the directory reached itself).
pub(crate) trait Lookup {
    /// A directory entered below the root (or the root itself).
    type Dir;
    /// What the final open gives.
    type File;
    /// The root: the bottom of the stack, never popped.
    fn root(&self) -> Self::Dir;
    /// Enters the directory `component` of `at`, without following a symlink.
    fn open_dir(&self, at: &Self::Dir, component: &[u8]) -> Result<Self::Dir, Miss>;
    /// The final open of `component` in `at` for `purpose`, without
    /// following a symlink.
    fn open_file(
        &self,
        at: &Self::Dir,
        component: &[u8],
        purpose: Purpose,
    ) -> Result<Self::File, Miss>;
    /// The target of the symlink `component` in `at`.
    fn readlink(&self, at: &Self::Dir, component: &[u8]) -> Result<Vec<u8>, Miss>;
}

/// Opens `name` (already checked lexically) beneath the lookup's root,
/// refusing what openat2 with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`
/// refuses.
pub(crate) fn open_beneath<L: Lookup>(
    lookup: &L,
    name: &Path,
    purpose: Purpose,
) -> Result<L::File, Error> {
    let bytes = name.as_os_str().as_encoded_bytes();
    if bytes.len() >= PATH_MAX {
        // ENAMETOOLONG.
        return Err(Error::NotFound);
    }
    let outside = || Error::Outside(Outside::new(name));
    let fail = |miss: Miss| match miss {
        Miss::Symlink | Miss::Outside => outside(),
        Miss::NotDir | Miss::NotALink | Miss::NotFound => Error::NotFound,
        Miss::Other(e) => e,
    };
    let root = lookup.root();
    // The directories entered below the root; the last one is current.
    let mut entered: Vec<L::Dir> = Vec::new();
    // The components still to resolve, the next one last.
    let mut pending: Vec<Vec<u8>> = Vec::new();
    splice(&mut pending, bytes);
    let mut links = 0;

    while let Some(mut component) = pending.pop() {
        let last = pending.is_empty();
        if component == TRAILING {
            if !last {
                continue;
            }
            component = b".".to_vec();
        }
        if component == b".." {
            if entered.pop().is_none() {
                return Err(outside());
            }
            if !last {
                continue;
            }
            component = b".".to_vec();
        } else if component == b"." && !last {
            continue;
        }
        let dir = entered.last().unwrap_or(&root);

        let miss = if last {
            match lookup.open_file(dir, &component, purpose) {
                Ok(file) => return Ok(file),
                Err(miss) => miss,
            }
        } else {
            match lookup.open_dir(dir, &component) {
                Ok(next) => {
                    entered.push(next);
                    continue;
                }
                Err(miss) => miss,
            }
        };
        // The component may be a symlink: read it.
        if !matches!(miss, Miss::Symlink | Miss::NotDir) {
            return Err(fail(miss));
        }
        let target = match lookup.readlink(dir, &component) {
            Ok(target) => target,
            // Not a symlink: the first answer stands.
            Err(Miss::NotALink) => return Err(fail(miss)),
            Err(other) => return Err(fail(other)),
        };
        links += 1;
        if links > MAX_LINKS {
            // ELOOP.
            return Err(outside());
        }
        match target.first() {
            None => return Err(Error::NotFound),
            Some(b'/') => return Err(outside()),
            Some(_) => splice(&mut pending, &target),
        }
    }
    // A name that is not empty and not absolute always has a last
    // component, so this is not reached; refuse rather than guess.
    Err(outside())
}

/// Puts the components of `path` in front of the pending ones, with
/// [`TRAILING`] for a trailing `/`.
fn splice(pending: &mut Vec<Vec<u8>>, path: &[u8]) {
    if path.ends_with(b"/") {
        pending.push(TRAILING.to_vec());
    }
    let parts = path.split(|&b| b == b'/').filter(|c| !c.is_empty());
    let at = pending.len();
    pending.extend(parts.map(<[u8]>::to_vec));
    pending[at..].reverse();
}
