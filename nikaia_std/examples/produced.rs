//! Answers produced piece by piece: a CSV made row by row as the client
//! takes it, and server-sent events. `cargo run -p nikaia_std --example
//! produced`, then `curl localhost:8080/squares.csv` or
//! `curl -N localhost:8080/ticks`.
use nikaia_std::http::{event_stream, Event, Produced, Server};
use std::time::Duration;

fn main() -> std::io::Result<()> {
    Server::new()
        // A million rows, never all in memory: each pulled when the
        // connection can take it.
        .route("/squares.csv", |_| {
            let rows = (0..1_000_000u64).map(|i| format!("{i},{}\n", i * i));
            Produced::from_iter(rows).content_type("text/csv")
        })
        // An event a second until the client leaves (or the server stops,
        // and the browser reconnects to whoever serves next).
        .route("/ticks", |_| {
            let (events, answer) = event_stream();
            std::thread::spawn(move || {
                for i in 0u64.. {
                    let tick = Event::data(format!("tick {i}")).id(i.to_string());
                    if events.send(&tick).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            });
            answer
        })
        .run()
}
