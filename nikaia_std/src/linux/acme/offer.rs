//! A validation's answer offered while the CA checks it: in this process's
//! memory (HTTP-01's token, TLS-ALPN-01's certificate), and in the storage
//! for another process on the same sockets, which the CA may reach.

use super::order::{self, Validations};
use super::store::Store;
use super::Context;
use crate::rt::ChallengeKind;
use serde_json::json;
use std::sync::Arc;

pub(super) fn challenge_file(domain: &str) -> String {
    format!("{domain}.challenge.json")
}

/// Offers the validation another process stored for `domain` (it may be
/// this process that the CA reaches), or withdraws it when it is gone;
/// the token offered.
pub(super) fn offer_stored(ctx: &Context, store: &Store, domain: &str) -> Option<String> {
    let record: serde_json::Value = store
        .read(&challenge_file(domain))
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let kind = record["kind"].as_str().and_then(kind_named);
    match (
        kind,
        record["token"].as_str(),
        record["key_authorization"].as_str(),
    ) {
        (Some(kind), Some(token), Some(ka)) => {
            let _ = offer(ctx, domain, kind, token, ka);
            Some(token.to_owned())
        }
        _ => {
            ctx.challenges.withdraw(domain, None);
            None
        }
    }
}

/// Offers the answer to a validation of `domain` by `kind`: HTTP-01's key
/// authorization by token, or TLS-ALPN-01's certificate by name.
fn offer(
    ctx: &Context,
    domain: &str,
    kind: ChallengeKind,
    token: &str,
    key_authorization: &str,
) -> Result<(), String> {
    match kind {
        ChallengeKind::Http01 => ctx.challenges.offer_http(token, key_authorization),
        ChallengeKind::TlsAlpn01 => {
            let Some(tls) = &ctx.tls else {
                return Err("TLS-ALPN-01 needs a TLS listener".into());
            };
            let (cert, key) = order::alpn_certificate(domain, key_authorization)?;
            let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.into());
            let provider = rustls::crypto::aws_lc_rs::default_provider();
            let signer = provider
                .key_provider
                .load_private_key(key)
                .map_err(|e| e.to_string())?;
            // Not `from_der`: it checks the certificate as a peer's, and
            // refuses the critical acmeIdentifier extension it must carry.
            let certified = rustls::sign::CertifiedKey::new(vec![cert.into()], signer);
            ctx.challenges
                .offer_alpn(domain, tls.challenge_config(Arc::new(certified)));
        }
    }
    Ok(())
}

fn kind_named(name: &str) -> Option<ChallengeKind> {
    [ChallengeKind::Http01, ChallengeKind::TlsAlpn01]
        .into_iter()
        .find(|k| k.name() == name)
}

/// Where a job offers its validations: this process's memory, and the
/// storage (for another process the CA may reach).
pub(super) struct Offer<'a> {
    pub ctx: &'a Context,
    pub store: &'a Store,
}

impl Validations for Offer<'_> {
    fn offer(
        &self,
        name: &str,
        kind: ChallengeKind,
        token: &str,
        key_authorization: &str,
    ) -> Result<(), String> {
        offer(self.ctx, name, kind, token, key_authorization)?;
        let record =
            json!({"kind": kind.name(), "token": token, "key_authorization": key_authorization});
        self.store
            .write(&challenge_file(name), record.to_string().as_bytes(), None)
            .map_err(|e| e.to_string())?;
        // Another process on the same storage (an upgrade's, a second
        // instance) may be the one the CA reaches: give its thread a poll
        // to offer the answer too before the CA is told to look.
        if self.store.others_present() {
            std::thread::sleep(super::TICK * 2);
        }
        Ok(())
    }

    fn withdraw(&self, name: &str, token: &str) {
        self.ctx.challenges.withdraw(name, Some(token));
        let _ = self.store.remove(&challenge_file(name));
    }
}
