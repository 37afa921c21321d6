//! Produced bodies of pieces of one size, for `benches/produced`: `cargo
//! build --release -p nikaia_std --example pieces`, then
//! `target/release/examples/pieces [--runtime FILE]`.
//! `/pieces/SIZE/COUNT` answers COUNT pieces of SIZE bytes, each a pull;
//! `/squares.csv` is `examples/produced.rs`'s million rows.
use bytes::Bytes;
use nikaia_std::{
    http::{Produced, Server},
    rt::Runtime,
};
use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let runtime = match (args.next(), args.next()) {
        (Some(flag), Some(file)) if flag == "--runtime" => Some(PathBuf::from(file)),
        (None, _) => None,
        _ => return Err(std::io::Error::other("usage: pieces [--runtime FILE]")),
    };
    let rt = Runtime::from_args(runtime.as_deref()).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        std::io::Error::other(lines.join("\n"))
    })?;
    Server::with_runtime(rt)
        .route("/squares.csv", |_| {
            let rows = (0..1_000_000u64).map(|i| format!("{i},{}\n", i * i));
            Produced::from_iter(rows).content_type("text/csv")
        })
        .route("/pieces/*spec", |req| {
            let mut spec = req.param().unwrap_or("").split('/');
            let mut number = || spec.next().and_then(|n| n.parse::<usize>().ok());
            let (size, count) = (number().unwrap_or(1).max(1), number().unwrap_or(0));
            // One piece shared by every pull: a refcount, no copy.
            let piece = Bytes::from(vec![b'x'; size]);
            Produced::from_iter(std::iter::repeat_n(piece, count))
        })
        .run()
}
