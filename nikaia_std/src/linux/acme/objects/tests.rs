//! The CA's objects as RFC 8555's own examples, Pebble (2.4, as it
//! answered) and Let's Encrypt write them, and as a CA may write them
//! otherwise: a word the client does not know, a field left out.

use super::*;
use std::time::{Duration, UNIX_EPOCH};

fn read<T: serde::de::DeserializeOwned>(json: &str) -> T {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// `p` is of `kind`, which a message says as `short`, with `detail`.
fn assert_problem(p: &Problem, kind: ProblemType, short: &str, detail: Option<&str>) {
    assert_eq!(p.kind.as_ref(), Some(&kind));
    assert_eq!(kind.short(), short);
    assert_eq!(p.detail.as_deref(), detail);
}

/// RFC 8555 §7.1.1.
#[test]
fn rfc8555_directory() {
    let d: DirectoryObject = read(include_str!("testdata/rfc8555-directory.json"));
    assert_eq!(
        d.new_nonce.as_deref(),
        Some("https://example.com/acme/new-nonce")
    );
    assert_eq!(
        d.new_account.as_deref(),
        Some("https://example.com/acme/new-account")
    );
    assert_eq!(
        d.new_order.as_deref(),
        Some("https://example.com/acme/new-order")
    );
    assert_eq!(d.renewal_info, None);
    let meta = d.meta.unwrap();
    assert_eq!(
        meta.terms_of_service.as_deref(),
        Some("https://example.com/acme/terms/2017-5-30")
    );
    assert_eq!(meta.external_account_required, Some(false));
    assert!(meta.profiles.is_none());
}

/// RFC 8555 §7.1.3 (a valid order) and §7.4 (the pending order a newOrder
/// answers).
#[test]
fn rfc8555_orders() {
    let valid: Order = read(include_str!("testdata/rfc8555-order-valid.json"));
    assert_eq!(valid.status, OrderStatus::Valid);
    assert_eq!(
        valid.authorizations,
        [
            "https://example.com/acme/authz/PAniVnsZcis",
            "https://example.com/acme/authz/r4HqLzrSrpI"
        ]
    );
    assert_eq!(
        valid.certificate.as_deref(),
        Some("https://example.com/acme/cert/mAt3xBGaobw")
    );
    assert!(valid.error.is_none());

    let pending: Order = read(include_str!("testdata/rfc8555-order-pending.json"));
    assert_eq!(pending.status, OrderStatus::Pending);
    assert_eq!(pending.authorizations.len(), 2);
    assert_eq!(
        pending.finalize.as_deref(),
        Some("https://example.com/acme/order/TOlocE8rfgo/finalize")
    );
    assert_eq!(pending.certificate, None);
}

/// RFC 8555 §7.1.4 (valid), §7.5 (pending: its challenges carry no
/// `status`) and §7.5.1 (valid once validated).
#[test]
fn rfc8555_authorizations() {
    let valid: Authorization = read(include_str!("testdata/rfc8555-authorization-valid.json"));
    assert_eq!(valid.status, AuthorizationStatus::Valid);
    assert_eq!(valid.challenges.len(), 1);
    assert_eq!(valid.challenges[0].status, Some(ChallengeStatus::Valid));

    let pending: Authorization = read(include_str!("testdata/rfc8555-authorization-pending.json"));
    assert_eq!(pending.status, AuthorizationStatus::Pending);
    let kinds: Vec<&str> = pending.challenges.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(kinds, ["http-01", "dns-01"]);
    let http = &pending.challenges[0];
    assert_eq!(
        http.url.as_deref(),
        Some("https://example.com/acme/chall/prV_B7yEyA4")
    );
    assert_eq!(http.token.as_deref(), Some("DGyRejmCefe7v4NfDGDKfA"));
    assert_eq!(http.status, None);
    assert!(http.error.is_none());

    let validated: Authorization = read(include_str!(
        "testdata/rfc8555-authorization-validated.json"
    ));
    assert_eq!(validated.status, AuthorizationStatus::Valid);
    assert_eq!(
        validated.challenges[0].token.as_deref(),
        Some("IlirfxKKXAsHtmzK29Pj8A")
    );
}

/// RFC 8555 §6.7.1: a problem with subproblems, of a type the client does
/// not act on.
#[test]
fn rfc8555_problem_with_subproblems() {
    let p: Problem = read(include_str!("testdata/rfc8555-problem-subproblems.json"));
    assert_problem(
        &p,
        ProblemType::Other("urn:ietf:params:acme:error:malformed".into()),
        "malformed",
        Some("Some of the identifiers requested were rejected"),
    );
}

/// RFC 7807 §3's own example: a type outside ACME's namespace, and
/// members of its own.
#[test]
fn rfc7807_problem_of_another_namespace() {
    let p: Problem = read(include_str!("testdata/rfc7807-problem.json"));
    let uri = "https://example.com/probs/out-of-credit";
    assert_problem(
        &p,
        ProblemType::Other(uri.into()),
        uri,
        Some("Your current balance is 30, but that costs 50."),
    );
}

/// RFC 9773 §4.2.
#[test]
fn rfc9773_renewal_info() {
    let info: RenewalInfo = read(include_str!("testdata/rfc9773-renewal-info.json"));
    let window = info.suggested_window.unwrap();
    assert_eq!(window.start, at(1_735_790_400));
    assert_eq!(window.end, at(1_735_876_800));
    // A time that is not RFC 3339 is said.
    let e = serde_json::from_str::<RenewalInfo>(
        r#"{"suggestedWindow": {"start": "tomorrow", "end": "2025-01-03T04:00:00Z"}}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not an RFC 3339 time"), "{e}");
}

/// The problem types the client acts on, each by its URN.
#[test]
fn the_problem_types_acted_on() {
    for (urn, kind, short) in [
        (
            "urn:ietf:params:acme:error:accountDoesNotExist",
            ProblemType::AccountDoesNotExist,
            "accountDoesNotExist",
        ),
        (
            "urn:ietf:params:acme:error:badNonce",
            ProblemType::BadNonce,
            "badNonce",
        ),
        (
            "urn:ietf:params:acme:error:orderNotReady",
            ProblemType::OrderNotReady,
            "orderNotReady",
        ),
        (
            "urn:ietf:params:acme:error:rateLimited",
            ProblemType::RateLimited,
            "rateLimited",
        ),
    ] {
        let p: Problem = read(&format!(r#"{{"type": "{urn}", "detail": "d"}}"#));
        assert_eq!(kind.to_string(), urn);
        assert_problem(&p, kind, short, Some("d"));
    }
}

/// Pebble 2.4's directory, and a badNonce and an orderNotReady as it
/// answers them (with the HTTP status in the document).
#[test]
fn pebble_directory_and_problems() {
    let d: DirectoryObject = read(include_str!("testdata/pebble-directory.json"));
    assert_eq!(
        d.new_order.as_deref(),
        Some("https://127.0.0.1:14900/order-plz")
    );
    assert_eq!(
        d.meta.unwrap().terms_of_service.as_deref(),
        Some("data:text/plain,Do%20what%20thou%20wilt")
    );
    let p: Problem = read(
        r#"{
           "type": "urn:ietf:params:acme:error:badNonce",
           "detail": "JWS has an invalid anti-replay nonce: bm9ub25jZQ",
           "status": 400
        }"#,
    );
    assert_problem(
        &p,
        ProblemType::BadNonce,
        "badNonce",
        Some("JWS has an invalid anti-replay nonce: bm9ub25jZQ"),
    );
    let p: Problem = read(
        r#"{
           "type": "urn:ietf:params:acme:error:orderNotReady",
           "detail": "Order's status (\"pending\") was not ready",
           "status": 403
        }"#,
    );
    assert_eq!(p.kind, Some(ProblemType::OrderNotReady));
}

/// Pebble 2.4's order and authorization, pending and then invalid (its
/// validation could not resolve the name).
#[test]
fn pebble_order_and_authorization() {
    let order: Order = read(include_str!("testdata/pebble-order-pending.json"));
    assert_eq!(order.status, OrderStatus::Pending);
    assert_eq!(
        order.finalize.as_deref(),
        Some("https://127.0.0.1:14900/finalize-order/ALQSUZY1qUWFrCkU2MjcWJJ2_vX8ShrcCGdAXKs4FSE")
    );
    let authz: Authorization = read(include_str!("testdata/pebble-authorization-pending.json"));
    assert_eq!(authz.status, AuthorizationStatus::Pending);
    let kinds: Vec<&str> = authz.challenges.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(kinds, ["http-01", "dns-01", "tls-alpn-01"]);
    assert!(authz
        .challenges
        .iter()
        .all(|c| c.status == Some(ChallengeStatus::Pending)));

    let failed: Authorization = read(include_str!("testdata/pebble-authorization-invalid.json"));
    assert_eq!(failed.status, AuthorizationStatus::Invalid);
    let challenge = &failed.challenges[0];
    assert_eq!(challenge.status, Some(ChallengeStatus::Invalid));
    let error = challenge.error.as_ref().unwrap();
    assert_eq!(error.kind.as_ref().unwrap().short(), "connection");
    assert!(error.detail.as_deref().unwrap().ends_with("no such host\""));

    let invalid: Order = read(include_str!("testdata/pebble-order-invalid.json"));
    assert_eq!(invalid.status, OrderStatus::Invalid);
    assert!(invalid
        .error
        .unwrap()
        .detail
        .unwrap()
        .contains("no such host"));
}

/// Let's Encrypt's directory: profiles, renewal information, and the
/// random entry it adds so that clients take no fixed set of fields.
#[test]
fn lets_encrypt_directory() {
    let d: DirectoryObject = read(include_str!("testdata/letsencrypt-directory.json"));
    assert_eq!(
        d.renewal_info.as_deref(),
        Some("https://acme-v02.api.letsencrypt.org/acme/renewal-info")
    );
    let profiles: Vec<String> = d.meta.unwrap().profiles.unwrap().into_keys().collect();
    assert_eq!(profiles, ["classic", "shortlived", "tlsserver"]);
}

/// Let's Encrypt's order (with its profile), a validated challenge with
/// its validation record, a rate limit and a renewal window.
#[test]
fn lets_encrypt_objects() {
    let order: Order = read(
        r#"{
          "status": "ready",
          "expires": "2025-06-12T19:33:02Z",
          "identifiers": [{"type": "dns", "value": "www.example.org"}],
          "authorizations": ["https://acme-v02.api.letsencrypt.org/acme/authz/1234567/89012345678"],
          "finalize": "https://acme-v02.api.letsencrypt.org/acme/finalize/1234567/3456789012",
          "profile": "shortlived"
        }"#,
    );
    assert_eq!(order.status, OrderStatus::Ready);
    let authz: Authorization = read(include_str!(
        "testdata/letsencrypt-authorization-valid.json"
    ));
    assert_eq!(authz.status, AuthorizationStatus::Valid);
    assert_eq!(authz.challenges[0].status, Some(ChallengeStatus::Valid));
    let p: Problem = read(
        r#"{
          "type": "urn:ietf:params:acme:error:rateLimited",
          "detail": "too many new orders (300) from this account in the last 3h0m0s, retry after 2025-06-05 20:00:00 UTC: see https://letsencrypt.org/docs/rate-limits/#new-orders-per-account",
          "status": 429
        }"#,
    );
    assert_eq!(p.kind, Some(ProblemType::RateLimited));
    let info: RenewalInfo = read(
        r#"{"suggestedWindow": {"start": "2025-01-02T04:00:00.123Z", "end": "2025-01-03T04:00:00Z"}}"#,
    );
    assert_eq!(info.suggested_window.unwrap().start, at(1_735_790_400));
}

/// A status no RFC gives reads as `Other` with the CA's word (the client
/// then handles it as a state it cannot go on from), and so does a
/// problem type the client does not act on.
#[test]
fn unknown_words_read_as_other() {
    let order: Order =
        read(r#"{"status": "archived", "authorizations": [], "finalize": "https://ca/f"}"#);
    assert_eq!(order.status, OrderStatus::Other("archived".into()));
    assert_eq!(order.status.to_string(), "archived");
    let authz: Authorization = read(
        r#"{"status": "processing", "challenges": [
            {"type": "http-01", "url": "https://ca/c", "token": "t", "status": "retrying"}
        ]}"#,
    );
    assert_eq!(
        authz.status,
        AuthorizationStatus::Other("processing".into())
    );
    assert_eq!(
        authz.challenges[0].status,
        Some(ChallengeStatus::Other("retrying".into()))
    );
    let p: Problem =
        read(r#"{"type": "urn:ietf:params:acme:error:alreadyReplaced", "detail": "d"}"#);
    assert_problem(
        &p,
        ProblemType::Other("urn:ietf:params:acme:error:alreadyReplaced".into()),
        "alreadyReplaced",
        Some("d"),
    );
}

/// Fields a CA may leave out, or write as `null`: what the client then
/// has is empty, never a failure to read.
#[test]
fn fields_left_out_or_null() {
    // An order with nothing to authorize (pre-authorized names), and no
    // URLs yet.
    let order: Order = read(r#"{"status": "ready"}"#);
    assert!(order.authorizations.is_empty());
    assert_eq!((order.finalize, order.certificate), (None, None));
    assert!(order.error.is_none());
    let order: Order = read(r#"{"status": "pending", "authorizations": null, "error": null}"#);
    assert!(order.authorizations.is_empty() && order.error.is_none());
    // A challenge with no token (a type this client does not answer) and
    // no status.
    let authz: Authorization = read(
        r#"{"status": "pending", "challenges": [{"type": "dns-persist-01", "url": "https://ca/c"}]}"#,
    );
    assert_eq!(authz.challenges[0].token, None);
    assert_eq!(authz.challenges[0].status, None);
    let authz: Authorization = read(r#"{"status": "pending", "challenges": null}"#);
    assert!(authz.challenges.is_empty());
    // A problem with no type (RFC 7807's `about:blank`) or no detail.
    let p: Problem = read(r#"{"detail": "d"}"#);
    assert_eq!(p.kind, None);
    let p: Problem = read(r#"{"type": "urn:ietf:params:acme:error:badNonce"}"#);
    assert_eq!((p.kind, p.detail), (Some(ProblemType::BadNonce), None));
    // A directory with no meta, or a null one, and no renewal information.
    let d: DirectoryObject = read(r#"{"newNonce": "n", "newAccount": "a", "newOrder": "o"}"#);
    assert!(d.meta.is_none() && d.renewal_info.is_none());
    let d: DirectoryObject = read(r#"{"meta": null}"#);
    assert!(d.meta.is_none() && d.new_nonce.is_none());
    let d: DirectoryObject = read(r#"{"meta": {"profiles": null}}"#);
    assert!(d.meta.unwrap().profiles.is_none());
    // Renewal information without a window.
    let info: RenewalInfo = read(r#"{"explanationURL": "https://ca/ari"}"#);
    assert!(info.suggested_window.is_none());
}

/// What RFC 8555 requires and the client cannot do without, an order's
/// or an authorization's status, is a failure to read it, said as one of
/// shape (not of JSON).
#[test]
fn a_status_left_out_is_refused() {
    for e in [
        serde_json::from_str::<Order>(r#"{"authorizations": []}"#).unwrap_err(),
        serde_json::from_str::<Authorization>(r#"{"challenges": []}"#).unwrap_err(),
    ] {
        assert!(e.to_string().contains("missing field `status`"), "{e}");
        assert_eq!(e.classify(), serde_json::error::Category::Data);
    }
}
