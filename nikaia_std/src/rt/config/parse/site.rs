//! A site's keys: `[[headers]]`, `security-headers`, `[cors]`,
//! `trusted-proxies`, `[[auth]]` and `[[deny]]` (`spec/site.md`).

use super::tables::fields;
use super::{a, Checker, Value};
use crate::rt::config::site::{
    intern, reserved_header, AuthRule, Cors, DenyRule, HeaderRule, Net, Origins, SecurityHeaders,
    TrustedProxies,
};
use crate::rt::Users;
use crate::text::token::is_token;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;
use toml::de::DeValue;

impl Checker<'_> {
    /// A header name a rule may touch: a token, not reserved.
    fn rule_header_name(&mut self, key: &str, at: usize, name: &str) -> bool {
        let why = if !is_token(name) {
            format!("\"{name}\" is not a header name (letters, digits and !#$%&'*+-.^_`|~)")
        } else if name.eq_ignore_ascii_case("alt-svc") {
            format!(
                "`{name}` is the server's own header: it advertises HTTP/3 where this process \
                 serves it (`http3`, `alt-svc-max-age`); a rule may not set, add or remove it"
            )
        } else if reserved_header(name) {
            format!(
                "`{name}` is the server's own header (framing, validators, the connection's, or \
                 Date): a rule may not set, add or remove it"
            )
        } else {
            return true;
        };
        self.error(at, Some(key), why);
        false
    }

    /// `set`, `add`: a table of header names and values.
    fn header_table(
        &mut self,
        key: &str,
        field: &str,
        value: &Value<'_>,
    ) -> Option<Vec<(&'static str, bytes::Bytes)>> {
        let DeValue::Table(table) = value.get_ref() else {
            let found = a(value.get_ref());
            let message = format!(
                "`{field}`: expected a table of header names and values such as \
                 {{ X-Frame-Options = \"DENY\" }}, found {found}"
            );
            return self.bad(key, value, message);
        };
        let mut out: Vec<(&'static str, bytes::Bytes)> = Vec::new();
        let mut ok = true;
        for (name, v) in fields(table) {
            let text: &str = name.get_ref();
            if !self.rule_header_name(key, name.span().start, text) {
                ok = false;
                continue;
            }
            if out.iter().any(|(n, _)| n.eq_ignore_ascii_case(text)) {
                let message =
                    format!("`{field}` names `{text}` twice (names are not case-sensitive)");
                self.error(name.span().start, Some(key), message);
                ok = false;
                continue;
            }
            let header = match v.get_ref() {
                DeValue::String(s) => self.header_value(key, v, s),
                other => self.bad(
                    key,
                    v,
                    format!(
                        "`{field}`: expected a header value for `{text}`, found {}",
                        a(other)
                    ),
                ),
            };
            match header {
                Some(value) => out.push((intern(text), bytes::Bytes::from(value))),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// `[[headers]]`.
    pub(super) fn header_rules(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<HeaderRule>> {
        const KNOWN: &str = "`match`, `set`, `add`, `remove` and `always`";
        self.each_rule(key, value, |this, item, fields| {
            let mut rule = HeaderRule {
                patterns: Vec::new(),
                set: Vec::new(),
                add: Vec::new(),
                remove: Vec::new(),
                always: false,
            };
            let mut good = true;
            let mut matched = false;
            for (field, v) in fields {
                let name: &str = field.get_ref();
                good &= match name {
                    "match" => {
                        matched = true;
                        this.patterns(key, v).map(|p| rule.patterns = p).is_some()
                    }
                    "set" => this
                        .header_table(key, name, v)
                        .map(|s| rule.set = s)
                        .is_some(),
                    "add" => this
                        .header_table(key, name, v)
                        .map(|s| rule.add = s)
                        .is_some(),
                    "remove" => {
                        let want = "an array of header names such as [\"X-Powered-By\"]";
                        this.strings(key, name, v, want, |c, item, s| {
                            c.rule_header_name(key, item.span().start, s)
                                .then(|| s.to_owned())
                        })
                        .map(|r| rule.remove = r)
                        .is_some()
                    }
                    "always" => this.boolean(key, v).map(|b| rule.always = b).is_some(),
                    other => this.unknown_field(key, field.span().start, other, KNOWN),
                };
            }
            if !matched {
                this.bad::<()>(key, item, "a header rule needs `match`".into());
                good = false;
            } else if good && rule.set.is_empty() && rule.add.is_empty() && rule.remove.is_empty() {
                this.bad::<()>(
                    key,
                    item,
                    "a header rule needs `set`, `add` or `remove`".into(),
                );
                good = false;
            }
            good.then_some(rule)
        })
    }

    /// `security-headers`: `true`, `false`, or a table of its settings.
    pub(super) fn security_headers(
        &mut self,
        key: &str,
        value: &Value<'_>,
    ) -> Option<Option<SecurityHeaders>> {
        const KNOWN: &str = "`hsts-max-age` and `hsts-subdomains`";
        let table = match value.get_ref() {
            DeValue::Boolean(on) => return Some(on.then(SecurityHeaders::default)),
            DeValue::Table(table) => table,
            other => {
                let message = format!(
                    "expected true, false, or a table with {KNOWN}, found {}",
                    a(other)
                );
                return self.bad(key, value, message);
            }
        };
        let mut preset = SecurityHeaders::default();
        let mut ok = true;
        for (field, v) in fields(table) {
            let name: &str = field.get_ref();
            ok &= match name {
                "hsts-max-age" => {
                    let ten_years = Duration::from_secs(10 * 366 * 24 * 3600);
                    self.duration(key, v, Duration::ZERO..=ten_years)
                        .map(|d| preset.hsts_max_age = d)
                        .is_some()
                }
                "hsts-subdomains" => self
                    .boolean(key, v)
                    .map(|b| preset.hsts_subdomains = b)
                    .is_some(),
                other => self.unknown_field(key, field.span().start, other, KNOWN),
            };
        }
        ok.then_some(Some(preset))
    }

    /// `[cors]`.
    pub(super) fn cors(&mut self, key: &str, value: &Value<'_>) -> Option<Cors> {
        const KNOWN: &str =
            "`origins`, `methods`, `headers`, `expose`, `credentials` and `max-age`";
        let table = self.table(key, value, KNOWN)?;
        let mut cors = Cors::default();
        let mut ok = true;
        let mut origins_at = None;
        for (field, v) in fields(table) {
            let name: &str = field.get_ref();
            ok &= match name {
                "origins" => {
                    origins_at = Some(v);
                    self.origins(key, v).map(|o| cors.origins = o).is_some()
                }
                "methods" => {
                    let want = "an array of methods such as [\"GET\", \"HEAD\"]";
                    self.strings(key, name, v, want, |c, item, s| {
                        let token = !s.is_empty() && s.bytes().all(|b| b.is_ascii_uppercase());
                        if token {
                            Some(s.to_owned())
                        } else {
                            c.bad(key, item, format!("`methods`: \"{s}\" is not a method (upper case, as sent: \"GET\")"))
                        }
                    })
                    .map(|m| cors.methods = m)
                    .is_some()
                }
                "headers" | "expose" => {
                    let want = "an array of header names such as [\"Range\"]";
                    let list = self.strings(key, name, v, want, |c, item, s| {
                        if is_token(s) {
                            Some(s.to_ascii_lowercase())
                        } else {
                            c.bad(key, item, format!("`{name}`: \"{s}\" is not a header name"))
                        }
                    });
                    match (name, list) {
                        ("headers", Some(l)) => {
                            cors.headers = l;
                            true
                        }
                        (_, Some(l)) => {
                            cors.expose = l;
                            true
                        }
                        _ => false,
                    }
                }
                "credentials" => self.boolean(key, v).map(|b| cors.credentials = b).is_some(),
                "max-age" => self
                    .duration(key, v, Duration::ZERO..=Duration::from_secs(86400))
                    .map(|d| cors.max_age = d)
                    .is_some(),
                other => self.unknown_field(key, field.span().start, other, KNOWN),
            };
        }
        if !ok {
            return None;
        }
        match (&cors.origins, origins_at) {
            (_, None) => self.bad(key, value, "`[cors]` needs `origins`".into()),
            (Origins::Any, Some(at)) if cors.credentials => self.bad(
                key,
                at,
                "`origins = \"*\"` cannot go with `credentials = true`: the Fetch standard \
                 forbids the pair, and reflecting every origin instead would hand any site the \
                 visitor's credentials; list the origins"
                    .into(),
            ),
            _ => Some(cors),
        }
    }

    fn origins(&mut self, key: &str, value: &Value<'_>) -> Option<Origins> {
        const WANT: &str = "\"*\" or an array of origins such as [\"https://app.example\"]";
        match value.get_ref() {
            DeValue::String(s) if s == "*" => Some(Origins::Any),
            DeValue::Array(items) if items.is_empty() => self.bad(
                key,
                value,
                format!("`origins`: expected {WANT}; the list is empty"),
            ),
            DeValue::Array(_) => self
                .strings(
                    key,
                    "origins",
                    value,
                    WANT,
                    |c, item, s| match origin_problem(s) {
                        None => Some(s.to_owned()),
                        Some(why) => c.bad(key, item, format!("`origins`: \"{s}\" {why}")),
                    },
                )
                .map(Origins::List),
            other => self.bad(
                key,
                value,
                format!("`origins`: expected {WANT}, found {}", a(other)),
            ),
        }
    }

    /// `trusted-proxies`: addresses, CIDR blocks and `"unix"`.
    pub(super) fn trusted_proxies(
        &mut self,
        key: &str,
        value: &Value<'_>,
    ) -> Option<TrustedProxies> {
        const WANT: &str =
            "an array of addresses, CIDR blocks and \"unix\", such as [\"10.0.0.0/8\", \"::1\"]";
        let mut out = TrustedProxies::default();
        let mut unix = false;
        let nets = self.strings(key, "trusted-proxies", value, WANT, |c, item, s| {
            if s == "unix" {
                unix = true;
                return Some(String::new());
            }
            match parse_net(s) {
                Ok(_) => Some(s.to_owned()),
                Err(why) => c.bad(key, item, format!("\"{s}\": {why}")),
            }
        })?;
        out.unix = unix;
        out.nets = nets
            .iter()
            .filter(|s| !s.is_empty())
            .filter_map(|s| parse_net(s).ok())
            .collect();
        Some(out)
    }

    /// `[[auth]]`.
    pub(super) fn auth_rules(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<AuthRule>> {
        const KNOWN: &str = "`match`, `htpasswd`, `realm`, `plain-http` and `writes-only`";
        self.each_rule(key, value, |this, item, fields| {
            let mut patterns = None;
            let mut file = None;
            let mut realm = "restricted".to_string();
            let mut plain_http = false;
            let mut writes_only = false;
            let mut good = true;
            for (field, v) in fields {
                let name: &str = field.get_ref();
                good &= match name {
                    "match" => {
                        patterns = this.patterns(key, v);
                        patterns.is_some()
                    }
                    "htpasswd" => {
                        file = this.path(key, v).and_then(|p| this.htpasswd(key, v, p));
                        file.is_some()
                    }
                    "realm" => match this.string(key, v, "a realm such as \"staging\"") {
                        Some(r) if !r.is_empty() && r.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\') => {
                            realm = r.to_owned();
                            true
                        }
                        Some(r) => this.bad(key, v, format!("`realm`: \"{r}\" must be printable ASCII without `\"` or `\\`, not empty")).unwrap_or(false),
                        None => false,
                    },
                    "plain-http" => this.boolean(key, v).map(|b| plain_http = b).is_some(),
                    "writes-only" => this.boolean(key, v).map(|b| writes_only = b).is_some(),
                    other => this.unknown_field(key, field.span().start, other, KNOWN),
                };
            }
            let missing = match (&patterns, &file) {
                (None, _) if good => Some("`match`"),
                (_, None) if good => Some("`htpasswd`"),
                _ => None,
            };
            if let Some(field) = missing {
                this.bad::<()>(key, item, format!("an auth rule needs {field}"));
                good = false;
            }
            let (true, Some(patterns), Some((htpasswd, users, generation))) = (good, patterns, file)
            else {
                return None;
            };
            Some(AuthRule {
                patterns,
                htpasswd,
                generation,
                users: Arc::new(users),
                realm,
                plain_http,
                writes_only,
            })
        })
    }

    /// Reads and checks an htpasswd file; its problems are reported at
    /// their place in it.
    fn htpasswd(
        &mut self,
        key: &str,
        value: &Value<'_>,
        path: std::path::PathBuf,
    ) -> Option<(std::path::PathBuf, Users, u64)> {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                let message = format!("`htpasswd`: cannot read {}: {e}", path.display());
                return self.bad(key, value, message);
            }
        };
        // The same file read again is the same users: credentials verified
        // against it still count after a reload.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (&path, &text).hash(&mut hasher);
        match Users::parse(&text) {
            Ok(users) if users.cost() > MAX_COST => {
                let message = format!(
                    "`htpasswd`: {} has entries of bcrypt cost {}; above {MAX_COST} one check \
                     takes seconds of CPU, so a few guesses at unknown users (checked at the \
                     file's highest cost) would hold every verifier thread; write them with \
                     `htpasswd -B -C 12` or less",
                    path.display(),
                    users.cost()
                );
                self.bad(key, value, message)
            }
            Ok(users) => Some((path, users, hasher.finish())),
            Err(problems) => {
                for (line, column, message) in problems {
                    self.errors.push(crate::rt::ConfigError {
                        file: path.clone(),
                        line,
                        column,
                        key: None,
                        message,
                    });
                }
                None
            }
        }
    }

    /// `[[deny]]`.
    pub(super) fn deny_rules(&mut self, key: &str, value: &Value<'_>) -> Option<Vec<DenyRule>> {
        const KNOWN: &str = "`match` and `status`";
        self.each_rule(key, value, |this, item, fields| {
            let mut rule = DenyRule {
                patterns: Vec::new(),
                status: 404,
            };
            let mut good = true;
            let mut matched = false;
            for (field, v) in fields {
                let name: &str = field.get_ref();
                good &= match name {
                    "match" => {
                        matched = true;
                        this.patterns(key, v).map(|p| rule.patterns = p).is_some()
                    }
                    "status" => match this.integer(key, v, 403..=404) {
                        Some(status) => {
                            rule.status = status as u16;
                            true
                        }
                        None => false,
                    },
                    other => this.unknown_field(key, field.span().start, other, KNOWN),
                };
            }
            if !matched && good {
                this.bad::<()>(key, item, "a deny rule needs `match`".into());
                good = false;
            }
            good.then_some(rule)
        })
    }
}

/// The highest bcrypt cost an htpasswd entry may have: 2^14 rounds, about
/// 1.6 s of one core here (`spec/site.md`).
const MAX_COST: u32 = 14;

/// Why `s` is not an origin as a browser sends it, if it is not.
fn origin_problem(s: &str) -> Option<&'static str> {
    let Some((scheme, rest)) = s.split_once("://") else {
        return Some("is not an origin (scheme://host[:port])");
    };
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+-.".contains(&b))
    {
        return Some("has a scheme that is not lowercase letters");
    }
    if rest.is_empty() {
        return Some("has no host");
    }
    if rest.contains(['/', '?', '#']) {
        return Some("has a path; an origin is scheme://host[:port], with no trailing `/`");
    }
    if rest.bytes().any(|b| b.is_ascii_uppercase()) {
        return Some("has capitals; browsers send the host in lowercase");
    }
    if rest.bytes().any(|b| !b.is_ascii_graphic()) || rest.contains('*') {
        return Some("has characters an origin does not (spaces, `*`)");
    }
    None
}

/// `10.0.0.0/8`, `192.0.2.7`, `fd00::/8`, `::1`.
pub(crate) fn parse_net(s: &str) -> Result<Net, String> {
    let (addr, prefix) = match s.split_once('/') {
        Some((addr, bits)) => (addr, Some(bits)),
        None => (s, None),
    };
    let addr: std::net::IpAddr = addr
        .parse()
        .map_err(|_| "not an IP address or CIDR block (such as \"10.0.0.0/8\")".to_string())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix {
        None => max,
        Some(bits) => match bits.parse::<u8>() {
            Ok(n) if n <= max && !bits.starts_with('+') => n,
            _ => return Err(format!("the prefix length must be 0 to {max}")),
        },
    };
    let net = Net { addr, prefix };
    // Bits set past the prefix are a typing mistake more often than not.
    if !net.contains(addr) || !same_block(addr, prefix) {
        return Err(format!(
            "has bits set past its /{prefix} prefix; write the block's first address"
        ));
    }
    Ok(net)
}

fn same_block(addr: std::net::IpAddr, prefix: u8) -> bool {
    let bytes: Vec<u8> = match addr {
        std::net::IpAddr::V4(a) => a.octets().to_vec(),
        std::net::IpAddr::V6(a) => a.octets().to_vec(),
    };
    bytes.iter().enumerate().all(|(i, b)| {
        let start = (i * 8) as u32;
        let keep = (prefix as u32).saturating_sub(start).min(8);
        let mask = if keep == 0 { 0 } else { 0xffu8 << (8 - keep) };
        b & !mask == 0
    })
}
