//! What an ACME request is signed with (RFC 8555 §6.2, RFC 7515): the
//! account's ECDSA P-256 key, its JWK and thumbprint (RFC 7638), the
//! flattened JWS of a request, and an external account binding (HS256).

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

/// The account key.
pub(super) struct AccountKey {
    pair: EcdsaKeyPair,
    /// The key as PKCS#8 DER, to store.
    pkcs8: Vec<u8>,
}

impl AccountKey {
    /// A new P-256 key.
    pub(super) fn generate() -> Result<AccountKey, String> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "cannot generate a P-256 key".to_owned())?;
        AccountKey::from_pkcs8(doc.as_ref())
    }

    /// The key stored as PKCS#8 DER.
    pub(super) fn from_pkcs8(der: &[u8]) -> Result<AccountKey, String> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
            .map_err(|e| format!("not a P-256 PKCS#8 key: {e}"))?;
        Ok(AccountKey {
            pair,
            pkcs8: der.to_vec(),
        })
    }

    pub(super) fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The public key as a JWK, its members in the order RFC 7638 hashes
    /// them.
    pub(super) fn jwk(&self) -> Value {
        // An uncompressed point: 0x04, x, y.
        let point = self.pair.public_key().as_ref();
        json!({
            "crv": "P-256",
            "kty": "EC",
            "x": b64(&point[1..33]),
            "y": b64(&point[33..65]),
        })
    }

    /// The JWK thumbprint (RFC 7638), base64url: what key authorizations
    /// end with.
    pub(super) fn thumbprint(&self) -> String {
        // The canonical form: the required members, sorted, no spaces
        // (written out, not left to a JSON map's order).
        let point = self.pair.public_key().as_ref();
        let canonical = format!(
            "{{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"{}\",\"y\":\"{}\"}}",
            b64(&point[1..33]),
            b64(&point[33..65])
        );
        b64(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, canonical.as_bytes()).as_ref())
    }

    /// The key authorization of a challenge's token (RFC 8555 §8.1).
    pub(super) fn key_authorization(&self, token: &str) -> String {
        format!("{token}.{}", self.thumbprint())
    }

    /// The flattened JWS of a request to `url`: signed by `kid` (the
    /// account's URL) or, before there is one, with the JWK; `payload`
    /// `None` is a POST-as-GET (an empty payload).
    pub(super) fn sign(
        &self,
        url: &str,
        nonce: &str,
        kid: Option<&str>,
        payload: Option<&Value>,
    ) -> Result<Vec<u8>, String> {
        let mut protected = json!({"alg": "ES256", "nonce": nonce, "url": url});
        match kid {
            Some(kid) => protected["kid"] = json!(kid),
            None => protected["jwk"] = self.jwk(),
        }
        let protected = b64(protected.to_string().as_bytes());
        let payload = payload.map_or_else(String::new, |p| b64(p.to_string().as_bytes()));
        let signing_input = format!("{protected}.{payload}");
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .map_err(|_| "cannot sign the request".to_owned())?;
        let body = json!({
            "protected": protected,
            "payload": payload,
            "signature": b64(signature.as_ref()),
        });
        Ok(body.to_string().into_bytes())
    }

    /// The `externalAccountBinding` of a newAccount request to `url`
    /// (RFC 8555 §7.3.4): this account's JWK signed with the CA's HMAC key.
    pub(super) fn external_binding(&self, url: &str, kid: &str, hmac_key: &[u8]) -> Value {
        let protected = b64(json!({"alg": "HS256", "kid": kid, "url": url})
            .to_string()
            .as_bytes());
        let payload = b64(self.jwk().to_string().as_bytes());
        let key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, hmac_key);
        let tag = aws_lc_rs::hmac::sign(&key, format!("{protected}.{payload}").as_bytes());
        json!({"protected": protected, "payload": payload, "signature": b64(tag.as_ref())})
    }
}

pub(super) use crate::text::base64::{decode as b64_decode, url as b64};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_against_the_jwk() {
        let key = AccountKey::generate().unwrap();
        let body = key
            .sign(
                "https://ca/x",
                "nonce",
                Some("https://ca/acct/1"),
                Some(&json!({"a": 1})),
            )
            .unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        let protected = body["protected"].as_str().unwrap();
        let header: Value = serde_json::from_slice(&b64_decode(protected).unwrap()).unwrap();
        assert_eq!(header["kid"], "https://ca/acct/1");
        assert_eq!(header["nonce"], "nonce");
        let input = format!("{protected}.{}", body["payload"].as_str().unwrap());
        let sig = b64_decode(body["signature"].as_str().unwrap()).unwrap();
        assert_eq!(sig.len(), 64);
        let public = aws_lc_rs::signature::UnparsedPublicKey::new(
            &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED,
            key.pair.public_key().as_ref(),
        );
        public.verify(input.as_bytes(), &sig).unwrap();
        // The thumbprint is the hash of the canonical JWK (RFC 7638 §3).
        let jwk = key.jwk();
        let canonical = format!(
            "{{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"{}\",\"y\":\"{}\"}}",
            jwk["x"].as_str().unwrap(),
            jwk["y"].as_str().unwrap()
        );
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, canonical.as_bytes());
        assert_eq!(key.thumbprint(), b64(digest.as_ref()));
        // Stored and read back, the same key.
        let again = AccountKey::from_pkcs8(key.pkcs8()).unwrap();
        assert_eq!(again.thumbprint(), key.thumbprint());
    }
}
