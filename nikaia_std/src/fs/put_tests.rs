//! The write path on real files: each mode, each outcome, both kinds of
//! temporary, the sweep.

use super::*;
use crate::fs::temp::{force_named_temporaries, sweep_dir, STARTED};
use crate::fs::{Root, TEMPORARY_PREFIX};
use rustix::fs::{Mode as Perm, OFlags};
use std::path::PathBuf;
use std::sync::Mutex;

/// The named-temporary switch is process-wide: these tests take turns.
static TURNS: Mutex<()> = Mutex::new(());

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nikaia-put-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    dir
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn put(root: &Root, name: &str, mode: Mode, data: &[u8]) -> Result<Written, Error> {
    let mut w = root.begin_write(name, mode)?;
    w.write(data)?;
    w.commit(Durability::Data)
}

#[test]
fn each_mode_gives_the_name_only_at_commit() {
    let _turn = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("modes");
    let root = Root::dir(&dir).unwrap();
    let mut w = root.begin_write("sub/a", Mode::Create).unwrap();
    w.write(b"first").unwrap();
    // Written, not named: nothing under any name yet.
    assert_eq!(names(&dir.join("sub")), Vec::<String>::new());
    let done = w.commit(Durability::Full).unwrap();
    assert!(done.created);
    assert_eq!(std::fs::read(dir.join("sub/a")).unwrap(), b"first");
    // Create only: the name exists.
    assert!(matches!(
        put(&root, "sub/a", Mode::Create, b"x"),
        Err(Error::Exists)
    ));
    // Replace if: a stale ETag is refused, the current one wins once.
    let stale = "\"1-1\"".to_owned();
    assert!(matches!(
        put(&root, "sub/a", Mode::ReplaceIf(stale), b"x"),
        Err(Error::Precondition)
    ));
    let now = done.id.etag();
    let again = put(&root, "sub/a", Mode::ReplaceIf(now.clone()), b"second").unwrap();
    assert!(!again.created);
    assert_ne!(again.id.ino, done.id.ino);
    assert_eq!(std::fs::read(dir.join("sub/a")).unwrap(), b"second");
    // Replace: whatever was there.
    put(&root, "sub/a", Mode::Replace, b"third").unwrap();
    assert_eq!(std::fs::read(dir.join("sub/a")).unwrap(), b"third");
    // No temporary is left anywhere.
    assert_eq!(names(&dir.join("sub")), vec!["a"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_create_that_loses_at_commit_leaves_the_winner() {
    let _turn = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("race");
    let root = Root::dir(&dir).unwrap();
    let mut first = root.begin_write("r", Mode::Create).unwrap();
    let mut second = root.begin_write("r", Mode::Create).unwrap();
    first.write(b"one").unwrap();
    second.write(b"two").unwrap();
    first.commit(Durability::None).unwrap();
    assert!(matches!(
        second.commit(Durability::None),
        Err(Error::Exists)
    ));
    assert_eq!(std::fs::read(dir.join("r")).unwrap(), b"one");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn names_that_cannot_be_written_are_refused() {
    let _turn = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("names");
    let root = Root::dir(&dir).unwrap();
    let outside = |r: Result<Writing, Error>| matches!(r, Err(Error::Outside(_)));
    assert!(outside(root.begin_write("../x", Mode::Replace)));
    assert!(outside(root.begin_write("/etc/x", Mode::Replace)));
    assert!(outside(root.begin_write(".nikaia-tmp-0011", Mode::Replace)));
    assert!(outside(root.begin_write(".nikaia-tmp-00/x", Mode::Replace)));
    assert!(matches!(
        root.begin_write("sub/", Mode::Replace),
        Err(Error::NotAFile { directory: true })
    ));
    assert!(matches!(
        root.begin_write("sub", Mode::Replace),
        Err(Error::NotAFile { directory: true })
    ));
    assert!(matches!(
        root.begin_write("missing/x", Mode::Replace),
        Err(Error::NotFound)
    ));
    // A symlink out of the root is not followed, for the directory or as
    // the name; one inside writes its target, and stays a link.
    std::os::unix::fs::symlink("/tmp", dir.join("out")).unwrap();
    assert!(outside(root.begin_write("out/x", Mode::Replace)));
    std::os::unix::fs::symlink("/etc/hostname", dir.join("link")).unwrap();
    assert!(outside(root.begin_write("link", Mode::Replace)));
    std::os::unix::fs::symlink("../x", dir.join("sub/up")).unwrap();
    put(&root, "sub/up", Mode::Create, b"through").unwrap();
    assert_eq!(std::fs::read(dir.join("x")).unwrap(), b"through");
    assert!(std::fs::symlink_metadata(dir.join("sub/up"))
        .unwrap()
        .file_type()
        .is_symlink());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_named_temporary_is_removed_when_dropped_and_swept_when_left() {
    let _turn = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("named");
    let root = Root::dir(&dir).unwrap();
    force_named_temporaries(true);
    let mut w = root.begin_write("n", Mode::Replace).unwrap();
    w.write(b"partial").unwrap();
    let listed = names(&dir);
    assert!(
        listed.iter().any(|n| n.starts_with(TEMPORARY_PREFIX)),
        "{listed:?}"
    );
    drop(w);
    assert_eq!(names(&dir), vec!["sub"]);
    put(&root, "n", Mode::Replace, b"whole").unwrap();
    put(&root, "n", Mode::ReplaceIf("*".into()), b"again").unwrap();
    force_named_temporaries(false);
    assert_eq!(names(&dir), vec!["n", "sub"]);
    assert_eq!(std::fs::read(dir.join("n")).unwrap(), b"again");
    // A temporary left by a killed process (older than this one's first
    // write) is swept; a fresh one is not.
    let old = dir.join(".nikaia-tmp-left");
    std::fs::write(&old, b"x").unwrap();
    let fresh = dir.join(".nikaia-tmp-live");
    std::fs::write(&fresh, b"x").unwrap();
    let f = std::fs::File::options().write(true).open(&old).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000))
        .unwrap();
    let fd = rustix::fs::open(&dir, OFlags::PATH | OFlags::DIRECTORY, Perm::empty()).unwrap();
    assert_eq!(sweep_dir(fd.as_fd(), *STARTED), 1);
    assert!(!old.exists() && fresh.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fs_write_replaces_whole() {
    let _turn = TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("fswrite");
    let root = Root::dir(&dir).unwrap();
    crate::fs::write("w", &root, b"long old contents").unwrap();
    let held = std::fs::File::open(dir.join("w")).unwrap();
    crate::fs::write("w", &root, b"new").unwrap();
    assert_eq!(std::fs::read(dir.join("w")).unwrap(), b"new");
    // The old file was not truncated in place: a reader holding it still
    // reads all of its bytes.
    let mut old = String::new();
    std::io::Read::read_to_string(&mut &held, &mut old).unwrap();
    assert_eq!(old, "long old contents");
    std::fs::remove_dir_all(&dir).unwrap();
}
