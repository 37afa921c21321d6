//! `listen`: one entry or an array of them, each an address string or a
//! table (`spec/listeners.md`, "Listeners").

use super::{a, Checker, Value};
use crate::rt::config::listen::{valid_fd_name, HttpsRedirect, Listen, ListenAddr};
use toml::de::DeValue;

const WANT: &str = "an address such as \"127.0.0.1:8080\", \"[::1]:8080\" or \
                    \"unix:/run/site.sock\", a table with `address`, or an array of them";
const ENTRY_KEYS: &str = "`address`, `tls`, `https-redirect`, `mode`, `name` and `proxy-protocol`";

impl Checker<'_> {
    /// `pair`: the file names a certificate (entries without
    /// `tls` speak TLS then).
    pub(super) fn listen(
        &mut self,
        key: &str,
        value: &Value<'_>,
        pair: bool,
    ) -> Option<Vec<Listen>> {
        let items: Vec<&Value<'_>> = match value.get_ref() {
            DeValue::Array(items) if items.is_empty() => {
                return self.bad(
                    key,
                    value,
                    format!("expected {WANT}; an empty list listens nowhere"),
                );
            }
            DeValue::Array(items) => items.iter().collect(),
            _ => vec![value],
        };
        let mut entries: Vec<Listen> = Vec::new();
        let mut ok = true;
        let mut redirects = Vec::new();
        for item in items {
            match self.listen_entry(key, item, pair) {
                // Port 0 asks for any free port: two such entries are two.
                Some(entry)
                    if entries.iter().any(|e| e.address == entry.address)
                        && !matches!(entry.address, ListenAddr::Tcp(a) if a.port() == 0) =>
                {
                    let message =
                        format!("{} is listed twice; list each address once", entry.address);
                    self.bad::<()>(key, item, message);
                    ok = false;
                }
                Some(entry) => {
                    if entry.https_redirect == Some(HttpsRedirect::TlsListener) {
                        redirects.push(item);
                    }
                    entries.push(entry);
                }
                None => ok = false,
            }
        }
        let tls_port = entries
            .iter()
            .any(|e| e.tls.unwrap_or(pair) && matches!(e.address, ListenAddr::Tcp(_)));
        if !tls_port {
            for item in redirects {
                let message = "`https-redirect = true` redirects to the port of a TCP listener \
                               that speaks TLS, and the list has none; name the port instead";
                self.bad::<()>(key, item, message.into());
                ok = false;
            }
        }
        ok.then_some(entries)
    }

    fn listen_entry(&mut self, key: &str, item: &Value<'_>, pair: bool) -> Option<Listen> {
        let table = match item.get_ref() {
            DeValue::String(text) => return self.listen_address(key, item, text).map(Listen::at),
            DeValue::Table(table) if table.is_empty() => {
                return self.bad(key, item, "a listener table needs `address`".into());
            }
            DeValue::Table(table) => table,
            other => return self.bad(key, item, format!("expected {WANT}, found {}", a(other))),
        };
        let mut fields: Vec<_> = table.iter().collect();
        fields.sort_by_key(|(k, _)| k.span().start);
        let mut address = None;
        let mut entry = Listen::at(ListenAddr::Tcp(([0, 0, 0, 0], 0).into()));
        let mut mode_at = None;
        let mut ok = true;
        for (field, value) in &fields {
            let parsed = match &**field.get_ref() {
                "address" => match value.get_ref() {
                    DeValue::String(text) => {
                        address = self.listen_address(key, value, text);
                        address.is_some()
                    }
                    other => {
                        let found = a(other);
                        self.bad::<()>(
                            key,
                            value,
                            format!("`address`: expected {WANT}, found {found}"),
                        );
                        false
                    }
                },
                "tls" => match self.boolean(key, value) {
                    Some(tls) => {
                        entry.tls = Some(tls);
                        true
                    }
                    None => false,
                },
                "https-redirect" => match value.get_ref() {
                    DeValue::Boolean(true) => {
                        entry.https_redirect = Some(HttpsRedirect::TlsListener);
                        true
                    }
                    DeValue::Boolean(false) => true,
                    DeValue::Integer(_) => match self.integer(key, value, 1..=65535) {
                        Some(port) => {
                            entry.https_redirect = Some(HttpsRedirect::Port(port as u16));
                            true
                        }
                        None => false,
                    },
                    other => {
                        let found = a(other);
                        let message = format!(
                            "`https-redirect`: expected true (the TLS listener's port) or a port, found {found}"
                        );
                        self.bad::<()>(key, value, message);
                        false
                    }
                },
                "proxy-protocol" => match self.boolean(key, value) {
                    Some(on) => {
                        entry.proxy_protocol = on;
                        true
                    }
                    None => false,
                },
                "mode" => {
                    mode_at = Some(*value);
                    match self.unix_mode(key, value) {
                        Some(mode) => {
                            entry.mode = mode;
                            true
                        }
                        None => false,
                    }
                }
                "name" => match value.get_ref() {
                    DeValue::String(name) if valid_fd_name(name) => {
                        entry.name = Some(name.to_string());
                        true
                    }
                    _ => {
                        let message = "`name`: expected 1 to 255 printable ASCII characters \
                                       without `:` (a LISTEN_FDNAMES name), other than \
                                       `nikaia`, `nikaia-stats` and `unknown`, which are taken";
                        self.bad::<()>(key, value, message.into());
                        false
                    }
                },
                other => {
                    let message = format!(
                        "unknown field `{other}` in a listener; the fields are {ENTRY_KEYS}"
                    );
                    self.error(field.span().start, Some(key), message);
                    false
                }
            };
            ok &= parsed;
        }
        if !ok {
            return None;
        }
        let Some(address) = address else {
            return self.bad(key, item, "a listener table needs `address`".into());
        };
        entry.address = address;
        let unix = matches!(entry.address, ListenAddr::Unix(_));
        if let (Some(at), false) = (mode_at, unix) {
            return self.bad(
                key,
                at,
                "`mode` is for a Unix listener (`unix:/path`)".into(),
            );
        }
        if entry.tls.unwrap_or(pair) && entry.https_redirect.is_some() {
            let why = match entry.tls {
                Some(true) => "this one has `tls = true`",
                _ => "this one speaks TLS, since the file names a certificate; add `tls = false`",
            };
            return self.bad(
                key,
                item,
                format!("`https-redirect` is for a plain listener; {why}"),
            );
        }
        if entry.tls == Some(true) && !pair {
            return self.bad(
                key,
                item,
                "`tls = true` needs a certificate: `tls-cert` and `tls-key`, or a `[[certificate]]`"
                    .into(),
            );
        }
        Some(entry)
    }

    fn listen_address(&mut self, key: &str, value: &Value<'_>, text: &str) -> Option<ListenAddr> {
        if let Some(path) = text.strip_prefix("unix:") {
            if path.is_empty() || path.ends_with('/') {
                return self.bad(
                    key,
                    value,
                    format!("\"{text}\": expected a socket path after `unix:`"),
                );
            }
            let path = self.base.join(path);
            // sockaddr_un holds 108 bytes with the terminating NUL.
            if path.as_os_str().len() > 107 {
                return self.bad(
                    key,
                    value,
                    format!(
                        "\"{text}\": a Unix socket path is at most 107 bytes once made absolute"
                    ),
                );
            }
            return Some(ListenAddr::Unix(path));
        }
        match text.parse() {
            Ok(addr) => Some(ListenAddr::Tcp(addr)),
            Err(_) => self.bad(
                key,
                value,
                format!(
                    "\"{text}\" is not a listening address; expected {WANT} \
                     (a numeric IP address and a port; host names are not looked up)"
                ),
            ),
        }
    }

    fn unix_mode(&mut self, key: &str, value: &Value<'_>) -> Option<u32> {
        const WANT: &str = "an octal string of permission bits such as \"0660\"";
        let text = self.string(key, value, WANT)?;
        match u32::from_str_radix(text, 8) {
            Ok(mode) if mode <= 0o777 && !text.is_empty() => Some(mode),
            _ => self.bad(
                key,
                value,
                format!("`mode`: expected {WANT}, found \"{text}\""),
            ),
        }
    }
}
