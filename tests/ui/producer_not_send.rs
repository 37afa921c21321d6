// Rule: a producer runs on the worker and may be resumed from any thread;
// one holding what cannot cross threads (an `Rc`) does not compile
// (spec/http.md, "Produced bodies").
use nikaia_std::http::{Produced, Producer, Pull, Pulled, Server};
use std::rc::Rc;

struct Rows {
    left: Rc<Vec<String>>,
}

impl Producer for Rows {
    fn pull(&mut self, _pull: &mut Pull<'_>) -> Pulled {
        match self.left.first() {
            Some(row) => Pulled::Piece(row.clone().into()),
            None => Pulled::End,
        }
    }
}

fn main() {
    let _ = Server::new().route("/rows", |_req| {
        Produced::new(Rows { left: Rc::new(vec!["a\n".to_string()]) })
    });
}
