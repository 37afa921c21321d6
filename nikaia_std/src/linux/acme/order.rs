//! One certificate obtained (RFC 8555 §7.4): an order placed (or the one a
//! crash left, resumed), its authorizations validated by the challenges
//! the operator allows, the CSR sent, the chain downloaded. The new key
//! and the order's URL are stored before anything is validated, so a
//! restart resumes the order instead of placing a second one.

use super::objects::{
    Authorization, AuthorizationStatus, ChallengeStatus, Order, OrderStatus, ProblemType,
};
use super::protocol::{Ca, Failure};
use super::store::Store;
use crate::linux::tls::Pair;
use crate::rt::{ChallengeKind, KeyType};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What is wanted for one name.
pub(super) struct Want<'a> {
    pub name: &'a str,
    pub profile: Option<&'a str>,
    pub key_type: KeyType,
    /// The challenges that may be answered, in the operator's order, less
    /// those no listener can answer.
    pub challenges: &'a [ChallengeKind],
    /// The certificate this one replaces (its ARI identifier).
    pub replaces: Option<&'a str>,
}

/// Where a validation's answer is offered while the CA checks it.
pub(super) trait Validations {
    /// Offers the key authorization of `token` for `name`, by `kind`.
    fn offer(
        &self,
        name: &str,
        kind: ChallengeKind,
        token: &str,
        key_authorization: &str,
    ) -> Result<(), String>;
    /// Withdraws it once the authorization is final.
    fn withdraw(&self, name: &str, token: &str);
}

/// The most one order may take before it is given up (and tried again
/// later from where it stands).
const ORDER_DEADLINE: Duration = Duration::from_secs(300);

/// The file an order in flight is kept in.
pub(super) fn order_file(name: &str) -> String {
    format!("{name}.order.json")
}

/// Obtains the certificate: the bundle to store (key PEM, then the chain
/// PEM), checked to load as a pair for the name. `placed` is called for
/// each new order.
pub(super) fn obtain(
    ca: &mut Ca,
    store: &Store,
    want: &Want<'_>,
    validations: &dyn Validations,
    stop: &AtomicBool,
    placed: &mut dyn FnMut(),
) -> Result<Vec<u8>, Failure> {
    let started = Instant::now();
    let (url, key_pem, mut order) = match resume(ca, store, want.name)? {
        Some(resumed) => resumed,
        None => {
            let key = generate(want.key_type)?;
            let (url, order) = match ca.new_order(want.name, want.profile, want.replaces) {
                // A CA that refuses `replaces` (it does not know the
                // certificate, or the field) gets the order without it.
                Err(f)
                    if want.replaces.is_some()
                        && f.status >= 400
                        && f.status < 500
                        && !f.is(ProblemType::RateLimited) =>
                {
                    ca.new_order(want.name, want.profile, None)?
                }
                placed => placed?,
            };
            placed();
            super::checkpoint("an order placed");
            let record = json!({"order": url, "key": key});
            store.write(&order_file(want.name), record.to_string().as_bytes(), None)?;
            super::checkpoint("an order stored");
            (url, key, order)
        }
    };
    let mut wait = Poll::new();
    // The CA's `Retry-After` on the order, when it gave one.
    let mut retry = None;
    // Every authorization of `order` validated here: the order is ready
    // (RFC 8555 §7.1.6), finalized without asking the CA; a CA that says
    // it is not yet is asked.
    let mut authorized = false;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(Failure::new("the server is stopping"));
        }
        if started.elapsed() > ORDER_DEADLINE {
            return Err(Failure::new(format!(
                "{url}: the order was not done in {} s",
                ORDER_DEADLINE.as_secs()
            )));
        }
        let status = match authorized {
            true => OrderStatus::Ready,
            false => order.status.clone(),
        };
        order = match status {
            OrderStatus::Pending => {
                for authz in &order.authorizations {
                    authorize(ca, authz, want, validations, stop)?;
                }
                authorized = true;
                continue;
            }
            OrderStatus::Ready => {
                let finalize = (order.finalize.as_deref())
                    .ok_or_else(|| Failure::new(format!("{url}: the order has no finalize URL")))?;
                match ca.finalize(finalize, &csr(&key_pem, want.name)?) {
                    Ok(order) => {
                        super::checkpoint("finalized");
                        order
                    }
                    Err(f) if f.is(ProblemType::OrderNotReady) => {
                        wait.sleep(None, stop);
                        ca.get(&url)?.0
                    }
                    Err(f) => return Err(f),
                }
            }
            OrderStatus::Processing => {
                // The CA signs: a moment before asking.
                wait.sleep(retry, stop);
                let (body, again) = ca.get(&url)?;
                retry = again;
                body
            }
            OrderStatus::Valid => {
                let cert = order.certificate.as_deref().ok_or_else(|| {
                    Failure::new(format!("{url}: the valid order has no certificate URL"))
                })?;
                let chain = ca.certificate(cert)?;
                super::checkpoint("the chain downloaded");
                let mut bundle = key_pem.clone().into_bytes();
                bundle.extend_from_slice(&chain);
                let pair = Pair::from_pem(&bundle, &bundle).map_err(|(_, why)| {
                    Failure::new(format!("{cert}: the certificate does not load: {why}"))
                })?;
                if !pair.dns.iter().any(|n| n == want.name) {
                    return Err(Failure::new(format!(
                        "{cert}: the certificate does not name {}",
                        want.name
                    )));
                }
                return Ok(bundle);
            }
            OrderStatus::Invalid | OrderStatus::Other(_) => {
                let _ = store.remove(&order_file(want.name));
                let why = (order.error.as_ref())
                    .and_then(|e| e.detail.as_deref())
                    .unwrap_or("no detail");
                return Err(Failure::new(format!("{url}: the order is {status}: {why}")));
            }
        };
        authorized = false;
    }
}

/// The order a crash or a failure left for `name`, if the CA still has it
/// in a state it can go on from.
fn resume(
    ca: &mut Ca,
    store: &Store,
    name: &str,
) -> Result<Option<(String, String, Order)>, Failure> {
    let Some(bytes) = store.read(&order_file(name))? else {
        return Ok(None);
    };
    let record: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let (Some(url), Some(key)) = (record["order"].as_str(), record["key"].as_str()) else {
        store.remove(&order_file(name))?;
        return Ok(None);
    };
    match ca.get::<Order>(url) {
        Ok((order, _)) if order.status != OrderStatus::Invalid => {
            Ok(Some((url.to_owned(), key.to_owned(), order)))
        }
        Err(f) if f.status == 0 || f.status >= 500 => Err(f),
        // Gone, expired, invalid or not this account's: a new one.
        _ => {
            store.remove(&order_file(name))?;
            Ok(None)
        }
    }
}

/// Validates one authorization, if it is not valid already.
fn authorize(
    ca: &mut Ca,
    url: &str,
    want: &Want<'_>,
    validations: &dyn Validations,
    stop: &AtomicBool,
) -> Result<(), Failure> {
    let (authz, _): (Authorization, _) = ca.get(url)?;
    match &authz.status {
        AuthorizationStatus::Valid => return Ok(()),
        AuthorizationStatus::Pending => {}
        other => return Err(Failure::new(format!("{url}: the authorization is {other}"))),
    }
    let offered = &authz.challenges;
    let (kind, challenge) = want
        .challenges
        .iter()
        .find_map(|kind| {
            let c = offered.iter().find(|c| c.kind == kind.name())?;
            Some((*kind, c))
        })
        .ok_or_else(|| {
            let types: Vec<&str> = offered.iter().map(|c| c.kind.as_str()).collect();
            Failure::new(format!(
                "{url}: the CA offers {} and none of them can be answered here",
                types.join(", ")
            ))
        })?;
    let (Some(token), Some(challenge_url)) = (challenge.token.as_deref(), challenge.url.as_deref())
    else {
        return Err(Failure::new(format!(
            "{url}: a challenge without token or URL"
        )));
    };
    let key_authorization = ca.key.key_authorization(token);
    validations
        .offer(want.name, kind, token, &key_authorization)
        .map_err(Failure::new)?;
    // The answer stays offered until the authorization is final: the CA
    // checks from several places, more than once.
    let result = (|| {
        super::checkpoint("a validation offered");
        if challenge.status == Some(ChallengeStatus::Pending) {
            ca.respond(challenge_url)?;
            super::checkpoint("a validation asked for");
        }
        let mut wait = Poll::new();
        let started = Instant::now();
        let mut retry = None;
        loop {
            // The CA validates: a moment before each look.
            wait.sleep(retry, stop);
            let (authz, again): (Authorization, _) = ca.get(url)?;
            retry = again;
            let going = started.elapsed() < ORDER_DEADLINE && !stop.load(Ordering::Relaxed);
            match &authz.status {
                AuthorizationStatus::Valid => {
                    super::checkpoint("an authorization valid");
                    return Ok(());
                }
                AuthorizationStatus::Pending if going => {}
                // A challenge's state, not an authorization's (RFC 8555
                // §7.1.6), from a CA that says it of both: polled on.
                AuthorizationStatus::Other(word) if going && word == "processing" => {}
                status => {
                    let detail = (authz.challenges.iter())
                        .find_map(|c| c.error.as_ref()?.detail.as_deref())
                        .unwrap_or("no detail");
                    return Err(Failure::new(format!(
                        "{url}: {} validation {status}: {detail}",
                        kind.name(),
                    )));
                }
            }
        }
    })();
    validations.withdraw(want.name, token);
    result
}

/// How long to wait between polls: the CA's `Retry-After` (at most a
/// minute), else from 100 ms up by half each time to 2 s.
struct Poll(Duration);

impl Poll {
    fn new() -> Poll {
        Poll(Duration::from_millis(100))
    }

    fn sleep(&mut self, retry_after: Option<Duration>, stop: &AtomicBool) {
        let wait = retry_after.map_or(self.0, |r| r.min(Duration::from_secs(60)));
        self.0 = (self.0 * 3 / 2).min(Duration::from_secs(2));
        let until = Instant::now() + wait;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep((until - Instant::now()).min(Duration::from_millis(100)));
        }
    }
}

/// A new private key of `kind`, PEM (PKCS#8).
fn generate(kind: KeyType) -> Result<String, Failure> {
    let alg = match kind {
        KeyType::EcdsaP256 => &rcgen::PKCS_ECDSA_P256_SHA256,
        KeyType::EcdsaP384 => &rcgen::PKCS_ECDSA_P384_SHA384,
    };
    let key = rcgen::KeyPair::generate_for(alg)
        .map_err(|e| Failure::new(format!("cannot make a key: {e}")))?;
    Ok(key.serialize_pem())
}

/// The CSR for `name` with the key `key_pem` (DER): the name as the one
/// subjectAltName, no common name (CAs drop it; some refuse it).
fn csr(key_pem: &str, name: &str) -> Result<Vec<u8>, Failure> {
    let bad = |e: rcgen::Error| Failure::new(format!("cannot make the CSR: {e}"));
    let key = rcgen::KeyPair::from_pem(key_pem).map_err(bad)?;
    let mut params = rcgen::CertificateParams::new(vec![name.to_owned()]).map_err(bad)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    Ok(params.serialize_request(&key).map_err(bad)?.der().to_vec())
}

/// The self-signed certificate that answers a TLS-ALPN-01 validation of
/// `name` (RFC 8737 §3): the name as its one subjectAltName, and the
/// critical acmeIdentifier extension holding the SHA-256 of the key
/// authorization. As DER, with its key's PKCS#8 DER.
pub(super) fn alpn_certificate(
    name: &str,
    key_authorization: &str,
) -> Result<(Vec<u8>, Vec<u8>), String> {
    let digest =
        aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, key_authorization.as_bytes());
    let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
    let mut params =
        rcgen::CertificateParams::new(vec![name.to_owned()]).map_err(|e| e.to_string())?;
    params.custom_extensions = vec![rcgen::CustomExtension::new_acme_identifier(digest.as_ref())];
    let cert = params.self_signed(&key).map_err(|e| e.to_string())?;
    Ok((cert.der().to_vec(), key.serialize_der()))
}
