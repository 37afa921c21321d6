//! WebDAV mounted by clients that are not ours (#50), against `nikaia
//! serve`'s routes with a runtime file: davfs2 through FUSE (`mount -t
//! davfs`: a file written with `cp`, a directory made, a file renamed and
//! one removed, read back, the served directory checked after the
//! unmount), and a writes-only share as cadaver and rclone see it (reads
//! anonymous, the first write 401, the same write with the user's
//! credentials done, nothing written by the refused one).
//! test.sh installs the clients (Debian `davfs2`, `cadaver`, `rclone`).

use nikaia_std::http::Running;
use nikaia_tests::{dav, names, Client};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The one user: `u`, password `u-pass-50` (bcrypt, cost 5; no space in
/// the password, so a `.netrc` and davfs2's secrets file carry it as is).
const USER: &str = "u";
const PASS: &str = "u-pass-50";
const USERS: &str = "u:$2y$05$/zOGQAPdnxWsJ6XLg/bXCOqo3m/.WiIk3ZF/BLWSJ6sy5BgV4N0Xm\n";
/// `Authorization: Basic` of `u:u-pass-50`.
const BASIC: &str = "dTp1LXBhc3MtNTA=";

/// Whether the drive's runtime file carries `[webdav-locks]` (class 2,
/// `DAV: 1, 2`): the davfs2 mount then locks each file it writes
/// (`use_locks 1`).
const WITH_WEBDAV_LOCKS_TABLE: bool = true;

/// The drive of spec/site.md's example: every name behind the password,
/// the writer may create, replace and delete files and directories, with
/// WebDAV on, over plain HTTP (davfs2 mounts `http://`).
const DRIVE: &str = r#"
webdav = true

[[auth]]
match = ["**"]
htpasswd = "users.htpasswd"
plain-http = true

[[write]]
match = ["**"]
writers = ["u"]
create = true
replace = true
delete = true
delete-dirs = true
make-dirs = false
webdav = true
plain-http = true
"#;

/// A writes-only share: anyone reads (and mounts: PROPFIND), the auth rule
/// guards the writes alone, and only `u` writes.
const WRITES_ONLY: &str = r#"
webdav = true

[[auth]]
match = ["**"]
htpasswd = "users.htpasswd"
writes-only = true
plain-http = true

[[write]]
match = ["**"]
writers = ["u"]
create = true
replace = true
delete = true
delete-dirs = true
make-dirs = false
webdav = true
plain-http = true
"#;

/// The drive ([`dav::Drive`]) served, in a temporary directory others
/// may enter (davfs2's daemon runs as the user `davfs2` and keeps its
/// cache in here), with a `locks/` directory beside the served one. The
/// server stops before the directories go: fields drop in order.
struct Drive {
    running: Running,
    root: PathBuf,
    drive: dav::Drive,
}

impl Drive {
    /// `{TMP}` in `runtime` stands for the temporary directory.
    fn new(runtime: &str) -> Drive {
        let drive = dav::Drive::new(USERS, runtime);
        std::fs::set_permissions(drive.path(), PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::create_dir(drive.path().join("locks")).unwrap();
        let running = drive.serve(None);
        Drive {
            running,
            root: drive.root(),
            drive,
        }
    }

    /// The base URL at 127.0.0.1, ending in `/`.
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.running.local_addr().port())
    }

    /// The `DAV` header of `OPTIONS /` with the user's credentials.
    fn dav_header(&self) -> String {
        let mut c = Client::connect(self.running.local_addr());
        c.send(format!(
            "OPTIONS / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {BASIC}\r\n\
             Connection: close\r\n\r\n"
        ));
        let reply = c.reply().expect("an answer to OPTIONS");
        assert!(matches!(reply.status, 200 | 204), "OPTIONS /: {reply:?}");
        reply.header("DAV").unwrap_or("").to_owned()
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

/// Runs `cmd` and asserts it succeeded.
fn ok(cmd: &mut Command) -> String {
    let out = run(cmd.stdin(Stdio::null()));
    assert!(out.status.success(), "{cmd:?}: {}", text(&out));
    text(&out)
}

/// A deterministic byte pattern (splitmix64) of `len` bytes.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        v.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    v.truncate(len);
    v
}

// davfs2 ------------------------------------------------------------------

/// `mount.davfs`, where Debian puts it, or on the PATH.
fn mount_davfs() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/sbin".into(), "/usr/sbin".into()])
        .map(|d| d.join("mount.davfs"))
        .find(|p| p.is_file())
}

/// Why the davfs2 test cannot run here, if it cannot.
fn davfs_missing() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root: `mount -t davfs` needs root here".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("no /dev/fuse".into());
    }
    if mount_davfs().is_none() {
        return Some("mount.davfs missing (Debian davfs2; test.sh installs it)".into());
    }
    None
}

/// The group davfs2's daemon runs in (`/etc/group`), which must be able to
/// write its cache directory.
fn davfs2_gid() -> Option<u32> {
    std::fs::read_to_string("/etc/group")
        .ok()?
        .lines()
        .find_map(|l| {
            let mut f = l.split(':');
            (f.next() == Some("davfs2")).then(|| f.nth(1)?.parse().ok())?
        })
}

/// Whether `dir` is a mount point now (`/proc/self/mounts`).
fn is_mounted(dir: &Path) -> bool {
    let dir = dir.to_str().unwrap();
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(dir))
}

/// Unmounts its mount point when dropped, if it is still mounted (a failed
/// assertion): lazily, without the davfs helper, so no mount is left
/// behind whatever happened.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        if is_mounted(&self.0) {
            let _ = Command::new("umount")
                .args(["-i", "-l"])
                .arg(&self.0)
                .stdin(Stdio::null())
                .status();
        }
    }
}

/// davfs2 mounts the drive through FUSE as root (secrets and settings in
/// its own files, nothing asked), writes through the mount with `cp`,
/// `mkdir`, `mv` and `rm`, reads back; after the unmount (davfs2 uploads
/// at close or at the latest then) the served directory holds exactly
/// the names and bytes written.
#[test]
fn davfs2_mounts_the_drive_through_fuse_and_writes_it() {
    if let Some(why) = davfs_missing() {
        eprintln!("skipped: {why}");
        return;
    }
    let drive = Drive::new(&if WITH_WEBDAV_LOCKS_TABLE {
        format!("{DRIVE}\n[webdav-locks]\ndir = \"{{TMP}}/locks\"\n")
    } else {
        DRIVE.to_owned()
    });
    // Already on the server: one file read through the mount, one removed.
    let kept = bytes(1, 50_000);
    std::fs::write(drive.root.join("kept.bin"), &kept).unwrap();
    std::fs::write(drive.root.join("old.txt"), b"to be removed\n").unwrap();

    let tmp = drive.drive.path();
    let local = tmp.join("local");
    std::fs::create_dir(&local).unwrap();
    let a = bytes(2, 200_000);
    let b = bytes(3, 70_000);
    std::fs::write(local.join("a.bin"), &a).unwrap();
    std::fs::write(local.join("b.bin"), &b).unwrap();

    // Class 2 once the server says so (`DAV: 1, 2`): davfs2 locks a file
    // it opens for writing. Class 1 only, it must not.
    let dav = drive.dav_header();
    let class2 = dav.split(',').any(|c| c.trim() == "2");
    assert_eq!(
        class2, WITH_WEBDAV_LOCKS_TABLE,
        "OPTIONS / says `DAV: {dav}`"
    );
    let mnt = tmp.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let cache = tmp.join("cache");
    std::fs::create_dir(&cache).unwrap();
    let gid = davfs2_gid().expect("the group davfs2 (Debian davfs2 makes it)");
    std::os::unix::fs::chown(&cache, None, Some(gid)).unwrap();
    std::fs::set_permissions(&cache, PermissionsExt::from_mode(0o775)).unwrap();
    let secrets = tmp.join("secrets");
    std::fs::write(&secrets, format!("{} {USER} {PASS}\n", drive.url())).unwrap();
    std::fs::set_permissions(&secrets, PermissionsExt::from_mode(0o600)).unwrap();
    // `buf_size 64`: with davfs2 1.6's default (16 KiB) a readdir through
    // FUSE on Linux 6.16 and later is EINVAL (alisarctl/davfs2#22; seen
    // here on 6.18 against rclone's server too).
    let conf = tmp.join("davfs2.conf");
    std::fs::write(
        &conf,
        format!(
            "secrets {}\ncache_dir {}\nask_auth 0\nuse_locks {}\ndelay_upload 0\nbuf_size 64\n",
            secrets.display(),
            cache.display(),
            u8::from(class2),
        ),
    )
    .unwrap();

    let out = run(Command::new("timeout")
        .args(["20", "mount", "-t", "davfs"])
        .arg(drive.url())
        .arg(&mnt)
        .arg("-o")
        .arg(format!("conf={}", conf.display()))
        .stdin(Stdio::null()));
    let guard = Mounted(mnt.clone());
    if !out.status.success() {
        let said = text(&out);
        let lower = said.to_lowercase();
        if lower.contains("permission denied") || lower.contains("not permitted") {
            eprintln!(
                "skipped: `mount -t davfs` is refused here ({}): {said}",
                out.status
            );
            return;
        }
        panic!("mount -t davfs {} ({}): {said}", drive.url(), out.status);
    }
    assert!(is_mounted(&mnt), "mount said yes: {}", text(&out));

    // Write, make, rename, remove, read back, all through the mount.
    let at = |n: &str| mnt.join(n);
    ok(Command::new("cp").arg(local.join("a.bin")).arg(at("a.bin")));
    ok(Command::new("mkdir").arg(at("dir")));
    ok(Command::new("cp")
        .arg(local.join("b.bin"))
        .arg(at("dir/b.bin")));
    ok(Command::new("mv")
        .arg(at("a.bin"))
        .arg(at("dir/renamed.bin")));
    ok(Command::new("rm").arg(at("old.txt")));
    assert_eq!(std::fs::read(at("kept.bin")).unwrap(), kept);
    assert_eq!(std::fs::read(at("dir/renamed.bin")).unwrap(), a);
    // `lost+found` is davfs2's own (its `backup_dir`, local, never sent).
    assert_eq!(names(&mnt), ["dir", "kept.bin", "lost+found"]);
    ok(&mut Command::new("sync"));
    // umount (umount.davfs) waits for the daemon's last uploads.
    ok(Command::new("timeout").args(["20", "umount"]).arg(&mnt));
    assert!(!is_mounted(&mnt), "still mounted after umount");
    drop(guard);

    assert_eq!(names(&drive.root), ["dir", "kept.bin"]);
    assert_eq!(names(&drive.root.join("dir")), ["b.bin", "renamed.bin"]);
    assert_eq!(
        std::fs::read(drive.root.join("dir/renamed.bin")).unwrap(),
        a
    );
    assert_eq!(std::fs::read(drive.root.join("dir/b.bin")).unwrap(), b);
    assert_eq!(std::fs::read(drive.root.join("kept.bin")).unwrap(), kept);
    if WITH_WEBDAV_LOCKS_TABLE {
        // davfs2 locked what it wrote (the locks file is written at the
        // first change: a LOCK) and let every lock go at unmount.
        let file = tmp.join("locks/locks");
        let held = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("no LOCK reached the server ({}: {e})", file.display()));
        assert_eq!(held.lines().count(), 1, "locks left after unmount:\n{held}");
    }
}

// A writes-only share -----------------------------------------------------

/// cadaver with `input` on its standard input (no terminal: asked for a
/// user, it reads the next line, and at the end of its input gives up),
/// its `HOME` at `home`. cadaver exits 0 whatever failed: what it printed
/// is what tells.
fn cadaver(drive: &Drive, home: &Path, input: &str) -> String {
    let mut child = Command::new("cadaver")
        .arg(drive.url())
        .current_dir(home)
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cadaver runs (test.sh installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = text(&out);
    assert!(out.status.success(), "cadaver: {said}");
    said
}

#[test]
fn writes_only_share_reads_anonymous_and_asks_a_user_at_the_first_write() {
    let drive = Drive::new(WRITES_ONLY);
    std::fs::write(drive.root.join("readme.txt"), b"anyone reads this\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    let local = home.path().join("local");
    std::fs::create_dir(&local).unwrap();
    let body = bytes(50, 30_000);
    std::fs::write(local.join("up.bin"), &body).unwrap();

    // The refusal itself: an anonymous PUT is 401 with the rule's
    // challenge, from its head.
    let mut c = Client::connect(drive.running.local_addr());
    c.send(
        "PUT /up.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\
         Connection: close\r\n\r\nabc",
    );
    let reply = c.reply().expect("an answer to the PUT");
    assert_eq!(reply.status, 401, "anonymous PUT: {reply:?}");
    assert_eq!(
        reply.header("WWW-Authenticate"),
        Some("Basic realm=\"restricted\", charset=\"UTF-8\""),
        "{reply:?}"
    );

    // cadaver, anonymous: the PROPFIND it opens with and `ls` answer; a
    // PUT, and in a second run a MKCOL, are 401: it says authentication is
    // required and, with no user to give (its input ends), that it failed.
    let said = cadaver(&drive, home.path(), "ls\nput local/up.bin up.bin\n");
    assert!(
        said.contains("Listing collection `/': succeeded."),
        "{said}"
    );
    assert!(said.contains("readme.txt"), "cadaver ls: {said}");
    for said in [&said, &cadaver(&drive, home.path(), "mkcol newdir\n")] {
        assert!(
            said.contains("Authentication required for restricted on server"),
            "cadaver was asked for credentials (a 401): {said}"
        );
        assert!(said.contains("authentication failed."), "{said}");
    }
    assert_eq!(names(&drive.root), ["readme.txt"]);

    // rclone, a remote without a user: the listing answers, the copy is
    // refused with 401 and nothing is written.
    let rclone = |args: &[&str], user: bool| {
        let mut cmd = Command::new("rclone");
        cmd.args(args)
            .args(["--webdav-url", &drive.url()])
            .args(["--webdav-vendor", "other"])
            .args(["--retries", "1", "--low-level-retries", "1"])
            .arg("--cache-dir")
            .arg(home.path().join("cache"))
            .env("RCLONE_CONFIG", home.path().join("rclone.conf"))
            .env("HOME", home.path())
            .stdin(Stdio::null());
        if user {
            let out = run(Command::new("rclone").args(["obscure", PASS]));
            assert!(out.status.success(), "rclone obscure: {}", text(&out));
            let obscured = String::from_utf8(out.stdout).unwrap();
            cmd.args(["--webdav-user", USER])
                .args(["--webdav-pass", obscured.trim()]);
        }
        run(&mut cmd)
    };
    let up = local.join("up.bin");
    let up = up.to_str().unwrap();
    let out = rclone(&["lsf", ":webdav:"], false);
    assert!(out.status.success(), "rclone lsf: {}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "readme.txt\n");
    let out = rclone(&["copyto", up, ":webdav:up.bin"], false);
    assert!(
        !out.status.success(),
        "rclone copyto anonymous: {}",
        text(&out)
    );
    assert!(
        text(&out).contains("401"),
        "rclone says 401: {}",
        text(&out)
    );
    let out = rclone(&["mkdir", ":webdav:newdir"], false);
    assert!(
        !out.status.success(),
        "rclone mkdir anonymous: {}",
        text(&out)
    );
    assert!(
        text(&out).contains("401"),
        "rclone says 401: {}",
        text(&out)
    );
    assert_eq!(names(&drive.root), ["readme.txt"], "{}", text(&out));

    // The same writes with the user: done.
    let out = rclone(&["copyto", up, ":webdav:up.bin"], true);
    assert!(out.status.success(), "rclone copyto as u: {}", text(&out));
    let out = rclone(&["mkdir", ":webdav:newdir"], true);
    assert!(out.status.success(), "rclone mkdir as u: {}", text(&out));
    assert_eq!(names(&drive.root), ["newdir", "readme.txt", "up.bin"]);
    assert_eq!(std::fs::read(drive.root.join("up.bin")).unwrap(), body);
    // And anyone reads what was written.
    let out = rclone(&["cat", ":webdav:up.bin"], false);
    assert!(out.status.success(), "rclone cat: {}", text(&out));
    assert_eq!(out.stdout, body);

    // cadaver with the user in its .netrc: the same put, under another
    // name, and a collection.
    let netrc = home.path().join(".netrc");
    std::fs::write(
        &netrc,
        format!("machine 127.0.0.1 login {USER} password {PASS}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&netrc, PermissionsExt::from_mode(0o600)).unwrap();
    let said = cadaver(
        &drive,
        home.path(),
        "put local/up.bin again.bin\nmkcol other\nquit\n",
    );
    assert!(!said.contains("failed"), "cadaver as u: {said}");
    assert_eq!(said.matches("succeeded.").count(), 2, "cadaver: {said}");
    assert_eq!(
        names(&drive.root),
        ["again.bin", "newdir", "other", "readme.txt", "up.bin"]
    );
    assert_eq!(std::fs::read(drive.root.join("again.bin")).unwrap(), body);
}
