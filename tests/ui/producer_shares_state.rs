// Rule kept: a producer runs on the worker and may be resumed from any
// thread, so what it shares with the program crosses threads: an `Arc` of
// a `Mutex` (spec/http.md, "Produced bodies").
use nikaia_std::http::{Produced, Producer, Pull, Pulled, Server};
use std::sync::{Arc, Mutex};

struct Rows {
    left: Arc<Mutex<Vec<String>>>,
}

impl Producer for Rows {
    fn pull(&mut self, _pull: &mut Pull<'_>) -> Pulled {
        match self.left.lock().unwrap().pop() {
            Some(row) => Pulled::Piece(row.into()),
            None => Pulled::End,
        }
    }
}

fn main() {
    let _ = Server::new().route("/rows", |_req| {
        let left = Arc::new(Mutex::new(vec!["a\n".to_string(), "b\n".to_string()]));
        Produced::new(Rows { left })
    });
}
