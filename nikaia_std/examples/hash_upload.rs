//! A program that hashes an upload as it streams (README, "Request
//! bodies"): `curl -T big.iso http://127.0.0.1:8080/sum` answers the
//! body's length and FNV-1a hash without holding the body in memory.

use nikaia_std::http::{Flow, Limit, Request, Response, Server, Sink};

/// FNV-1a, 64 bits, over the body as it arrives.
struct Sum {
    len: u64,
    hash: u64,
}

impl Sink for Sum {
    type Answer = String;

    fn piece(&mut self, piece: &[u8], _flow: &mut Flow<'_>) {
        self.len += piece.len() as u64;
        for &b in piece {
            self.hash = (self.hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn end(self, _req: &Request) -> String {
        format!("{} bytes, fnv1a64 {:016x}\n", self.len, self.hash)
    }
}

fn main() -> std::io::Result<()> {
    Server::new()
        // Up to 10 GiB (the default for a streamed body is 1 GiB); PUT
        // only with a token, refused from the head, before any byte of
        // the body is read and without `100 Continue`.
        .stream("PUT", "/sum", |req: &Request| {
            match req.header("authorization") {
                Some("Bearer let-me-in") => Ok(Sum {
                    len: 0,
                    hash: 0xcbf2_9ce4_8422_2325,
                }),
                _ => Err(Response::new(401).header("www-authenticate", "Bearer")),
            }
        })
        .max_body(Limit::Bytes(10 << 30))
        // A small JSON-ish body, whole, up to the runtime's body-limit.
        .method("POST", "/echo", |req| req.body().clone())
        .run()
}
