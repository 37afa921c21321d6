//! A site's rules in the runtime file: header rules, the security-headers
//! preset, CORS, trusted proxies, Basic authentication and deny lists
//! (`spec/site.md`). The decisions they drive are `http/site/`.

use super::Glob;
use super::Users;
use bytes::Bytes;
use std::collections::HashSet;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The header names no rule may set, add or remove: framing, validators
/// and negotiation, the connection's own (HTTP/2 forbids them), `Alt-Svc`
/// (which the server sends where it serves HTTP/3), and `Date`.
pub const RESERVED_HEADERS: [&str; 14] = [
    "content-length",
    "content-range",
    "transfer-encoding",
    "content-encoding",
    "etag",
    "last-modified",
    "vary",
    "connection",
    "keep-alive",
    "proxy-connection",
    "upgrade",
    "te",
    "trailer",
    "alt-svc",
];

/// Whether `name` is one of [`RESERVED_HEADERS`] or `Date`.
pub fn reserved_header(name: &str) -> bool {
    name.eq_ignore_ascii_case("date")
        || RESERVED_HEADERS
            .iter()
            .any(|r| r.eq_ignore_ascii_case(name))
}

/// Whether any of `patterns` matches `name`.
pub(crate) fn any_matches(patterns: &[Glob], name: &str) -> bool {
    patterns.iter().any(|p| p.matches(name))
}

/// A header name a rule puts on answers, kept for the life of the process
/// so an answer takes it without a copy. Each distinct name is kept once,
/// however often the runtime file is read: the operator writes a handful.
pub(crate) fn intern(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<Option<HashSet<&'static str>>> = std::sync::Mutex::new(None);
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let names = names.get_or_insert_with(HashSet::new);
    match names.get(name) {
        Some(kept) => kept,
        None => {
            let kept: &'static str = Box::leak(name.to_owned().into_boxed_str());
            names.insert(kept);
            kept
        }
    }
}

/// One `[[headers]]` rule. Names and values are as the runtime file has
/// them (checked: tokens, printable ASCII), ready to go on an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderRule {
    /// `match`: the names it applies to.
    pub patterns: Vec<Glob>,
    /// `set`: replace any header of the name.
    pub set: Vec<(&'static str, Bytes)>,
    /// `add`: append beside what is there.
    pub add: Vec<(&'static str, Bytes)>,
    /// `remove`: take off.
    pub remove: Vec<String>,
    /// `always`: on 4xx and 5xx answers too.
    pub always: bool,
}

/// `security-headers`: the preset's settings, when on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecurityHeaders {
    /// `hsts-max-age`: `Strict-Transport-Security`'s max-age, on TLS
    /// listeners only.
    pub hsts_max_age: Duration,
    /// `hsts-subdomains`: `; includeSubDomains`.
    pub hsts_subdomains: bool,
}

impl Default for SecurityHeaders {
    fn default() -> SecurityHeaders {
        SecurityHeaders {
            hsts_max_age: Duration::from_secs(365 * 24 * 3600),
            hsts_subdomains: false,
        }
    }
}

/// `cors.origins`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origins {
    /// `"*"`.
    Any,
    /// These origins, exactly as a browser sends them.
    List(Vec<String>),
}

/// `[cors]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cors {
    pub origins: Origins,
    pub methods: Vec<String>,
    pub headers: Vec<String>,
    pub expose: Vec<String>,
    pub credentials: bool,
    pub max_age: Duration,
}

impl Default for Cors {
    fn default() -> Cors {
        Cors {
            origins: Origins::List(Vec::new()),
            methods: vec!["GET".into(), "HEAD".into()],
            headers: Vec::new(),
            expose: Vec::new(),
            credentials: false,
            max_age: Duration::from_secs(5),
        }
    }
}

/// One entry of `trusted-proxies`: an address block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Net {
    pub addr: IpAddr,
    /// Leading bits that must match.
    pub prefix: u8,
}

impl Net {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                prefix_eq(&net.octets(), &ip.octets(), self.prefix)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(&net.octets(), &ip.octets(), self.prefix)
            }
            _ => false,
        }
    }
}

/// An IPv4-mapped IPv6 address as its IPv4 address.
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let (whole, rest) = ((bits / 8) as usize, bits % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || {
        let mask = 0xffu8 << (8 - rest);
        a[whole] & mask == b[whole] & mask
    }
}

/// `trusted-proxies`: whom the server believes about the client's address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    pub nets: Vec<Net>,
    /// `"unix"`: a peer on a Unix listener.
    pub unix: bool,
}

impl TrustedProxies {
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty() && !self.unix
    }

    /// Whether an IP address is trusted.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|n| n.contains(ip))
    }
}

/// One `[[auth]]` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthRule {
    pub patterns: Vec<Glob>,
    /// `htpasswd`: the file, absolute.
    pub htpasswd: PathBuf,
    /// Its users, read with the runtime file.
    pub users: Arc<Users>,
    /// Changes when the users change: verified credentials of another
    /// generation do not count.
    pub generation: u64,
    pub realm: String,
    /// `plain-http`: a protected name may be served on a plain listener.
    pub plain_http: bool,
    /// `writes-only`: the rule protects writes (`[[write]]`) and not
    /// reads: a folder anyone reads and only its writers fill.
    pub writes_only: bool,
}

/// One `[[deny]]` rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenyRule {
    pub patterns: Vec<Glob>,
    /// 403 or 404.
    pub status: u16,
}

/// One `[[write]]` rule: who may put files under the names it covers, and
/// how (`spec/site.md`, "Writes").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRule {
    pub patterns: Vec<Glob>,
    /// `writers`: users of the `[[auth]]` rule that protects a name, any of
    /// whom may write it.
    pub writers: Vec<String>,
    /// `anyone`: no credentials needed (said explicitly).
    pub anyone: bool,
    /// `create`: a name that does not exist may be created.
    pub create: bool,
    /// `replace`: a file that exists may be replaced.
    pub replace: bool,
    /// `delete`: a file may be removed.
    pub delete: bool,
    /// `delete-dirs`: an empty directory may be removed.
    pub delete_dirs: bool,
    /// `make-dirs`: missing parent directories are created.
    pub make_dirs: bool,
    /// `max-size`: the largest body written; `None`: `stream-limit`.
    pub max_size: Option<u64>,
    /// `durability`: what is on the disk before the answer.
    pub durability: crate::fs::Durability,
    /// `trusted`: the names' content is the site's own, served without the
    /// sandbox headers.
    pub trusted: bool,
    /// `plain-http`: writes are taken on a plain listener (TLS ended in
    /// front).
    pub plain_http: bool,
    /// `webdav`: WebDAV clients may write the names too (`MKCOL`, `COPY`,
    /// `MOVE`, `PROPPATCH`, and a `DELETE` of a collection with its
    /// members: `spec/site.md`, "WebDAV class 1").
    pub webdav: bool,
}

impl WriteRule {
    /// A rule that covers nothing and allows nothing: the parser's start.
    pub(crate) fn new() -> WriteRule {
        WriteRule {
            patterns: Vec::new(),
            writers: Vec::new(),
            anyone: false,
            create: true,
            replace: true,
            delete: false,
            delete_dirs: false,
            make_dirs: false,
            max_size: None,
            durability: crate::fs::Durability::Data,
            trusted: false,
            plain_http: false,
            webdav: false,
        }
    }
}

/// Everything of a site's rules, as the runtime holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Site {
    /// `[[headers]]`, in file order.
    pub headers: Vec<HeaderRule>,
    /// `security-headers`; `None`: off.
    pub security_headers: Option<SecurityHeaders>,
    /// `[cors]`; `None`: no CORS answers.
    pub cors: Option<Cors>,
    pub trusted_proxies: TrustedProxies,
    /// `[[auth]]`, in file order.
    pub auth: Vec<AuthRule>,
    /// `[[deny]]`, in file order.
    pub deny: Vec<DenyRule>,
    /// `[[write]]`, in file order.
    pub write: Vec<WriteRule>,
    /// `webdav`: `OPTIONS` says `DAV: 1` and `PROPFIND` answers on every
    /// name a read may see (a read-only mount).
    pub webdav: bool,
    /// `apple-double`: what a WebDAV write of Finder's `._NAME` and
    /// `.DS_Store` gets.
    pub apple_double: AppleDouble,
    /// `[webdav-locks]`: WebDAV class 2 (`LOCK`, `UNLOCK`, `If:`), and
    /// where its locks are kept; none by default (class 1 only).
    pub webdav_locks: Option<super::WebdavLocks>,
}

/// `apple-double`: Finder's AppleDouble files (`._NAME`) and `.DS_Store`
/// are dot-names, never written; this says how a write of one is answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AppleDouble {
    /// 403, as for any dot-name.
    #[default]
    Refuse,
    /// 201 or 204, and nothing written: Finder goes on without them.
    Discard,
}

impl Site {
    /// Whether no rule is set (the directory handler answers as before).
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
            && self.security_headers.is_none()
            && self.cors.is_none()
            && self.trusted_proxies.is_empty()
            && self.auth.is_empty()
            && self.deny.is_empty()
            && self.write.is_empty()
            && !self.webdav
    }
}

impl Site {
    /// The keys as the effective runtime file writes them: each on one
    /// line, tables inline, so every key stays top-level; an unset key is
    /// a comment.
    pub(crate) fn to_toml(&self) -> String {
        let string = |s: &str| toml::Value::String(s.to_string()).to_string();
        let list = |items: &mut dyn Iterator<Item = String>| {
            format!("[{}]", items.collect::<Vec<_>>().join(", "))
        };
        let strings = |v: &[String]| list(&mut v.iter().map(|s| string(s)));
        let globs = |v: &[Glob]| list(&mut v.iter().map(|g| string(g.as_str())));
        let table = |v: &[(&str, Bytes)]| {
            let fields: Vec<_> = v
                .iter()
                .map(|(k, v)| format!("{} = {}", string(k), string(&String::from_utf8_lossy(v))))
                .collect();
            format!("{{ {} }}", fields.join(", "))
        };
        let duration = |d: Duration| string(&super::format_duration(d));
        let mut out = String::new();
        let mut line = |key: &str, value: Option<String>| match value {
            Some(value) => out.push_str(&format!("{key} = {value}\n")),
            None => out.push_str(&format!("# {key} is not set\n")),
        };
        line(
            "security-headers",
            Some(match &self.security_headers {
                None => "false".into(),
                Some(p) => format!(
                    "{{ hsts-max-age = {}, hsts-subdomains = {} }}",
                    duration(p.hsts_max_age),
                    p.hsts_subdomains
                ),
            }),
        );
        let mut trusted: Vec<String> = self
            .trusted_proxies
            .nets
            .iter()
            .map(|n| string(&format!("{}/{}", n.addr, n.prefix)))
            .collect();
        if self.trusted_proxies.unix {
            trusted.push(string("unix"));
        }
        line("trusted-proxies", Some(format!("[{}]", trusted.join(", "))));
        line("webdav", Some(self.webdav.to_string()));
        let apple = match self.apple_double {
            AppleDouble::Refuse => "refuse",
            AppleDouble::Discard => "discard",
        };
        line("apple-double", Some(string(apple)));
        line(
            "webdav-locks",
            self.webdav_locks.as_ref().map(super::WebdavLocks::to_toml),
        );
        line(
            "cors",
            self.cors.as_ref().map(|c| {
                let origins = match &c.origins {
                    Origins::Any => string("*"),
                    Origins::List(l) => strings(l),
                };
                format!(
                    "{{ origins = {origins}, methods = {}, headers = {}, expose = {}, \
                     credentials = {}, max-age = {} }}",
                    strings(&c.methods),
                    strings(&c.headers),
                    strings(&c.expose),
                    c.credentials,
                    duration(c.max_age)
                )
            }),
        );
        let rules =
            |items: Vec<String>| (!items.is_empty()).then(|| format!("[{}]", items.join(", ")));
        line(
            "headers",
            rules(
                self.headers
                    .iter()
                    .map(|r| {
                        let mut f = vec![format!("match = {}", globs(&r.patterns))];
                        if !r.set.is_empty() {
                            f.push(format!("set = {}", table(&r.set)));
                        }
                        if !r.add.is_empty() {
                            f.push(format!("add = {}", table(&r.add)));
                        }
                        if !r.remove.is_empty() {
                            f.push(format!("remove = {}", strings(&r.remove)));
                        }
                        f.push(format!("always = {}", r.always));
                        format!("{{ {} }}", f.join(", "))
                    })
                    .collect(),
            ),
        );
        line(
            "auth",
            rules(
                self.auth
                    .iter()
                    .map(|r| {
                        format!(
                            "{{ match = {}, htpasswd = {}, realm = {}, plain-http = {}, \
                             writes-only = {} }}",
                            globs(&r.patterns),
                            string(&r.htpasswd.to_string_lossy()),
                            string(&r.realm),
                            r.plain_http,
                            r.writes_only
                        )
                    })
                    .collect(),
            ),
        );
        line(
            "deny",
            rules(
                self.deny
                    .iter()
                    .map(|r| {
                        format!(
                            "{{ match = {}, status = {} }}",
                            globs(&r.patterns),
                            r.status
                        )
                    })
                    .collect(),
            ),
        );
        line(
            "write",
            rules(
                self.write
                    .iter()
                    .map(|r| {
                        let durability = match r.durability {
                            crate::fs::Durability::None => "none",
                            crate::fs::Durability::Data => "data",
                            crate::fs::Durability::Full => "full",
                        };
                        let max = r.max_size.map_or(String::new(), |m| {
                            format!("max-size = {}, ", string(&super::format_size(m)))
                        });
                        let who = match r.anyone {
                            true => "anyone = true".to_owned(),
                            false => format!("writers = {}", strings(&r.writers)),
                        };
                        format!(
                            "{{ match = {}, {who}, create = {}, replace = {}, \
                             delete = {}, delete-dirs = {}, make-dirs = {}, {max}durability = {}, \
                             trusted = {}, plain-http = {}, webdav = {} }}",
                            globs(&r.patterns),
                            r.create,
                            r.replace,
                            r.delete,
                            r.delete_dirs,
                            r.make_dirs,
                            string(durability),
                            r.trusted,
                            r.plain_http,
                            r.webdav
                        )
                    })
                    .collect(),
            ),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_contain_their_addresses() {
        let net = |a: &str, prefix| Net {
            addr: a.parse().unwrap(),
            prefix,
        };
        let ip = |a: &str| a.parse::<IpAddr>().unwrap();
        assert!(net("10.0.0.0", 8).contains(ip("10.200.3.4")));
        assert!(!net("10.0.0.0", 8).contains(ip("11.0.0.1")));
        assert!(net("192.168.1.7", 32).contains(ip("192.168.1.7")));
        assert!(!net("192.168.1.7", 32).contains(ip("192.168.1.8")));
        assert!(net("172.16.0.0", 12).contains(ip("172.31.255.255")));
        assert!(!net("172.16.0.0", 12).contains(ip("172.32.0.0")));
        assert!(net("10.0.0.0", 8).contains(ip("::ffff:10.1.2.3")));
        assert!(net("fd00::", 8).contains(ip("fd12::1")));
        assert!(!net("fd00::", 8).contains(ip("fe80::1")));
        assert!(net("0.0.0.0", 0).contains(ip("8.8.8.8")));
        assert!(!net("::", 0).contains(ip("8.8.8.8")));
    }
}
