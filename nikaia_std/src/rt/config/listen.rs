//! `listen`: the entries a server listens on (`spec/listeners.md`).

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Where a listener is: a TCP address, or a Unix socket's path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ListenAddr {
    Tcp(SocketAddr),
    /// `unix:/path`; the path is absolute.
    Unix(PathBuf),
}

impl fmt::Display for ListenAddr {
    /// `127.0.0.1:8080`, `[::]:443`, `unix:/run/site.sock`: the form the
    /// runtime file takes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(addr) => write!(f, "{addr}"),
            ListenAddr::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// `https-redirect`: where a plain listener sends every request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpsRedirect {
    /// `true`: the port of the first TCP listener that speaks TLS.
    TlsListener,
    /// An integer: this port (TLS ended by something in front).
    Port(u16),
}

/// One entry of `listen`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listen {
    pub address: ListenAddr,
    /// `tls`; `None` (left out): TLS when the runtime has `tls-cert` and
    /// `tls-key` ([`Runtime::speaks_tls`](super::Runtime::speaks_tls)).
    pub tls: Option<bool>,
    /// `https-redirect` on a plain listener.
    pub https_redirect: Option<HttpsRedirect>,
    /// `mode` of a Unix listener's socket (permission bits).
    pub mode: u32,
    /// `name`: the `LISTEN_FDNAMES` name that selects this entry under
    /// socket activation.
    pub name: Option<String>,
    /// `proxy-protocol`: each connection begins with a PROXY protocol
    /// header, taken only from a trusted proxy (`spec/site.md`).
    pub proxy_protocol: bool,
}

/// The mode a Unix listener gets when its entry names none: its owner and
/// its group may connect.
pub const UNIX_MODE: u32 = 0o660;

impl Listen {
    /// A TCP listener with every setting left to its default.
    pub fn tcp(addr: SocketAddr) -> Listen {
        Listen::at(ListenAddr::Tcp(addr))
    }

    /// A Unix listener at `path` with every setting left to its default.
    pub fn unix(path: impl Into<PathBuf>) -> Listen {
        Listen::at(ListenAddr::Unix(path.into()))
    }

    pub(crate) fn at(address: ListenAddr) -> Listen {
        Listen {
            address,
            tls: None,
            https_redirect: None,
            mode: UNIX_MODE,
            name: None,
            proxy_protocol: false,
        }
    }

    /// Whether every setting but the address is its default: such an entry
    /// is written as a plain string.
    pub(crate) fn is_plain_address(&self) -> bool {
        self.tls.is_none()
            && self.https_redirect.is_none()
            && self.mode == UNIX_MODE
            && self.name.is_none()
            && !self.proxy_protocol
    }

    /// The entry as the runtime file writes it.
    pub(crate) fn to_toml(&self) -> String {
        let string = |s: &str| toml::Value::String(s.to_string()).to_string();
        let address = string(&self.address.to_string());
        if self.is_plain_address() {
            return address;
        }
        let mut fields = vec![format!("address = {address}")];
        if let Some(tls) = self.tls {
            fields.push(format!("tls = {tls}"));
        }
        match self.https_redirect {
            Some(HttpsRedirect::TlsListener) => fields.push("https-redirect = true".into()),
            Some(HttpsRedirect::Port(port)) => fields.push(format!("https-redirect = {port}")),
            None => {}
        }
        if matches!(self.address, ListenAddr::Unix(_)) && self.mode != UNIX_MODE {
            fields.push(format!("mode = {}", string(&format!("{:04o}", self.mode))));
        }
        if let Some(name) = &self.name {
            fields.push(format!("name = {}", string(name)));
        }
        if self.proxy_protocol {
            fields.push("proxy-protocol = true".into());
        }
        format!("{{ {} }}", fields.join(", "))
    }
}

impl From<SocketAddr> for Listen {
    fn from(addr: SocketAddr) -> Listen {
        Listen::tcp(addr)
    }
}

/// Whether `name` may be a listener's `LISTEN_FDNAMES` name: 1 to 255
/// printable ASCII characters, no `:` (the list's separator), and none of
/// the names an upgrade gives (`nikaia` for a listener without a name,
/// `nikaia-stats`) or systemd gives a descriptor without one (`unknown`).
pub(crate) fn valid_fd_name(name: &str) -> bool {
    (1..=255).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_graphic() && b != b':')
        && !matches!(name, "nikaia" | "nikaia-stats" | "unknown")
}
