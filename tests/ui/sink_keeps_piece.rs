// Rule: a streamed body's piece is lent to the sink for one call; a sink
// that keeps the piece itself (not a copy) past the call does not compile
// (spec/http.md, "Request bodies").
use nikaia_std::http::{Flow, Request, Server, Sink};

struct Last {
    piece: Option<&'static [u8]>,
}

impl Sink for Last {
    type Answer = String;

    fn piece(&mut self, piece: &[u8], _flow: &mut Flow<'_>) {
        self.piece = Some(piece);
    }

    fn end(self, _req: &Request) -> String {
        format!("{:?}", self.piece)
    }
}

fn main() {
    let _ = Server::new().stream("POST", "/last", |_req| Last { piece: None });
}
