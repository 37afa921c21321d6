//! What the server answers an ACME CA's validation with while an
//! authorization is in flight (`spec/tls.md`, "Challenges"): HTTP-01 key
//! authorizations by token, TLS-ALPN-01 configurations by name, and the
//! names ACME manages. Filled by the ACME thread, read by workers; empty
//! in a program without ACME.

use crate::http::redirect::Http01;
use bytes::Bytes;
use rustls::ServerConfig;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

#[derive(Default)]
pub(crate) struct Challenges {
    /// HTTP-01: token → key authorization.
    http: RwLock<HashMap<String, Bytes>>,
    /// TLS-ALPN-01: name → the configuration whose certificate carries the
    /// key authorization's digest, offering only `acme-tls/1`.
    alpn: RwLock<HashMap<String, Arc<ServerConfig>>>,
    /// The names ACME obtains certificates for: a token the server does
    /// not hold is 404 for them, whatever the site holds.
    managed: RwLock<HashSet<String>>,
    /// Validations answered, for `nikaia explain`.
    pub(crate) answered: AtomicU64,
    /// The managed names a refused handshake was logged for (once each,
    /// until the name has a certificate or is no longer managed).
    logged: std::sync::Mutex<HashSet<String>>,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

#[cfg_attr(not(feature = "acme"), allow(dead_code))]
fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

impl Challenges {
    /// The answer to `GET /.well-known/acme-challenge/TOKEN` on a plain
    /// listener, asked for `host` (the `Host` header, port and case
    /// ignored).
    pub(crate) fn http01(&self, host: Option<&str>, token: &str) -> Http01 {
        if let Some(answer) = read(&self.http).get(token) {
            self.answered.fetch_add(1, Ordering::Relaxed);
            return Http01::Answer(answer.clone());
        }
        let host = host.map(host_name);
        match host.is_some_and(|h| read(&self.managed).contains(&h)) {
            true => Http01::NotHeld,
            false => Http01::NotOurs,
        }
    }

    /// The TLS-ALPN-01 configuration for `name`, if a validation of it is
    /// in flight; counted as answered.
    pub(crate) fn alpn(&self, name: &str) -> Option<Arc<ServerConfig>> {
        let config = read(&self.alpn).get(&name.to_ascii_lowercase()).cloned();
        if config.is_some() {
            self.answered.fetch_add(1, Ordering::Relaxed);
        }
        config
    }

    /// Whether a handshake for `name`, refused for want of a certificate,
    /// is logged: once per name ACME manages (it is being obtained). `None`:
    /// not an ACME name (the usual throttled line).
    pub(crate) fn refusal_to_log(&self, name: &str) -> Option<bool> {
        let name = name.to_ascii_lowercase();
        if !read(&self.managed).contains(&name) {
            return None;
        }
        Some(
            self.logged
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(name),
        )
    }

    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    /// The names ACME manages now.
    pub(crate) fn set_managed(&self, names: impl IntoIterator<Item = String>) {
        *write(&self.managed) = names.into_iter().collect();
    }

    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    /// Offers an HTTP-01 answer.
    pub(crate) fn offer_http(&self, token: &str, key_authorization: &str) {
        write(&self.http).insert(token.to_owned(), Bytes::from(key_authorization.to_owned()));
    }

    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    /// Offers a TLS-ALPN-01 configuration for `name`.
    pub(crate) fn offer_alpn(&self, name: &str, config: Arc<ServerConfig>) {
        write(&self.alpn).insert(name.to_owned(), config);
    }

    #[cfg_attr(not(feature = "acme"), allow(dead_code))]
    /// Withdraws what was offered for `name` and its token.
    pub(crate) fn withdraw(&self, name: &str, token: Option<&str>) {
        if let Some(token) = token {
            write(&self.http).remove(token);
        }
        write(&self.alpn).remove(name);
    }
}

/// A `Host` header's name: no port, no brackets, lowercase, no trailing
/// dot.
fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_token_is_answered_and_an_acme_name_without_one_is_404() {
        let c = Challenges::default();
        c.set_managed(["example.org".to_owned()]);
        c.offer_http("tok", "tok.thumb");
        assert!(
            matches!(c.http01(Some("other.example"), "tok"), Http01::Answer(b) if b == "tok.thumb")
        );
        assert!(matches!(
            c.http01(Some("Example.ORG:80"), "nope"),
            Http01::NotHeld
        ));
        assert!(matches!(
            c.http01(Some("example.org."), "nope"),
            Http01::NotHeld
        ));
        assert!(matches!(
            c.http01(Some("other.example"), "nope"),
            Http01::NotOurs
        ));
        assert!(matches!(c.http01(None, "nope"), Http01::NotOurs));
        c.withdraw("example.org", Some("tok"));
        assert!(matches!(
            c.http01(Some("example.org"), "tok"),
            Http01::NotHeld
        ));
        assert_eq!(c.answered.load(Ordering::Relaxed), 1);
    }
}
