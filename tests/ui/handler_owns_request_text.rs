// Passing counterpart of handler_borrows_request.rs: text taken from the
// request is owned by the body (a `String`), so it outlives the handler.
use nikaia_std::http::Server;

fn main() {
    let _ = Server::new()
        .route("/echo/*name", |req| req.param().unwrap_or("").to_owned())
        .route("/hello/*name", |req| format!("hello, {}", req.param().unwrap_or("")));
}
