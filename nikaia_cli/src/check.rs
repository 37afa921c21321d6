//! `nikaia check FILE`: validate a runtime file and show what it means.

use std::path::Path;

use crate::domain::DomainArgs;
use nikaia_std::rt::{format_utc, AcmeNames, Runtime};

/// Valid: the effective configuration on stdout, then each certificate pair
/// that loads (as comments: its names and its end) and, unless `http3 =
/// false`, each UDP address beside its TLS listener, 0. `dir` is the
/// directory a server would serve with it (`[resumable] dir` is checked
/// against it); `domains`, the `--domain` names it would be given (an
/// `[acme]` without `domains` is valid without them: a warning says its
/// names come from `--domain`). Invalid, or naming
/// something on this machine a server could not start with (a stats-socket
/// path that is not a socket): every error on stderr, one per line, 1.
/// Warnings go to stderr too and leave the status 0.
pub fn run(file: &Path, dir: &Path, domains: &DomainArgs) -> u8 {
    let domains = match domains.parse() {
        Ok(domains) => domains,
        Err(e) => {
            eprintln!("nikaia check: {e}");
            return 1;
        }
    };
    let names = match domains.given() {
        true => AcmeNames::CommandLine,
        false => AcmeNames::FileOrCommandLine,
    };
    match Runtime::load_with(file, names) {
        Ok(mut runtime) => {
            let mut warnings = domains.apply(&mut runtime);
            if runtime.acme.as_ref().is_some_and(|a| a.domains.is_empty()) {
                warnings.push(
                    "key `acme`: no `domains`: the names come from `nikaia serve --domain NAME` \
                     (without it, a server refuses this table)"
                        .to_owned(),
                );
            }
            print!("{}", runtime.to_toml());
            print!("{}", certificates(&runtime));
            print!("{}", http3(&runtime));
            for w in warnings {
                eprintln!("{}: warning: {w}", file.display());
            }
            let mut status = 0;
            let served = runtime.served_findings(dir);
            for finding in runtime.preflight().into_iter().chain(served) {
                let level = if finding.warning { "warning" } else { "error" };
                eprintln!(
                    "{}: {level}: key `{}`: {}",
                    file.display(),
                    finding.key,
                    finding.message
                );
                if !finding.warning {
                    status = 1;
                }
            }
            status
        }
        Err(errors) => {
            for error in errors {
                eprintln!("{error}");
            }
            1
        }
    }
}

/// The pairs that load, as comments after the configuration: which names
/// each one serves, until when, and which is the default.
fn certificates(runtime: &Runtime) -> String {
    let pairs = runtime.certificates();
    if pairs.is_empty() {
        return String::new();
    }
    let mut out = format!("# {} certificate pair(s) load:\n", pairs.len());
    let sole = pairs.len() == 1;
    for pair in pairs {
        let default = match (pair.files.default, sole) {
            (true, _) => " (the default)",
            (false, true) => " (the default: the only pair)",
            _ => "",
        };
        let end = pair.not_after.map_or_else(
            || "no end date".to_owned(),
            |t| format!("not after {}", format_utc(t)),
        );
        out += &format!(
            "#   {}{default}: {}; {end}\n",
            pair.files.cert.display(),
            pair.names.join(", ")
        );
    }
    out
}

/// Unless `http3 = false`, the UDP addresses HTTP/3 is served on, as
/// comments after the pairs: each beside the TCP listener whose IP and
/// port it shares; with the key left out, that a busy one is left out.
fn http3(runtime: &Runtime) -> String {
    let addresses = runtime.http3_addresses();
    if addresses.is_empty() {
        return String::new();
    }
    let default = match runtime.http3 {
        None => " (`http3` left out: an address whose UDP port is busy at start has none, with a notice)",
        Some(_) => "",
    };
    let mut out = format!(
        "# HTTP/3 on {} UDP address(es), each beside its TLS listener{default}:\n",
        addresses.len()
    );
    for addr in addresses {
        let chosen = match addr.port() {
            0 => " (the same port, chosen at start)",
            _ => "",
        };
        out += &format!("#   udp {addr} beside tcp {addr}{chosen}\n");
    }
    out
}
