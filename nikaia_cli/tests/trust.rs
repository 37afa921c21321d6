//! `nikaia --trust` over the fixture tree in `tests/fixtures/trust/`, run as
//! the real binary with the fixture directory as working directory.

mod common;

use common::nikaia;
use std::path::{Path, PathBuf};
use std::process::Output;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trust")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}

#[test]
fn text_report_of_the_fixture_tree() {
    let output = nikaia(&fixtures(), &["--trust"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!("trust_text", stdout(&output));
}

#[test]
fn json_report_of_the_fixture_tree() {
    let output = nikaia(&fixtures(), &["--trust", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let value: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(value["files_with_sites"], 12);
    insta::assert_snapshot!("trust_json", text);
}

#[test]
fn explicit_dot_and_explicit_paths_agree() {
    let dir = fixtures();
    let default = stdout(&nikaia(&dir, &["--trust"]));
    let dot = stdout(&nikaia(&dir, &["--trust", "."]));
    assert_eq!(default, dot);
    let both = stdout(&nikaia(&dir, &["--trust", "src", "nk"]));
    assert_eq!(default, both);
}

#[test]
fn parse_failure_is_reported_on_stderr_and_the_scan_goes_on() {
    let output = nikaia(&fixtures(), &["--trust"]);
    let err = stderr(&output);
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        ["src/15_broken.rs: error: cannot parse string into token stream (1:10)"]
    );
    // Files after the broken one were still scanned.
    assert!(stdout(&output).contains("src/16_block_use.rs:3:27"));
}

#[test]
fn skipped_directories_are_not_read() {
    let out = stdout(&nikaia(&fixtures(), &["--trust"]));
    assert!(!out.contains("target/"), "{out}");
    assert!(!out.contains(".hidden"), "{out}");
    assert!(!out.contains("generated.rs"), "{out}");
}

#[test]
fn mentions_are_not_sites() {
    let out = stdout(&nikaia(&fixtures(), &["--trust"]));
    for file in [
        "10_line_comment.rs",
        "11_string.rs",
        "12_raw_string.rs",
        "13_doc_comment.rs",
        "14_unrelated_root.rs",
        "mentions.nk",
    ] {
        assert!(!out.contains(file), "{file} listed:\n{out}");
    }
}

#[test]
fn deny_fails_when_a_site_exists() {
    let output = nikaia(&fixtures(), &["--trust", "--deny"]);
    assert_eq!(output.status.code(), Some(1));
    let output = nikaia(&fixtures(), &["--trust", "--deny", "--json", "nk"]);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn deny_passes_on_a_tree_without_sites() {
    let output = nikaia(&fixtures(), &["--trust", "--deny", "clean"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "0 Anywhere sites in 0 files\n");
    assert_eq!(stderr(&output), "");
}

#[test]
fn singular_counts() {
    let output = nikaia(&fixtures(), &["--trust", "src/01_plain_call.rs"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output),
        "src/01_plain_call.rs:4:16  fn main  let root = Root::anywhere();\n\
         1 Anywhere site in 1 file\n"
    );
}

#[test]
fn a_missing_path_is_an_error() {
    let output = nikaia(&fixtures(), &["--trust", "no-such-dir"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).starts_with("no-such-dir: error: "));
}

#[test]
fn a_lexing_error_in_nikaia_is_reported_with_its_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("open.nk"),
        "fn main() {\n    let s = \"never closed\n}\n",
    )
    .expect("write");
    let output = nikaia(dir.path(), &["--trust"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stderr(&output),
        "open.nk: error: unterminated string literal (2:13)\n"
    );
    assert_eq!(stdout(&output), "0 Anywhere sites in 0 files\n");
}

#[test]
fn json_requires_trust() {
    let output = nikaia(&fixtures(), &["--json"]);
    assert_eq!(output.status.code(), Some(2));
}
