// Passing counterpart of route_reads_body.rs: a route added by `method`
// is given its whole body, up to its limit.
use nikaia_std::http::{Limit, Server};

fn main() {
    let _ = Server::new()
        .method("POST", "/echo", |req| req.body().clone())
        .max_body(Limit::Bytes(64 << 10))
        .method("POST", "/len", |req| format!("{} bytes to {}", req.body().len(), req.path()));
}
