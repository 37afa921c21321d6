//! `Running::reload` and the listener list through the Rust API
//! (`spec/listeners.md`): what a reload reports as needing a restart, a
//! refused reload leaving every key as it was, the kept table shrinking
//! without a stale answer, and a plain listener sending requests to the
//! port of the TLS listener beside it.

use nikaia_std::fs::Root;
use nikaia_std::http::{dir_handler, Server};
use nikaia_std::rt::{HttpsRedirect, Listen, ListenAddr, Runtime};
use nikaia_tests::{start, Client, TestPki, TlsClient};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

fn site() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..8 {
        std::fs::write(
            dir.path().join(format!("f{i}.txt")),
            format!("file {i} v1\n"),
        )
        .unwrap();
    }
    dir
}

/// A server of `root` whose reload reads `file`.
fn serve(root: &Path, rt: Runtime, file: &Path) -> nikaia_std::http::Running {
    let root = Root::dir(root).unwrap();
    start(
        Server::with_runtime(rt)
            .route("/*path", dir_handler(root, false, false))
            .reload_from(file, |_| {}),
    )
}

#[test]
fn a_reload_applies_what_it_can_and_names_what_needs_a_restart() {
    let dir = site();
    let conf = tempfile::tempdir().unwrap();
    let file = conf.path().join("runtime.toml");
    std::fs::write(&file, "listen = \"127.0.0.1:0\"\nworkers = 2\naccess-log = \"off\"\nstatic-cache = 8\ncache-control = \"no-cache\"\n").unwrap();
    let rt = Runtime::load(&file).unwrap();
    // A file changed in the last 10 ms is not kept (its timestamp could
    // hide a second change): let them age first.
    std::thread::sleep(Duration::from_millis(50));
    let running = serve(dir.path(), rt, &file);
    let addr = running.local_addr();
    let mut c = Client::connect(addr);
    for round in 0..2 {
        for i in 0..8 {
            let r = c.get(&format!("/f{i}.txt"));
            assert_eq!(r.status, 200, "round {round}");
        }
    }
    assert_eq!(running.report().cache_entries, 8);

    // A refused file changes nothing: the table, the header, the listener.
    std::fs::write(&file, "listen = \"127.0.0.1:0\"\nstatic-cache = \"many\"\n").unwrap();
    let problems = running.reload().unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("runtime.toml:2:16: error: key `static-cache`"),
        "{problems:?}"
    );
    assert_eq!(running.report().cache_entries, 8);
    assert_eq!(c.get("/f0.txt").header("cache-control"), Some("no-cache"));

    // A good one: restart keys named and kept, the rest applied.
    std::fs::write(
        &file,
        "listen = \"127.0.0.1:1\"\nworkers = 3\nio-threads = 2\naccess-log = \"off\"\nstatic-cache = 2\ncache-control = \"max-age=5\"\n",
    )
    .unwrap();
    let reloaded = running.reload().unwrap();
    assert_eq!(reloaded.restart_needed, ["listen", "workers", "io-threads"]);
    assert!(running.report().cache_entries <= 2, "the table shrank");
    // The same kept-alive connection: its next request gets the new file.
    assert_eq!(c.get("/f0.txt").header("cache-control"), Some("max-age=5"));
    assert_eq!(running.local_addr(), addr);
    // No stale byte: an entry that stayed is checked against its file.
    std::thread::sleep(Duration::from_millis(20));
    for i in 0..8 {
        std::fs::write(
            dir.path().join(format!("f{i}.txt")),
            format!("file {i} v2\n"),
        )
        .unwrap();
    }
    for i in 0..8 {
        assert_eq!(
            c.get(&format!("/f{i}.txt")).text(),
            format!("file {i} v2\n")
        );
    }
}

#[test]
fn a_plain_listener_redirects_to_the_tls_listener_beside_it() {
    let dir = site();
    let pki = TestPki::new();
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let mut rt = pki.runtime();
    rt.listen = vec![Listen::tcp(any), {
        let mut plain = Listen::tcp(any);
        plain.tls = Some(false);
        plain.https_redirect = Some(HttpsRedirect::TlsListener);
        plain
    }];
    let running = serve(dir.path(), rt, Path::new("/nonexistent/runtime.toml"));
    let addresses = running.addresses();
    let tcp = |i: usize| match &addresses[i] {
        (ListenAddr::Tcp(addr), _) => *addr,
        other => panic!("{other:?}"),
    };
    assert_eq!((addresses[0].1, addresses[1].1), (true, false));
    let (tls, plain) = (tcp(0), tcp(1));
    let r = Client::connect(plain).get("/f1.txt?a=b");
    assert_eq!(r.status, 308);
    assert_eq!(
        r.header("location"),
        Some(format!("https://t:{}/f1.txt?a=b", tls.port()).as_str())
    );
    let r = TlsClient::connect_tls(tls, pki.client_config()).get("/f1.txt");
    assert_eq!((r.status, r.text()), (200, "file 1 v1\n".to_owned()));
    // A reload whose file cannot be read is refused; both still serve.
    assert!(running.reload().is_err());
    assert_eq!(Client::connect(plain).get("/").status, 308);
}

#[test]
fn a_reload_moves_the_stats_socket_and_the_access_log() {
    use std::io::Read;
    let dir = site();
    let conf = tempfile::tempdir().unwrap();
    let file = conf.path().join("runtime.toml");
    let write = |stats: &str, access: &str| {
        std::fs::write(
            &file,
            format!("listen = \"127.0.0.1:0\"\nworkers = 1\nstats-socket = \"{stats}\"\naccess-log = \"{access}\"\n"),
        )
        .unwrap()
    };
    write("a.sock", "off");
    let running = serve(dir.path(), Runtime::load(&file).unwrap(), &file);
    let report = |path: &Path| {
        let mut s = std::os::unix::net::UnixStream::connect(path).unwrap();
        let mut json = String::new();
        s.read_to_string(&mut json).unwrap();
        json
    };
    assert!(report(&conf.path().join("a.sock")).contains("\"uptime_ms\""));
    assert_eq!(
        Client::connect(running.local_addr()).get("/f0.txt").status,
        200
    );

    write("b.sock", "access.log");
    running.reload().unwrap();
    assert!(
        !conf.path().join("a.sock").exists(),
        "the old socket was ours: removed"
    );
    assert!(report(&conf.path().join("b.sock")).contains("\"uptime_ms\""));
    assert_eq!(
        Client::connect(running.local_addr()).get("/f1.txt").status,
        200
    );
    running.shutdown();
    running.wait();
    let access = std::fs::read_to_string(conf.path().join("access.log")).unwrap();
    assert!(access.contains("\"GET /f1.txt HTTP/1.1\" 200"), "{access}");
    assert!(
        !access.contains("/f0.txt"),
        "logged before the reload: {access}"
    );
    assert!(!conf.path().join("b.sock").exists());
}

/// `http3` is like `listen` at SIGHUP: its UDP sockets open with the
/// listeners, so a change that turns HTTP/3 on or off keeps the old value
/// until a restart or an upgrade, and the rest of the file applies. Left
/// out is on: from it to `true` nothing waits.
#[test]
fn a_reload_leaves_http3_to_a_restart() {
    let dir = site();
    let pki = TestPki::new();
    let conf = tempfile::tempdir().unwrap();
    let file = conf.path().join("runtime.toml");
    let write = |http3: &str, cache_control: &str| {
        let text = format!(
            "listen = \"127.0.0.1:0\"\nworkers = 1\naccess-log = \"off\"\n\
             tls-cert = \"{}\"\ntls-key = \"{}\"\n{http3}cache-control = \"{cache_control}\"\n",
            pki.cert.display(),
            pki.key.display()
        );
        std::fs::write(&file, text).unwrap();
    };
    write("http3 = false\n", "no-cache");
    let running = serve(dir.path(), Runtime::load(&file).unwrap(), &file);
    let get = || TlsClient::connect_tls(running.local_addr(), pki.client_config()).get("/f1.txt");
    assert_eq!(get().header("cache-control"), Some("no-cache"));
    assert_eq!(get().header("alt-svc"), Some("clear"));

    write("http3 = true\n", "max-age=5");
    assert_eq!(running.reload().unwrap().restart_needed, ["http3"]);
    assert_eq!(get().header("cache-control"), Some("max-age=5"));
    // The old value stayed: the same file read again names it again.
    assert_eq!(running.reload().unwrap().restart_needed, ["http3"]);
    assert_eq!(get().header("alt-svc"), Some("clear"));
    // Left out, HTTP/3 is on: a change too.
    write("", "max-age=5");
    assert_eq!(running.reload().unwrap().restart_needed, ["http3"]);
    write("http3 = false\n", "max-age=5");
    assert!(running.reload().unwrap().restart_needed.is_empty());
    assert_eq!(get().status, 200);
    drop(running);

    // Started with the key left out: HTTP/3 is on and advertised.
    write("", "no-cache");
    let running = serve(dir.path(), Runtime::load(&file).unwrap(), &file);
    let get = || TlsClient::connect_tls(running.local_addr(), pki.client_config()).get("/f1.txt");
    let alt = format!("h3=\":{}\"; ma=86400", running.local_addr().port());
    assert_eq!(get().header("alt-svc"), Some(alt.as_str()));
    write("http3 = true\n", "no-cache");
    assert!(running.reload().unwrap().restart_needed.is_empty());
    write("http3 = false\n", "no-cache");
    assert_eq!(running.reload().unwrap().restart_needed, ["http3"]);
    assert_eq!(get().header("alt-svc"), Some(alt.as_str()));
}
