//! What the CLI tests share: running `nikaia`, starting `nikaia serve`,
//! finding its address, and asking it for a page. Each test file is its own
//! crate and uses part of this.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// Spawns `cmd` (a `nikaia serve …` already given its arguments), reads the
/// `Serving DIR at http://ADDR/` (or `https://`) line, and returns the
/// child and ADDR.
pub fn spawn_serve(mut cmd: Command) -> (Child, String) {
    let mut child = cmd
        .env("NIKAIA_RUNTIME", "")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    (child, addr)
}

/// (status, headers, body) of one GET over a fresh connection.
pub fn get(addr: &str, target: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let split = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&all[..split]).into_owned();
    let status = head[9..12].parse().unwrap();
    (status, head, all[split..].to_vec())
}

/// Runs the `nikaia` binary with `args` in `dir` and waits for it.
pub fn nikaia(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nikaia"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run nikaia")
}
