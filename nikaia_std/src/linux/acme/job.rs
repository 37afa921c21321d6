//! One name's turn with the CA, on a thread of its own: its lock taken
//! (another process may hold it), the storage read again (that process
//! may have renewed), the CA's renewal window asked for, and, when due,
//! an order run to the end and its pair stored.

use super::objects::ProblemType;
use super::offer::Offer;
use super::order::{self, Want};
use super::protocol::{Ca, Failure};
use super::schedule::{self, Validity};
use super::store::{self, Store, Version};
use super::stored::read_pair;
use super::{http, jws, next_time, Manager, Name};
use crate::linux::tls::Pair;
use crate::rt::{Acme, ChallengeKind};
use rustls::pki_types::pem::PemObject as _;
use rustls::ClientConfig;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// A job's result for the manager.
pub(super) struct Outcome {
    pub(super) result: Result<Done, Failure>,
    pub(super) orders: u64,
    /// The CA was asked.
    pub(super) asked: bool,
    /// Whether the CA's directory offers renewal windows, once read.
    pub(super) ari: Option<bool>,
}

pub(super) enum Done {
    /// A new pair, stored (the version of its file).
    Obtained(Arc<Pair>, Option<Version>),
    /// Another process holds the name's lock.
    Elsewhere,
    /// Not due: the CA's window, chosen in, and when to ask again.
    Window((SystemTime, SystemTime)),
}

/// What a job runs with: a copy of the name's state when it began.
pub(super) struct Job {
    pub(super) acme: Acme,
    pub(super) usable: Vec<ChallengeKind>,
    pub(super) pair: Option<Arc<Pair>>,
    pub(super) window: Option<(SystemTime, SystemTime)>,
    pub(super) domain: String,
    pub(super) ari: Option<bool>,
}

impl Job {
    pub(super) fn run(&self, manager: &Manager) -> Outcome {
        let mut outcome = Outcome {
            result: Err(Failure::new("not run")),
            orders: 0,
            asked: false,
            ari: None,
        };
        outcome.result = self.work(manager, &mut outcome);
        outcome
    }

    fn work(&self, manager: &Manager, outcome: &mut Outcome) -> Result<Done, Failure> {
        let store = Store::open(&self.acme.storage, &self.acme.directory)?;
        let Some(_lock) = store.try_lock(&self.domain)? else {
            return Ok(Done::Elsewhere);
        };
        // Another process may have renewed while this one waited.
        let now = SystemTime::now();
        let mut name = Name {
            pair: self.pair.clone(),
            window: self.window,
            ..Name::default()
        };
        let file = format!("{}.pem", self.domain);
        if let Some(stored) = read_pair(&manager.ctx, &store, &self.domain, &file) {
            let newer = name
                .pair
                .as_ref()
                .is_none_or(|p| stored.not_after > p.not_after);
            if newer {
                name.pair = Some(stored.clone());
                name.window = None;
                if next_time(&name, now, self.ari).is_some_and(|t| t > now) {
                    return Ok(Done::Obtained(stored, store.version(&file)));
                }
            }
        }
        if self.usable.is_empty() {
            return Err(Failure::new(
                "no listener can answer the allowed challenges (HTTP-01 needs a plain listener, TLS-ALPN-01 a TLS one)",
            ));
        }
        outcome.asked = true;
        let mut ca = session(&self.acme, &store)?;
        outcome.ari = Some(ca.directory.renewal_info.is_some());
        let result = self.with_ca(&mut ca, manager, &store, &name, now, outcome);
        if let Err(f) = &result {
            if f.is(ProblemType::AccountDoesNotExist) {
                // The CA no longer knows the account (reset, deleted):
                // the next attempt registers again.
                let _ = store.remove("account.json");
            }
        }
        result
    }

    fn with_ca(
        &self,
        ca: &mut Ca,
        manager: &Manager,
        store: &Store,
        name: &Name,
        now: SystemTime,
        outcome: &mut Outcome,
    ) -> Result<Done, Failure> {
        let replaces = name.pair.as_ref().and_then(|p| p.ari_id.clone());
        // With a pair, the CA's window first: it may move the renewal.
        if let (Some(pair), Some(id)) = (&name.pair, &replaces) {
            let (Some(not_before), Some(not_after)) = (pair.not_before, pair.not_after) else {
                return Err(Failure::new("the stored certificate has no validity"));
            };
            let validity = Validity {
                not_before,
                not_after,
            };
            // The time chosen in the window, and when to ask again.
            let (window, ask_again) = match ca.renewal_info(id) {
                Ok(Some((start, end, retry))) => (
                    schedule::choose_in_window(start, end, store::random_u64()),
                    Some(now + schedule::window_poll(retry)),
                ),
                Ok(None) => (None, None),
                // A window that cannot be read: renew by the lifetime, and
                // ask again after a backoff.
                Err(f) => {
                    manager.ctx.logs.error(format_args!(
                        "ACME {}: renewal window: {}",
                        self.domain, f.message
                    ));
                    (None, Some(now + schedule::backoff(1, store::random_u64())))
                }
            };
            let due = validity.due(window);
            if due > now {
                let choice = window.unwrap_or_else(|| validity.by_lifetime());
                return Ok(Done::Window((choice, ask_again.unwrap_or(due))));
            }
        }
        if let Some(profile) = &self.acme.profile {
            let offered = &ca.directory.profiles;
            if !offered.is_empty() && !offered.contains(profile) {
                return Err(Failure::new(format!(
                    "the CA offers no profile \"{profile}\" (it offers {})",
                    offered.join(", ")
                )));
            }
        }
        let want = Want {
            name: &self.domain,
            profile: self.acme.profile.as_deref(),
            key_type: self.acme.key_type,
            challenges: &self.usable,
            replaces: replaces.as_deref(),
        };
        let offer = Offer {
            ctx: &manager.ctx,
            store,
        };
        let mut placed = || outcome.orders += 1;
        let bundle = order::obtain(ca, store, &want, &offer, &manager.stop, &mut placed)?;
        let file = format!("{}.pem", self.domain);
        store.write(&file, &bundle, Some(&format!("{}.prev.pem", self.domain)))?;
        store.remove(&order::order_file(&self.domain))?;
        let pair = Pair::from_pem(&bundle, &bundle).map_err(|(_, why)| Failure::new(why))?;
        Ok(Done::Obtained(Arc::new(pair), store.version(&file)))
    }
}

/// A session with the CA: its directory read, the account's key (made and
/// stored, synced, before its first use) and the account (registered once
/// per CA, its URL stored).
fn session(acme: &Acme, store: &Store) -> Result<Ca, Failure> {
    let http = http::Http::new(client_config(acme.ca_roots.as_deref())?);
    let _account = store.lock("account")?;
    let key = match store.read("account.key")? {
        Some(pem) => {
            let der = rustls::pki_types::PrivateKeyDer::from_pem_slice(&pem)
                .map_err(|e| Failure::new(format!("{}/account.key: {e}", store.path.display())))?;
            jws::AccountKey::from_pkcs8(der.secret_der()).map_err(Failure::new)?
        }
        None => {
            let key = jws::AccountKey::generate().map_err(Failure::new)?;
            let pem = pem("PRIVATE KEY", key.pkcs8());
            store.write("account.key", pem.as_bytes(), None)?;
            super::checkpoint("the account key stored");
            key
        }
    };
    let mut ca = Ca::connect(http, &acme.directory, key)?;
    let stored: Option<serde_json::Value> = store
        .read("account.json")?
        .and_then(|b| serde_json::from_slice(&b).ok());
    match stored.as_ref().and_then(|v| v["url"].as_str()) {
        Some(url) => ca.kid = Some(url.to_owned()),
        None => {
            let eab = match &acme.eab {
                Some(eab) => {
                    let text = std::fs::read_to_string(&eab.hmac_key_file).map_err(|e| {
                        Failure::new(format!("{}: {e}", eab.hmac_key_file.display()))
                    })?;
                    let key = jws::b64_decode(&text).ok_or_else(|| {
                        Failure::new(format!(
                            "{}: not a base64url key",
                            eab.hmac_key_file.display()
                        ))
                    })?;
                    Some((eab.kid.clone(), key))
                }
                None if ca.directory.eab_required => return Err(Failure::new(
                    "the CA requires an external account binding: set `eab-kid` and `eab-hmac-key`",
                )),
                None => None,
            };
            let url = ca.account(
                &acme.contact,
                eab.as_ref().map(|(k, v)| (k.as_str(), v.as_slice())),
            )?;
            super::checkpoint("the account registered");
            store.write(
                "account.json",
                json!({"url": url, "terms": ca.directory.terms})
                    .to_string()
                    .as_bytes(),
                None,
            )?;
        }
    }
    Ok(ca)
}

/// The TLS client configuration for the CA: its roots from `roots` (PEM),
/// else the system's.
fn client_config(roots: Option<&Path>) -> Result<Arc<ClientConfig>, Failure> {
    use rustls::pki_types::pem::PemObject;
    let mut store = rustls::RootCertStore::empty();
    match roots {
        Some(path) => {
            let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
                .map_err(|e| Failure::new(format!("{}: {e}", path.display())))?;
            for cert in certs {
                let cert = cert.map_err(|e| Failure::new(format!("{}: {e}", path.display())))?;
                store
                    .add(cert)
                    .map_err(|e| Failure::new(format!("{}: {e}", path.display())))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                let _ = store.add(cert);
            }
        }
    }
    if store.is_empty() {
        return Err(Failure::new(
            "no trust roots for the CA's HTTPS (set `ca-roots`)",
        ));
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Failure::new(e.to_string()))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// DER as PEM.
fn pem(label: &str, der: &[u8]) -> String {
    let text = base64_std(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in text.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Standard base64 with padding (PEM's).
fn base64_std(bytes: &[u8]) -> String {
    let url = jws::b64(bytes).replace('-', "+").replace('_', "/");
    let pad = (4 - url.len() % 4) % 4;
    url + &"=".repeat(pad)
}
