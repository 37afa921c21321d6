//! Mappings, whole-file reads and writes, identities, and roots themselves.
#![cfg(target_os = "linux")]

use nikaia_std::fs::{self, Error, Root};
use nikaia_std::Bytes;
use std::io::Read;
use std::os::unix::fs::MetadataExt;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

#[test]
fn maps_equal_the_file_at_every_size() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Root::dir(tmp.path()).unwrap();
    for len in [0, 1, 4096, (1 << 20) + 1] {
        let name = format!("f{len}");
        let data = pattern(len);
        std::fs::write(tmp.path().join(&name), &data).unwrap();
        let mapped = fs::map(&name, &root).unwrap();
        assert_eq!(mapped.len(), len);
        assert_eq!(mapped.as_ref(), &data[..]);
        assert_eq!(mapped.identity().size, len as u64);
        assert_eq!(fs::read(&name, &root).unwrap(), data);
        let bytes: Bytes = mapped.into();
        assert_eq!(&bytes[..], &data[..]);
    }
}

#[test]
fn mapped_clone_is_zero_copy() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("f"), pattern(10_000)).unwrap();
    let root = Root::dir(tmp.path()).unwrap();
    let a = fs::map("f", &root).unwrap();
    let b = a.clone();
    assert_eq!(a.as_ptr(), b.as_ptr());
    let as_bytes: Bytes = b.into();
    assert_eq!(a.as_ptr(), as_bytes.as_ptr());
    assert_eq!(as_bytes.clone().as_ptr(), as_bytes.as_ptr());
}

#[test]
fn identity_matches_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("f");
    std::fs::write(&path, b"identity").unwrap();
    let root = Root::dir(tmp.path()).unwrap();
    let opened = root.open("f").unwrap();
    let md = std::fs::metadata(&path).unwrap();
    let id = opened.id;
    assert_eq!(id.dev, md.dev());
    assert_eq!(id.ino, md.ino());
    assert_eq!(id.size, md.size());
    assert_eq!(id.mtime_ns, md.mtime() * 1_000_000_000 + md.mtime_nsec());
    assert_eq!(id.ctime_ns, md.ctime() * 1_000_000_000 + md.ctime_nsec());
    assert_eq!(fs::map("f", &root).unwrap().identity(), id);
    // The revalidation statx sees the same identity.
    assert_eq!(root.stat("f").unwrap(), id);
}

#[test]
fn stat_catches_a_moved_or_replaced_file() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().join("root");
    std::fs::create_dir(&r).unwrap();
    std::fs::write(r.join("f"), b"one").unwrap();
    let root = Root::dir(&r).unwrap();
    let id = root.open("f").unwrap().id;
    // Let the clock pass a timestamp tick, so the rename's ctime differs.
    std::thread::sleep(std::time::Duration::from_millis(20));
    // Moved out of the root: the name is gone.
    std::fs::rename(r.join("f"), tmp.path().join("f")).unwrap();
    assert!(matches!(root.stat("f"), Err(Error::NotFound)));
    // Replaced by a symlink to the moved file: a different ctime.
    std::os::unix::fs::symlink("../f", r.join("f")).unwrap();
    assert_ne!(root.stat("f").unwrap(), id);
    // Replaced by another file: a different inode.
    std::fs::remove_file(r.join("f")).unwrap();
    std::fs::write(r.join("f"), b"one").unwrap();
    assert_ne!(root.stat("f").unwrap(), id);
    // Lexical refusals, and not a file.
    for bad in ["", "/f", "a\0b", "../root/f", "x/../f"] {
        assert!(matches!(root.stat(bad), Err(Error::Outside(_))), "{bad:?}");
    }
    assert!(matches!(
        root.stat("."),
        Err(Error::NotAFile { directory: true })
    ));
}

#[test]
fn write_then_read() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Root::dir(tmp.path()).unwrap();
    fs::write("w.txt", &root, "first, longer contents").unwrap();
    fs::write("w.txt", &root, "second").unwrap();
    assert_eq!(fs::read_string("w.txt", &root).unwrap(), "second");
    assert_eq!(std::fs::read(tmp.path().join("w.txt")).unwrap(), b"second");
    let mode = std::fs::metadata(tmp.path().join("w.txt")).unwrap().mode();
    assert_eq!(mode & 0o600, 0o600);
    assert_eq!(mode & 0o022, 0, "never group/other writable");
    fs::write("empty", &root, b"").unwrap();
    assert!(fs::map("empty", &root).unwrap().is_empty());
}

#[test]
fn read_string_rejects_invalid_utf8() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("bad"), [b'o', b'k', 0xff, 0xfe]).unwrap();
    let root = Root::dir(tmp.path()).unwrap();
    match fs::read_string("bad", &root) {
        Err(Error::Io(e)) => assert_eq!(e.kind(), std::io::ErrorKind::InvalidData),
        other => panic!("expected InvalidData, got {other:?}"),
    }
    assert_eq!(fs::read("bad", &root).unwrap(), [b'o', b'k', 0xff, 0xfe]);
}

#[test]
fn dir_root_keeps_the_original_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("site");
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("index.html"), b"original").unwrap();
    let root = Root::dir(&path).unwrap();
    let clone = root.clone();
    std::fs::rename(&path, tmp.path().join("moved")).unwrap();
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("index.html"), b"impostor").unwrap();
    assert_eq!(fs::read("index.html", &root).unwrap(), b"original");
    assert_eq!(fs::read("index.html", &clone).unwrap(), b"original");
    assert_eq!(root.path(), Some(path.as_path()));
    assert!(root.is_dir());
    assert_eq!(root.anywhere_site(), None);
}

#[test]
fn dir_root_must_open() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(Root::dir(tmp.path().join("missing")).is_err());
    std::fs::write(tmp.path().join("file"), b"x").unwrap();
    assert!(Root::dir(tmp.path().join("file")).is_err());
    assert!(Root::dir("").is_err());
}

#[test]
fn anywhere_records_its_site_and_counts_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("f");
    std::fs::write(&path, b"anywhere").unwrap();
    let line = line!() + 1;
    let root = Root::anywhere();
    let site = root.anywhere_site().unwrap();
    assert_eq!((site.file, site.line), (file!(), line));
    assert!(!root.is_dir());
    assert_eq!(root.path(), None);

    let count = || {
        fs::anywhere_sites()
            .into_iter()
            .find(|(s, _)| *s == site)
            .map(|(_, n)| n)
    };
    assert_eq!(count(), Some(0));
    let mut text = String::new();
    root.open(&path)
        .unwrap()
        .file
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "anywhere");
    assert_eq!(fs::read(&path, &root.clone()).unwrap(), b"anywhere");
    fs::write(tmp.path().join("g"), &root, b"w").unwrap();
    assert!(matches!(
        root.open(tmp.path().join("missing")),
        Err(Error::NotFound)
    ));
    assert_eq!(count(), Some(3), "three files opened, one failure");
    // No containment: `..` is an ordinary path here.
    let up = tmp
        .path()
        .join("..")
        .join(tmp.path().file_name().unwrap())
        .join("f");
    assert_eq!(fs::read(up, &root).unwrap(), b"anywhere");
}

/// `Root::list` is confined like an open, on both resolution paths.
#[test]
fn list_is_confined_on_both_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let root_dir = tmp.path().join("root");
    std::fs::create_dir_all(root_dir.join("sub/inner")).unwrap();
    std::fs::write(root_dir.join("sub/b.txt"), b"b").unwrap();
    std::fs::write(root_dir.join("sub/a.txt"), b"a").unwrap();
    std::fs::write(tmp.path().join("outside.txt"), b"secret").unwrap();
    std::os::unix::fs::symlink(tmp.path(), root_dir.join("out")).unwrap();
    let root = nikaia_std::fs::Root::dir(&root_dir).unwrap();
    for walk in [false, true] {
        nikaia_std::fs::force_fallback_walk(walk);
        let names: Vec<_> = root
            .list("sub")
            .unwrap()
            .into_iter()
            .map(|e| (e.name.into_string().unwrap(), e.is_dir))
            .collect();
        assert_eq!(
            names,
            [
                ("a.txt".into(), false),
                ("b.txt".into(), false),
                ("inner".into(), true)
            ],
            "walk: {walk}"
        );
        assert_eq!(root.list(".").unwrap().len(), 2, "walk: {walk}");
        for out in ["..", "out", "out/", "sub/../..", "/tmp"] {
            assert!(
                matches!(root.list(out), Err(nikaia_std::fs::Error::Outside(_))),
                "{out} walk: {walk}"
            );
        }
        assert!(matches!(
            root.list("sub/a.txt"),
            Err(nikaia_std::fs::Error::NotFound)
        ));
    }
    nikaia_std::fs::force_fallback_walk(false);
}
