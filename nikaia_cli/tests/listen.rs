//! A listening address is ours alone (`spec/http.md`, "Threads"): a port
//! anyone else holds — another `nikaia serve`, a plain socket, a socket with
//! `SO_REUSEPORT` — is refused at start, and the server already there goes
//! on serving every request.

mod common;

use common::{get, spawn_serve, Served};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A directory whose index says `name`.
fn site(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), name).unwrap();
    dir
}

/// `nikaia serve ROOT --runtime FILE` with `workers` workers on `listen`.
fn serve(root: &Path, listen: &str, workers: usize) -> (Served, String, tempfile::TempDir) {
    let conf = tempfile::tempdir().unwrap();
    let runtime = conf.path().join("runtime.toml");
    std::fs::write(
        &runtime,
        format!("listen = \"{listen}\"\nworkers = {workers}\naccess-log = \"off\"\n"),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nikaia"));
    cmd.arg("serve").arg(root).arg("--runtime").arg(&runtime);
    let (child, addr) = spawn_serve(cmd);
    (child, addr, conf)
}

/// Runs `nikaia serve ROOT --listen ADDR`, which must stop by itself within
/// 10 s (a server that started instead is killed and the test fails).
fn refused_serve(root: &Path, addr: &str) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .arg("serve")
        .arg(root)
        .args(["--listen", addr])
        .env("NIKAIA_RUNTIME", "")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    let end = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("nikaia serve --listen {addr} started on an address that is held");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn assert_refused(out: &Output, addr: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err.trim(),
        format!("nikaia serve: cannot listen on {addr}: address already in use"),
        "one line naming the address"
    );
    assert!(out.stdout.is_empty(), "it said it serves: {:?}", out.stdout);
}

/// A TCP socket bound to `addr` with `SO_REUSEPORT` set (and
/// `SO_REUSEADDR` if `reuseaddr`), listening or not.
fn reuseport_socket(addr: SocketAddr, reuseaddr: bool, listening: bool) -> OwnedFd {
    use rustix::net::{sockopt, AddressFamily, SocketType};
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let fd = rustix::net::socket(family, SocketType::STREAM, None).unwrap();
    sockopt::set_socket_reuseaddr(&fd, reuseaddr).unwrap();
    sockopt::set_socket_reuseport(&fd, true).unwrap();
    rustix::net::bind(&fd, &addr).unwrap();
    if listening {
        rustix::net::listen(&fd, 16).unwrap();
    }
    fd
}

/// A free port on 127.0.0.1 (bound and let go).
fn free_addr(ip: &str) -> Option<SocketAddr> {
    let l = TcpListener::bind(format!("{ip}:0")).ok()?;
    l.local_addr().ok()
}

#[test]
fn a_second_serve_on_the_port_of_a_running_one_is_refused_and_the_first_serves_on() {
    let first = site("first site");
    let second = site("second site");
    let (_running, addr, _conf) = serve(first.path(), "127.0.0.1:0", 2);
    let out = refused_serve(second.path(), &addr);
    assert_refused(&out, &addr);
    // Nothing was split between the two: every connection reaches the first.
    for _ in 0..24 {
        let (status, _, body) = get(&addr, "/");
        assert_eq!(status, 200);
        assert_eq!(body, b"first site");
    }
}

#[test]
fn a_port_held_by_a_plain_socket_is_refused() {
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let dir = site("x");
    assert_refused(&refused_serve(dir.path(), &addr), &addr);
}

#[test]
fn a_port_held_by_a_reuseport_socket_of_the_same_user_is_refused() {
    let dir = site("x");
    for (reuseaddr, listening) in [(true, true), (false, true), (false, false)] {
        let addr = free_addr("127.0.0.1").unwrap();
        let _held = reuseport_socket(addr, reuseaddr, listening);
        assert_refused(
            &refused_serve(dir.path(), &addr.to_string()),
            &addr.to_string(),
        );
    }
}

/// Linux lets two sockets that both set `SO_REUSEADDR` bind one address
/// while neither listens; the first to listen holds it, and the other can
/// then never listen. A socket merely bound that way does not hold the
/// address: the server starts, and the other socket gets nothing.
#[test]
fn a_bound_socket_that_never_listened_cannot_listen_once_we_serve() {
    let addr = free_addr("127.0.0.1").unwrap();
    let early = reuseport_socket(addr, true, false);
    let dir = site("ours");
    let (_running, served, _conf) = serve(dir.path(), &addr.to_string(), 2);
    assert_eq!(served, addr.to_string());
    assert_eq!(
        rustix::net::listen(&early, 16),
        Err(rustix::io::Errno::ADDRINUSE)
    );
    for _ in 0..12 {
        assert_eq!(get(&served, "/").2, b"ours");
    }
}

#[test]
fn a_foreign_reuseport_socket_cannot_join_a_running_server() {
    let dir = site("ours");
    let (_running, addr, _conf) = serve(dir.path(), "127.0.0.1:0", 2);
    let addr: SocketAddr = addr.parse().unwrap();
    use rustix::net::{sockopt, AddressFamily, SocketType};
    let fd = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    sockopt::set_socket_reuseport(&fd, true).unwrap();
    assert_eq!(
        rustix::net::bind(&fd, &addr),
        Err(rustix::io::Errno::ADDRINUSE)
    );
}

/// How many sockets listen on 127.0.0.1:`port`, from /proc/net/tcp (whose
/// local address column is `0100007F:PORT`, in hex).
fn listeners_on(port: u16) -> usize {
    let want = format!("0100007F:{port:04X}");
    std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(1) == Some(&want.as_str()) && f.get(3) == Some(&"0A")
        })
        .count()
}

#[test]
fn port_zero_with_several_workers_shares_one_chosen_port() {
    let dir = site("four workers");
    let (_running, addr, _conf) = serve(dir.path(), "127.0.0.1:0", 4);
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    assert_eq!(
        listeners_on(port),
        1,
        "one listening socket for every worker"
    );
    let clients: Vec<_> = (0..32)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || get(&addr, "/"))
        })
        .collect();
    for c in clients {
        let (status, _, body) = c.join().unwrap();
        assert_eq!((status, body.as_slice()), (200, &b"four workers"[..]));
    }
}

#[test]
fn ipv6_loopback_the_same() {
    let Some(free) = free_addr("[::1]") else {
        eprintln!("skipped: this machine has no ::1");
        return;
    };
    let _ = free;
    let dir = site("v6");
    let (_running, addr, _conf) = serve(dir.path(), "[::1]:0", 2);
    assert!(addr.starts_with("[::1]:"), "{addr}");
    let (status, _, body) = get(&addr, "/");
    assert_eq!((status, body.as_slice()), (200, &b"v6"[..]));
    let other = site("other");
    assert_refused(&refused_serve(other.path(), &addr), &addr);
    let held = TcpListener::bind("[::1]:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    assert_refused(&refused_serve(other.path(), &addr), &addr);
    let addr = free_addr("[::1]").unwrap();
    let _held = reuseport_socket(addr, true, true);
    let addr = addr.to_string();
    assert_refused(&refused_serve(other.path(), &addr), &addr);
}

#[test]
fn check_warns_of_a_busy_listen_address_and_passes() {
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap();
    let conf = tempfile::tempdir().unwrap();
    let file = conf.path().join("runtime.toml");
    std::fs::write(&file, format!("listen = \"{addr}\"\n")).unwrap();
    let out = common::nikaia(conf.path(), &["check", "runtime.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err.trim(),
        format!(
            "runtime.toml: warning: key `listen`: cannot listen on {addr}: address already in use \
             (perhaps by the server this file configures)"
        )
    );
    drop(held);
    let out = common::nikaia(conf.path(), &["check", "runtime.toml"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "free again: no warning"
    );
}

/// A foreign socket on the same port but a wider address (a dual-stack
/// `[::]` with `SO_REUSEPORT`, which Linux sometimes lets bind beside our
/// 127.0.0.1) gets none of the connections to our address.
#[test]
fn a_foreign_wildcard_on_our_port_gets_none_of_our_connections() {
    use rustix::net::{sockopt, AddressFamily, SocketType};
    let dir = site("ours");
    let (_running, addr, _conf) = serve(dir.path(), "127.0.0.1:0", 2);
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    let wildcard = SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port));
    let bind_wildcard = |v6only: bool| {
        let fd = rustix::net::socket(AddressFamily::INET6, SocketType::STREAM, None).ok()?;
        sockopt::set_socket_reuseport(&fd, true).ok()?;
        sockopt::set_ipv6_v6only(&fd, v6only).ok()?;
        rustix::net::bind(&fd, &wildcard).ok()?;
        rustix::net::listen(&fd, 64).ok()?;
        Some(fd)
    };
    // The IPv6-only socket first: after it, the kernel's fast path may let
    // the dual-stack one bind (whether it does is the kernel's business).
    drop(bind_wildcard(true));
    let foreign = bind_wildcard(false);
    for _ in 0..24 {
        assert_eq!(get(&addr, "/").2, b"ours");
    }
    if let Some(foreign) = foreign {
        rustix::io::ioctl_fionbio(&foreign, true).unwrap();
        assert_eq!(
            rustix::net::accept(&foreign).err(),
            Some(rustix::io::Errno::AGAIN),
            "a connection to 127.0.0.1 went to the foreign wildcard"
        );
    }
}
