//! A program that takes uploads to files (README, "A body to a file"):
//! `curl -T report.pdf http://127.0.0.1:8080/drop/report.pdf` writes
//! `./drop/report.pdf` — never over a file that exists — and
//! `curl -T report.pdf -H 'If-Match: "…"' …/drop/report.pdf` replaces
//! only the version whose ETag the client names.

use nikaia_std::fs::Root;
use nikaia_std::http::{Limit, Request, Server, ToFile};

fn main() -> std::io::Result<()> {
    std::fs::create_dir_all("drop")?;
    let drop = Root::dir("drop")?;
    Server::new()
        .to_file("PUT", "/drop/*name", move |req: &Request| {
            let name = req.param().unwrap_or("");
            match req.header("if-match") {
                Some(etag) => ToFile::replace_if(name, &drop, etag),
                None => ToFile::create(name, &drop),
            }
        })
        .max_body(Limit::Bytes(4 << 30))
        .run()
}
