//! WebDAV classes 1 and 2 (#49, #50) driven by clients that are not ours, against
//! `nikaia serve`'s routes with a runtime file that mounts the whole tree
//! read-write for one user: litmus 0.13's suites (each suite's own program,
//! whose exit code is its count of failures), rclone's `webdav` remote
//! (copy, check, sync, check, copy back), and cadaver scripted over TLS.
//! test.sh installs the three (Debian `litmus`, `rclone`, `cadaver`).

use nikaia_std::http::Running;
use nikaia_tests::{dav, TestPki};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The one user: `dav`, password `dav-pass-49` (bcrypt, cost 5; no
/// space in the password, so a `.netrc` can carry it).
const USER: &str = "dav";
const PASS: &str = "dav-pass-49";
const USERS: &str = "dav:$2b$05$oAEZLNMowttTKZghSTmwquNiiZ8NkBY1GbhT8exMShcPoeCAxBep2\n";

/// The drive of spec/site.md's example: every name behind the password,
/// the writer may create, replace and delete files and directories
/// (members included: litmus's `begin` deletes a non-empty `litmus/`),
/// with WebDAV on, over plain HTTP too (the plain tests' listener).
const DRIVE: &str = r#"
webdav = true

[webdav-locks]
dir = "locks"

[[auth]]
match = ["**"]
htpasswd = "users.htpasswd"
plain-http = true

[[write]]
match = ["**"]
writers = ["dav"]
create = true
replace = true
delete = true
delete-dirs = true
make-dirs = false
webdav = true
plain-http = true
"#;

/// The drive ([`dav::Drive`]) served, over TLS with `pki`. (The server
/// stops before the directories go: fields drop in order.)
struct Drive {
    running: Running,
    root: PathBuf,
    tls: bool,
    _pki: Option<TestPki>,
    _drive: dav::Drive,
}

impl Drive {
    fn new(tls: bool) -> Drive {
        let drive = dav::Drive::new(USERS, DRIVE);
        let pki = tls.then(TestPki::new);
        // No SNI reaches the server from litmus and cadaver at an IP
        // address: the runtime's own pair (the default) must serve it.
        let running = drive.serve(pki.as_ref());
        Drive {
            running,
            root: drive.root(),
            tls,
            _pki: pki,
            _drive: drive,
        }
    }

    /// The base URL at 127.0.0.1 (an IP literal: no SNI), ending in `/`.
    fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}/", self.running.local_addr().port())
    }
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("{cmd:?} runs (test.sh installs it): {e}"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

// litmus ------------------------------------------------------------------

/// Every litmus 0.13 suite; `locks` whole (41 tests) on this class-2
/// drive, none skipped and no warning (a 423 where litmus wants one).
const SUITES: [&str; 5] = ["basic", "copymove", "props", "http", "locks"];

/// Runs each suite's program against `drive` and asserts it passed whole:
/// exit code 0 (its count of failures) and a summary of 100.0%.
fn litmus(drive: &Drive) {
    let mut failed = Vec::new();
    for suite in SUITES {
        let scratch = tempfile::tempdir().unwrap();
        let out = run(Command::new(format!("/usr/libexec/litmus/{suite}"))
            .args(["--htdocs", "/usr/share/litmus/htdocs"])
            .arg(drive.url())
            .args([USER, PASS])
            .current_dir(scratch.path())
            .stdin(Stdio::null()));
        let all = text(&out);
        let summary = all
            .lines()
            .rev()
            .find(|l| l.contains("summary for"))
            .unwrap_or("(no summary line)")
            .to_owned();
        let whole = suite != "locks" || summary.contains("of 41 tests run: 41 passed");
        let warned = all.contains("WARNING");
        if out.status.code() != Some(0) || !summary.contains("100.0%") || !whole || warned {
            let lines: Vec<&str> = all
                .lines()
                .filter(|l| l.contains("FAIL") || l.contains("WARNING") || l.contains("SKIPPED"))
                .collect();
            failed.push(format!(
                "{suite} ({}): {summary}\n  {}",
                out.status,
                lines.join("\n  ")
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "litmus against {}:\n{}",
        drive.url(),
        failed.join("\n")
    );
}

#[test]
fn litmus_passes_every_suite_over_plain_http_with_basic_auth() {
    litmus(&Drive::new(false));
}

#[test]
fn litmus_passes_every_suite_over_tls_without_sni() {
    litmus(&Drive::new(true));
}

// rclone ------------------------------------------------------------------

/// A small deterministic generator (splitmix64): the trees' names, sizes
/// and bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(len);
        v
    }
}

/// The 30 directories: ten at the top, two inside each.
fn dirs() -> Vec<String> {
    let mut v = Vec::new();
    for i in 0..10 {
        v.push(format!("d{i:02}"));
        for j in 0..2 {
            v.push(format!("d{i:02}/sub {j}"));
        }
    }
    v
}

/// 500 files in the 30 directories, sizes up to 64 KiB and five of 1 MiB.
fn make_tree(at: &Path, rng: &mut Rng) {
    let dirs = dirs();
    for d in &dirs {
        std::fs::create_dir_all(at.join(d)).unwrap();
    }
    for i in 0..500 {
        let dir = &dirs[i % dirs.len()];
        let len = if i % 100 == 7 {
            1 << 20
        } else {
            rng.below(64 * 1024 + 1) as usize
        };
        std::fs::write(at.join(dir).join(format!("f{i:03}.bin")), rng.bytes(len)).unwrap();
    }
}

/// Every file under `at` (relative path → bytes); directories only as
/// the files' paths show them.
fn files(at: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![at.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                todo.push(e.path());
            } else {
                assert!(
                    t.is_file(),
                    "{:?} is neither a file nor a directory",
                    e.path()
                );
                let rel = e.path().strip_prefix(at).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

/// The same files with the same bytes under both (names listed when not).
fn assert_same_files(a: &Path, b: &Path) {
    let (fa, fb) = (files(a), files(b));
    let only_a: Vec<_> = fa.keys().filter(|k| !fb.contains_key(*k)).collect();
    let only_b: Vec<_> = fb.keys().filter(|k| !fa.contains_key(*k)).collect();
    let differ: Vec<_> = fa
        .iter()
        .filter(|(k, v)| fb.get(*k).is_some_and(|w| w != *v))
        .map(|(k, _)| k)
        .collect();
    assert!(
        only_a.is_empty() && only_b.is_empty() && differ.is_empty(),
        "{a:?} and {b:?}: only in the first {only_a:?}, only in the second {only_b:?}, \
         different bytes {differ:?}"
    );
}

/// rclone with an on-the-fly `:webdav:` remote at `drive` (vendor other,
/// the password obscured as rclone wants it), its config and cache in
/// `home`.
struct Rclone {
    url: String,
    obscured: String,
    home: PathBuf,
}

impl Rclone {
    fn new(drive: &Drive, home: &Path) -> Rclone {
        let out = run(Command::new("rclone").args(["obscure", PASS]));
        assert!(out.status.success(), "rclone obscure: {}", text(&out));
        Rclone {
            url: drive.url(),
            obscured: String::from_utf8(out.stdout).unwrap().trim().to_owned(),
            home: home.to_path_buf(),
        }
    }

    /// `rclone ARGS` with the remote's flags; asserts it succeeded.
    fn run(&self, args: &[&str]) -> String {
        let out = run(Command::new("rclone")
            .args(args)
            .args(["--webdav-url", &self.url])
            .args(["--webdav-user", USER])
            .args(["--webdav-pass", &self.obscured])
            .args(["--webdav-vendor", "other"])
            .args(["--retries", "1", "--low-level-retries", "1"])
            .arg("--cache-dir")
            .arg(self.home.join("cache"))
            .env("RCLONE_CONFIG", self.home.join("rclone.conf"))
            .env("HOME", &self.home)
            .stdin(Stdio::null()));
        assert!(out.status.success(), "rclone {args:?}: {}", text(&out));
        text(&out)
    }
}

#[test]
fn rclone_copies_checks_syncs_and_copies_back_byte_for_byte() {
    let drive = Drive::new(false);
    let scratch = tempfile::tempdir().unwrap();
    let src = scratch.path().join("src");
    let back = scratch.path().join("back");
    let mut rng = Rng(49);
    make_tree(&src, &mut rng);
    let rclone = Rclone::new(&drive, scratch.path());
    let src_s = src.to_str().unwrap();
    let remote = ":webdav:drive";

    rclone.run(&["copy", src_s, remote]);
    rclone.run(&["check", "--download", src_s, remote]);
    assert_same_files(&src, &drive.root.join("drive"));
    assert_eq!(files(&drive.root.join("drive")).len(), 500);

    // Change the source: 20 files rewritten (each to another size: vendor
    // "other" sets no modification times, so rclone tells a change by its
    // size), 15 removed, 10 added, one directory's files all removed.
    let all: Vec<PathBuf> = files(&src).into_keys().collect();
    for (n, rel) in all.iter().enumerate() {
        let path = src.join(rel);
        if rel.starts_with("d09/sub 1") {
            std::fs::remove_file(&path).unwrap();
        } else if n % 25 == 3 {
            let old = std::fs::metadata(&path).unwrap().len() as usize;
            let new = if old >= 1000 { old / 2 } else { old + 1000 };
            std::fs::write(&path, rng.bytes(new)).unwrap();
        } else if n % 33 == 5 {
            std::fs::remove_file(&path).unwrap();
        }
    }
    for i in 0..10 {
        let len = rng.below(64 * 1024) as usize;
        std::fs::write(src.join(format!("d{i:02}/new {i}.bin")), rng.bytes(len)).unwrap();
    }
    rclone.run(&["sync", src_s, remote]);
    rclone.run(&["check", "--download", src_s, remote]);
    assert_same_files(&src, &drive.root.join("drive"));

    // And back down into a third directory.
    rclone.run(&["copy", remote, back.to_str().unwrap()]);
    assert_same_files(&src, &back);
}

// cadaver -----------------------------------------------------------------

#[test]
fn cadaver_scripted_over_tls_makes_puts_copies_moves_gets_and_deletes() {
    let drive = Drive::new(true);
    let home = tempfile::tempdir().unwrap();
    let netrc = home.path().join(".netrc");
    std::fs::write(
        &netrc,
        format!("machine 127.0.0.1 login {USER} password {PASS}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&netrc, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let local = home.path().join("local");
    std::fs::create_dir(&local).unwrap();
    let body: Vec<u8> = Rng(7).bytes(100_000);
    std::fs::write(local.join("a.txt"), &body).unwrap();

    // cadaver asks whether to accept a certificate it cannot verify (the
    // test CA's) only when its input is a terminal, and refuses it
    // otherwise: `script` (util-linux) gives it one, and the script's first
    // line answers `y`. Then the commands, one a line. cadaver exits 0
    // whatever failed: what it printed is what tells.
    let script = "y\n\
        mkcol newdir\n\
        put local/a.txt newdir/a.txt\n\
        ls newdir\n\
        propset newdir/a.txt colour blue-49\n\
        propget newdir/a.txt colour\n\
        copy newdir/a.txt newdir/b.txt\n\
        move newdir/b.txt newdir/c.txt\n\
        propget newdir/c.txt colour\n\
        get newdir/c.txt local/c-back.txt\n\
        delete newdir/a.txt\n\
        ls newdir\n\
        quit\n";
    let mut child = Command::new("script")
        .args([
            "-q",
            "-e",
            "-c",
            &format!("cadaver {}", drive.url()),
            "/dev/null",
        ])
        .current_dir(home.path())
        .env("HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script and cadaver run (test.sh installs cadaver)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    assert!(out.status.success(), "cadaver: {said}");
    assert!(
        said.contains("Do you wish to accept the certificate?"),
        "cadaver was asked about the certificate: {said}"
    );
    // mkcol, put, ls, propset, copy, move, get, delete, ls.
    assert!(!said.contains("failed"), "cadaver: {said}");
    assert_eq!(said.matches("succeeded.").count(), 9, "cadaver: {said}");
    // The property came back, on the file and on the copy moved.
    assert_eq!(
        said.matches("Value of colour is: blue-49").count(),
        2,
        "the property's value, twice: {said}"
    );

    // On disk: the collection, the copy moved to its new name, the
    // original and the intermediate gone; the download the same bytes.
    let dir = drive.root.join("newdir");
    assert!(dir.is_dir(), "{said}");
    assert_eq!(nikaia_tests::names(&dir), ["c.txt"], "{said}");
    assert_eq!(std::fs::read(dir.join("c.txt")).unwrap(), body);
    assert_eq!(std::fs::read(local.join("c-back.txt")).unwrap(), body);
}
