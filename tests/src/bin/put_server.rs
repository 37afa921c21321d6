//! A server that writes bodies to files under one directory, for the tests
//! that kill it (`tests/tests/to_file_kill.rs`) and trace it
//! (`tests/tests/to_file_order.rs`).
//!
//! `put_server DIR PORT_FILE`: serves on 127.0.0.1 (a free port, written to
//! PORT_FILE with the process id once listening) `PUT /create/*name`, `PUT /replace/*name`,
//! `PUT /full/*name` (durability full) and `GET /files/*name`.
//! `NIKAIA_NAMED_TEMPORARIES=1` makes every write use a named temporary.
//! `NIKAIA_PUT_RUNTIME=FILE` reads that runtime file (its site rules; the
//! listener, workers and logs stay the above) and serves every other path
//! with `nikaia serve`'s routes: the directory handler and the directory
//! writer under the file's `[[write]]` rules.

use nikaia_std::fs::{Durability, Root};
use nikaia_std::http::{dir_handler, dir_writer, File, Server, ToFile};

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(port_file)) = (args.next(), args.next()) else {
        eprintln!("usage: put_server DIR PORT_FILE");
        std::process::exit(2);
    };
    if std::env::var_os("NIKAIA_NAMED_TEMPORARIES").is_some_and(|v| v == "1") {
        nikaia_std::fs::force_named_temporaries(true);
    }
    let root = Root::dir(&dir).expect("the directory to write under");
    let (r1, r2, r3, r4) = (root.clone(), root.clone(), root.clone(), root.clone());
    let mut rt = match std::env::var_os("NIKAIA_PUT_RUNTIME") {
        Some(file) => nikaia_std::rt::Runtime::load(std::path::Path::new(&file))
            .unwrap_or_else(|e| panic!("{e:?}")),
        None => nikaia_std::rt::Runtime::default(),
    };
    let site = root;
    rt.listen = vec![nikaia_std::rt::Listen::tcp(([127, 0, 0, 1], 0).into())];
    rt.workers = 1;
    rt.access_log = nikaia_std::rt::LogTarget::Off;
    let server = Server::with_runtime(rt)
        .to_file("PUT", "/create/*name", move |req| {
            ToFile::create(req.param().unwrap_or(""), &r1)
        })
        .to_file("PUT", "/replace/*name", move |req| {
            ToFile::replace(req.param().unwrap_or(""), &r2)
        })
        .to_file("PUT", "/full/*name", move |req| {
            ToFile::replace(req.param().unwrap_or(""), &r3).durability(Durability::Full)
        })
        .route("/files/*name", move |req| {
            File::new(req.param().unwrap_or(""), &r4)
        });
    let writer = std::sync::Arc::new(dir_writer(site.clone(), false));
    let handler = dir_handler(site, false, false);
    let server = server
        .route("/*path", handler)
        .to_file("PUT", "/*path", move |req| writer(req))
        .coded_body()
        .max_body(nikaia_std::http::Limit::None);
    let running = server.start().expect("start");
    let tmp = format!("{port_file}.tmp");
    let said = format!("{} {}", running.local_addr().port(), std::process::id());
    std::fs::write(&tmp, said).unwrap();
    std::fs::rename(&tmp, &port_file).unwrap();
    running.wait();
}
