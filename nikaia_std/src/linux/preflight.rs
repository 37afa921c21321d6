//! What `nikaia check` looks at beyond the runtime file's text: the
//! machine a server would start on — the stats socket's path, every `listen`
//! address (a busy port, a Unix path that is not ours), the TLS pair.

use crate::rt::{CertSummary, Finding, ListenAddr, Runtime};
use std::time::{SystemTime, UNIX_EPOCH};

impl Runtime {
    /// Looks at what the settings name on this machine, as a server starting
    /// with them would: what `nikaia check` reports beyond the file's text.
    /// (Linux: the machine is the Linux backend's.)
    pub fn preflight(&self) -> Vec<Finding> {
        let mut found = Vec::new();
        if let Some(path) = &self.stats_socket {
            let what = super::stats_socket::what(path);
            if let Err(e) = super::unix_path::inspect(path, &what) {
                found.push(Finding {
                    key: "stats-socket",
                    message: e.to_string(),
                    // A live server on the socket is likely the one this file
                    // configures: starting a second would fail, checking not.
                    warning: e.kind() == std::io::ErrorKind::AddrInUse,
                });
            }
        }
        for entry in &self.listen {
            match &entry.address {
                // A busy address is only a warning: the server holding it
                // may be the one this file configures, and checking it must
                // not fail.
                ListenAddr::Tcp(addr) if addr.port() != 0 => {
                    if let Err(e) = super::listen::bind_tcp(*addr) {
                        // A port below 1024 may be the socket unit's to bind.
                        let denied = e.kind() == std::io::ErrorKind::PermissionDenied;
                        found.push(listen_finding(e, "by the server", denied));
                    }
                }
                ListenAddr::Tcp(_) => {}
                ListenAddr::Unix(path) => {
                    let what = format!("listener {}", entry.address);
                    if let Err(e) = super::unix_path::inspect(path, &what) {
                        found.push(listen_finding(e, "the server", false));
                    }
                }
            }
        }
        for (files, pair) in super::tls::load_pairs(self) {
            match pair {
                Err((part, message)) => found.push(Finding {
                    key: super::tls::key_of(self, &files, part),
                    message,
                    warning: false,
                }),
                Ok(pair) => {
                    if let Some(end) = pair.not_after.filter(|end| *end <= SystemTime::now()) {
                        let secs = end.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
                        found.push(Finding {
                            key: super::tls::key_of(self, &files, super::tls::Part::Cert),
                            message: format!(
                                "{}: the certificate expired on {} (clients will refuse it)",
                                files.cert.display(),
                                String::from_utf8_lossy(&crate::text::date::imf_fixdate(secs))
                            ),
                            warning: true,
                        });
                    }
                }
            }
        }
        found
    }
}

impl Runtime {
    /// Every certificate pair that loads, with the names it serves and
    /// its end (`nikaia check` lists them; the ones that do not load are
    /// [`Runtime::preflight`]'s errors).
    pub fn certificates(&self) -> Vec<CertSummary> {
        super::tls::load_pairs(self)
            .into_iter()
            .filter_map(|(files, pair)| {
                let pair = pair.ok()?;
                Some(CertSummary {
                    names: pair.names(),
                    not_after: pair.not_after,
                    files,
                })
            })
            .collect()
    }
}

/// A `listen` entry a server could not take. Held by someone (`AddrInUse`)
/// is only a warning, naming `who` may hold it: the server this file
/// configures, likely, and checking must not fail for that; else an error,
/// unless `warning` says otherwise.
fn listen_finding(e: std::io::Error, who: &str, warning: bool) -> Finding {
    let held = e.kind() == std::io::ErrorKind::AddrInUse;
    Finding {
        key: "listen",
        message: if held {
            format!("{e} (perhaps {who} this file configures)")
        } else {
            e.to_string()
        },
        warning: held || warning,
    }
}
