//! `nikaia check FILE`, run as the real binary.

mod common;

use common::nikaia;

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

#[test]
fn a_good_file_prints_every_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("runtime.toml"),
        "listen = \"127.0.0.1:9000\"\nworkers = 2\nsend-file = \"64KiB\"\nstatic-cache = 0\n",
    )
    .expect("write");
    let output = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let out = text(&output.stdout);
    for key in nikaia_std::rt::KEYS {
        assert!(out.contains(key), "{key} missing from:\n{out}");
    }
    assert!(out.contains("listen = \"127.0.0.1:9000\"\n"), "{out}");
    assert!(out.contains("workers = 2\n"), "{out}");
    assert!(out.contains("send-file = \"64KiB\"\n"), "{out}");
    assert!(out.contains("static-cache = 0\n"), "{out}");
    assert!(out.contains("io-threads = 4\n"), "{out}");
    assert_eq!(text(&output.stderr), "");
}

#[test]
fn an_empty_file_prints_the_defaults() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("runtime.toml"), "# nothing\n").expect("write");
    let output = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(text(&output.stdout).contains("send-file-max-chunk = \"2MiB\"\n"));
}

#[test]
fn a_bad_file_prints_every_error_with_its_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("runtime.toml"),
        "workers = 2\nsend_file = \"auto\"\nstatic-cache-bytes = \"64MB\"\n",
    )
    .expect("write");
    let output = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(text(&output.stdout), "");
    let err = text(&output.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("runtime.toml:2:1: error: key `send_file`: unknown key"),
        "{err}"
    );
    assert!(
        lines[1].starts_with("runtime.toml:3:22: error: key `static-cache-bytes`: "),
        "{err}"
    );
}

#[test]
fn a_missing_file_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = nikaia(dir.path(), &["check", "absent.toml"]);
    assert_eq!(output.status.code(), Some(1));
    let err = text(&output.stderr);
    assert!(
        err.starts_with("absent.toml: error: cannot read the runtime file"),
        "{err}"
    );
}

#[test]
fn check_without_a_file_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = nikaia(dir.path(), &["check"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("Usage"));
    assert_eq!(text(&output.stdout), "");
}

#[test]
fn help_and_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in [
        &["--help"][..],
        &["check", "--help"][..],
        &["help", "check"][..],
        &["--version"][..],
    ] {
        let output = nikaia(dir.path(), args);
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        assert!(!output.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn no_arguments_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = nikaia(dir.path(), &[]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_sites_rules_are_checked_with_their_places_and_the_htpasswd_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("users.htpasswd"),
        "alice:$2y$05$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K\ncarol:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("runtime.toml"),
        "[cors]\norigins = \"*\"\ncredentials = true\n\n[[headers]]\nmatch = \"*.html\"\nset = { ETag = \"x\" }\n\n[[auth]]\nmatch = \"staging/**\"\nhtpasswd = \"users.htpasswd\"\n",
    )
    .expect("write");
    let output = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(output.status.code(), Some(1));
    let err = text(&output.stderr);
    assert!(err.contains("runtime.toml:2:11: error: key `cors`: `origins = \"*\"` cannot go with `credentials = true`"), "{err}");
    assert!(
        err.contains("runtime.toml:7:9: error: key `headers`: `ETag` is the server's own header"),
        "{err}"
    );
    assert!(err.contains("users.htpasswd:2:7: error: "), "{err}");
    assert!(err.contains("SHA-1"), "{err}");
}

#[test]
fn write_rules_no_password_protects_are_warned_of() {
    let dir = tempfile::tempdir().expect("tempdir");
    // alice's entry, bcrypt (spec/site.md): the users file of drop/**.
    let users = "alice:$2y$05$..pLl2nN4SfSnAxRx2YU1eViKHCFKEu.e1hSV21vu7IdhPvTVaO1K\n";
    std::fs::write(dir.path().join("users"), users).expect("write");
    let text_of = "listen = \"127.0.0.1:0\"\n\
        [[auth]]\nmatch = \"drop/**\"\nhtpasswd = \"users\"\n\
        [[write]]\nmatch = \"drop/**\"\nwriters = [\"alice\", \"carol\"]\n\
        [[write]]\nmatch = \"inbox/*\"\nwriters = [\"alice\"]\n\
        [[write]]\nmatch = \"public/**\"\nanyone = true\n";
    std::fs::write(dir.path().join("runtime.toml"), text_of).expect("write");
    let output = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(output.status.code(), Some(0), "warnings only");
    let err = text(&output.stderr);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("key `write`")).collect();
    assert_eq!(warnings.len(), 3, "{err}");
    assert!(
        warnings[0].contains("rule 1: writer(s) carol are not users of"),
        "{err}"
    );
    assert!(
        warnings[1].contains("rule 2 covers names such as `inbox/x`"),
        "{err}"
    );
    assert!(warnings[1].contains("refused (403)"), "{err}");
    assert!(
        warnings[2].contains("rule 3 lets anyone write names such as `public/x/x`"),
        "{err}"
    );
    // A good rule has nothing to say.
    let good = "listen = \"127.0.0.1:0\"\n[[auth]]\nmatch = \"drop/**\"\nhtpasswd = \"users\"\n\
        [[write]]\nmatch = \"drop/**\"\nwriters = [\"alice\"]\n";
    std::fs::write(dir.path().join("runtime.toml"), good).expect("write");
    let output = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        !text(&output.stderr).contains("`write`"),
        "{}",
        text(&output.stderr)
    );
}

/// `[resumable] dir` must be outside the served directory and on its file
/// system: `nikaia check FILE DIR` says which, and `nikaia serve` refuses
/// to start with either.
#[test]
fn resumable_partials_live_outside_the_served_tree_on_its_file_system() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("site")).unwrap();
    let write = |partial: &str| {
        let text = format!("[resumable]\ndir = \"{partial}\"\n");
        std::fs::write(dir.path().join("runtime.toml"), text).unwrap();
    };
    write("partial");
    let output = nikaia(dir.path(), &["check", "runtime.toml", "site"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("resumable = { dir = "));

    write("site/partial");
    let output = nikaia(dir.path(), &["check", "runtime.toml", "site"]);
    assert_eq!(output.status.code(), Some(1));
    let err = text(&output.stderr);
    assert!(
        err.contains("key `resumable`") && err.contains("inside the served directory"),
        "{err}"
    );
    // One sentence, its words each one space apart.
    assert!(
        err.contains("inside the served directory") && !err.contains("  "),
        "{err}"
    );
    let serve = nikaia(dir.path(), &["serve", "site", "--runtime", "runtime.toml"]);
    assert_eq!(serve.status.code(), Some(1));
    assert!(text(&serve.stderr).contains("inside the served directory"));
    assert!(
        !dir.path().join("site/partial").exists(),
        "nothing was made"
    );

    // /dev/shm is a mount of its own: another file system than the
    // temporary directory's.
    let shm = tempfile::tempdir_in("/dev/shm").expect("a tmpfs");
    use std::os::unix::fs::MetadataExt;
    let other = std::fs::metadata(shm.path()).unwrap().dev();
    assert_ne!(other, std::fs::metadata(dir.path()).unwrap().dev());
    write(&shm.path().join("partial").display().to_string());
    let output = nikaia(dir.path(), &["check", "runtime.toml", "site"]);
    assert_eq!(output.status.code(), Some(1));
    let err = text(&output.stderr);
    assert!(
        err.contains("another file system") && !err.contains("  "),
        "{err}"
    );
}

/// With `http3 = true`, `nikaia check` shows the UDP address HTTP/3 takes
/// beside each TLS listener (its IP and port), and none beside a plain or
/// Unix one; with the key left out, the same, saying a busy port is left
/// out at start; with `false`, no such line. `http3 = true` with no TLS
/// listener is refused at the key; left out, it is no HTTP/3.
#[test]
fn http3_shows_a_udp_address_beside_each_tls_listener() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pki = nikaia_tests::TestPki::new();
    // A port free now; `check` only tries to bind it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let write = |http3: &str| {
        let text = format!(
            "tls-cert = \"{}\"\ntls-key = \"{}\"\n{http3}listen = [\"127.0.0.1:{port}\", \
             {{ address = \"127.0.0.1:0\", tls = false }}, \"unix:web.sock\", \"[::1]:0\"]\n",
            pki.cert.display(),
            pki.key.display()
        );
        std::fs::write(dir.path().join("runtime.toml"), text).expect("write");
    };
    write("http3 = true\n");
    let output = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let out = text(&output.stdout);
    assert!(out.contains("\nhttp3 = true\n"), "{out}");
    let udp: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("# HTTP/3"))
        .collect();
    assert_eq!(
        udp,
        [
            "# HTTP/3 on 2 UDP address(es), each beside its TLS listener:".to_owned(),
            format!("#   udp 127.0.0.1:{port} beside tcp 127.0.0.1:{port}"),
            "#   udp [::1]:0 beside tcp [::1]:0 (the same port, chosen at start)".to_owned(),
        ],
        "{out}"
    );

    write("");
    let output = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let out = text(&output.stdout);
    assert!(out.contains("\n# http3 is not set\n"), "{out}");
    let udp: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("# HTTP/3"))
        .collect();
    assert_eq!(
        udp,
        [
            "# HTTP/3 on 2 UDP address(es), each beside its TLS listener (`http3` left out: \
             an address whose UDP port is busy at start has none, with a notice):"
                .to_owned(),
            format!("#   udp 127.0.0.1:{port} beside tcp 127.0.0.1:{port}"),
            "#   udp [::1]:0 beside tcp [::1]:0 (the same port, chosen at start)".to_owned(),
        ],
        "{out}"
    );

    write("http3 = false\n");
    let output = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let out = text(&output.stdout);
    assert!(
        out.contains("\nhttp3 = false\n") && !out.contains("udp"),
        "{out}"
    );

    // Left out with no TLS listener: no HTTP/3, and nothing said.
    std::fs::write(dir.path().join("runtime.toml"), "workers = 1\n").expect("write");
    let output = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(!text(&output.stdout).contains("HTTP/3"));
    assert!(!text(&output.stderr).contains("http3"));

    std::fs::write(
        dir.path().join("runtime.toml"),
        "workers = 1\nhttp3 = true\n",
    )
    .expect("write");
    let output = nikaia(dir.path(), &["check", "runtime.toml"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(text(&output.stdout), "");
    let err = text(&output.stderr);
    assert!(
        err.starts_with("runtime.toml:2:1: error: key `http3`: HTTP/3 needs TLS"),
        "{err}"
    );
}
