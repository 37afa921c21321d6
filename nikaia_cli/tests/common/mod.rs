//! What the CLI tests share: starting `nikaia serve` and finding its address.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// Spawns `cmd` (a `nikaia serve …` already given its arguments), reads the
/// `Serving DIR at http://ADDR/` line, and returns the child and ADDR.
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
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    (child, addr)
}
