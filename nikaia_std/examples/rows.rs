//! The D1 rows, served: `cargo run --example rows` then `curl localhost:8080/`.
use nikaia_std::{html, http::Server, Bytes};

fn main() -> std::io::Result<()> {
    let page = html::Raw::new("<h1>hello</h1>\n");
    let logo = Bytes::from_static(b"\x89PNG...");
    Server::new()
        .route("/", move |_| page.clone())
        .route("/text", |_| "plain text\n")
        .route("/logo", move |_| logo.clone())
        .route("/hello/*name", |req| {
            format!("hello, {}\n", req.param().unwrap_or(""))
        })
        .route("/fails", |_| "x".parse::<u8>().map(|n| n.to_string()))
        .run()
}
