//! The parent walker on real directories: what each reach makes of a
//! missing level, a link in the middle or at the end, `..`, the root
//! itself, and a middle directory renamed while the step runs.

use super::*;
use crate::fs::{Conditions, Durability, Mode};
use std::cell::Cell;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::PathBuf;

/// A scratch directory holding `root/` (with `sub/`) and, beside it,
/// `outside/`: nothing may ever appear in the latter.
struct Tree {
    top: PathBuf,
    root: Root,
}

impl Tree {
    fn new(tag: &str) -> Tree {
        let top = std::env::temp_dir().join(format!("nikaia-parent-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&top);
        std::fs::create_dir_all(top.join("root/sub")).unwrap();
        std::fs::create_dir_all(top.join("outside")).unwrap();
        let root = Root::dir(top.join("root")).unwrap();
        Tree { top, root }
    }

    fn path(&self, under_root: &str) -> PathBuf {
        self.top.join("root").join(under_root)
    }

    fn ino(&self, under_root: &str) -> u64 {
        std::fs::symlink_metadata(self.path(under_root))
            .unwrap()
            .ino()
    }

    fn outside(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.top.join("outside"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Each name is `Outside` as `reach` reaches it, and nothing appeared
    /// outside.
    fn all_outside(&self, names: &[&str], reach: Reach<'_>) {
        for name in names {
            let r = self.reach(name, reach);
            assert!(matches!(r, Err(Error::Outside(_))), "{name}: {r:?}");
        }
        assert_eq!(self.outside(), Vec::<String>::new());
    }

    /// Where the step ran: its directory's inode, and the last component
    /// it was given.
    fn reach(&self, name: &str, reach: Reach<'_>) -> Result<(u64, String), Error> {
        in_parent(&self.root, Path::new(name), reach, |dir, entry| {
            let st = rustix::fs::fstat(&dir).unwrap();
            Ok((st.st_ino, String::from_utf8(entry.to_vec()).unwrap()))
        })
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.top);
    }
}

fn refused(r: Result<(u64, String), Error>) -> bool {
    matches!(r, Err(Error::Denied(_)))
}

const MAKE: Guard = Guard {
    make_dirs: true,
    protected: Vec::new(),
    held: crate::fs::Held(None),
};

const NO_MAKE: Guard = Guard {
    make_dirs: false,
    protected: Vec::new(),
    held: crate::fs::Held(None),
};

#[test]
fn a_missing_level_is_made_only_when_the_guard_says_so() {
    let t = Tree::new("missing");
    let name = "new/deeper/f";
    assert!(matches!(
        t.reach(name, Reach::NoLinks(&NO_MAKE)),
        Err(Error::NotFound)
    ));
    assert!(matches!(t.reach(name, Reach::AsRead), Err(Error::NotFound)));
    assert!(!t.path("new").exists(), "nothing made when not asked");
    let (dir, entry) = t.reach(name, Reach::NoLinks(&MAKE)).unwrap();
    assert_eq!((dir, entry.as_str()), (t.ino("new/deeper"), "f"));
    assert!(!t.path("new/deeper/f").exists(), "the step makes the entry");
    // Made levels are directories like any other: found again as they are.
    let again = t.reach(name, Reach::NoLinks(&NO_MAKE)).unwrap();
    assert_eq!(again, (t.ino("new/deeper"), "f".to_owned()));
    // A file where a level should be is no directory, and nothing is made
    // through it.
    std::fs::write(t.path("file"), b"x").unwrap();
    for reach in [Reach::NoLinks(&MAKE), Reach::AsRead] {
        assert!(matches!(t.reach("file/f", reach), Err(Error::NotFound)));
    }
}

#[test]
fn a_link_in_the_middle_is_never_followed_by_a_guarded_write() {
    let t = Tree::new("middle");
    symlink("sub", t.path("in")).unwrap();
    symlink("../outside", t.path("out")).unwrap();
    symlink("../outside/new", t.path("dangling")).unwrap();
    for name in ["in/f", "out/f", "dangling/f", "dangling/more/f"] {
        assert!(refused(t.reach(name, Reach::NoLinks(&MAKE))), "{name}");
    }
    assert_eq!(t.outside(), Vec::<String>::new(), "nothing made outside");
    // As a read would: a link that stays inside is followed, one that
    // leaves is Outside.
    let (dir, entry) = t.reach("in/f", Reach::AsRead).unwrap();
    assert_eq!((dir, entry.as_str()), (t.ino("sub"), "f"));
    t.all_outside(&["out/f", "dangling/f"], Reach::AsRead);
}

#[test]
fn a_link_as_the_last_component() {
    let t = Tree::new("last");
    std::fs::write(t.path("sub/t"), b"target").unwrap();
    symlink("sub/t", t.path("lt")).unwrap();
    symlink("../outside/x", t.path("lo")).unwrap();
    symlink("/etc/hostname", t.path("la")).unwrap();
    symlink("loop2", t.path("loop1")).unwrap();
    symlink("loop1", t.path("loop2")).unwrap();
    // Guarded: the link itself is the entry the step gets, never its
    // target.
    let root = t.ino(".");
    for name in ["lt", "lo", "la", "loop1"] {
        let got = t.reach(name, Reach::NoLinks(&NO_MAKE)).unwrap();
        assert_eq!(got, (root, name.to_owned()));
    }
    // A guarded write there replaces the link with the file; nothing
    // appears where it pointed.
    let rule = Mode::Conditional(Conditions {
        create: true,
        replace: true,
        ..Conditions::default()
    });
    let mut w = t.root.begin_write_guarded("lo", rule, &NO_MAKE).unwrap();
    w.write(b"new").unwrap();
    w.commit(Durability::None).unwrap();
    assert_eq!(std::fs::read(t.path("lo")).unwrap(), b"new");
    assert_eq!(t.outside(), Vec::<String>::new());
    // As a read would: the target inside is the entry; out, absolute or a
    // loop is Outside.
    let (dir, entry) = t.reach("lt", Reach::AsRead).unwrap();
    assert_eq!((dir, entry.as_str()), (t.ino("sub"), "t"));
    symlink("../outside/x", t.path("lo2")).unwrap();
    t.all_outside(&["lo2", "la", "loop1"], Reach::AsRead);
}

#[test]
fn dot_dot_is_outside_for_a_guarded_write_and_resolved_as_a_read() {
    let t = Tree::new("dotdot");
    let names = ["../f", "sub/../f", "sub/../../outside/f"];
    t.all_outside(&names, Reach::NoLinks(&MAKE));
    let root = t.ino(".");
    let got = t.reach("sub/../f", Reach::AsRead).unwrap();
    assert_eq!(got, (root, "f".to_owned()));
    let names = ["../f", "sub/../../outside/f", "sub/../../root/f"];
    t.all_outside(&names, Reach::AsRead);
}

#[test]
fn the_root_itself_is_no_name_to_write() {
    let t = Tree::new("itself");
    let called = Cell::new(0);
    for reach in [Reach::NoLinks(&MAKE), Reach::AsRead] {
        for name in [".", "./", "sub/..", "sub/.", "..", "", "/", "//"] {
            let r = in_parent(&t.root, Path::new(name), reach, |_, _| {
                called.set(called.get() + 1);
                Ok(())
            });
            match r {
                Err(Error::NotAFile { directory: true }) | Err(Error::Outside(_)) => {}
                other => panic!("{name:?}: {other:?}"),
            }
        }
    }
    assert_eq!(called.get(), 0, "the step never runs on the root itself");
}

#[test]
fn a_middle_directory_renamed_during_the_step_changes_nothing_outside() {
    for reach in [Reach::NoLinks(&NO_MAKE), Reach::AsRead] {
        let t = Tree::new("race");
        std::fs::create_dir_all(t.path("a/b")).unwrap();
        std::fs::create_dir_all(t.top.join("outside/b")).unwrap();
        in_parent(&t.root, Path::new("a/b/f"), reach, |dir, entry| {
            // The race, made certain: the middle directory leaves for
            // another name, and a link out of the root takes its place.
            std::fs::rename(t.path("a"), t.path("a2")).unwrap();
            symlink("../outside", t.path("a")).unwrap();
            let flags = rustix::fs::OFlags::CREATE | rustix::fs::OFlags::WRONLY;
            let perm = rustix::fs::Mode::from_raw_mode(0o644);
            rustix::fs::openat(&dir, entry, flags, perm).unwrap();
            Ok(())
        })
        .unwrap();
        assert!(t.path("a2/b/f").exists(), "{reach:?}");
        assert!(!t.top.join("outside/b/f").exists(), "{reach:?}");
    }
}

/// A guarded write that ends without its name leaves none of the levels
/// it made (found from outside: a PUT to `a/b/x` refused after its
/// preconditions, or cut short, left `a/b/`); one that took its name keeps
/// them, and a level that was there before, or that another write filled
/// meanwhile, stays.
#[test]
fn levels_made_for_a_write_go_again_unless_it_takes_its_name() {
    let t = Tree::new("made");
    let w = t
        .root
        .begin_write_guarded("a/b/x", Mode::Create, &MAKE)
        .unwrap();
    assert!(t.path("a/b").is_dir());
    drop(w);
    assert!(!t.path("a").exists(), "both levels made for it are gone");
    // Failed on the way, after making two levels (a `..` past them): the
    // same.
    assert!(t
        .root
        .begin_write_guarded("n/m/../x", Mode::Create, &MAKE)
        .is_err());
    assert!(!t.path("n").exists());
    // `sub` was there before: only the level made under it goes.
    let w = t
        .root
        .begin_write_guarded("sub/c/x", Mode::Create, &MAKE)
        .unwrap();
    drop(w);
    assert!(t.path("sub").is_dir() && !t.path("sub/c").exists());
    // Another file put in a made level meanwhile keeps it.
    let w = t
        .root
        .begin_write_guarded("p/q/x", Mode::Create, &MAKE)
        .unwrap();
    std::fs::write(t.path("p/other"), b"theirs").unwrap();
    drop(w);
    assert!(!t.path("p/q").exists() && t.path("p/other").is_file());
    // Named: every level stays.
    let mut w = t
        .root
        .begin_write_guarded("k/l/x", Mode::Create, &MAKE)
        .unwrap();
    w.write(b"kept").unwrap();
    w.commit(Durability::None).unwrap();
    assert_eq!(std::fs::read(t.path("k/l/x")).unwrap(), b"kept");
    assert_eq!(t.outside(), Vec::<String>::new());
}

/// A write that ends without its name never takes a level from under a
/// write still open in it (found from outside: a client retrying a cut
/// PUT at once got 409, its directory removed under it).
#[test]
fn a_level_a_write_is_still_in_stays() {
    let t = Tree::new("in-use");
    let cut = t
        .root
        .begin_write_guarded("a/b/x", Mode::Create, &MAKE)
        .unwrap();
    let mut retry = t
        .root
        .begin_write_guarded("a/b/x", Mode::Replace, &MAKE)
        .unwrap();
    drop(cut);
    assert!(t.path("a/b").is_dir(), "the retry is in it");
    retry.write(b"whole").unwrap();
    retry.commit(Durability::None).unwrap();
    assert_eq!(std::fs::read(t.path("a/b/x")).unwrap(), b"whole");
    // Both ending without a name: the first to end leaves the levels to
    // the other, which made none and so removes none.
    let first = t
        .root
        .begin_write_guarded("c/d/x", Mode::Create, &MAKE)
        .unwrap();
    let second = t
        .root
        .begin_write_guarded("c/d/y", Mode::Create, &MAKE)
        .unwrap();
    drop(second);
    assert!(
        t.path("c/d").is_dir(),
        "the first, which made them, is still open"
    );
    drop(first);
    assert!(!t.path("c").exists());
}
