// Rule: a handler is `Fn`, called possibly on several threads at once, so it
// may not mutate what it captured (spec/http.md, "Shape").
use nikaia_std::http::Server;

fn main() {
    let mut seen = Vec::new();
    let _ = Server::new().route("/*name", move |req| {
        seen.push(req.path().to_owned());
        format!("{} requests", seen.len())
    });
}
