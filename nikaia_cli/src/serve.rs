//! `nikaia serve [DIR]`: the everyday file server. Every name a request
//! chooses is confined under DIR (a `Dir` root); std picks how each file
//! travels.

use crate::domain::DomainArgs;
use nikaia_std::fs::Root;
use nikaia_std::http::Server;
use nikaia_std::rt::{Listen, ListenAddr, Runtime, RUNTIME_ENV};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The directory to serve (default: the current directory).
    dir: Option<PathBuf>,
    /// Address to listen on (`IP:PORT`, `[IPv6]:PORT` or `unix:/path`),
    /// replacing the runtime file's whole `listen` list; given more than
    /// once, one listener each.
    #[arg(long, value_name = "ADDR")]
    listen: Vec<String>,
    /// Runtime file (else $NIKAIA_RUNTIME, else defaults).
    #[arg(long, value_name = "FILE")]
    runtime: Option<PathBuf>,
    /// Also serve names with a component starting with `.` (`.git`, `.env`).
    #[arg(long)]
    hidden: bool,
    /// List a directory that has no index.html (default: 404).
    #[arg(long)]
    list: bool,
    /// `--domain` and `--staging`.
    #[command(flatten)]
    domains: DomainArgs,
}

pub fn run(args: ServeArgs) -> u8 {
    let dir = args.dir.unwrap_or_else(|| PathBuf::from("."));
    let listen = match parse_listen(&args.listen) {
        Ok(listen) => listen,
        Err(e) => {
            eprintln!("nikaia serve: {e}");
            return 1;
        }
    };
    let listen_given = listen.clone();
    let domains = match args.domains.parse() {
        Ok(domains) => domains,
        Err(e) => {
            eprintln!("nikaia serve: {e}");
            return 1;
        }
    };
    let file = args.runtime.clone().or_else(|| {
        std::env::var_os(RUNTIME_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    // One way to read the runtime file, at start and at every reload: its
    // `[acme]` with `--domain`, then `--listen` replacing the list.
    let load = {
        let domains = domains.clone();
        move |file: &Path| {
            let (mut rt, warnings) = domains.read(file)?;
            if !listen.is_empty() {
                rt.listen = listen.clone();
            }
            Ok((rt, warnings))
        }
    };
    let rt = match &file {
        Some(file) => match load(file) {
            Ok((rt, warnings)) => {
                for w in warnings {
                    eprintln!("nikaia serve: {}: warning: {w}", file.display());
                }
                rt
            }
            Err(errors) => {
                for e in errors {
                    eprintln!("{e}");
                }
                return 1;
            }
        },
        None => {
            let mut rt = Runtime::default();
            // No file: no `domains` to leave out, nothing to warn of.
            domains.apply(&mut rt);
            if !listen_given.is_empty() {
                rt.listen = listen_given;
            }
            rt
        }
    };
    warn_of_served_secrets(&rt, &dir);
    let refusals: Vec<_> = rt
        .served_findings(&dir)
        .into_iter()
        .filter(|f| !f.warning)
        .collect();
    if !refusals.is_empty() {
        for f in refusals {
            eprintln!("nikaia serve: key `{}`: {}", f.key, f.message);
        }
        return 1;
    }
    let root = match Root::dir(&dir) {
        Ok(root) => root,
        Err(e) => {
            eprintln!("nikaia serve: cannot serve {}: {e}", dir.display());
            return 1;
        }
    };
    // GET (and HEAD), OPTIONS for CORS preflights, PUT and DELETE as the
    // write rules allow (none by default: 405), and the tus endpoint where
    // `[resumable]` names one (`spec/site.md`).
    let mut server = Server::with_runtime(rt).serve_dir(root, args.hidden, args.list);
    if let Some(file) = file {
        server = server.reload_with(file, load);
    }
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
    let at: Vec<String> = running
        .addresses()
        .into_iter()
        .map(|(address, tls)| match address {
            ListenAddr::Tcp(addr) => format!("{}://{addr}/", if tls { "https" } else { "http" }),
            unix => unix.to_string(),
        })
        .collect();
    let mut said = format!(
        "Serving {} at {} (Ctrl-C to stop)\n",
        dir.display(),
        at.join(", ")
    );
    if !args.list && !dir.join("index.html").is_file() {
        // The README's first command, run where there is no page: say why
        // `/` is 404 before someone opens it and wonders.
        said += &format!(
            "{} has no index.html, so / answers 404 Not Found; --list lists the directory instead\n",
            dir.display()
        );
    }
    // One write: a reader of the first line finds the rest with it. A
    // closed stdout (a parent that stopped reading, a unit without one) is
    // no reason to stop serving.
    let _ = std::io::stdout().write_all(said.as_bytes());
    running.wait();
    0
}

/// The `--listen` values, each an address as `listen` takes one.
fn parse_listen(values: &[String]) -> Result<Vec<Listen>, String> {
    values
        .iter()
        .map(|v| match v.strip_prefix("unix:") {
            Some(path) if !path.is_empty() => {
                let path = std::path::absolute(path).map_err(|e| format!("--listen {v}: {e}"))?;
                Ok(Listen::unix(path))
            }
            _ => v.parse().map(Listen::tcp).map_err(|_| {
                format!(
                    "--listen {v}: expected IP:PORT, [IPv6]:PORT or unix:/path \
                     (a numeric IP address; host names are not looked up)"
                )
            }),
        })
        .collect()
}

/// Warns when a password file an `[[auth]]` rule reads is itself under the
/// served directory and no `[[deny]]` rule covers it: anyone could fetch the
/// hashes and guess at them offline (`spec/site.md`).
fn warn_of_served_secrets(rt: &Runtime, dir: &std::path::Path) {
    let Ok(served) = std::fs::canonicalize(dir) else {
        return;
    };
    for rule in &rt.site.auth {
        let Ok(file) = std::fs::canonicalize(&rule.htpasswd) else {
            continue;
        };
        let Ok(name) = file.strip_prefix(&served) else {
            continue;
        };
        let name = name.to_string_lossy();
        let hidden = name.split('/').any(|c| c.starts_with('.'));
        let denied = (rt.site.deny.iter()).any(|d| d.patterns.iter().any(|p| p.matches(&name)));
        if !hidden && !denied {
            eprintln!(
                "nikaia serve: warning: the htpasswd file {} is served as /{name}; \
                 move it out of {} or add a [[deny]] rule for it",
                rule.htpasswd.display(),
                dir.display()
            );
        }
    }
}
