//! `nikaia compress DIR` on a real tree: what it creates, skips, replaces
//! and leaves alone, and that what it writes decodes to the file.

use std::io::Read;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

fn compress(dir: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("compress")
        .arg(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn set_mtime(path: &Path, secs_ago: u64) {
    let t = SystemTime::now() - Duration::from_secs(secs_ago);
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(t).unwrap();
}

/// Bytes no coder shrinks.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn decode(coding: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match coding {
        "br" => brotli::Decompressor::new(bytes, 4096)
            .read_to_end(&mut out)
            .map(|_| ())
            .unwrap(),
        "zst" => out = zstd::decode_all(bytes).unwrap(),
        "gz" => flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .map(|_| ())
            .unwrap(),
        _ => unreachable!(),
    }
    out
}

#[test]
fn creates_skips_replaces_and_leaves() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let text = "function hello() { return 'hello, world'; }\n".repeat(200);
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::create_dir_all(d.join(".git")).unwrap();
    std::fs::create_dir_all(d.join("weird.txt.gz")).unwrap();
    std::fs::write(d.join("app.js"), &text).unwrap();
    std::fs::write(d.join("sub/deep.txt"), &text).unwrap();
    std::fs::write(d.join("noise.bin"), noise(4096)).unwrap();
    std::fs::write(d.join("tiny.txt"), "a").unwrap();
    std::fs::write(d.join("old.css"), &text).unwrap();
    std::fs::write(d.join("old.css.gz"), "stale bytes").unwrap();
    std::fs::write(d.join("kept.html"), &text).unwrap();
    std::fs::write(d.join("kept.html.br"), "the operator's own").unwrap();
    std::fs::write(d.join("weird.txt"), &text).unwrap();
    std::fs::write(d.join(".hidden.js"), &text).unwrap();
    std::fs::write(d.join(".git/config.js"), &text).unwrap();
    std::fs::write(d.join("orphan.js.gz"), "no file beside").unwrap();
    symlink("app.js", d.join("link.js")).unwrap();
    set_mtime(&d.join("old.css.gz"), 3600);
    set_mtime(&d.join("kept.html"), 3600);

    let (status, out, err) = compress(d);
    assert_eq!(status, 0, "{out}{err}");
    for name in ["app.js", "sub/deep.txt", "old.css"] {
        for ext in ["br", "zst", "gz"] {
            let sidecar = std::fs::read(d.join(format!("{name}.{ext}"))).unwrap();
            assert!(sidecar.len() < text.len(), "{name}.{ext}");
            assert_eq!(decode(ext, &sidecar), text.as_bytes(), "{name}.{ext}");
        }
    }
    assert!(out.contains("created app.js.br ("), "{out}");
    assert!(out.contains("replaced stale old.css.gz"), "{out}");
    assert!(
        out.contains("not written noise.bin.br: would not shrink"),
        "{out}"
    );
    assert!(
        out.contains("left weird.txt.gz: not a regular file"),
        "{out}"
    );
    // Not shrinking: nothing written.
    for name in ["noise.bin", "tiny.txt"] {
        for ext in ["br", "zst", "gz"] {
            assert!(!d.join(format!("{name}.{ext}")).exists(), "{name}.{ext}");
        }
    }
    // A fresh sidecar the operator made is left as it is; its missing
    // siblings are made.
    assert_eq!(
        std::fs::read(d.join("kept.html.br")).unwrap(),
        b"the operator's own"
    );
    assert!(d.join("kept.html.zst").exists());
    // Dotfiles, dot-directories, symlinks and sidecars get none.
    for absent in [
        ".hidden.js.br",
        ".git/config.js.br",
        "link.js.br",
        "orphan.js.gz.br",
        "app.js.br.gz",
    ] {
        assert!(!d.join(absent).exists(), "{absent}");
    }
    assert!(d.join("weird.txt.gz").is_dir());
    assert_eq!(
        std::fs::read(d.join("orphan.js.gz")).unwrap(),
        b"no file beside"
    );
    let last = out.lines().last().unwrap();
    assert_eq!(
        last,
        "12 created, 1 replaced (stale), 1 up to date, 6 not written (would not shrink), 1 left alone, 0 errors"
    );
    // No temporary file is left behind.
    let names = walk(d);
    assert!(!names.iter().any(|n| n.contains(".nikaia-")), "{names:?}");

    // A second run finds everything done.
    let (status, again, _) = compress(d);
    assert_eq!(status, 0);
    assert_eq!(
        again.lines().last().unwrap(),
        "0 created, 0 replaced (stale), 14 up to date, 6 not written (would not shrink), 1 left alone, 0 errors"
    );
    // An edited file makes its sidecars stale: they are replaced.
    std::fs::write(d.join("app.js"), text.to_uppercase()).unwrap();
    set_mtime(&d.join("app.js"), 0);
    for ext in ["br", "zst", "gz"] {
        set_mtime(&d.join(format!("app.js.{ext}")), 60);
    }
    let (_, third, _) = compress(d);
    assert!(third.contains("replaced stale app.js.zst"), "{third}");
    let gz = std::fs::read(d.join("app.js.gz")).unwrap();
    assert_eq!(decode("gz", &gz), text.to_uppercase().as_bytes());
}

#[test]
fn a_missing_directory_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (status, _, err) = compress(&tmp.path().join("nope"));
    assert_eq!(status, 1);
    assert!(err.contains("nikaia compress:"), "{err}");
}

fn walk(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        names.push(e.file_name().to_string_lossy().into_owned());
        if e.file_type().unwrap().is_dir() {
            names.extend(walk(&e.path()));
        }
    }
    names
}
