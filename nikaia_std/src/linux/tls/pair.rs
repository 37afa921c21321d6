//! A certificate chain and its private key: read from PEM, checked to
//! belong together, with the names the certificate covers and the end of
//! its validity.

use super::der;
use super::provider;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// A loaded pair.
pub(crate) struct Pair {
    pub(crate) key: Arc<CertifiedKey>,
    /// The DNS names of the leaf's `subjectAltName`, lowercase, without a
    /// trailing dot (`*.example.org` as written).
    pub(crate) dns: Vec<String>,
    /// Its IP addresses.
    pub(crate) ips: Vec<IpAddr>,
    /// When the leaf stops being valid, if its DER says.
    pub(crate) not_after: Option<SystemTime>,
    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    /// When it began to be.
    pub(crate) not_before: Option<SystemTime>,
    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    /// Its identifier in ACME renewal information (RFC 9773), when it has
    /// an authority key identifier.
    pub(crate) ari_id: Option<String>,
}

/// Which file of a pair a problem is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Cert,
    Key,
}

/// Why a pair could not be loaded: the file it is about, and a message that
/// names it.
pub(crate) type PairError = (Part, String);

impl Pair {
    /// Reads `cert` (a PEM chain, leaf first) and `key` (a PKCS#8, PKCS#1
    /// or SEC1 PEM key).
    pub(crate) fn load(cert: &Path, key: &Path) -> Result<Pair, PairError> {
        let cert_pem = std::fs::read(cert).map_err(|e| (Part::Cert, at(cert, e)))?;
        let key_pem = std::fs::read(key).map_err(|e| (Part::Key, at(key, e)))?;
        Pair::from_pem(&cert_pem, &key_pem).map_err(|(part, why)| match part {
            Part::Cert => (part, at(cert, why)),
            Part::Key if why == MISMATCH => (part, at(key, format!("{why} in {}", cert.display()))),
            Part::Key => (part, at(key, why)),
        })
    }

    /// The pair from the PEM text of the chain and of the key; an error's
    /// message does not name a file.
    pub(crate) fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Pair, PairError> {
        let chain = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| (Part::Cert, format!("not a PEM certificate chain: {e}")))?;
        let Some(leaf) = chain.first() else {
            return Err((Part::Cert, "holds no PEM certificate".into()));
        };
        let (dns, ips) = der::subject_alt_names(leaf.as_ref());
        let dns: Vec<String> = dns.iter().map(|n| normal(n)).collect();
        if dns.is_empty() && ips.is_empty() {
            return Err((
                Part::Cert,
                "the certificate names no DNS name or IP address (subjectAltName), \
                 so it would serve no name"
                    .into(),
            ));
        }
        let not_after = der::not_after(leaf.as_ref());
        let not_before = der::not_before(leaf.as_ref());
        let ari_id = der::ari_id(leaf.as_ref());
        let der = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| {
            (
                Part::Key,
                format!("not a PEM private key (PKCS#8, PKCS#1 or SEC1): {e}"),
            )
        })?;
        let key = CertifiedKey::from_der(chain, der, &provider()).map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => (Part::Key, MISMATCH.to_owned()),
            e => (Part::Key, format!("unusable private key: {e}")),
        })?;
        Ok(Pair {
            key: Arc::new(key),
            dns,
            ips,
            not_after,
            not_before,
            ari_id,
        })
    }

    /// The names it covers, as written: DNS names, then addresses.
    pub(crate) fn names(&self) -> Vec<String> {
        let ips = self.ips.iter().map(IpAddr::to_string);
        self.dns.iter().cloned().chain(ips).collect()
    }
}

const MISMATCH: &str = "the private key does not match the certificate";

fn at(path: &Path, why: impl std::fmt::Display) -> String {
    format!("{}: {why}", path.display())
}

/// A DNS name as handshakes are matched against it: lowercase, without a
/// trailing dot.
pub(crate) fn normal(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}
