// Rule: a handler's body outlives the call that made it (it is sent after
// the handler returns), so it may not borrow from the `&Request`; the only
// borrowed row is `&'static str` (spec/http.md, "Shape" and "Responses: the
// body table (D1)").
use nikaia_std::http::Server;

fn main() {
    let _ = Server::new().route("/echo/*name", |req| req.param().unwrap_or(""));
}
