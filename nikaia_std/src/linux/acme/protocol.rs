//! RFC 8555 as a client speaks it to one CA: the directory, nonces, the
//! account, orders, authorizations, challenges, finalization, the
//! certificate, and renewal information (RFC 9773). Each call is one
//! request (a `badNonce` retried with the nonce the error carries); what
//! to do next is `order.rs`'s.

use super::http::{Http, Response};
use super::jws::AccountKey;
use super::objects::{Challenge, DirectoryObject, Order, Problem, ProblemType, RenewalInfo};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::{json, Value};
use std::time::{Duration, SystemTime};

/// How often a request refused for its nonce is sent again with the nonce
/// the refusal carries: enough that a CA refusing nine in ten (Pebble's
/// `PEBBLE_WFE_NONCEREJECT=90`) still answers each of an order's ten
/// requests but once in a hundred thousand orders (0.9^200 ≈ 7·10⁻¹⁰ a
/// request). A CA refuses a nonce rarely; each retry is one round trip.
const NONCE_RETRIES: u32 = 200;

/// What went wrong talking to the CA.
#[derive(Debug)]
pub(crate) struct Failure {
    /// One line: the CA's problem (type and detail) or what failed.
    pub(crate) message: String,
    /// The CA's `Retry-After`, when it said one (rateLimited, 503).
    pub(crate) retry_after: Option<Duration>,
    /// The problem's type, when the CA sent one.
    pub(crate) kind: Option<ProblemType>,
    /// The HTTP status, when there was an answer.
    pub(crate) status: u16,
}

impl Failure {
    pub(crate) fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            retry_after: None,
            kind: None,
            status: 0,
        }
    }

    /// Whether the CA said so in a problem of this type.
    pub(crate) fn is(&self, kind: ProblemType) -> bool {
        self.kind == Some(kind)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::new(e.to_string())
    }
}

/// The directory's URLs and what it says of itself.
#[derive(Debug, Clone)]
pub(super) struct Directory {
    pub new_nonce: String,
    pub new_account: String,
    pub new_order: String,
    /// `renewalInfo` (ARI), when the CA offers it.
    pub renewal_info: Option<String>,
    /// `meta.termsOfService`.
    pub terms: Option<String>,
    /// `meta.profiles`: the profile names it offers.
    pub profiles: Vec<String>,
    /// `meta.externalAccountRequired`.
    pub eab_required: bool,
}

/// A session with one CA: the connection, the nonce to use next, the
/// account's key and URL, and how many requests were made.
pub(super) struct Ca {
    http: Http,
    pub(super) directory: Directory,
    nonce: Option<String>,
    pub(super) key: AccountKey,
    /// The account's URL (`kid`), once made.
    pub(super) kid: Option<String>,
    /// Requests sent, for `nikaia explain` and the tests.
    pub(super) requests: u64,
}

impl Ca {
    /// Reads the directory at `url`.
    pub(super) fn connect(mut http: Http, url: &str, key: AccountKey) -> Result<Ca, Failure> {
        let r = http.request("GET", url, None, &[])?;
        let body: DirectoryObject = expect(&r, &[200], url)?;
        let need = |v: Option<String>, k: &str| {
            v.ok_or_else(|| Failure::new(format!("{url}: the directory has no `{k}`")))
        };
        let meta = body.meta.unwrap_or_default();
        let directory = Directory {
            new_nonce: need(body.new_nonce, "newNonce")?,
            new_account: need(body.new_account, "newAccount")?,
            new_order: need(body.new_order, "newOrder")?,
            renewal_info: body.renewal_info,
            terms: meta.terms_of_service,
            profiles: meta
                .profiles
                .map(|p| p.into_keys().collect())
                .unwrap_or_default(),
            eab_required: meta.external_account_required == Some(true),
        };
        Ok(Ca {
            http,
            directory,
            nonce: r.header("replay-nonce").map(str::to_owned),
            key,
            kid: None,
            requests: 1,
        })
    }

    /// A signed POST of `payload` (`None`: POST-as-GET) to `url`, retried
    /// with a fresh nonce while the CA refuses the nonce. The answer, or
    /// the CA's problem as a [`Failure`].
    pub(super) fn post(&mut self, url: &str, payload: Option<&Value>) -> Result<Response, Failure> {
        self.post_signed(url, |key, nonce, kid| key.sign(url, nonce, kid, payload))
    }

    fn post_signed(
        &mut self,
        url: &str,
        sign: impl Fn(&AccountKey, &str, Option<&str>) -> Result<Vec<u8>, String>,
    ) -> Result<Response, Failure> {
        let mut tries = 0;
        loop {
            let nonce = match self.nonce.take() {
                Some(n) => n,
                None => self.fresh_nonce()?,
            };
            let body = sign(&self.key, &nonce, self.kid.as_deref()).map_err(Failure::new)?;
            self.requests += 1;
            let r = self
                .http
                .request("POST", url, Some("application/jose+json"), &body)?;
            self.nonce = r.header("replay-nonce").map(str::to_owned);
            if r.status < 400 {
                return Ok(r);
            }
            let failure = problem(&r, url);
            tries += 1;
            if failure.is(ProblemType::BadNonce) && tries <= NONCE_RETRIES {
                continue;
            }
            return Err(failure);
        }
    }

    fn fresh_nonce(&mut self) -> Result<String, Failure> {
        let url = self.directory.new_nonce.clone();
        self.requests += 1;
        let r = self.http.request("HEAD", &url, None, &[])?;
        if !(200..300).contains(&r.status) {
            return Err(problem(&r, &url));
        }
        r.header("replay-nonce")
            .map(str::to_owned)
            .ok_or_else(|| Failure::new(format!("{url}: no Replay-Nonce")))
    }

    /// Makes (or finds: a CA answers 200 for a key it knows) the account
    /// of this key; `eab`: (key id, HMAC key).
    pub(super) fn account(
        &mut self,
        contact: &[String],
        eab: Option<(&str, &[u8])>,
    ) -> Result<String, Failure> {
        let url = self.directory.new_account.clone();
        let mut payload = json!({"termsOfServiceAgreed": true, "contact": contact});
        if let Some((kid, hmac)) = eab {
            payload["externalAccountBinding"] = self.key.external_binding(&url, kid, hmac);
        }
        self.kid = None;
        let r = self.post(&url, Some(&payload))?;
        // The account object is not read: its URL comes in `Location`.
        let _: IgnoredAny = expect(&r, &[200, 201], &url)?;
        let kid = r
            .header("location")
            .ok_or_else(|| Failure::new(format!("{url}: the account has no Location")))?
            .to_owned();
        self.kid = Some(kid.clone());
        Ok(kid)
    }

    /// Places an order for `name`; its URL and its body.
    pub(super) fn new_order(
        &mut self,
        name: &str,
        profile: Option<&str>,
        replaces: Option<&str>,
    ) -> Result<(String, Order), Failure> {
        let url = self.directory.new_order.clone();
        let mut payload = json!({"identifiers": [{"type": "dns", "value": name}]});
        if let Some(profile) = profile {
            payload["profile"] = json!(profile);
        }
        if let Some(replaces) = replaces {
            payload["replaces"] = json!(replaces);
        }
        let r = self.post(&url, Some(&payload))?;
        let body = expect(&r, &[201, 200], &url)?;
        let order = r
            .header("location")
            .ok_or_else(|| Failure::new(format!("{url}: the order has no Location")))?
            .to_owned();
        Ok((order, body))
    }

    /// A POST-as-GET of a resource (an order, an authorization), with the
    /// `Retry-After` it came with.
    pub(super) fn get<T: DeserializeOwned>(
        &mut self,
        url: &str,
    ) -> Result<(T, Option<Duration>), Failure> {
        let r = self.post(url, None)?;
        let body = expect(&r, &[200], url)?;
        Ok((body, retry_after(&r)))
    }

    /// Tells the CA a challenge is ready to be validated.
    pub(super) fn respond(&mut self, challenge: &str) -> Result<Challenge, Failure> {
        let r = self.post(challenge, Some(&json!({})))?;
        expect(&r, &[200], challenge)
    }

    /// Sends the CSR to the order's `finalize` URL.
    pub(super) fn finalize(&mut self, url: &str, csr_der: &[u8]) -> Result<Order, Failure> {
        let payload = json!({"csr": super::jws::b64(csr_der)});
        let r = self.post(url, Some(&payload))?;
        expect(&r, &[200], url)
    }

    /// Downloads the chain (PEM).
    pub(super) fn certificate(&mut self, url: &str) -> Result<Vec<u8>, Failure> {
        let r = self.post(url, None)?;
        if r.status != 200 {
            return Err(problem(&r, url));
        }
        Ok(r.body)
    }

    /// The CA's renewal window for the certificate `cert_id` (ARI): (start,
    /// end) and when to ask again.
    pub(super) fn renewal_info(
        &mut self,
        cert_id: &str,
    ) -> Result<Option<(SystemTime, SystemTime, Option<Duration>)>, Failure> {
        let Some(base) = self.directory.renewal_info.clone() else {
            return Ok(None);
        };
        let url = format!("{}/{cert_id}", base.trim_end_matches('/'));
        self.requests += 1;
        let r = self.http.request("GET", &url, None, &[])?;
        let body: RenewalInfo = expect(&r, &[200], &url)?;
        match body.suggested_window {
            Some(window) => Ok(Some((window.start, window.end, retry_after(&r)))),
            None => Err(Failure::new(format!("{url}: no suggestedWindow"))),
        }
    }
}

/// The body of an answer with one of `statuses`, read as a `T`, or the
/// problem.
fn expect<T: DeserializeOwned>(r: &Response, statuses: &[u16], url: &str) -> Result<T, Failure> {
    if !statuses.contains(&r.status) {
        return Err(problem(r, url));
    }
    serde_json::from_slice(&r.body).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Data => "what RFC 8555 says",
            _ => "JSON",
        };
        Failure::new(format!("{url}: the answer is not {what}: {e}"))
    })
}

/// An error answer as a [`Failure`]: its problem document (RFC 7807) where
/// there is one, its `Retry-After`.
fn problem(r: &Response, url: &str) -> Failure {
    let doc: Problem = serde_json::from_slice(&r.body).unwrap_or_default();
    let what = match &doc.kind {
        Some(kind) => format!("{}: {}", kind.short(), doc.detail.unwrap_or_default()),
        None => format!("HTTP {}", r.status),
    };
    Failure {
        message: format!("{url}: {what}"),
        retry_after: retry_after(r),
        kind: doc.kind,
        status: r.status,
    }
}

/// `Retry-After`: seconds, or an HTTP date.
pub(super) fn retry_after(r: &Response) -> Option<Duration> {
    let v = r.header("retry-after")?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = crate::text::date::parse_http_date(v)?;
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(at);
    Some(at.duration_since(SystemTime::now()).unwrap_or_default())
}

/// An RFC 3339 time as ACME writes it (`2026-12-05T10:00:00Z`, fractions
/// and offsets allowed).
pub(super) fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<u32>().ok();
    let (y, mo, d) = (num(0..4)? as i64, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (
        num(11..13)? as i64,
        num(14..16)? as i64,
        num(17..19)? as i64,
    );
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        rest = frac.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) => {
            let m = o[1..3].parse::<i64>().ok()? * 3600 + o[4..6].parse::<i64>().ok()? * 60;
            if o.starts_with('+') {
                m
            } else {
                -m
            }
        }
        _ => return None,
    };
    let days = crate::text::date::days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_as_cas_write_it() {
        let t = |s| {
            parse_rfc3339(s).map(|t| t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs())
        };
        assert_eq!(t("2026-12-05T10:00:00Z"), Some(1_796_464_800));
        assert_eq!(t("2026-12-05T10:00:00.123456Z"), Some(1_796_464_800));
        assert_eq!(t("2026-12-05T11:00:00+01:00"), Some(1_796_464_800));
        assert_eq!(t("2026-12-05"), None);
        assert_eq!(t("2026-12-05T10:00:00"), None);
    }
}
