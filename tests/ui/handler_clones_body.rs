// Passing counterpart of handler_moves_body.rs, the shape D1 exists for: the
// captured body answers each request at the cost of a reference count
// (spec/http.md, "Shape").
use nikaia_std::http::Server;
use nikaia_std::Bytes;

fn main() {
    let page = Bytes::from_static(b"<h1>hi</h1>");
    let _ = Server::new().route("/", move |_req| page.clone());
}
