//! Pipelined requests that arrive together are answered together: their
//! answers are gathered and written in one go (`spec/http.md`, "Writing"),
//! not one write (and, with `TCP_NODELAY`, one segment) per answer.

use nikaia_std::http::Server;
use nikaia_tests::{start, test_runtime, Client};
use std::os::fd::AsRawFd;

/// Data segments this socket has received (`TCP_INFO`'s
/// `tcpi_data_segs_in`).
fn data_segments_in(sock: &std::net::TcpStream) -> u32 {
    // SAFETY: tcp_info is plain old data (integers only): all zeros is
    // one of its values.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `info`, a
    // tcp_info owned here, for a descriptor the stream keeps open.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    assert_eq!(r, 0, "TCP_INFO: {}", std::io::Error::last_os_error());
    info.tcpi_data_segs_in
}

#[test]
fn sixteen_pipelined_answers_leave_in_one_write() {
    let server = start(
        Server::with_runtime(test_runtime())
            .route("/n/*i", |req| format!("[{}]", req.param().unwrap_or(""))),
    );
    let mut c = Client::connect(server.local_addr());
    assert_eq!(c.get("/n/warm").status, 200);
    let before = data_segments_in(c.stream());
    let requests: String = (0..16)
        .map(|i| format!("GET /n/{i} HTTP/1.1\r\nHost: t\r\n\r\n"))
        .collect();
    c.send(requests);
    for i in 0..16 {
        assert_eq!(c.reply().unwrap().text(), format!("[{i}]"), "in order");
    }
    let segments = data_segments_in(c.stream()) - before;
    // One write of about 2.5 KB is one segment on loopback; a little slack
    // for a server that read the requests in two parts. One write per
    // answer would be 16.
    assert!(
        segments <= 3,
        "16 pipelined answers came in {segments} segments"
    );
}
