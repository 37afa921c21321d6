//! `nikaia serve`'s routes in a test server (`Server::serve_dir`, as the
//! CLI registers them): the directory handler for GET, HEAD and OPTIONS,
//! the directory writer for PUT and DELETE, and the tus endpoint where the
//! runtime has `[resumable]`.

use nikaia_std::fs::Root;
use nikaia_std::http::{Running, Server};
use nikaia_std::rt::Runtime;
use std::path::Path;

/// Serves `dir` under `rt` with `nikaia serve`'s routes (`hidden`: dot-
/// names shown; `list`: directories listed).
pub fn serve_dir(dir: &Path, rt: Runtime, hidden: bool, list: bool) -> Running {
    let root = Root::dir(dir).expect("the served directory");
    crate::start(Server::with_runtime(rt).serve_dir(root, hidden, list))
}
