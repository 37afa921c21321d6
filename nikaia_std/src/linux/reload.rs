//! SIGHUP: the whole runtime file read again and checked, refused whole or
//! applied to new requests; the keys that cannot change live reported
//! (`spec/listeners.md`, "Reload").

use super::shared::{connection_budget, Shared};
use super::stats_socket::StatsSocket;
use crate::http::app::Source;
use crate::rt::Runtime;
use std::sync::{Arc, Mutex};

/// What a reload that took effect did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reloaded {
    /// The keys that changed in the file but keep their old value until a
    /// restart (or an upgrade): `listen`, `http3`, `workers`, `io-threads`,
    /// `tls-cert` or `certificate` (every certificate added where there was
    /// none, or all removed: TLS switched on or off).
    pub restart_needed: Vec<&'static str>,
}

/// Reads the runtime again from `source` (or keeps the running one when
/// there is none), checks it and applies it. `Err`: every problem, already
/// logged; the running configuration stays whole.
pub(crate) fn reload(
    shared: &Arc<Shared>,
    stats: &Mutex<Option<StatsSocket>>,
    source: Option<&Source>,
    workers: usize,
) -> Result<Reloaded, Vec<String>> {
    let old = shared.runtime();
    let what = source.map_or_else(
        || "the running configuration (no runtime file)".to_owned(),
        |s| s.file.display().to_string(),
    );
    let refuse = |problems: Vec<String>| {
        for p in &problems {
            shared.logs.error(format_args!("{p}"));
        }
        shared.logs.error(format_args!(
            "SIGHUP: {what} refused; the running configuration stays"
        ));
        Err(problems)
    };
    let mut new = match source {
        Some(source) => match (source.load)(&source.file) {
            Ok((rt, warnings)) => {
                for w in warnings {
                    let file = source.file.display();
                    shared.logs.warn(format_args!("SIGHUP: {file}: {w}"));
                }
                rt
            }
            Err(errors) => return refuse(errors.iter().map(ToString::to_string).collect()),
        },
        None => Runtime::clone(&old),
    };
    let mut restart_needed = Vec::new();
    if new.listen != old.listen {
        restart_needed.push("listen");
        new.listen = old.listen.clone();
    }
    // HTTP/3's UDP sockets are bound (or passed) with the listeners: a
    // change that turns it on or off waits. Between left out and `true`
    // it is on both ways; what differs is how a start meets a busy port.
    if new.http3_on() != old.http3_on() {
        restart_needed.push("http3");
        new.http3 = old.http3;
    }
    if new.workers != old.workers {
        restart_needed.push("workers");
        new.workers = old.workers;
    }
    if new.io_threads != old.io_threads {
        restart_needed.push("io-threads");
        new.io_threads = old.io_threads;
    }
    // The endpoint is a route and the directory was opened at start: a
    // change keeps the old ones (expiry and caps change live).
    let place = |rt: &Runtime| {
        rt.resumable
            .as_ref()
            .map(|r| (r.dir.clone(), r.endpoint.clone()))
    };
    if place(&new) != place(&old) {
        restart_needed.push("resumable");
        match (&mut new.resumable, &old.resumable) {
            (Some(n), Some(o)) => {
                n.dir = o.dir.clone();
                n.endpoint = o.endpoint.clone();
            }
            (n, o) => *n = o.clone(),
        }
    }
    if new.has_certificates() != old.has_certificates() {
        restart_needed.push(match new.tls_cert.is_some() != old.tls_cert.is_some() {
            true => "tls-cert",
            false => "certificate",
        });
        new.tls_cert = old.tls_cert.clone();
        new.tls_key = old.tls_key.clone();
        new.certificates = old.certificates.clone();
    }

    // What the machine says, as `nikaia check` would; nothing is changed
    // until all of it passed.
    let mut problems = Vec::new();
    let file = source.map_or_else(String::new, |s| format!("{}: ", s.file.display()));
    // Every pair is read again, even where its paths did not change (what
    // a renewal needs); one that does not load refuses the reload whole.
    let certs = match &shared.tls {
        Some(_) => match super::tls::Tls::load(&new) {
            Ok(certs) => Some(certs),
            Err(refused) => {
                for (key, message) in refused {
                    problems.push(format!("{file}error: key `{key}`: {message}"));
                }
                None
            }
        },
        None => None,
    };
    #[cfg(not(feature = "acme"))]
    if new.acme.is_some() {
        problems.push(format!(
            "{file}error: key `acme`: {}",
            super::server::NO_ACME
        ));
    }
    if let Some(why) = new.acme.as_ref().and_then(crate::rt::Acme::incomplete) {
        problems.push(format!("{file}error: key `acme`: {why}"));
    }
    let moved_stats = new.stats_socket != old.stats_socket;
    if let (true, Some(path)) = (moved_stats, &new.stats_socket) {
        if let Err(e) = super::unix_path::inspect(path, &super::stats_socket::what(path)) {
            problems.push(format!("{file}error: key `stats-socket`: {e}"));
        }
    }
    if !problems.is_empty() {
        return refuse(problems);
    }
    // What must be opened is opened before anything changes, so a failure
    // still leaves the running configuration whole. (A log file opened for
    // a reload that is then refused stays, empty: created, as the rule
    // for logs allows, never truncated.)
    let access = shared.logs.access.prepare(&new.access_log);
    let error = shared.logs.error.prepare(&new.error_log);
    let (access, error) = match (access, error) {
        (Ok(access), Ok(error)) => (access, error),
        (access, error) => {
            for (key, result) in [("access-log", access.err()), ("error-log", error.err())] {
                if let Some(e) = result {
                    problems.push(format!("{file}error: key `{key}`: cannot open it: {e}"));
                }
            }
            return refuse(problems);
        }
    };
    let stats_socket = match (moved_stats, &new.stats_socket) {
        (false, _) => None,
        (true, None) => Some(None),
        (true, Some(path)) => {
            let for_report = shared.clone();
            match StatsSocket::start(path, move || for_report.report()) {
                Ok(socket) => Some(Some(socket)),
                Err(e) => return refuse(vec![format!("{file}error: key `stats-socket`: {e}")]),
            }
        }
    };

    // Apply: nothing below can fail.
    if let Some(socket) = stats_socket {
        // The old socket goes (its path removed by its claim's rule).
        *stats.lock().unwrap_or_else(|e| e.into_inner()) = socket;
    }
    shared.logs.access.install(access, &new.access_log);
    shared.logs.error.install(error, &new.error_log);
    if let (Some(tls), Some(certs)) = (&shared.tls, certs) {
        tls.install(certs, new.http2);
    }
    #[cfg(feature = "acme")]
    acme(shared, &new);
    shared
        .cache
        .resize(new.static_cache, new.static_cache_bytes);
    shared
        .variants
        .configure(new.compress, new.compress_cache_bytes);
    let budget = connection_budget(shared, new.max_connections, workers, new.max_writes);
    shared
        .max_connections
        .store(budget, std::sync::atomic::Ordering::Relaxed);
    shared.set_runtime(new);
    shared.logs.notice(format_args!(
        "SIGHUP: {what} reloaded; new requests use it{}",
        if shared.tls.is_some() {
            " (and new TLS handshakes the certificates read again)"
        } else {
            ""
        }
    ));
    for key in &restart_needed {
        shared.logs.notice(format_args!(
            "SIGHUP: `{key}` changed; it needs a restart or an upgrade (SIGUSR2), \
             and the old value stays until then"
        ));
    }
    Ok(Reloaded { restart_needed })
}

/// Hands the new `[acme]` table to the manager: started where it was not
/// running, stopped (its pairs no longer served) where the table is gone.
/// A storage the manager cannot open is logged; the rest of the reload
/// stands.
#[cfg(feature = "acme")]
fn acme(shared: &Arc<Shared>, new: &Runtime) {
    let mut slot = shared.acme.lock().unwrap_or_else(|e| e.into_inner());
    let started = match (slot.as_ref(), &new.acme) {
        (Some(manager), Some(acme)) => manager.configure(acme).map(|()| None),
        (None, Some(acme)) => {
            super::acme::Manager::start(super::server::acme_context(shared), acme).map(Some)
        }
        (Some(manager), None) => {
            manager.stop();
            if let Some(tls) = &shared.tls {
                tls.clear_acme();
            }
            shared.challenges.set_managed(Vec::new());
            shared
                .acme_status
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            *slot = None;
            Ok(None)
        }
        (None, None) => Ok(None),
    };
    match started {
        Ok(Some(manager)) => *slot = Some(manager),
        Ok(None) => {}
        Err(e) => shared.logs.error(format_args!("SIGHUP: key `acme`: {e}")),
    }
}
