// Rule: a handler is `Send + Sync + 'static`, because it is called once per
// request, possibly on several threads at once; what it captures must be
// shareable between threads, so an `Rc` is refused (spec/http.md, "Shape"
// and "Threads").
use nikaia_std::http::Server;
use std::cell::Cell;
use std::rc::Rc;

fn main() {
    let hits = Rc::new(Cell::new(0u64));
    let _ = Server::new().route("/", move |_req| {
        hits.set(hits.get() + 1);
        format!("{} hits", hits.get())
    });
}
