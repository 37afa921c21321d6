//! `nikaia serve [DIR]`: the everyday file server. Every name a request
//! chooses is confined under DIR (a `Dir` root); std picks how each file
//! travels.

use nikaia_std::fs::Root;
use nikaia_std::http::Server;
use nikaia_std::rt::{Acme, HttpsRedirect, Listen, ListenAddr, Runtime, RUNTIME_ENV};
use std::io::Write;
use std::path::PathBuf;

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
    /// A public DNS name to serve over HTTPS with a certificate the server
    /// obtains and renews itself (ACME, Let's Encrypt by default); give it
    /// once per name. It listens on 443 (TLS) and 80 (a redirect to
    /// HTTPS that also answers the CA), IPv4 and IPv6, unless --listen
    /// says otherwise, and keeps its keys in the runtime file's ACME
    /// storage or the default one (/var/lib/nikaia/acme as root).
    /// Giving --domain is agreeing to the CA's terms of service
    /// (https://letsencrypt.org/repository/ for Let's Encrypt).
    #[arg(long, value_name = "NAME")]
    domain: Vec<String>,
    /// With --domain: Let's Encrypt's staging CA (certificates browsers do
    /// not trust, limits made for trying): the first step.
    #[arg(long, requires = "domain")]
    staging: bool,
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
    let file = args.runtime.clone().or_else(|| {
        std::env::var_os(RUNTIME_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let mut rt = match Runtime::from_args(args.runtime.as_deref()) {
        Ok(rt) => rt,
        Err(errors) => {
            for e in errors {
                eprintln!("{e}");
            }
            return 1;
        }
    };
    let domains = match parse_domains(&args.domain) {
        Ok(domains) => domains,
        Err(e) => {
            eprintln!("nikaia serve: {e}");
            return 1;
        }
    };
    let staging = args.staging;
    // `--listen` replaces the list, and `--domain` sets up a public site,
    // at start and at every reload.
    let adjust = move |rt: &mut Runtime| {
        if !domains.is_empty() {
            public_site(rt, &domains, staging);
        }
        if !listen.is_empty() {
            rt.listen = listen.clone();
        }
    };
    adjust(&mut rt);
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
        server = server.reload_from(file, adjust);
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
    // A closed stdout (a parent that stopped reading, a unit without one)
    // is no reason to stop serving.
    let _ = writeln!(
        std::io::stdout(),
        "Serving {} at {} (Ctrl-C to stop)",
        dir.display(),
        at.join(", ")
    );
    if !args.list && !dir.join("index.html").is_file() {
        // The README's first command, run where there is no page: say why
        // `/` is 404 before someone opens it and wonders.
        let _ = writeln!(
            std::io::stdout(),
            "{} has no index.html, so / answers 404 Not Found; --list lists the directory instead",
            dir.display()
        );
    }
    running.wait();
    0
}

/// The `--domain` values, checked and lowercased.
fn parse_domains(values: &[String]) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = Vec::new();
    for v in values {
        let name = v.strip_suffix('.').unwrap_or(v).to_ascii_lowercase();
        if let Some(why) = Acme::name_problem(&name) {
            return Err(format!("--domain {v}: {why}"));
        }
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

/// `--domain`: ACME for `domains` (the file's `[acme]` settings kept,
/// the terms agreed by the operator who typed it), TLS on 443 and a
/// redirect on 80, on every address family this host has.
fn public_site(rt: &mut Runtime, domains: &[String], staging: bool) {
    let mut acme = rt.acme.take().unwrap_or_else(|| Acme::new(Vec::new()));
    acme.domains = domains.to_vec();
    acme.agree_to_terms = true;
    if staging {
        acme.directory = nikaia_std::rt::LETS_ENCRYPT_STAGING.to_owned();
    }
    rt.acme = Some(acme);
    let mut families = vec![std::net::IpAddr::from([0, 0, 0, 0])];
    if std::net::TcpListener::bind("[::1]:0").is_ok() {
        families.push(std::net::IpAddr::from([0u16; 8]));
    }
    let mut listen = Vec::new();
    for ip in &families {
        let mut tls = Listen::tcp((*ip, 443).into());
        tls.tls = Some(true);
        listen.push(tls);
    }
    for ip in &families {
        let mut plain = Listen::tcp((*ip, 80).into());
        plain.tls = Some(false);
        plain.https_redirect = Some(HttpsRedirect::TlsListener);
        listen.push(plain);
    }
    rt.listen = listen;
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
