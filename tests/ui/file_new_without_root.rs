// Rule: a name is opened only under the root it is given with; there is no
// default root. `http::File::new(name, &root)` takes the root as an argument
// (spec/files.md, the opening paragraph; spec/fs-root.md, "Roots").
use nikaia_std::http::{File, Server};

fn main() {
    let _ = Server::new().route("/files/*name", |req| File::new(req.param().unwrap_or("")));
}
