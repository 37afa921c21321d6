//! The CA's objects as the client reads them: the directory, an order, an
//! authorization and its challenges (RFC 8555 §7.1), a problem (§6.7,
//! RFC 7807) and a renewal window (RFC 9773). Each holds only the fields
//! the client reads: any other is passed over, as RFC 8555 lets a CA add
//! fields. A status or a problem type the client does not know (a later
//! RFC's, a CA's own) reads as `Other` with the CA's word, which the
//! client handles as it handles any state it cannot go on from. What the
//! client has done with an object is its own state, never written into
//! the object.

use serde::de::{Deserializer, IgnoredAny};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::SystemTime;

/// An enum of the words a CA writes in one field, each with its spelling;
/// any other word is `Other`, as the CA wrote it.
macro_rules! words {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $word:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
        #[serde(from = "String")]
        pub(crate) enum $name {
            $($(#[$vdoc])* $variant,)+
            /// A word this client does not know: as the CA wrote it.
            Other(String),
        }

        impl From<String> for $name {
            fn from(word: String) -> $name {
                match word.as_str() {
                    $($word => $name::$variant,)+
                    _ => $name::Other(word),
                }
            }
        }

        impl $name {
            /// The word as the CA wrote it.
            pub(crate) fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $word,)+
                    $name::Other(word) => word,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

words! {
    /// An order's status (RFC 8555 §7.1.6).
    OrderStatus {
        /// Its authorizations are to be validated.
        Pending = "pending",
        /// Every authorization is valid: the CSR may be sent.
        Ready = "ready",
        /// The CA signs.
        Processing = "processing",
        /// Issued: the chain is at `certificate`.
        Valid = "valid",
        /// Abandoned by the CA: `error` says why.
        Invalid = "invalid",
    }
}

words! {
    /// An authorization's status (RFC 8555 §7.1.6).
    AuthorizationStatus {
        Pending = "pending",
        Valid = "valid",
        Invalid = "invalid",
        Deactivated = "deactivated",
        Expired = "expired",
        Revoked = "revoked",
    }
}

words! {
    /// A challenge's status (RFC 8555 §7.1.6).
    ChallengeStatus {
        /// Not answered yet: the client tells the CA to look.
        Pending = "pending",
        Processing = "processing",
        Valid = "valid",
        Invalid = "invalid",
    }
}

/// The namespace of ACME's problem types (RFC 8555 §6.7).
const PROBLEM_URN: &str = "urn:ietf:params:acme:error:";

words! {
    /// A problem's type: the ones the client acts on (RFC 8555 §6.7).
    ProblemType {
        /// The CA lost the account (a CA reset): registered again.
        AccountDoesNotExist = "urn:ietf:params:acme:error:accountDoesNotExist",
        /// The nonce was refused: the request is sent again with the
        /// nonce the refusal carries.
        BadNonce = "urn:ietf:params:acme:error:badNonce",
        /// Finalized too soon: the order is read again.
        OrderNotReady = "urn:ietf:params:acme:error:orderNotReady",
        /// A rate limit: its `Retry-After` is waited for, and an order
        /// refused for it is not placed again without `replaces`.
        RateLimited = "urn:ietf:params:acme:error:rateLimited",
    }
}

impl ProblemType {
    /// The type as a message says it: an ACME type without its namespace
    /// (`rateLimited`), any other URI whole.
    pub(crate) fn short(&self) -> &str {
        let word = self.as_str();
        word.strip_prefix(PROBLEM_URN).unwrap_or(word)
    }
}

/// A problem document (RFC 7807, RFC 8555 §6.7): an error answer's body,
/// and an order's or a challenge's `error`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Problem {
    /// RFC 7807 lets it be left out (then it is `about:blank`).
    #[serde(rename = "type")]
    pub(crate) kind: Option<ProblemType>,
    pub(crate) detail: Option<String>,
}

/// The directory (RFC 8555 §7.1.1, with RFC 9773's `renewalInfo`): the
/// URLs as the CA wrote them; one the client needs and the CA left out is
/// said when the session is made.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DirectoryObject {
    pub(super) new_nonce: Option<String>,
    pub(super) new_account: Option<String>,
    pub(super) new_order: Option<String>,
    pub(super) renewal_info: Option<String>,
    pub(super) meta: Option<Meta>,
}

/// What a directory says of its CA.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Meta {
    pub(super) terms_of_service: Option<String>,
    /// The profiles offered, by name (what each says is for people).
    pub(super) profiles: Option<BTreeMap<String, IgnoredAny>>,
    pub(super) external_account_required: Option<bool>,
}

/// An order (RFC 8555 §7.1.3).
#[derive(Debug, Deserialize)]
pub(super) struct Order {
    pub(super) status: OrderStatus,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) authorizations: Vec<String>,
    pub(super) finalize: Option<String>,
    pub(super) certificate: Option<String>,
    pub(super) error: Option<Problem>,
}

/// An authorization (RFC 8555 §7.1.4).
#[derive(Debug, Deserialize)]
pub(super) struct Authorization {
    pub(super) status: AuthorizationStatus,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) challenges: Vec<Challenge>,
}

/// A challenge (RFC 8555 §8): a way the CA offers to validate a name.
#[derive(Debug, Deserialize)]
pub(super) struct Challenge {
    /// `http-01`, `tls-alpn-01`, or one this client does not answer.
    #[serde(rename = "type")]
    pub(super) kind: String,
    pub(super) url: Option<String>,
    /// Every type this client answers has one; some others have none.
    pub(super) token: Option<String>,
    /// RFC 8555 requires it, though its own example (§7.5) leaves it out.
    pub(super) status: Option<ChallengeStatus>,
    pub(super) error: Option<Problem>,
}

/// A certificate's renewal information (RFC 9773 §4.2).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RenewalInfo {
    pub(super) suggested_window: Option<Window>,
}

/// The window in which the CA suggests renewing.
#[derive(Debug, Deserialize)]
pub(super) struct Window {
    #[serde(deserialize_with = "rfc3339")]
    pub(super) start: SystemTime,
    #[serde(deserialize_with = "rfc3339")]
    pub(super) end: SystemTime,
}

/// A list a CA may write as `null` (Go's empty slice, in Pebble): empty.
fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// An RFC 3339 time, as [`super::protocol::parse_rfc3339`] reads it.
fn rfc3339<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
    let text = String::deserialize(d)?;
    super::protocol::parse_rfc3339(&text)
        .ok_or_else(|| serde::de::Error::custom(format!("not an RFC 3339 time: {text:?}")))
}

#[cfg(test)]
mod tests;
