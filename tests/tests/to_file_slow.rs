//! A writer waiting on a slow sync holds up no worker (`spec/files.md`,
//! "A body written under a root": D9 for writes). Its own test program:
//! the slow sync is a process-wide test switch.

use nikaia_std::fs::Root;
use nikaia_std::http::{File, Server, ToFile};
use nikaia_tests::{start, test_runtime, Client};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn a_writer_waiting_on_a_slow_sync_holds_up_no_worker() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(dir.path().join("small"), b"small file").unwrap();
    let root = Root::dir(dir.path()).unwrap();
    let (r1, r2) = (root.clone(), root);
    let mut rt = test_runtime();
    rt.workers = 1;
    let server = start(
        Server::with_runtime(rt)
            .to_file("PUT", "/put/*name", move |req| {
                ToFile::create(req.param().unwrap_or(""), &r1)
            })
            .route("/files/*name", move |req| {
                File::new(req.param().unwrap_or(""), &r2)
            }),
    );
    nikaia_std::fs::delay_syncs(1500);
    let answered = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicBool::new(false));
    let port = server.local_addr().port();
    let writer = {
        let (answered, sent) = (answered.clone(), sent.clone());
        std::thread::spawn(move || {
            let mut c = Client::connect(([127, 0, 0, 1], port).into());
            c.send("PUT /put/slow HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde");
            sent.store(true, Ordering::SeqCst);
            let status = c.reply().unwrap().status;
            answered.store(true, Ordering::SeqCst);
            status
        })
    };
    while !sent.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(5));
    }
    // The one worker answers 20 GETs while the writer waits on its sync.
    let mut c = Client::connect(server.local_addr());
    for _ in 0..20 {
        assert_eq!(c.get("/files/small").body, b"small file");
    }
    assert!(
        !answered.load(Ordering::SeqCst),
        "the GETs waited for the sync"
    );
    assert_eq!(writer.join().unwrap(), 201);
    nikaia_std::fs::delay_syncs(0);
}
