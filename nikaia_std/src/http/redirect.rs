//! HTTP → HTTPS: what a plain listener with `https-redirect` answers
//! (`spec/listeners.md`, "HTTP → HTTPS"). Every request but an ACME
//! HTTP-01 challenge is sent to the same host, path and query over
//! `https://`.

use super::request::Request;
use super::response::Response;
use std::net::IpAddr;

/// The one prefix a redirecting listener still routes: certbot's
/// `--webroot` (and every ACME client's HTTP-01) answers there.
pub const ACME_CHALLENGE: &str = "/.well-known/acme-challenge/";

/// What the server holds for an HTTP-01 validation (`spec/tls.md`,
/// "Challenges"): asked of the backend for a GET or HEAD of
/// [`ACME_CHALLENGE`]`TOKEN` on a plain listener, before anything else.
pub(crate) enum Http01 {
    /// The key authorization to answer with.
    Answer(bytes::Bytes),
    /// The host is a name the server's ACME manages and the token is not
    /// held: 404.
    NotHeld,
    /// Not the server's: the request goes on as any other (certbot's
    /// `--webroot` files, the redirect).
    NotOurs,
}

/// The answer to an HTTP-01 validation `req` asks for, if the server's
/// ACME decides it: `validation` looks the token up for the host.
pub(crate) fn http01(
    req: &Request,
    validation: impl FnOnce(Option<&str>, &str) -> Http01,
) -> Option<Response> {
    let token = req.path().strip_prefix(ACME_CHALLENGE)?;
    if token.is_empty() || token.contains('/') || !matches!(req.method(), "GET" | "HEAD") {
        return None;
    }
    match validation(req.header("host"), token) {
        Http01::Answer(key_authorization) => Some(
            Response::new(200)
                .header("Content-Type", "text/plain")
                .header("Cache-Control", "no-store")
                .body(key_authorization),
        ),
        Http01::NotHeld => Some(Response::status_page(404)),
        Http01::NotOurs => None,
    }
}

/// A listener's redirect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ToHttps {
    /// The HTTPS port; left out of the URL when it is 443.
    pub port: u16,
    /// The listener's own IP, for a request that names no host.
    pub ip: Option<IpAddr>,
}

impl ToHttps {
    /// The answer to `req`, or `None` when it is routed as usual (an ACME
    /// challenge, or `OPTIONS *`).
    pub(crate) fn answer(&self, req: &Request) -> Option<Response> {
        let target = req.target();
        let path = if target.starts_with('/') {
            target
        } else if target == "*" {
            return None;
        } else if let Some(i) = target.find("://") {
            // absolute-form, whatever its scheme's case: the path starts
            // at the first `/` after the authority (RFC 9112 §3.2.2).
            let rest = &target[i + 3..];
            rest.find('/').map_or("/", |i| &rest[i..])
        } else {
            // No other form reaches a handler; none is served here.
            return Some(Response::status_page(400));
        };
        if req.path().starts_with(ACME_CHALLENGE) {
            return None;
        }
        let host = match req.header("host") {
            Some(host) => match host_only(host.trim()) {
                Some(host) => host.to_owned(),
                None => return Some(Response::status_page(400)),
            },
            None => match self.ip {
                Some(IpAddr::V4(ip)) => ip.to_string(),
                Some(IpAddr::V6(ip)) => format!("[{ip}]"),
                None => return Some(Response::status_page(400)),
            },
        };
        let port = match self.port {
            443 => String::new(),
            port => format!(":{port}"),
        };
        let location = format!("https://{host}{port}{path}");
        let body = format!("Moved permanently to {location}\n");
        Some(Response::new(308).header("Location", &location).body(body))
    }
}

/// The host of a `Host` value without its port, if it is a name, an IPv4
/// address or a bracketed IPv6 address; `None` for anything else (which
/// could make the `Location` point elsewhere).
fn host_only(value: &str) -> Option<&str> {
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let end = rest.find(']')?;
        let inside = &rest[..end];
        if inside.is_empty()
            || !inside
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return None;
        }
        (&value[..end + 2], &rest[end + 1..])
    } else {
        match value.find(':') {
            Some(i) => (&value[..i], &value[i..]),
            None => (value, ""),
        }
    };
    let port_ok = port.is_empty()
        || port.strip_prefix(':').is_some_and(|p| {
            !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
        });
    let name_ok = host.starts_with('[')
        || (!host.is_empty()
            && host.len() <= 253
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'));
    (port_ok && name_ok).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::host_only;

    #[test]
    fn hosts() {
        for (value, host) in [
            ("example.com", "example.com"),
            ("example.com:8080", "example.com"),
            ("127.0.0.1:80", "127.0.0.1"),
            ("[::1]:8080", "[::1]"),
            ("[2001:db8::1]", "[2001:db8::1]"),
            ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ] {
            assert_eq!(host_only(value), Some(host), "{value}");
        }
        for bad in [
            "",
            "evil.com/x",
            "a@evil.com",
            "example.com:",
            "example.com:80x",
            "[::1",
            "[]",
            "[::1]x",
            "exa mple.com",
            "example.com\\evil",
            "[::1]:123456",
        ] {
            assert_eq!(host_only(bad), None, "{bad:?}");
        }
    }
}
