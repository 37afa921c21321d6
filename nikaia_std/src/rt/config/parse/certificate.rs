//! `[[certificate]]`: certificate pairs chosen by name (`spec/tls.md`).

use super::{Checker, Value};
use crate::rt::CertFiles;

impl Checker<'_> {
    /// `[[certificate]]`: `cert` and `key` (paths), `default` (at most one
    /// table says `true`).
    pub(super) fn certificates(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<CertFiles>> {
        const KNOWN: &str = "`cert`, `key` and `default`";
        let mut defaults = 0;
        self.each_rule(key, value, |this, item, fields| {
            let (mut cert, mut pem_key, mut default) = (None, None, false);
            let mut good = true;
            for (field, v) in fields {
                let name: &str = field.get_ref();
                good &= match name {
                    "cert" => this.path(key, v).map(|p| cert = Some(p)).is_some(),
                    "key" => this.path(key, v).map(|p| pem_key = Some(p)).is_some(),
                    "default" => match this.boolean(key, v) {
                        Some(true) if defaults > 0 => this
                            .bad(
                                key,
                                v,
                                "a second pair marked `default`; one pair at most is the default"
                                    .into(),
                            )
                            .unwrap_or(false),
                        Some(b) => {
                            defaults += usize::from(b);
                            default = b;
                            true
                        }
                        None => false,
                    },
                    other => this.unknown_field(key, field.span().start, other, KNOWN),
                };
            }
            let missing = match (&cert, &pem_key) {
                (None, _) => Some("`cert` (the PEM chain)"),
                (_, None) => Some("`key` (the PEM private key)"),
                _ => None,
            };
            if let (true, Some(field)) = (good, missing) {
                this.bad::<()>(key, item, format!("a certificate needs {field}"));
                good = false;
            }
            match (good, cert, pem_key) {
                (true, Some(cert), Some(pem_key)) => {
                    Some(CertFiles::new(cert, pem_key).default_pair(default))
                }
                _ => None,
            }
        })
    }
}
