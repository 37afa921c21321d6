// Rule: a route added by `route` (or `on`) takes no body, so its handler
// has none to read: the whole body is `WithBody::body`, given only to a
// handler added by `method` (spec/http.md, "Request bodies").
use nikaia_std::http::Server;

fn main() {
    let _ = Server::new().route("/echo", |req| req.body().clone());
}
