//! The program the upload benchmark measures (`uploads.py`): `POST /up`
//! streams its body, without a limit, to a sink that throws each piece
//! away and answers 204 at the end. The runtime file (`NIKAIA_RUNTIME`)
//! says where it listens, its workers, TLS.

use nikaia_std::http::{Flow, Limit, Request, Response, Server, Sink};

/// Takes every piece and keeps nothing but its length.
struct Discard(u64);

impl Sink for Discard {
    type Answer = Response;

    fn piece(&mut self, piece: &[u8], _flow: &mut Flow<'_>) {
        self.0 += piece.len() as u64;
    }

    fn end(self, _req: &Request) -> Response {
        Response::new(204).header("x-bytes", self.0)
    }
}

fn main() -> std::io::Result<()> {
    Server::new()
        .stream("POST", "/up", |_| Discard(0))
        .max_body(Limit::None)
        .run()
}
