//! Opens that would wait for the disk go to the io pool (D9); the
//! connection waits, pipelined requests keep their order, and the worker
//! keeps serving others. A test switch makes every cached open "miss".

use nikaia_std::fs::{force_uncached_opens, Root};
use nikaia_std::http::{File, Server};
use nikaia_tests::{start, test_runtime, Client};

#[test]
fn opens_on_the_io_pool_keep_pipelined_order() {
    force_uncached_opens(true);
    let dir = tempfile::tempdir().unwrap();
    for i in 0..5 {
        std::fs::write(dir.path().join(format!("{i}.txt")), format!("file {i}")).unwrap();
    }
    let root = Root::dir(dir.path()).unwrap();
    let mut rt = test_runtime();
    rt.workers = 1;
    let server = start(
        Server::with_runtime(rt)
            .route("/f/*name", move |req| {
                File::new(req.param().unwrap_or(""), &root)
            })
            .route("/mem", |_| "memory"),
    );
    let mut c = Client::connect(server.local_addr());
    let mut burst = String::new();
    for i in 0..5 {
        burst.push_str(&format!("GET /f/{i}.txt HTTP/1.1\r\nHost: t\r\n\r\n"));
        burst.push_str("GET /mem HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    burst.push_str("GET /f/missing HTTP/1.1\r\nHost: t\r\n\r\n");
    c.send(burst);
    for i in 0..5 {
        assert_eq!(c.reply().unwrap().text(), format!("file {i}"));
        assert_eq!(c.reply().unwrap().text(), "memory");
    }
    assert_eq!(c.reply().unwrap().status, 404);
    assert_eq!(
        Client::connect(server.local_addr()).get("/f/3.txt").text(),
        "file 3"
    );
    let report = server.report();
    assert!(report.pool_opens >= 7, "{report:?}");
    force_uncached_opens(false);
}
