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
        let mut found = crate::http::site::findings::findings(self);
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
        if let Some(acme) = &self.acme {
            found.extend(self.acme_findings(acme));
        }
        found
    }

    /// What serving `dir` with this runtime would meet that the file alone
    /// cannot say: `[resumable] dir` must be a directory (or one that can
    /// be made) outside `dir` and on its file system, since a complete
    /// upload is renamed into place (`spec/site.md`, "Resumable
    /// uploads"); `[webdav-locks] dir` must be outside `dir`. `nikaia
    /// check FILE DIR` reports them; `nikaia serve` refuses to start on
    /// an error.
    pub fn served_findings(&self, dir: &std::path::Path) -> Vec<Finding> {
        let mut found = match &self.resumable {
            Some(r) => Self::resumable_findings_of(r, dir),
            None => Vec::new(),
        };
        // The locks file is the server's: never served, never written by
        // a write rule (`spec/site.md`, "WebDAV class 2: locks").
        if let Some(l) = &self.site.webdav_locks {
            if inside(&l.dir, dir) {
                found.push(Finding {
                    key: "webdav-locks",
                    message: format!(
                        "dir {} is inside the served directory {}: the locks file must never \
                         be served or written by a client",
                        l.dir.display(),
                        dir.display()
                    ),
                    warning: false,
                });
            }
        }
        found
    }
}

/// Whether `path` (or, where it does not exist yet, the nearest directory
/// above it that does) is `dir` or under it.
fn inside(path: &std::path::Path, dir: &std::path::Path) -> bool {
    let existing = std::iter::successors(Some(path), |p| p.parent())
        .find(|p| p.exists())
        .unwrap_or(std::path::Path::new("/"));
    let canonical = |p: &std::path::Path| std::fs::canonicalize(p).ok();
    matches!((canonical(existing), canonical(dir)), (Some(at), Some(root)) if at.starts_with(&root))
}

impl Runtime {
    /// What `[resumable] dir` would meet beside the served directory `dir`.
    fn resumable_findings_of(r: &crate::rt::Resumable, dir: &std::path::Path) -> Vec<Finding> {
        use std::os::unix::fs::MetadataExt;
        let problem = |message: String| Finding {
            key: "resumable",
            message,
            warning: false,
        };
        let partial = r.dir.display();
        let served = match std::fs::metadata(dir) {
            Ok(m) => m,
            Err(e) => {
                return vec![problem(format!(
                    "the served directory {}: {e}",
                    dir.display()
                ))]
            }
        };
        // Where it does not exist yet, its parent says where it would be.
        let existing = std::iter::successors(Some(r.dir.as_path()), |p| p.parent())
            .find(|p| p.exists())
            .unwrap_or(std::path::Path::new("/"));
        let meta = match std::fs::metadata(existing) {
            Ok(m) => m,
            Err(e) => return vec![problem(format!("dir {partial}: {e}"))],
        };
        if existing == r.dir && !meta.is_dir() {
            return vec![problem(format!("dir {partial}: not a directory"))];
        }
        let mut found = Vec::new();
        if meta.dev() != served.dev() {
            found.push(problem(format!(
                "dir {partial} is on another file system than the served directory {} \
                 (st_dev {} against {}): a complete upload is renamed into place, which \
                 cannot cross file systems",
                dir.display(),
                meta.dev(),
                served.dev()
            )));
        }
        if inside(existing, dir) {
            found.push(problem(format!(
                "dir {partial} is inside the served directory {}: partial uploads \
                 must never be served",
                dir.display()
            )));
        }
        found
    }

    /// What `[acme]` would meet: a program without the feature, a storage
    /// that is not private, a key file or roots that do not read, and no
    /// listener for the challenges allowed (HTTP-01 needs a plain listener
    /// on port 80 as the CA sees it, TLS-ALPN-01 a TLS one on 443).
    fn acme_findings(&self, acme: &crate::rt::Acme) -> Vec<Finding> {
        let mut found = Vec::new();
        let mut problem = |message: String, warning: bool| {
            found.push(Finding {
                key: "acme",
                message,
                warning,
            })
        };
        #[cfg(not(feature = "acme"))]
        problem(super::server::NO_ACME.to_owned(), false);
        match std::fs::symlink_metadata(&acme.storage) {
            Ok(meta) => {
                use std::os::unix::fs::MetadataExt;
                let me = rustix::process::geteuid().as_raw();
                let storage = acme.storage.display();
                if !meta.is_dir() {
                    problem(format!("storage {storage}: not a directory"), false);
                } else if meta.uid() != me {
                    problem(
                        format!(
                            "storage {storage}: it belongs to user {}, not to this user {me}",
                            meta.uid()
                        ),
                        false,
                    );
                } else if meta.mode() & 0o077 != 0 {
                    problem(format!("storage {storage}: its mode is {:04o}; keys are kept there, so it must be 0700", meta.mode() & 0o777), false);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => problem(format!("storage {}: {e}", acme.storage.display()), false),
        }
        if let Some(eab) = &acme.eab {
            // Read to check it, never shown.
            if let Err(e) = std::fs::read_to_string(&eab.hmac_key_file) {
                problem(
                    format!("eab-hmac-key {}: {e}", eab.hmac_key_file.display()),
                    false,
                );
            }
        }
        if let Some(roots) = &acme.ca_roots {
            use rustls_pki_types::pem::PemObject;
            let certs: Result<Vec<_>, _> =
                match rustls_pki_types::CertificateDer::pem_file_iter(roots) {
                    Ok(iter) => iter.collect(),
                    Err(e) => Err(e),
                };
            match certs {
                Ok(certs) if !certs.is_empty() => {}
                Ok(_) => problem(
                    format!("ca-roots {}: holds no PEM certificate", roots.display()),
                    false,
                ),
                Err(e) => problem(format!("ca-roots {}: {e}", roots.display()), false),
            }
        }
        let tcp = |tls: bool| {
            (self.listen.iter())
                .filter(|l| self.speaks_tls(l) == tls)
                .filter_map(|l| match l.address {
                    ListenAddr::Tcp(addr) => Some(addr.port()),
                    ListenAddr::Unix(_) => None,
                })
                .collect::<Vec<u16>>()
        };
        let (plain, tls) = (tcp(false), tcp(true));
        let http01 = acme.challenges.contains(&crate::rt::ChallengeKind::Http01);
        let alpn01 = acme
            .challenges
            .contains(&crate::rt::ChallengeKind::TlsAlpn01);
        let usable = (http01 && !plain.is_empty()) || (alpn01 && !tls.is_empty());
        if !usable {
            problem(
                "no listener can answer the challenges allowed: HTTP-01 needs a plain TCP listener (port 80), TLS-ALPN-01 a TLS one (port 443)".into(),
                false,
            );
        }
        if tls.is_empty() {
            problem(
                "no TCP listener speaks TLS: the certificates obtained would serve no one".into(),
                true,
            );
        }
        if http01 && !plain.is_empty() && !plain.contains(&80) {
            problem(format!("HTTP-01 is validated on port 80 and no plain listener is on it (ports {plain:?}): right only if port 80 is forwarded to one of them"), true);
        }
        if alpn01 && !tls.is_empty() && !tls.contains(&443) {
            problem(format!("TLS-ALPN-01 is validated on port 443 and no TLS listener is on it (ports {tls:?}): right only if port 443 is forwarded to one of them"), true);
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
