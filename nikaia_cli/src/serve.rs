//! `nikaia serve [DIR]`: the everyday file server. Every name a request
//! chooses is confined under DIR (a `Dir` root); std picks how each file
//! travels.

use nikaia_std::fs::Root;
use nikaia_std::http::{dir_handler, Server};
use nikaia_std::rt::Runtime;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The directory to serve (default: the current directory).
    dir: Option<PathBuf>,
    /// Address to listen on, overriding the runtime file's `listen`.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Runtime file (else $NIKAIA_RUNTIME, else defaults).
    #[arg(long, value_name = "FILE")]
    runtime: Option<PathBuf>,
    /// Also serve names with a component starting with `.` (`.git`, `.env`).
    #[arg(long)]
    hidden: bool,
    /// List a directory that has no index.html (default: 404).
    #[arg(long)]
    list: bool,
}

pub fn run(args: ServeArgs) -> u8 {
    let dir = args.dir.unwrap_or_else(|| PathBuf::from("."));
    let mut rt = match Runtime::from_args(args.runtime.as_deref()) {
        Ok(rt) => rt,
        Err(errors) => {
            for e in errors {
                eprintln!("{e}");
            }
            return 1;
        }
    };
    if let Some(listen) = args.listen {
        rt.listen = listen;
    }
    let root = match Root::dir(&dir) {
        Ok(root) => root,
        Err(e) => {
            eprintln!("nikaia serve: cannot serve {}: {e}", dir.display());
            return 1;
        }
    };
    let server =
        Server::with_runtime(rt).route("/*path", dir_handler(root, args.hidden, args.list));
    let running = match server.start() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("nikaia serve: {e}");
            return 1;
        }
    };
    if let Err(e) = running.stop_on_signals() {
        eprintln!("nikaia serve: cannot handle signals: {e}");
        return 1;
    }
    println!(
        "Serving {} at {}://{}/ (Ctrl-C to stop)",
        dir.display(),
        running.scheme(),
        running.local_addr()
    );
    running.wait();
    0
}
