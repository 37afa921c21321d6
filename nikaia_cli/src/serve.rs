//! `nikaia serve [DIR]`: the everyday file server. Every name a request
//! chooses is confined under DIR (a `Dir` root); std picks how each file
//! travels.

use nikaia_std::fs::Root;
use nikaia_std::http::{File, Response, Server};
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

/// Whether a decoded request name may be served: no component may start
/// with `.`, except a first component `.well-known` (RFC 8615).
pub fn visible(name: &str) -> bool {
    name.split('/')
        .enumerate()
        .all(|(i, c)| !c.starts_with('.') || (i == 0 && c == ".well-known"))
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
    let (hidden, list) = (args.hidden, args.list);
    let server = Server::with_runtime(rt).route("/*path", move |req| {
        let name = req.param().unwrap_or("");
        if !hidden && !visible(name) {
            return Response::status_page_for(404);
        }
        let file = File::new(name, &root).index("index.html");
        let file = if list { file.list(hidden) } else { file };
        Response::new(200).body(file)
    });
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

#[cfg(test)]
mod tests {
    use super::visible;

    #[test]
    fn hidden_names() {
        for ok in ["", "a", "a/b.txt", ".well-known/acme", "a/b.c/", "a..b"] {
            assert!(visible(ok), "{ok}");
        }
        for hidden in [
            ".git",
            ".git/config",
            "a/.env",
            ".well-known/.x",
            "x/.well-known/y",
            "a/./b",
            "a/../b",
        ] {
            assert!(!visible(hidden), "{hidden}");
        }
    }
}
