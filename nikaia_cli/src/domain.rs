//! `--domain`: a public site's names given on the command line, combined
//! with the runtime file's other `[acme]` settings the same way at start,
//! at every reload (SIGHUP) and in `nikaia check` (`spec/tls.md`, "From
//! the command line"). The command line's names win: the file's
//! `domains`, where it has them, are left out, and a warning names those
//! the command line does not.

use nikaia_std::rt::{Acme, AcmeNames, ConfigError, HttpsRedirect, Listen, Runtime};
use std::path::Path;

#[derive(clap::Args, Debug, Clone)]
pub struct DomainArgs {
    /// A public DNS name to serve over HTTPS with a certificate the server
    /// obtains and renews itself (ACME, Let's Encrypt by default); give it
    /// once per name. It listens on 443 (TLS) and 80 (a redirect to
    /// HTTPS that also answers the CA), IPv4 and IPv6, unless --listen
    /// says otherwise, and takes the runtime file's other `[acme]`
    /// settings (storage, directory, contact…); these names replace the
    /// file's `domains`. Giving --domain is agreeing to the CA's terms of
    /// service (https://letsencrypt.org/repository/ for Let's Encrypt).
    #[arg(long, value_name = "NAME")]
    domain: Vec<String>,
    /// With --domain: Let's Encrypt's staging CA (certificates browsers do
    /// not trust, limits made for trying): the first step.
    #[arg(long, requires = "domain")]
    staging: bool,
}

/// The `--domain` names, checked and lowercased, and `--staging`.
#[derive(Clone, Debug)]
pub struct Domains {
    names: Vec<String>,
    staging: bool,
}

impl DomainArgs {
    /// The names checked (a wildcard, an IP address, not a DNS name: the
    /// value and why), lowercased, a trailing dot dropped, each once.
    pub fn parse(&self) -> Result<Domains, String> {
        let mut names: Vec<String> = Vec::new();
        for v in &self.domain {
            let name = v.strip_suffix('.').unwrap_or(v).to_ascii_lowercase();
            if let Some(why) = Acme::name_problem(&name) {
                return Err(format!("--domain {v}: {why}"));
            }
            if !names.contains(&name) {
                names.push(name);
            }
        }
        Ok(Domains {
            names,
            staging: self.staging,
        })
    }
}

impl Domains {
    /// Whether names were given.
    pub fn given(&self) -> bool {
        !self.names.is_empty()
    }

    /// Reads the runtime file `file` with these names: its `[acme]` need
    /// not name domains nor agree to the terms when names are given.
    /// The runtime, with the warnings to show; or every problem.
    pub fn read(&self, file: &Path) -> Result<(Runtime, Vec<String>), Vec<ConfigError>> {
        let names = match self.given() {
            true => AcmeNames::CommandLine,
            false => AcmeNames::File,
        };
        let mut rt = Runtime::load_with(file, names)?;
        let warnings = self.apply(&mut rt);
        Ok((rt, warnings))
    }

    /// With names given: ACME for them (the file's other `[acme]` settings
    /// kept, the terms agreed by the operator who typed them), TLS on 443
    /// and a redirect on 80, on every address family this host has. The
    /// warning to show when the file's `domains` named others.
    pub fn apply(&self, rt: &mut Runtime) -> Vec<String> {
        if !self.given() {
            return Vec::new();
        }
        let mut warnings = Vec::new();
        let mut acme = rt.acme.take().unwrap_or_else(|| Acme::new(Vec::new()));
        let left_out: Vec<&str> = (acme.domains.iter())
            .filter(|d| !self.names.contains(d))
            .map(String::as_str)
            .collect();
        if !left_out.is_empty() {
            warnings.push(format!(
                "key `acme`: `domains` is replaced by --domain ({}): no certificate for {} \
                 (name every domain in one place: the runtime file or --domain)",
                self.names.join(", "),
                left_out.join(", ")
            ));
        }
        acme.domains = self.names.clone();
        acme.agree_to_terms = true;
        if self.staging {
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
        warnings
    }
}
