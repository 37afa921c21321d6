// Rule: a handler returns one row of the body table; a type that is not in
// it has no status or Content-Type and is refused (spec/http.md, "Responses:
// the body table (D1)").
use nikaia_std::http::Server;

fn main() {
    let _ = Server::new().route("/", |_req| vec![0u8, 1, 2]);
}
