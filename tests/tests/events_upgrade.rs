//! An upgrade (SIGUSR2) while event-stream clients listen (`spec/http.md`,
//! "Produced bodies"; `spec/listeners.md`, "Upgrade without a refused
//! connection"): the old process ends each stream with its last chunk as
//! it drains, so each client sees its answer end whole and, connecting
//! again as an `EventSource` does, is answered by the new process.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `sse_server`'s port and process id, once it wrote them.
fn said(port_file: &std::path::Path, not: Option<u32>) -> (u16, u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(port_file) {
            let mut words = text.split_whitespace().map(|w| w.parse::<u32>().unwrap());
            let (port, pid) = (words.next().unwrap() as u16, words.next().unwrap());
            if Some(pid) != not {
                return (port, pid);
            }
        }
        assert!(Instant::now() < deadline, "sse_server did not say its port");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// curl `-N` on the stream, and its first event's sender.
fn listen(
    port: u16,
) -> (
    Child,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
    u32,
) {
    let mut child = Command::new("curl")
        .args(["-sS", "-N", &format!("http://127.0.0.1:{port}/events")])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let pid = first
        .strip_prefix("data: ")
        .and_then(|d| d.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("not an event: {first:?}"));
    (child, lines, pid)
}

fn signal(pid: u32, signal: &str) {
    Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
}

#[test]
fn an_upgrade_ends_each_stream_whole_and_the_clients_reconnect_to_the_new_process() {
    let dir = tempfile::tempdir().unwrap();
    let port_file = dir.path().join("port");
    let mut old = Command::new(env!("CARGO_BIN_EXE_sse_server"))
        .arg(&port_file)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (port, first) = said(&port_file, None);
    let mut clients: Vec<_> = (0..3).map(|_| listen(port)).collect();
    assert!(clients.iter().all(|(_, _, pid)| *pid == first));
    signal(first, "-USR2");
    for (child, lines, _) in &mut clients {
        // Events keep coming until the old process drains; then the end.
        for line in lines.by_ref() {
            let line = line.unwrap();
            assert!(
                line.is_empty() || line.starts_with(&format!("data: {first} ")),
                "{line}"
            );
        }
        assert!(child.wait().unwrap().success(), "a whole answer, not a cut");
    }
    let (_, second) = said(&port_file, Some(first));
    assert_ne!(second, first);
    for _ in 0..3 {
        let (mut child, _, pid) = listen(port);
        assert_eq!(pid, second, "the new process answers");
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(
        old.wait().unwrap().success(),
        "the old process drained and left"
    );
    signal(second, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(20);
    // Gone, or a zombie whose parent (the old process) left it to init.
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit(") ").next().is_some_and(|r| !r.starts_with('Z')))
    };
    while alive(second) {
        assert!(Instant::now() < deadline, "the new process did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}
