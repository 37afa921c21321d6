//! The program the body-to-file benchmark measures (`bodies_to_file.py`):
//! `PUT /up/NAME` writes its body, without a limit, to `NAME` under one
//! directory through `Server::to_file` (`ToFile::replace`), with the
//! durability asked for, and std answers 201 or 204 once the name is the
//! new file's. One worker, no access log, TLS when a certificate is given.
//!
//!     body-to-file ADDR DIR none|data|full [CERT KEY]

use nikaia_std::fs::{Durability, Root};
use nikaia_std::http::{Limit, Server, ToFile};
use nikaia_std::rt::{Listen, LogTarget, Runtime};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: body-to-file ADDR DIR none|data|full [CERT KEY]";

/// What the command line asks for.
struct Args {
    addr: SocketAddr,
    dir: PathBuf,
    durability: Durability,
    tls: Option<(PathBuf, PathBuf)>,
}

fn args() -> Result<Args, String> {
    let words: Vec<String> = std::env::args().skip(1).collect();
    let (addr, dir, durability, tls) = match words.as_slice() {
        [addr, dir, d] => (addr, dir, d, None),
        [addr, dir, d, cert, key] => (addr, dir, d, Some((cert.into(), key.into()))),
        _ => return Err(USAGE.into()),
    };
    let durability = match durability.as_str() {
        "none" => Durability::None,
        "data" => Durability::Data,
        "full" => Durability::Full,
        other => return Err(format!("durability {other:?}: none, data or full")),
    };
    Ok(Args {
        addr: addr.parse().map_err(|e| format!("address {addr:?}: {e}"))?,
        dir: dir.into(),
        durability,
        tls,
    })
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(args) => args,
        Err(why) => {
            eprintln!("{why}");
            return ExitCode::from(2);
        }
    };
    let root = match Root::dir(&args.dir) {
        Ok(root) => root,
        Err(e) => {
            eprintln!("{}: {e}", args.dir.display());
            return ExitCode::FAILURE;
        }
    };
    let mut rt = Runtime::default();
    rt.listen = vec![Listen::tcp(args.addr)];
    rt.workers = 1;
    rt.access_log = LogTarget::Off;
    if let Some((cert, key)) = args.tls {
        rt.tls_cert = Some(cert);
        rt.tls_key = Some(key);
    }
    let durability = args.durability;
    let served = Server::with_runtime(rt)
        .to_file("PUT", "/up/*name", move |req| {
            ToFile::replace(req.param().unwrap_or(""), &root).durability(durability)
        })
        .max_body(Limit::None)
        .run();
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
