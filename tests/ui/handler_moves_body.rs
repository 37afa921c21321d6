// Rule: a handler is called once per request, so a body it captured is
// cloned (a reference count) and never moved out; returning the captured
// `Bytes` by move makes the closure `FnOnce` (spec/http.md, "Shape").
use nikaia_std::http::Server;
use nikaia_std::Bytes;

fn main() {
    let page = Bytes::from_static(b"<h1>hi</h1>");
    let _ = Server::new().route("/", move |_req| page);
}
