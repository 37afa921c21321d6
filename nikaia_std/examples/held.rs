//! The constant answer the benches measure (D1's cheapest row): a page the
//! program holds, answered with a refcount per request, beside the files
//! of the same directory. `cargo build --release -p nikaia_std --example
//! held`, then `target/release/examples/held serve DIR --runtime FILE`:
//! `/page.html` is DIR's `page.html` read once at start and held as
//! `html::Raw`; every other path is `nikaia serve`'s (read-only).
use nikaia_std::{fs::Root, html, http::Server, rt::Runtime};
use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let usage = || std::io::Error::other("usage: held serve DIR [--runtime FILE]");
    if args.next().is_none_or(|a| a != "serve") {
        return Err(usage());
    }
    let dir = PathBuf::from(args.next().ok_or_else(usage)?);
    let runtime = match (args.next(), args.next()) {
        (Some(flag), Some(file)) if flag == "--runtime" => Some(PathBuf::from(file)),
        (None, _) => None,
        _ => return Err(usage()),
    };
    let rt = Runtime::from_args(runtime.as_deref()).map_err(|errors| {
        std::io::Error::other(
            errors
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
    let page = std::fs::read_to_string(dir.join("page.html"))?;
    let page = html::Raw::new(page);
    Server::with_runtime(rt)
        .route("/page.html", move |_| page.clone())
        .serve_dir(Root::dir(&dir)?, false, false)
        .run()
}
