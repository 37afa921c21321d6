// Passing counterpart of handler_returns_non_row.rs: the same bytes as a
// row of the body table, `Bytes` (spec/http.md, "Responses: the body table").
use nikaia_std::http::Server;
use nikaia_std::Bytes;

fn main() {
    let _ = Server::new().route("/", |_req| Bytes::from(vec![0u8, 1, 2]));
}
