//! A large body written to a file (`spec/files.md`, "A body written under
//! a root"): 1 GiB over HTTP/1.1 (4 GiB with `NIKAIA_BODY_GIB=4`, the full
//! mode) to a file on the disk, byte-exact, with the server's resident
//! memory sampled as it arrives. Bytes and memory, not durations.

use nikaia_std::fs::Root;
use nikaia_std::http::{Limit, Server, ToFile};
use nikaia_tests::load::{env_number, sampled};
use nikaia_tests::{start, test_runtime};
use std::io::{Read, Write};
use std::net::TcpStream;

/// Block `i` of the body (64 KiB): its words say where they are.
fn block(i: u64, out: &mut [u8]) {
    for (j, word) in out.chunks_mut(8).enumerate() {
        word.copy_from_slice(&(i * 8192 + j as u64).to_le_bytes());
    }
}

#[test]
fn a_gib_body_becomes_a_file_byte_exact_in_bounded_memory() {
    let gib: u64 = env_number("NIKAIA_BODY_GIB", 1);
    let len = gib << 30;
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = Root::dir(dir.path()).unwrap();
    let server = start(
        Server::with_runtime(test_runtime())
            .to_file("PUT", "/put/*name", move |req| {
                ToFile::create(req.param().unwrap_or(""), &root)
            })
            .max_body(Limit::None),
    );
    let mut reply = String::new();
    let (grew, _threads) = sampled(|| {
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        write!(
            s,
            "PUT /put/big HTTP/1.1\r\nHost: t\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut buf = vec![0u8; 64 << 10];
        for i in 0..len / buf.len() as u64 {
            block(i, &mut buf);
            s.write_all(&buf).unwrap();
        }
        s.read_to_string(&mut reply).unwrap();
    });
    assert!(reply.starts_with("HTTP/1.1 201 "), "{reply}");
    // Byte-exact: read back block by block.
    let mut file = std::fs::File::open(dir.path().join("big")).unwrap();
    assert_eq!(file.metadata().unwrap().len(), len);
    let mut buf = vec![0u8; 64 << 10];
    let mut want = vec![0u8; 64 << 10];
    for i in 0..len / buf.len() as u64 {
        file.read_exact(&mut buf).unwrap();
        block(i, &mut want);
        assert!(buf == want, "block {i} differs");
    }
    eprintln!("resident memory grew by {} KiB", grew >> 10);
    // What one body may hold: three runs of 512 KiB, the read buffer and
    // the client's block; far below this bound.
    assert!(grew < 24 << 20, "resident memory grew by {grew} bytes");
    let report = server.report();
    assert_eq!(report.bodies.files_written, 1);
    assert_eq!(report.bodies.bytes, len);
}
