//! The D1 rows, served: `cargo run -p nikaia_std --example rows`, then
//! `curl localhost:8080/`.
use nikaia_std::{fs, html, http::Server, Bytes};

fn main() -> std::io::Result<()> {
    let page = html::Raw::new("<h1>hello</h1>"); // text/html
    let logo = fs::map("Cargo.toml", &fs::Root::dir(env!("CARGO_MANIFEST_DIR"))?)?; // mapped once, zero-copy
    Server::new()
        .route("/", move |_| page.clone()) // a refcount per request
        .route("/logo", move |_| logo.clone()) // application/octet-stream
        .route("/text", |_| "plain text") // text/plain
        .route("/hello/*name", |req| {
            format!("hello, {}", req.param().unwrap_or(""))
        })
        .route("/bytes", |_| Bytes::from_static(b"\x00\x01"))
        .run()
}
