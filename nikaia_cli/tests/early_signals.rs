//! A SIGHUP that comes the moment the port answers, before `nikaia serve`
//! printed its `Serving` line, is a reload like any other, not the end of
//! the process (`spec/listeners.md`, "Reload"). Found from outside: such a
//! SIGHUP killed the server two or three times in fifteen starts, where a
//! service manager's `reload` right after its start sends exactly that.

mod common;

use common::Served;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_sighup_as_soon_as_the_port_answers_is_a_reload() {
    for round in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("index.html"), "here\n").unwrap();
        let port = free_port();
        let runtime = dir.path().join("runtime.toml");
        std::fs::write(
            &runtime,
            format!("listen = \"127.0.0.1:{port}\"\nworkers = 1\nerror-log = \"error.log\"\n"),
        )
        .unwrap();
        let mut child: Served = Command::new(env!("CARGO_BIN_EXE_nikaia"))
            .arg("serve")
            .arg(&root)
            .arg("--runtime")
            .arg(&runtime)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
            .into();
        // The first moment a connection is taken, the signal goes.
        let end = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < end,
                "round {round}: the port never answered"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::HUP).unwrap();
        // The reload is logged, and the process still serves.
        let log = dir.path().join("error.log");
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("SIGHUP:") {
                break;
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: the SIGHUP ended the server"
            );
            assert!(
                Instant::now() < end,
                "round {round}: no reload logged:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let (status, _, body) = common::get(&format!("127.0.0.1:{port}"), "/index.html");
        assert_eq!(
            (status, body.as_slice()),
            (200, &b"here\n"[..]),
            "round {round}"
        );
        let mut out = String::new();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        child.wait().unwrap();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(out.contains("Serving"), "round {round}: {out}");
    }
}
