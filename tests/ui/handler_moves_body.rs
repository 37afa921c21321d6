// A handler is called for every request, so it may not give away what it
// captured: returning the captured `Bytes` by move makes the closure `FnOnce`.
use nikaia_std::http::Server;
use nikaia_std::Bytes;

fn main() {
    let page = Bytes::from_static(b"<h1>hi</h1>");
    let _ = Server::new().route("/", move |_req| page);
}
