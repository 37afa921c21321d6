// Passing counterpart of sink_keeps_piece.rs: a sink keeps what it needs
// of a piece by copying it (here, a count and the last byte), and may
// refuse the body from its head before any of it is read.
use nikaia_std::http::{Flow, Request, Response, Server, Sink};

struct Tally {
    bytes: u64,
    last: Option<u8>,
}

impl Sink for Tally {
    type Answer = String;

    fn piece(&mut self, piece: &[u8], _flow: &mut Flow<'_>) {
        self.bytes += piece.len() as u64;
        self.last = piece.last().copied();
    }

    fn end(self, _req: &Request) -> String {
        format!("{} bytes, last {:?}", self.bytes, self.last)
    }
}

fn main() {
    let _ = Server::new()
        .stream("POST", "/tally", |_req| Tally { bytes: 0, last: None })
        .stream("PUT", "/tally", |req| match req.header("authorization") {
            Some(_) => Ok(Tally { bytes: 0, last: None }),
            None => Err(Response::new(401)),
        });
}
