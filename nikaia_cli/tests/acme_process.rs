//! `[acme]` across a process's life, against the mock CA
//! (`tests/acme/mock_ca.py`): `--domain` beside the runtime file's
//! `[acme]` at start, at SIGHUP and in `nikaia check` (`spec/tls.md`,
//! "From the command line"), and the presence marks a process leaves in
//! the storage at start, reload, upgrade (SIGUSR2) and a clean exit
//! ("Two processes, one storage"). No verdict waits on the wall clock:
//! exit statuses, log lines, what `nikaia explain` lists, the files in
//! the storage and their locks.

mod common;
#[path = "common/acme.rs"]
mod harness;

use common::{alive, Served};
use harness::{drain, served, wait_until, Ca, Site};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// The runtime file of the README's systemd example: the storage and the
/// CA in `[acme]`, then `extra` (`domains`, `agree-to-terms`); no
/// listeners (`--domain` and `--listen` give them).
fn write_runtime(site: &Site, ca: &Ca, extra: &str) {
    let text = format!(
        "workers = 1\naccess-log = \"off\"\nerror-log = \"error.log\"\nstats-socket = \"stats.sock\"\n\
         [acme]\ndirectory = \"{}\"\nca-roots = {:?}\nstorage = {:?}\n{extra}\n",
        ca.directory(),
        ca.tls_roots().display().to_string(),
        site.storage.display().to_string(),
    );
    std::fs::write(&site.runtime, text).unwrap();
}

/// `nikaia serve SITE --runtime FILE --domain NAME… --listen 127.0.0.1:TLS`
/// (the CA validates TLS-ALPN-01 there): the child and its stderr as it
/// comes; `Err` with the stderr when it exits instead of serving.
fn serve_domains(site: &Site, names: &[&str]) -> Result<(Served, Arc<Mutex<String>>), String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
    cmd.arg("serve")
        .arg(site.dir.path().join("site"))
        .arg("--runtime")
        .arg(&site.runtime);
    for name in names {
        cmd.args(["--domain", name]);
    }
    cmd.arg("--listen").arg(format!("127.0.0.1:{}", site.tls));
    let mut child = Served::from(
        cmd.env("NIKAIA_RUNTIME", "")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = drain(child.stderr.take().unwrap());
    let mut line = String::new();
    let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
    if !line.starts_with("Serving") {
        let status = child.wait().unwrap();
        wait_until("stderr read to its end", 10, || {
            !stderr.lock().unwrap().is_empty()
        });
        return Err(format!("{status}: {}", stderr.lock().unwrap()));
    }
    Ok((child, stderr))
}

/// `nikaia check FILE ARGS…`: (status, stdout, stderr).
fn check(file: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("check")
        .arg(file)
        .args(args)
        .env("NIKAIA_RUNTIME", "")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The names the server obtains certificates for, as `nikaia explain`
/// lists them.
fn acme_names(site: &Site) -> Vec<String> {
    let report = site.explain();
    let mut names: Vec<String> = (report["tls"]["certificates"].as_array().into_iter())
        .flatten()
        .filter(|c| c["source"] == "acme")
        .map(|c| c["cert"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// Sends `signal` to `pid`.
fn signal(pid: u32, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
}

#[test]
fn domain_beside_a_runtime_file_without_domains_starts_reloads_and_checks() {
    let ca = Ca::mock();
    let site = Site::new(&ca, &["unused.nikaia.test"], "", "");
    // README, "As a systemd service": `storage` (and here the CA) in
    // `[acme]`, the names on the command line.
    write_runtime(&site, &ca, "");

    // nikaia check: the names come from --domain; with it, the table whole.
    let (status, _, err) = check(&site.runtime, &[]);
    assert_eq!(status, 0, "{err}");
    assert!(
        err.contains("the names come from `nikaia serve --domain"),
        "{err}"
    );
    let (status, out, err) = check(&site.runtime, &["--domain", "One.Nikaia.Test."]);
    assert_eq!(status, 0, "{err}");
    assert!(out.contains("domains = [\"one.nikaia.test\"]"), "{out}");
    assert!(out.contains("agree-to-terms = true"), "{out}");
    assert!(!err.contains("names come from"), "{err}");

    // Started without --domain, the table has no names: refused, saying so.
    let refused = serve_domains(&site, &[]).map(|_| ()).unwrap_err();
    assert!(refused.contains("`[acme]` needs `domains`"), "{refused}");
    assert!(refused.contains("--domain"), "{refused}");

    // With it: the file's storage and CA, a certificate for the name.
    let (server, stderr) = serve_domains(&site, &["one.nikaia.test"]).unwrap();
    served(&site, &ca, "one.nikaia.test");
    assert!(ca_dir(&site).join("one.nikaia.test.pem").exists());
    assert_eq!(acme_names(&site), ["one.nikaia.test"]);

    // SIGHUP with that file: taken, the names still --domain's.
    signal(server.id(), rustix::process::Signal::HUP);
    wait_until("the first reload", 20, || {
        site.log().contains("reloaded; new requests use it")
    });
    assert!(
        !site.log().contains("configuration stays"),
        "{}",
        site.log()
    );

    // The file names its own domains, without agreeing: --domain's names
    // win (and agree), the file's are named in a warning.
    write_runtime(&site, &ca, "domains = [\"two.nikaia.test\"]");
    signal(server.id(), rustix::process::Signal::HUP);
    wait_until("the second reload", 20, || {
        site.log().matches("reloaded; new requests use it").count() == 2
    });
    let log = site.log();
    assert!(!log.contains("configuration stays"), "{log}");
    assert!(
        log.contains("warn: SIGHUP: ")
            && log.contains("runtime.toml: key `acme`: `domains` is replaced by --domain (one.nikaia.test): no certificate for two.nikaia.test"),
        "{log}"
    );
    assert_eq!(acme_names(&site), ["one.nikaia.test"]);
    assert!(
        stderr.lock().unwrap().is_empty(),
        "{}",
        stderr.lock().unwrap()
    );

    // nikaia check says the same of that file: alone it does not agree to
    // the terms (1); with --domain it stands, with the warning (0).
    let (status, _, err) = check(&site.runtime, &[]);
    assert_eq!(status, 1, "{err}");
    assert!(err.contains("agree-to-terms = true"), "{err}");
    let (status, out, err) = check(&site.runtime, &["--domain", "one.nikaia.test"]);
    assert_eq!(status, 0, "{err}");
    assert!(out.contains("domains = [\"one.nikaia.test\"]"), "{out}");
    assert!(err.contains("no certificate for two.nikaia.test"), "{err}");
}

#[test]
fn domain_replaces_the_files_domains_at_start_and_the_file_alone_keeps_its_rules() {
    let ca = Ca::mock();
    let site = Site::new(&ca, &["unused.nikaia.test"], "", "");

    // The file's names and --domain's: --domain's are served, and the
    // start warns of the file's it leaves out (on stderr: the error log
    // is not open yet).
    write_runtime(
        &site,
        &ca,
        "domains = [\"one.nikaia.test\", \"two.nikaia.test\"]\nagree-to-terms = true",
    );
    let (server, stderr) = serve_domains(&site, &["one.nikaia.test"]).unwrap();
    assert_eq!(acme_names(&site), ["one.nikaia.test"]);
    let said = stderr.lock().unwrap().clone();
    assert!(
        said.contains("warning: key `acme`: `domains` is replaced by --domain (one.nikaia.test): no certificate for two.nikaia.test"),
        "{said}"
    );
    drop(server);

    // The same names in both: nothing to warn of.
    write_runtime(&site, &ca, "domains = [\"one.nikaia.test\"]");
    let (server, stderr) = serve_domains(&site, &["one.nikaia.test"]).unwrap();
    assert_eq!(acme_names(&site), ["one.nikaia.test"]);
    assert!(
        stderr.lock().unwrap().is_empty(),
        "{}",
        stderr.lock().unwrap()
    );
    let (status, _, err) = check(&site.runtime, &["--domain", "one.nikaia.test"]);
    assert_eq!(status, 0, "{err}");
    assert!(!err.contains("replaced"), "{err}");
    drop(server);

    // Without --domain the file is read as before: its names, its terms.
    let refused = serve_domains(&site, &[]).map(|_| ()).unwrap_err();
    assert!(refused.contains("agree-to-terms = true"), "{refused}");
    write_runtime(
        &site,
        &ca,
        "domains = [\"two.nikaia.test\"]\nagree-to-terms = true",
    );
    let (server, _) = serve_domains(&site, &[]).unwrap();
    assert_eq!(acme_names(&site), ["two.nikaia.test"]);
    // A reload that takes the names away is refused whole: no --domain
    // gives them.
    write_runtime(&site, &ca, "agree-to-terms = true");
    signal(server.id(), rustix::process::Signal::HUP);
    wait_until("the reload's verdict", 20, || {
        site.log()
            .contains("refused; the running configuration stays")
    });
    assert!(
        site.log().contains("`[acme]` needs `domains`"),
        "{}",
        site.log()
    );
    assert_eq!(acme_names(&site), ["two.nikaia.test"]);
}

/// The CA's directory of `site`'s storage (the one CA it has used).
fn ca_dir(site: &Site) -> PathBuf {
    let first = site.storage.read_dir().unwrap().next();
    first.expect("a CA's directory").unwrap().path()
}

/// `present.<pid>.lock` in the CA's directory of `site`'s storage.
fn mark(site: &Site, pid: u32) -> PathBuf {
    ca_dir(site).join(format!("present.{pid}.lock"))
}

/// Whether a process holds the lock on `path` (a lock of ours is refused).
fn held(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => false,
        Err(rustix::io::Errno::WOULDBLOCK) => true,
        Err(e) => panic!("flock {}: {e}", path.display()),
    }
}

#[test]
fn a_presence_mark_lives_as_long_as_its_process_through_reload_upgrade_and_exit() {
    let ca = Ca::mock();
    let site = Site::new(&ca, &["mark.nikaia.test"], "", "");
    let mut old = site.serve();
    let a = old.id();
    wait_until("the first mark", 20, || mark(&site, a).exists());
    assert!(held(&mark(&site, a)));

    // A reload keeps the mark, held: a process stays present.
    signal(a, rustix::process::Signal::HUP);
    wait_until("the reload", 20, || {
        site.log().contains("reloaded; new requests use it")
    });
    assert!(held(&mark(&site, a)), "{}", site.log());

    // An upgrade: the new process marks itself; the old one's mark goes
    // with it.
    signal(a, rustix::process::Signal::USR2);
    wait_until("the upgrade", 30, || {
        site.log()
            .contains("is ready; this process stops accepting and drains")
    });
    let log = site.log();
    let b: u32 = (log.lines())
        .find_map(|l| l.split("(pid ").nth(1)?.split(')').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no new pid in {log}"));
    assert!(held(&mark(&site, b)));
    wait_until("the old process's exit", 40, || {
        old.try_wait().unwrap().is_some()
    });
    assert_eq!(old.wait().unwrap().code(), Some(0));
    assert!(!mark(&site, a).exists(), "the old process's mark stayed");
    assert!(held(&mark(&site, b)));

    // A clean exit of the last one: no mark left.
    signal(b, rustix::process::Signal::TERM);
    wait_until("the new process's exit", 40, || !alive(b as i32));
    let slug = mark(&site, b).parent().unwrap().to_path_buf();
    let marks: Vec<String> = (std::fs::read_dir(&slug).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("present."))
        .collect();
    assert!(marks.is_empty(), "{marks:?}");
}

#[test]
fn a_start_that_fails_after_acme_began_leaves_no_mark() {
    let ca = Ca::mock();
    // The stats socket cannot be made (its directory is missing): the
    // start fails after the storage was opened and the mark made.
    let site = Site::new(&ca, &["mark.nikaia.test"], "", "");
    let text = std::fs::read_to_string(&site.runtime)
        .unwrap()
        .replace("stats.sock", "missing/stats.sock");
    std::fs::write(&site.runtime, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(site.dir.path().join("site"))
        .arg("--runtime")
        .arg(&site.runtime)
        .env("NIKAIA_RUNTIME", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stats"), "{err}");
    let slug = site
        .storage
        .read_dir()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let marks: Vec<String> = (std::fs::read_dir(&slug).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("present."))
        .collect();
    assert!(marks.is_empty(), "{marks:?}");
}
