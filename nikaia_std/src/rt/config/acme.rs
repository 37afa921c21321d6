//! `[acme]`: certificates the server obtains and renews itself from a CA
//! that speaks ACME (RFC 8555; `spec/tls.md`, "Automatic HTTPS").

use std::path::PathBuf;

/// Let's Encrypt's production directory: the default CA.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";
/// Let's Encrypt's staging directory: the first step (its certificates are
/// not trusted by browsers, and its limits are generous).
pub const LETS_ENCRYPT_STAGING: &str = "https://acme-staging-v02.api.letsencrypt.org/directory";

/// The `[acme]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Acme {
    /// `domains`: the DNS names to obtain a certificate for, one each.
    pub domains: Vec<String>,
    /// `contact`: `mailto:` URLs the CA may write to about them.
    pub contact: Vec<String>,
    /// `directory`: the CA's directory URL (`https://`).
    pub directory: String,
    /// `agree-to-terms`: the operator agreed to the CA's terms of service;
    /// no account is made without it.
    pub agree_to_terms: bool,
    /// `ca-roots`: PEM roots the CA's own HTTPS is checked against (Pebble,
    /// step-ca, a private CA); `None`: the system's.
    pub ca_roots: Option<PathBuf>,
    /// `eab-kid` and `eab-hmac-key`: the external account binding some CAs
    /// ask for; the key is read from the file, never printed or logged.
    pub eab: Option<Eab>,
    /// `storage`: where accounts, keys and certificates are kept.
    pub storage: PathBuf,
    /// `profile`: the certificate profile asked for (a name the directory
    /// lists), if any.
    pub profile: Option<String>,
    /// `key-type`: the certificates' keys.
    pub key_type: KeyType,
    /// `challenges`: which challenges may be answered, in the order they
    /// are preferred.
    pub challenges: Vec<ChallengeKind>,
}

/// Where `[acme]`'s names come from as a runtime file is read, and so
/// what the table must say (`spec/tls.md`, "From the command line").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AcmeNames {
    /// The file: `[acme]` needs `domains` and `agree-to-terms = true`.
    #[default]
    File,
    /// The command line (`nikaia serve --domain`), which also agrees to
    /// the CA's terms: `domains` and `agree-to-terms` may be left out (the
    /// table is read with the names the file gives, if any, and the terms
    /// as it says), for the caller to fill in.
    CommandLine,
    /// Either (`nikaia check` without `--domain`): `domains` may be left
    /// out; a table that names them needs `agree-to-terms = true`.
    FileOrCommandLine,
}

/// An external account binding (RFC 8555 §7.3.4).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Eab {
    /// The key identifier the CA gave.
    pub kid: String,
    /// The file holding the HMAC key, base64url.
    pub hmac_key_file: PathBuf,
}

impl Eab {
    pub fn new(kid: impl Into<String>, hmac_key_file: impl Into<PathBuf>) -> Eab {
        Eab {
            kid: kid.into(),
            hmac_key_file: hmac_key_file.into(),
        }
    }
}

/// `key-type`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyType {
    /// ECDSA on P-256 with SHA-256 (the default).
    #[default]
    EcdsaP256,
    /// ECDSA on P-384 with SHA-384.
    EcdsaP384,
}

impl KeyType {
    /// The runtime file's name for it.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::EcdsaP256 => "ecdsa-p256",
            KeyType::EcdsaP384 => "ecdsa-p384",
        }
    }
}

/// A challenge type (RFC 8555 §8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChallengeKind {
    /// `http-01`: a token answered on the plain listeners, port 80.
    Http01,
    /// `tls-alpn-01` (RFC 8737): a certificate answered on the TLS
    /// listeners, port 443.
    TlsAlpn01,
}

impl ChallengeKind {
    /// Its name in ACME and in the runtime file.
    pub fn name(self) -> &'static str {
        match self {
            ChallengeKind::Http01 => "http-01",
            ChallengeKind::TlsAlpn01 => "tls-alpn-01",
        }
    }
}

impl Acme {
    /// ACME for `domains` with every other setting at its default: Let's
    /// Encrypt's production directory, the terms not agreed yet, the
    /// default storage, ECDSA P-256, both challenges.
    pub fn new(domains: Vec<String>) -> Acme {
        Acme {
            domains,
            contact: Vec::new(),
            directory: LETS_ENCRYPT.to_owned(),
            agree_to_terms: false,
            ca_roots: None,
            eab: None,
            storage: default_storage(),
            profile: None,
            key_type: KeyType::EcdsaP256,
            challenges: vec![ChallengeKind::Http01, ChallengeKind::TlsAlpn01],
        }
    }

    /// Why `name` cannot be one of `domains`, if it cannot: not a DNS name,
    /// a wildcard, an IP address (`nikaia serve --domain` checks with it).
    pub fn name_problem(name: &str) -> Option<&'static str> {
        dns_name_problem(name)
    }

    /// Why a server cannot start with this table, if it cannot: no names
    /// (a file read with [`AcmeNames::CommandLine`] and none given), or
    /// the CA's terms not agreed to.
    pub fn incomplete(&self) -> Option<&'static str> {
        if self.domains.is_empty() {
            return Some(
                "`[acme]` names no domain: name them in `domains`, or with \
                 `nikaia serve --domain NAME`",
            );
        }
        if !self.agree_to_terms {
            return Some(TERMS_NOT_AGREED);
        }
        None
    }

    /// The table as one inline table of the runtime file (the EAB key's
    /// file is named; what it holds never is).
    pub(crate) fn to_toml(&self) -> String {
        let string = |s: &str| toml::Value::String(s.to_owned()).to_string();
        let strings = |v: &mut dyn Iterator<Item = &str>| {
            format!("[{}]", v.map(string).collect::<Vec<_>>().join(", "))
        };
        let path = |p: &std::path::Path| string(&p.display().to_string());
        let mut fields = Vec::new();
        // None: they come from the command line.
        if !self.domains.is_empty() {
            fields.push(format!(
                "domains = {}",
                strings(&mut self.domains.iter().map(|s| s.as_str()))
            ));
        }
        fields.extend([
            format!(
                "contact = {}",
                strings(&mut self.contact.iter().map(|s| s.as_str()))
            ),
            format!("directory = {}", string(&self.directory)),
            format!("agree-to-terms = {}", self.agree_to_terms),
        ]);
        if let Some(roots) = &self.ca_roots {
            fields.push(format!("ca-roots = {}", path(roots)));
        }
        if let Some(eab) = &self.eab {
            fields.push(format!("eab-kid = {}", string(&eab.kid)));
            fields.push(format!("eab-hmac-key = {}", path(&eab.hmac_key_file)));
        }
        fields.push(format!("storage = {}", path(&self.storage)));
        if let Some(profile) = &self.profile {
            fields.push(format!("profile = {}", string(profile)));
        }
        fields.push(format!("key-type = {}", string(self.key_type.name())));
        fields.push(format!(
            "challenges = {}",
            strings(&mut self.challenges.iter().map(|c| c.name()))
        ));
        format!("{{ {} }}", fields.join(", "))
    }
}

/// Why an `[acme]` without `agree-to-terms = true` is refused.
pub(crate) const TERMS_NOT_AGREED: &str =
    "no account is made until `agree-to-terms = true` says the operator \
     agreed to the CA's terms of service (the directory's `meta.termsOfService`)";

/// Where ACME state is kept when the runtime file does not say: the state
/// directory of the user (`$XDG_STATE_HOME/nikaia/acme`, else
/// `~/.local/state/nikaia/acme`), or `/var/lib/nikaia/acme` for root.
pub fn default_storage() -> PathBuf {
    #[cfg(target_os = "linux")]
    if rustix::process::geteuid().is_root() {
        return PathBuf::from("/var/lib/nikaia/acme");
    }
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    match (env("XDG_STATE_HOME"), env("HOME")) {
        (Some(state), _) => state.join("nikaia/acme"),
        (None, Some(home)) => home.join(".local/state/nikaia/acme"),
        (None, None) => PathBuf::from("/var/lib/nikaia/acme"),
    }
}

/// Whether `name` is a DNS name a CA can issue for: labels of letters,
/// digits and `-` (not at either end), at most 63 bytes each and 253 in
/// all, at least two labels, no wildcard, not an IP address. The reason
/// when not.
pub(crate) fn dns_name_problem(name: &str) -> Option<&'static str> {
    if name.starts_with("*.") {
        return Some("a wildcard needs the DNS-01 challenge, which is not offered");
    }
    if name.parse::<std::net::IpAddr>().is_ok() {
        return Some("an IP address, not a DNS name");
    }
    if name.is_empty() || name.len() > 253 {
        return Some("not a DNS name (1 to 253 characters)");
    }
    let labels: Vec<&str> = name.split('.').collect();
    if labels.len() < 2 {
        return Some("a DNS name of one label (a CA issues only for names with a dot)");
    }
    let good = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if !labels.iter().all(|l| good(l)) {
        return Some("not a DNS name (lowercase letters, digits and `-` in labels of 1 to 63)");
    }
    None
}
