//! `nikaia serve`'s routes in a test server: the directory handler for
//! GET, HEAD and OPTIONS, and the directory writer for PUT and DELETE,
//! registered as the CLI registers them.

use nikaia_std::fs::Root;
use nikaia_std::http::{dir_handler, dir_writer, resumable, Limit, Running, Server};
use nikaia_std::rt::Runtime;
use std::path::Path;
use std::sync::Arc;

/// Serves `dir` under `rt` with `nikaia serve`'s routes (`hidden`: dot-
/// names shown; `list`: directories listed).
pub fn serve_dir(dir: &Path, rt: Runtime, hidden: bool, list: bool) -> Running {
    let root = Root::dir(dir).expect("the served directory");
    let writer = Arc::new(dir_writer(root.clone(), hidden));
    let remover = writer.clone();
    let tus = Arc::new(resumable(root.clone(), hidden));
    let endpoint = rt.resumable.as_ref().map(|r| format!("{}*id", r.endpoint));
    let handler = Arc::new(dir_handler(root, hidden, list));
    let options = handler.clone();
    let mut server = Server::with_runtime(rt)
        .route("/*path", move |req| handler(req))
        .on("OPTIONS", "/*path", move |req| options(req))
        .to_file("PUT", "/*path", move |req| writer(req))
        .coded_body()
        .max_body(Limit::None)
        .to_file("DELETE", "/*path", move |req| remover(req));
    if let Some(endpoint) = endpoint {
        for method in ["POST", "HEAD", "PATCH", "DELETE", "OPTIONS"] {
            let tus = tus.clone();
            server = server
                .to_file(method, &endpoint, move |req| tus(req))
                .max_body(Limit::None);
        }
    }
    crate::start(server)
}
