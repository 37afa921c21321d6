//! `[[certificate]]` (and `tls-cert`/`tls-key`): the certificate chains and
//! keys a server's TLS listeners choose among by the name a client asks for
//! (`spec/tls.md`, "Several certificates").

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// One certificate chain and its private key, as the runtime file names
/// them: a `[[certificate]]` table, or the `tls-cert`/`tls-key` pair.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CertFiles {
    /// `cert`: the chain, PEM, the server's certificate first.
    pub cert: PathBuf,
    /// `key`: its private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// `default`: the pair a handshake gets when its name (or, without a
    /// name, its address) matches no other pair.
    pub default: bool,
}

impl CertFiles {
    /// A pair that is not the default.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> CertFiles {
        CertFiles {
            cert: cert.into(),
            key: key.into(),
            default: false,
        }
    }

    /// The same pair, marked as the default (or not).
    pub fn default_pair(mut self, default: bool) -> CertFiles {
        self.default = default;
        self
    }

    /// The pair as one inline table of the runtime file.
    pub(crate) fn to_toml(&self) -> String {
        let string = |p: &std::path::Path| toml::Value::String(p.display().to_string()).to_string();
        let default = match self.default {
            true => ", default = true",
            false => "",
        };
        format!(
            "{{ cert = {}, key = {}{default} }}",
            string(&self.cert),
            string(&self.key)
        )
    }
}

/// A pair as it loaded: what `nikaia check` lists
/// ([`Runtime::certificates`](super::Runtime::certificates), Linux).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CertSummary {
    pub files: CertFiles,
    /// The names it serves, as its `subjectAltName` writes them: DNS names
    /// (lowercase), then IP addresses.
    pub names: Vec<String>,
    /// The end of its validity, if the certificate says.
    pub not_after: Option<SystemTime>,
}

/// A moment as RFC 3339 UTC to the second: `2027-03-01T12:00:00Z`.
pub fn format_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    crate::text::date::rfc3339(secs)
}
