//! What exists on which target is decided at compile time: a program that
//! maps a file does not build for wasm32, and the error says why; the same
//! program reading the file does (spec/targets.md). Needs the
//! wasm32-unknown-unknown target (test.sh adds it).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the fixture `name` for wasm32 in a copy that carries the
/// workspace's lock file; (success, stderr).
fn build_for_wasm32(name: &str) -> (bool, String) {
    let top = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let fixture = top.join("tests/wasm-fixtures").join(name);
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--offline",
            "--target",
            "wasm32-unknown-unknown",
        ])
        .arg("--manifest-path")
        .arg(fixture.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", top.join("target/wasm-fixtures"))
        .output()
        .expect("cargo runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn with_lock(name: &str) -> PathBuf {
    let top = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let lock = top
        .join("tests/wasm-fixtures")
        .join(name)
        .join("Cargo.lock");
    std::fs::copy(top.join("Cargo.lock"), &lock).unwrap();
    lock
}

#[test]
fn fs_map_is_a_compile_time_error_on_wasm32_that_says_why() {
    let lock = with_lock("uses_map");
    let (ok, stderr) = build_for_wasm32("uses_map");
    let _ = std::fs::remove_file(lock);
    assert!(!ok, "a program that maps a file built for wasm32");
    assert!(
        stderr.contains(
            "fs::map is not available on wasm32: there is no memory mapping there; use fs::read"
        ),
        "{stderr}"
    );
}

#[test]
fn fs_read_builds_for_wasm32() {
    let lock = with_lock("uses_read");
    let (ok, stderr) = build_for_wasm32("uses_read");
    let _ = std::fs::remove_file(lock);
    assert!(ok, "{stderr}");
}
