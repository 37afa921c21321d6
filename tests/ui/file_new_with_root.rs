// Passing counterpart of file_new_without_root.rs: the request's name is
// confined by the root it is given with (spec/files.md).
use nikaia_std::fs::Root;
use nikaia_std::http::{File, Server};

fn main() {
    if let Ok(site) = Root::dir(".") {
        let _ = Server::new().route("/files/*name", move |req| {
            File::new(req.param().unwrap_or(""), &site)
        });
    }
}
