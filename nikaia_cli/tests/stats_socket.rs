//! The stats-socket path belongs to the operator: `nikaia serve` replaces
//! only a socket no server answers on, and at shutdown removes only the
//! socket it bound (spec/runtime-file.md, "What the server may delete").

mod common;

use common::{nikaia, spawn_serve};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A site and a runtime file whose `stats-socket` is `dir/stats.sock`.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("site")).unwrap();
        std::fs::write(dir.path().join("site/a.txt"), "aaaa").unwrap();
        std::fs::write(
            dir.path().join("runtime.toml"),
            "listen = \"127.0.0.1:0\"\nworkers = 1\naccess-log = \"off\"\n\
             stats-socket = \"stats.sock\"\n",
        )
        .unwrap();
        Setup { dir }
    }

    fn sock(&self) -> PathBuf {
        self.dir.path().join("stats.sock")
    }

    fn serve_command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
        cmd.arg("serve")
            .arg(self.dir.path().join("site"))
            .arg("--runtime")
            .arg(self.dir.path().join("runtime.toml"))
            .env("NIKAIA_RUNTIME", "");
        cmd
    }

    /// Runs `nikaia serve` expecting it to refuse to start; its stderr.
    fn refused(&self) -> String {
        let mut child = self
            .serve_command()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("nikaia serve started although the stats-socket path is not its own");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(1), "{err}");
        err
    }

    /// `nikaia check` of the runtime file: (status, stderr).
    fn check(&self) -> (Option<i32>, String) {
        let out = nikaia(self.dir.path(), &["check", "runtime.toml"]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn stop(child: &mut std::process::Child) {
    rustix::process::kill_process(
        rustix::process::Pid::from_child(child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    assert!(child.wait().unwrap().success());
}

/// Everything about a path that must not change: type, inode, bytes or
/// link target.
fn fingerprint(path: &Path) -> (u32, u64, Vec<u8>) {
    let meta = std::fs::symlink_metadata(path).unwrap();
    let content = if meta.file_type().is_symlink() {
        std::fs::read_link(path)
            .unwrap()
            .into_os_string()
            .into_encoded_bytes()
    } else if meta.is_file() {
        std::fs::read(path).unwrap()
    } else if meta.is_dir() {
        let mut names: Vec<_> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_encoded_bytes())
            .collect();
        names.sort();
        names.concat()
    } else {
        Vec::new()
    };
    (meta.mode(), meta.ino(), content)
}

fn refuses_and_leaves_alone(make: impl Fn(&Path), what: &str) {
    let s = Setup::new();
    make(&s.sock());
    let before = fingerprint(&s.sock());
    let err = s.refused();
    assert!(err.contains(&s.sock().display().to_string()), "{err}");
    assert!(err.contains(what), "expected {what:?} in {err}");
    assert_eq!(fingerprint(&s.sock()), before, "{what} was touched");
    let (status, err) = s.check();
    assert_eq!(status, Some(1), "{err}");
    assert!(
        err.contains("error: key `stats-socket`") && err.contains(what),
        "{err}"
    );
    assert_eq!(
        fingerprint(&s.sock()),
        before,
        "{what} was touched by check"
    );
}

#[test]
fn a_regular_file_at_the_path_is_refused_and_kept() {
    refuses_and_leaves_alone(
        |p| std::fs::write(p, "the operator's data\n").unwrap(),
        "a regular file",
    );
}

#[test]
fn a_directory_at_the_path_is_refused_and_kept() {
    refuses_and_leaves_alone(
        |p| {
            std::fs::create_dir(p).unwrap();
            std::fs::write(p.join("inside"), "x").unwrap();
        },
        "a directory",
    );
}

#[test]
fn a_symlink_to_a_regular_file_is_refused_and_kept() {
    let target = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(target.path(), "pointed at").unwrap();
    let t = target.path().to_path_buf();
    refuses_and_leaves_alone(
        move |p| std::os::unix::fs::symlink(&t, p).unwrap(),
        "a symbolic link",
    );
    assert_eq!(std::fs::read(target.path()).unwrap(), b"pointed at");
}

#[test]
fn a_symlink_to_a_stale_socket_is_refused_and_kept() {
    let other = tempfile::tempdir().unwrap();
    let real = other.path().join("real.sock");
    drop(UnixListener::bind(&real).unwrap());
    refuses_and_leaves_alone(
        |p| std::os::unix::fs::symlink(&real, p).unwrap(),
        "a symbolic link",
    );
    assert!(std::fs::symlink_metadata(&real)
        .unwrap()
        .file_type()
        .is_socket());
}

#[test]
fn a_fifo_at_the_path_is_refused_and_kept() {
    refuses_and_leaves_alone(
        |p| {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                p,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            )
            .unwrap()
        },
        "a FIFO",
    );
}

#[test]
fn a_live_socket_is_refused() {
    let s = Setup::new();
    let live = UnixListener::bind(s.sock()).unwrap();
    let ino = std::fs::metadata(s.sock()).unwrap().ino();
    let err = s.refused();
    assert!(err.contains("another server answers on it"), "{err}");
    assert_eq!(std::fs::symlink_metadata(s.sock()).unwrap().ino(), ino);
    // `nikaia check` only warns: the live server is likely this file's own.
    let (status, err) = s.check();
    assert_eq!(status, Some(0), "{err}");
    assert!(err.contains("warning: key `stats-socket`"), "{err}");
    // The listener still works: nothing was done to it.
    UnixStream::connect(s.sock()).unwrap();
    live.accept().unwrap();
}

#[test]
fn a_stale_socket_is_replaced_and_removed_at_shutdown() {
    let s = Setup::new();
    drop(UnixListener::bind(s.sock()).unwrap());
    // A second name keeps the dead socket's inode from being reused, so
    // the new socket is told from the old by its inode.
    std::fs::hard_link(s.sock(), s.dir.path().join("old.sock")).unwrap();
    let stale = std::fs::symlink_metadata(s.sock()).unwrap().ino();
    assert_eq!(s.check().0, Some(0));
    let (mut child, _addr) = spawn_serve(s.serve_command());
    let meta = std::fs::symlink_metadata(s.sock()).unwrap();
    assert!(meta.file_type().is_socket());
    assert_ne!(meta.ino(), stale, "a new socket is bound in its place");
    let out = nikaia(
        s.dir.path(),
        &["explain", "--socket", s.sock().to_str().unwrap(), "--json"],
    );
    assert!(out.status.success(), "{out:?}");
    stop(&mut child);
    assert!(
        std::fs::symlink_metadata(s.sock()).is_err(),
        "the server removes the socket it bound"
    );
}

#[test]
fn a_socket_replaced_while_serving_is_left_alone_at_shutdown() {
    let s = Setup::new();
    let (mut child, _addr) = spawn_serve(s.serve_command());
    assert!(std::fs::symlink_metadata(s.sock())
        .unwrap()
        .file_type()
        .is_socket());
    // Someone moves the socket away and puts a file of their own there.
    std::fs::rename(s.sock(), s.dir.path().join("moved.sock")).unwrap();
    std::fs::write(s.sock(), "not the server's").unwrap();
    let before = fingerprint(&s.sock());
    stop(&mut child);
    assert_eq!(fingerprint(&s.sock()), before);
}

#[test]
fn a_socket_of_someone_else_replaced_while_serving_is_left_alone() {
    let s = Setup::new();
    let (mut child, _addr) = spawn_serve(s.serve_command());
    std::fs::remove_file(s.sock()).unwrap();
    let theirs = UnixListener::bind(s.sock()).unwrap();
    let ino = std::fs::metadata(s.sock()).unwrap().ino();
    stop(&mut child);
    assert_eq!(std::fs::symlink_metadata(s.sock()).unwrap().ino(), ino);
    drop(theirs);
}
