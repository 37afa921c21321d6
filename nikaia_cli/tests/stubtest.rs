//! `nikaia stubtest` on the project, and on broken copies of it (the stubs
//! and nikaia_std's source copied to a temporary directory, one kind of
//! drift each); the normalized surface as a snapshot; `--trust` taking the
//! audited items from the stubs.

mod common;

use common::nikaia;
use std::path::{Path, PathBuf};
use std::process::Output;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A copy of `spec/std` and `nikaia_std/src` to break.
struct Copy {
    dir: tempfile::TempDir,
}

impl Copy {
    fn new() -> Copy {
        let dir = tempfile::tempdir().expect("tempdir");
        copy_tree(&workspace().join("spec/std"), &dir.path().join("spec/std"));
        copy_tree(
            &workspace().join("nikaia_std/src"),
            &dir.path().join("nikaia_std/src"),
        );
        Copy { dir }
    }

    /// Replaces `from` (which must be there) by `to` in the file `rel`.
    fn edit(&self, rel: &str, from: &str, to: &str) {
        let path = self.dir.path().join(rel);
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains(from), "{rel} has no {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("write");
    }

    fn append(&self, rel: &str, text: &str) {
        let path = self.dir.path().join(rel);
        let mut old = std::fs::read_to_string(&path).expect("read");
        old.push_str(text);
        std::fs::write(&path, old).expect("write");
    }

    fn line_of(&self, rel: &str, needle: &str) -> usize {
        let text = std::fs::read_to_string(self.dir.path().join(rel)).expect("read");
        text.lines().position(|l| l.contains(needle)).expect("line") + 1
    }

    /// `nikaia stubtest` in the copy, with the defaults.
    fn stubtest(&self, extra: &[&str]) -> Output {
        let mut args = vec!["stubtest"];
        args.extend_from_slice(extra);
        nikaia(self.dir.path(), &args)
    }
}

/// The errors' first lines, without the summary.
fn errors(output: &Output) -> Vec<String> {
    stdout(output)
        .lines()
        .filter(|l| l.starts_with("error["))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_project_is_clean() {
    let output = nikaia(&workspace(), &["stubtest"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(
        stdout(&output).starts_with("stubtest: no errors ("),
        "{}",
        stdout(&output)
    );
}

#[test]
fn an_unbroken_copy_is_clean() {
    let copy = Copy::new();
    let output = copy.stubtest(&[]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
}

#[test]
fn the_normalized_surface() {
    let output = nikaia(&workspace(), &["stubtest", "--surface"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!("stubtest_surface", stdout(&output));
}

#[test]
fn a_declaration_without_a_rust_item() {
    let copy = Copy::new();
    copy.append(
        "spec/std/fs.nk",
        "\n/// Gone.\nfn gone(name: Path) -> Bytes\n",
    );
    let line = copy.line_of("spec/std/fs.nk", "fn gone");
    let output = copy.stubtest(&[]);
    assert_eq!(output.status.code(), Some(1));
    let out = stdout(&output);
    assert_eq!(
        errors(&output),
        ["error[missing-rust]: fs::gone: declared in the stub, not present in nikaia_std (looked for fs::gone)"]
    );
    assert!(
        out.contains(&format!("    stub: spec/std/fs.nk:{line}\n")),
        "{out}"
    );
    assert!(
        out.contains("    rust: nikaia_std/src/fs/mod.rs:1\n"),
        "{out}"
    );
}

#[test]
fn a_rust_item_without_a_declaration() {
    let copy = Copy::new();
    copy.append(
        "nikaia_std/src/fs/rw.rs",
        "\n/// New.\npub fn exists(name: &str, root: &Root) -> bool {\n    let _ = (name, root);\n    true\n}\n",
    );
    copy.edit(
        "nikaia_std/src/fs/mod.rs",
        "pub use rw::{read, read_string, write, Conditions, Durability, Guard, Mode, Removable, Written};",
        "pub use rw::{exists, read, read_string, write, Conditions, Durability, Guard, Mode, Removable, Written};",
    );
    let line = copy.line_of("nikaia_std/src/fs/rw.rs", "pub fn exists");
    let output = copy.stubtest(&[]);
    assert_eq!(output.status.code(), Some(1));
    let out = stdout(&output);
    assert_eq!(
        errors(&output),
        ["error[missing-stub]: fs::exists: exported by nikaia_std, not present in the stubs (Rust: fn fs::exists(name: String, root: Root) -> Bool)"]
    );
    assert!(out.contains("    stub: spec/std/fs.nk:1\n"), "{out}");
    assert!(
        out.contains(&format!("    rust: nikaia_std/src/fs/rw.rs:{line}\n")),
        "{out}"
    );
}

#[test]
fn parameters_that_disagree() {
    let copy = Copy::new();
    copy.edit(
        "spec/std/fs.nk",
        "fn read(name: Path, root: Root)",
        "fn read(name: String, root: Root)",
    );
    let output = copy.stubtest(&[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        errors(&output),
        ["error[params]: fs::read: parameters differ: stub (name: String, root: Root), Rust (name: Path, root: Root)"]
    );
    let out = stdout(&output);
    assert!(
        out.contains("    rust: nikaia_std/src/fs/rw.rs:8\n"),
        "{out}"
    );
}

#[test]
fn a_result_that_disagrees() {
    let copy = Copy::new();
    copy.edit(
        "spec/std/fs.nk",
        "fn read_string(name: Path, root: Root) -> String throws Error",
        "fn read_string(name: Path, root: Root) -> String",
    );
    let output = copy.stubtest(&[]);
    assert_eq!(
        errors(&output),
        ["error[result]: fs::read_string: result differs: stub String, Rust String throws Error"]
    );
}

#[test]
fn targets_that_disagree() {
    let copy = Copy::new();
    // The stub says everywhere; the Rust item is Linux only (wasm32 has the
    // compile-time-error shim, which is not an item).
    copy.edit("spec/std/fs.nk", "@targets(linux)\nfn map(", "fn map(");
    // And a Rust item made Linux-only that the stub declares everywhere.
    copy.edit(
        "nikaia_std/src/html.rs",
        "    pub fn new(",
        "    #[cfg(target_os = \"linux\")]\n    pub fn new(",
    );
    let output = copy.stubtest(&[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        errors(&output),
        [
            "error[targets]: fs::map: targets differ: stub linux, wasm32, Rust linux (by its cfg)",
            "error[targets]: html::Raw::init: targets differ: stub linux, wasm32, Rust linux (by its cfg)",
        ]
    );
}

#[test]
fn an_audit_marker_on_one_side_only() {
    let copy = Copy::new();
    copy.edit("spec/std/fs.nk", "    @audit\n", "");
    copy.edit(
        "spec/std/fs.nk",
        "    fn is_dir(self) -> Bool",
        "    @audit\n    fn is_dir(self) -> Bool",
    );
    let output = copy.stubtest(&[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        errors(&output),
        [
            "error[audit]: fs::Root::Anywhere: audit marker on one side only: the Rust item has #[doc(alias = \"nikaia-audit\")], the stub has no @audit",
            "error[audit]: fs::Root::is_dir: audit marker on one side only: the stub has @audit, the Rust item has no #[doc(alias = \"nikaia-audit\")]",
        ]
    );
}

#[test]
fn an_unused_or_unexplained_allowlist_entry() {
    let copy = Copy::new();
    copy.append(
        "spec/std/stubtest-allowlist.txt",
        "fs::no_such_item  # once needed\nfs::unexplained\n",
    );
    let line = copy.line_of("spec/std/stubtest-allowlist.txt", "fs::no_such_item");
    let output = copy.stubtest(&[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        errors(&output),
        [
            "error[unused-allowlist]: allowlist entry `fs::no_such_item` matches no error: remove it",
            "error[allowlist]: allowlist entry `fs::unexplained` needs one item path and a reason: `ITEM  # reason`",
        ]
    );
    assert!(stdout(&output).contains(&format!(
        "    stub: spec/std/stubtest-allowlist.txt:{line}\n"
    )));
}

#[test]
fn without_the_allowlist_the_exceptions_are_errors() {
    let copy = Copy::new();
    std::fs::remove_file(copy.dir.path().join("spec/std/stubtest-allowlist.txt")).expect("rm");
    let output = copy.stubtest(&[]);
    assert_eq!(output.status.code(), Some(1));
    let errors = errors(&output);
    assert!(
        errors
            .iter()
            .all(|e| e.starts_with("error[missing-stub]: ")),
        "{errors:?}"
    );
    assert!(errors
        .iter()
        .any(|e| e.starts_with("error[missing-stub]: rt::Runtime: ")));
    // The shim that makes fs::map a compile-time error on wasm32 is not an item.
    assert!(
        !errors.iter().any(|e| e.contains("MapOnWasm32")),
        "{errors:?}"
    );
}

#[test]
fn json_names_both_places() {
    let copy = Copy::new();
    copy.edit(
        "spec/std/fs.nk",
        "fn read(name: Path, root: Root)",
        "fn read(name: Path)",
    );
    let output = copy.stubtest(&["--json"]);
    assert_eq!(output.status.code(), Some(1));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let errors = value["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["kind"], "params");
    assert_eq!(errors[0]["item"], "fs::read");
    assert!(errors[0]["stub"]
        .as_str()
        .unwrap()
        .starts_with("spec/std/fs.nk:"));
    assert_eq!(errors[0]["rust"], "nikaia_std/src/fs/rw.rs:8");
}

#[test]
fn a_stub_that_does_not_parse_is_exit_2() {
    let copy = Copy::new();
    copy.edit("spec/std/fs.nk", "fn read(", "fn read[");
    let output = copy.stubtest(&[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).starts_with("spec/std/fs.nk:"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn trust_lists_a_new_audited_item_from_the_stubs() {
    let copy = Copy::new();
    copy.append(
        "spec/std/fs.nk",
        "\n/// Opens anything, audited.\n@audit\nfn danger(name: Path) -> Bytes\n",
    );
    let app = copy.dir.path().join("app");
    std::fs::create_dir(&app).expect("mkdir");
    std::fs::write(
        app.join("main.nk"),
        "fn main() {\n    fs::danger(\"x\")\n    fs::Root::Anywhere\n}\n",
    )
    .expect("write");
    std::fs::write(
        app.join("main.rs"),
        "use nikaia_std::fs;\nfn main() {\n    let _ = fs::danger(\"x\");\n}\n",
    )
    .expect("write");
    let output = nikaia(copy.dir.path(), &["--trust", "--stubs", "spec/std", "app"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "app/main.nk:2:5  fn main  fs::danger(\"x\")\n\
         app/main.nk:3:5  fn main  fs::Root::Anywhere\n\
         app/main.rs:3:13  fn main  let _ = fs::danger(\"x\");\n\
         3 Anywhere sites in 2 files\n"
    );
}
