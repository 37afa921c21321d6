//! `[acme]`: certificates obtained and renewed by the server itself
//! (`spec/tls.md`, "Automatic HTTPS").

use super::tables::fields;
use super::{Checker, Value};
use crate::rt::config::acme::{dns_name_problem, Acme, AcmeNames, ChallengeKind, Eab, KeyType};
use toml::de::DeValue;

const KNOWN: &str = "`domains`, `contact`, `directory`, `agree-to-terms`, `ca-roots`, \
                     `eab-kid`, `eab-hmac-key`, `storage`, `profile`, `key-type` and `challenges`";

impl Checker<'_> {
    /// `[acme]`. `domains` and `agree-to-terms = true` are required
    /// unless the names come from the command line ([`AcmeNames`]).
    pub(super) fn acme(&mut self, key: &str, value: &Value<'_>) -> Option<Acme> {
        let table = self.table(key, value, KNOWN)?;
        let mut acme = Acme::new(Vec::new());
        let mut ok = true;
        let (mut domains_at, mut kid, mut hmac) = (None, None, None);
        for (field, v) in fields(table) {
            let name: &str = field.get_ref();
            ok &= match name {
                "domains" => {
                    domains_at = Some(v);
                    self.domains(key, v).map(|d| acme.domains = d).is_some()
                }
                "contact" => self.contact(key, v).map(|c| acme.contact = c).is_some(),
                "directory" => match self.string(key, v, "an https:// URL") {
                    Some(url) if url.starts_with("https://") && url.len() > "https://".len() => {
                        acme.directory = url.to_owned();
                        true
                    }
                    Some(url) => self
                        .bad(key, v, format!("`directory`: \"{url}\" is not an https:// URL (a CA's directory is served over HTTPS)"))
                        .unwrap_or(false),
                    None => false,
                },
                "agree-to-terms" => self.boolean(key, v).map(|b| acme.agree_to_terms = b).is_some(),
                "ca-roots" => self.path(key, v).map(|p| acme.ca_roots = Some(p)).is_some(),
                "eab-kid" => match self.string(key, v, "the key identifier the CA gave") {
                    Some(k) if !k.is_empty() => {
                        kid = Some((k.to_owned(), v));
                        true
                    }
                    Some(_) => self.bad(key, v, "`eab-kid`: empty".into()).unwrap_or(false),
                    None => false,
                },
                "eab-hmac-key" => self.path(key, v).map(|p| hmac = Some((p, v))).is_some(),
                "storage" => self.path(key, v).map(|p| acme.storage = p).is_some(),
                "profile" => match self.string(key, v, "a profile name such as \"tlsserver\"") {
                    Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_graphic()) => {
                        acme.profile = Some(p.to_owned());
                        true
                    }
                    Some(p) => self
                        .bad(key, v, format!("`profile`: \"{p}\" is not a profile name"))
                        .unwrap_or(false),
                    None => false,
                },
                "key-type" => {
                    let want = "\"ecdsa-p256\" or \"ecdsa-p384\"";
                    match self.string(key, v, want) {
                        Some("ecdsa-p256") => {
                            acme.key_type = KeyType::EcdsaP256;
                            true
                        }
                        Some("ecdsa-p384") => {
                            acme.key_type = KeyType::EcdsaP384;
                            true
                        }
                        Some(other) => self
                            .bad(key, v, format!("`key-type`: expected {want}, found \"{other}\""))
                            .unwrap_or(false),
                        None => false,
                    }
                }
                "challenges" => self.challenges(key, v).map(|c| acme.challenges = c).is_some(),
                other => self.unknown_field(key, field.span().start, other, KNOWN),
            };
        }
        match (kid, hmac) {
            (Some((kid, _)), Some((file, _))) => acme.eab = Some(Eab::new(kid, file)),
            (Some((_, at)), None) => {
                ok = false;
                self.bad::<()>(
                    key,
                    at,
                    "`eab-kid` needs `eab-hmac-key`, the file holding the key".into(),
                );
            }
            (None, Some((_, at))) => {
                ok = false;
                self.bad::<()>(key, at, "`eab-hmac-key` needs `eab-kid`".into());
            }
            (None, None) => {}
        }
        if ok && domains_at.is_none() && self.names == AcmeNames::File {
            ok = false;
            self.bad::<()>(
                key,
                value,
                "`[acme]` needs `domains`, the names to obtain certificates for \
                 (or `nikaia serve --domain NAME`, once per name)"
                    .into(),
            );
        }
        // Typing `--domain` is agreeing to the terms.
        let terms_needed = match self.names {
            AcmeNames::File => true,
            AcmeNames::CommandLine => false,
            AcmeNames::FileOrCommandLine => domains_at.is_some(),
        };
        if ok && terms_needed && !acme.agree_to_terms {
            ok = false;
            let what = crate::rt::config::acme::TERMS_NOT_AGREED;
            self.bad::<()>(key, value, what.into());
        }
        ok.then_some(acme)
    }

    /// `domains`: DNS names, at least one, each once.
    fn domains(&mut self, key: &str, v: &Value<'_>) -> Option<Vec<String>> {
        let want = "an array of DNS names such as [\"example.org\", \"www.example.org\"]";
        let mut seen: Vec<String> = Vec::new();
        let names = self.strings(key, "domains", v, want, |c, item, s| {
            let name = s.strip_suffix('.').unwrap_or(s).to_ascii_lowercase();
            if let Some(why) = dns_name_problem(&name) {
                return c.bad(key, item, format!("`domains`: \"{s}\": {why}"));
            }
            if seen.contains(&name) {
                return c.bad(key, item, format!("`domains`: \"{s}\" is named twice"));
            }
            seen.push(name.clone());
            Some(name)
        })?;
        if names.is_empty() {
            return self.bad(
                key,
                v,
                format!("`domains`: expected {want}, found an empty list"),
            );
        }
        Some(names)
    }

    /// `contact`: an address or a list of them, `mailto:` added where it
    /// is missing.
    fn contact(&mut self, key: &str, v: &Value<'_>) -> Option<Vec<String>> {
        let want = "an e-mail address such as \"ops@example.org\", or an array of them";
        let check = |c: &mut Self, item: &Value<'_>, s: &str| {
            let address = s.strip_prefix("mailto:").unwrap_or(s);
            let good = address.split_once('@').is_some_and(|(user, host)| {
                !user.is_empty() && host.contains('.') && !address.contains([' ', ',', '<', '>'])
            });
            match good {
                true => Some(format!("mailto:{address}")),
                false => c.bad(
                    key,
                    item,
                    format!("`contact`: \"{s}\" is not an e-mail address"),
                ),
            }
        };
        match v.get_ref() {
            DeValue::String(s) => check(self, v, s).map(|c| vec![c]),
            _ => self.strings(key, "contact", v, want, check),
        }
    }

    /// `challenges`: `"http-01"`, `"tls-alpn-01"`, each at most once, at
    /// least one.
    fn challenges(&mut self, key: &str, v: &Value<'_>) -> Option<Vec<ChallengeKind>> {
        let want = "an array of \"http-01\" and \"tls-alpn-01\"";
        let mut seen = Vec::new();
        let names = self.strings(key, "challenges", v, want, |c, item, s| {
            let kind = match s {
                "http-01" => ChallengeKind::Http01,
                "tls-alpn-01" => ChallengeKind::TlsAlpn01,
                "dns-01" => {
                    return c.bad(
                        key,
                        item,
                        "`challenges`: \"dns-01\" is not offered (it needs the DNS zone's API)"
                            .into(),
                    )
                }
                other => {
                    return c.bad(
                        key,
                        item,
                        format!("`challenges`: expected {want}, found \"{other}\""),
                    )
                }
            };
            if seen.contains(&kind) {
                return c.bad(key, item, format!("`challenges`: \"{s}\" is named twice"));
            }
            seen.push(kind);
            Some(s.to_owned())
        })?;
        if names.is_empty() {
            return self.bad(
                key,
                v,
                format!("`challenges`: expected {want}, found an empty list"),
            );
        }
        Some(seen)
    }
}
