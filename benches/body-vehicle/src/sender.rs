//! The sender child (`--sender PORT BYTES`): writes the body over 127.0.0.1.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};

/// The sender's pre-filled buffer; every `write` it makes is this large.
pub const SEND_BUF: usize = 4 << 20;

/// The sender child: connect, wait for the go byte, write `bytes` of
/// non-zero data in `SEND_BUF`-sized writes from one pre-filled buffer,
/// shut down the write side, exit.
pub fn sender_main(args: &[String]) -> io::Result<()> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_string());
    let port: u16 = args
        .first()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("--sender PORT BYTES"))?;
    let bytes: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("--sender PORT BYTES"))?;
    let buf: Vec<u8> = (0..SEND_BUF).map(|i| (i % 251) as u8 + 1).collect();
    let mut sock = TcpStream::connect(("127.0.0.1", port))?;
    let mut go = [0u8; 1];
    sock.read_exact(&mut go)?;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(SEND_BUF as u64) as usize;
        sock.write_all(&buf[..n])?;
        left -= n as u64;
    }
    sock.shutdown(Shutdown::Write)?;
    Ok(())
}
