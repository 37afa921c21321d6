//! Automatic HTTPS (`spec/tls.md`, "Automatic HTTPS"): certificates for
//! the `[acme]` names obtained and renewed by the server itself, on a
//! thread of its own, never a worker's.
//!
//! - this file: the manager: what each name has and when it is next
//!   looked at, the thread that looks (every quarter second: the wall
//!   clock, the storage another process may have written), and a thread
//!   per name while its order runs, so one stuck name delays no other;
//! - `schedule.rs`: when to renew, when to try again;
//! - `order.rs`: one certificate obtained; `protocol.rs`: RFC 8555 and
//!   RFC 9773 requests; `jws.rs`: what they are signed with; `http.rs`:
//!   HTTPS to the CA;
//! - `store.rs`: what survives a crash, and the per-name locks.

mod http;
mod jws;
mod order;
mod protocol;
mod schedule;
mod store;

use self::order::{Validations, Want};
use self::protocol::{Ca, Failure};
use self::schedule::Validity;
use self::store::{Store, Version};
use super::shared::Shared;
use super::tls::Pair;
use crate::rt::{format_utc, Acme, CertReport, ChallengeKind};
use rustls::pki_types::pem::PemObject as _;
use rustls::ClientConfig;
use serde_json::json;
use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often the thread looks at the clock and the storage.
const TICK: Duration = Duration::from_millis(250);
/// How soon a name whose lock another process holds is looked at again.
const ELSEWHERE: Duration = Duration::from_secs(2);

/// The ACME side of a running server.
pub(crate) struct Manager {
    state: Mutex<State>,
    /// Set when the server stops or `[acme]` is removed: the thread ends.
    stop: AtomicBool,
}

struct State {
    acme: Acme,
    /// The challenges a listener of this server can answer, in the
    /// operator's order.
    usable: Vec<ChallengeKind>,
    names: BTreeMap<String, Name>,
    /// Whether the CA's directory offers renewal windows (ARI), once a job
    /// has read it: until then a name with a pair asks.
    ari: Option<bool>,
}

/// What one name has and when it is next looked at.
#[derive(Default)]
struct Name {
    /// The pair served for it now.
    pair: Option<Arc<Pair>>,
    /// The stored pair's file as last read, to notice another process's.
    stored: Option<Version>,
    /// The stored challenge's file as last read, and the token it offered.
    challenge: Option<Version>,
    challenge_token: Option<String>,
    /// When to act: renew (or obtain), or ask for the renewal window.
    next: Option<SystemTime>,
    /// The time chosen in the CA's renewal window, and when to ask again.
    window: Option<(SystemTime, SystemTime)>,
    /// A thread works on it now.
    running: bool,
    /// Failures in a row, for the backoff.
    failures: u32,
    /// For `nikaia explain`.
    last_attempt: Option<SystemTime>,
    last_error: Option<String>,
    orders: u64,
    failed: u64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Manager {
    /// Checks the storage, serves every stored pair at once (no request to
    /// the CA first), and starts the thread that obtains the rest and
    /// renews. Refused when the storage is not private or cannot be made.
    pub(crate) fn start(shared: &Arc<Shared>, acme: &Acme) -> io::Result<Arc<Manager>> {
        let store = Store::open(&acme.storage, &acme.directory)?;
        let manager = Arc::new(Manager {
            state: Mutex::new(State {
                acme: acme.clone(),
                usable: usable(shared, acme),
                names: BTreeMap::new(),
                ari: None,
            }),
            stop: AtomicBool::new(false),
        });
        manager.adopt(shared, acme, &store);
        let (thread_shared, thread_manager) = (shared.clone(), manager.clone());
        std::thread::Builder::new()
            .name("nikaia-acme".into())
            .spawn(move || thread_manager.run(&thread_shared))?;
        Ok(manager)
    }

    /// Takes a new `[acme]` table (a reload): names added are obtained,
    /// names removed no longer renewed nor served; a new directory or
    /// storage reads the pairs stored there.
    pub(crate) fn configure(&self, shared: &Arc<Shared>, acme: &Acme) -> io::Result<()> {
        let store = Store::open(&acme.storage, &acme.directory)?;
        let removed: Vec<String> = {
            let mut state = lock(&self.state);
            let moved =
                state.acme.directory != acme.directory || state.acme.storage != acme.storage;
            if moved {
                state.ari = None;
                for name in state.names.values_mut() {
                    name.stored = None;
                    name.window = None;
                }
            }
            state.usable = usable(shared, acme);
            state.acme = acme.clone();
            let gone: Vec<String> = (state.names.keys())
                .filter(|n| !acme.domains.contains(n))
                .cloned()
                .collect();
            for name in &gone {
                state.names.remove(name);
            }
            gone
        };
        if let Some(tls) = &shared.tls {
            for name in &removed {
                tls.set_acme(name, None);
            }
        }
        self.adopt(shared, acme, &store);
        Ok(())
    }

    /// Stops the thread (the server stops, or `[acme]` was removed); the
    /// pairs it obtained stay served until the set is rebuilt without them.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Adds the names of `acme` not known yet, serving their stored pairs.
    fn adopt(&self, shared: &Shared, acme: &Acme, store: &Store) {
        shared.challenges.set_managed(acme.domains.iter().cloned());
        let now = SystemTime::now();
        let mut state = lock(&self.state);
        let ari = state.ari;
        for domain in &acme.domains {
            let name = state.names.entry(domain.clone()).or_default();
            if name.stored.is_none() {
                name.next = Some(now);
                load_stored(shared, store, domain, name, now, ari);
            }
        }
        drop(state);
        self.publish(shared);
    }

    /// The thread: every tick, the storage and the clock.
    fn run(self: Arc<Self>, shared: &Arc<Shared>) {
        let mut expiry_seen = None;
        while !self.stop.load(Ordering::Relaxed) && !shared.stop.load(Ordering::Relaxed) {
            let now = SystemTime::now();
            let (storage, directory) = {
                let state = lock(&self.state);
                (state.acme.storage.clone(), state.acme.directory.clone())
            };
            match Store::open(&storage, &directory) {
                Ok(store) => self.poll_storage(shared, &store, now),
                Err(e) => shared.logs.error(format_args!("ACME: {e}")),
            }
            self.start_due(shared, now);
            // A pair that just expired stops winning over the others.
            if let Some(tls) = &shared.tls {
                let next = tls.current().next_expiry(now);
                if expiry_seen.is_some_and(|seen| next != Some(seen)) {
                    tls.refresh();
                }
                expiry_seen = next;
            }
            std::thread::sleep(TICK);
        }
    }

    /// Another process's work: a pair it stored, a validation it runs.
    fn poll_storage(&self, shared: &Shared, store: &Store, now: SystemTime) {
        let mut state = lock(&self.state);
        let ari = state.ari;
        let mut changed = false;
        for (domain, name) in state.names.iter_mut() {
            if name.running {
                continue;
            }
            let file = format!("{domain}.pem");
            if store.version(&file) != name.stored {
                changed |= load_stored(shared, store, domain, name, now, ari);
            }
            let file = challenge_file(domain);
            let version = store.version(&file);
            if version != name.challenge {
                name.challenge = version;
                let token = offer_stored(shared, store, domain);
                if token != name.challenge_token {
                    if let Some(old) = &name.challenge_token {
                        shared.challenges.withdraw(domain, Some(old));
                    }
                    name.challenge_token = token;
                }
            }
        }
        drop(state);
        if changed {
            self.publish(shared);
        }
    }

    /// Starts a job for every name whose time has come.
    fn start_due(self: &Arc<Self>, shared: &Arc<Shared>, now: SystemTime) {
        let mut state = lock(&self.state);
        let due: Vec<String> = (state.names.iter())
            .filter(|(_, n)| !n.running && n.next.is_some_and(|t| t <= now))
            .map(|(d, _)| d.clone())
            .collect();
        for domain in due {
            let (acme, usable, ari) = (state.acme.clone(), state.usable.clone(), state.ari);
            let name = state.names.get_mut(&domain).expect("a known name");
            name.running = true;
            let job = Job {
                acme,
                usable,
                pair: name.pair.clone(),
                window: name.window,
                domain: domain.clone(),
                ari,
            };
            let (manager, job_shared) = (self.clone(), shared.clone());
            let spawned = std::thread::Builder::new()
                .name("nikaia-acme-order".into())
                .spawn(move || {
                    let outcome = job.run(&manager, &job_shared);
                    manager.finish(&job_shared, &job.domain, outcome);
                });
            if let Err(e) = spawned {
                let name = state.names.get_mut(&domain).expect("a known name");
                name.running = false;
                name.next = Some(now + ELSEWHERE);
                shared
                    .logs
                    .error(format_args!("ACME {domain}: no thread for the order: {e}"));
            }
        }
    }

    /// What a job came to.
    fn finish(&self, shared: &Shared, domain: &str, outcome: Outcome) {
        let now = SystemTime::now();
        let mut state = lock(&self.state);
        if outcome.ari.is_some() {
            state.ari = outcome.ari;
        }
        let ari = state.ari;
        let Some(name) = state.names.get_mut(domain) else {
            return; // removed by a reload meanwhile
        };
        name.running = false;
        name.orders += outcome.orders;
        if outcome.asked {
            name.last_attempt = Some(now);
        }
        match outcome.result {
            Ok(Done::Obtained(pair, version)) => {
                name.failures = 0;
                name.last_error = None;
                name.window = None;
                let end = pair
                    .not_after
                    .map_or_else(|| "no end".to_owned(), format_utc);
                name.stored = version;
                name.pair = Some(pair);
                name.next = next_time(name, now, ari);
                let next = name.next.map_or_else(String::new, |t| {
                    format!("; looked at again at {}", format_utc(t))
                });
                let how = match outcome.orders {
                    0 => {
                        "certificate taken from the storage (another process, or an order resumed)"
                    }
                    _ => "certificate obtained",
                };
                shared
                    .logs
                    .notice(format_args!("ACME {domain}: {how}, not after {end}{next}"));
                if let Some(tls) = &shared.tls {
                    tls.set_acme(domain, name.pair.clone());
                }
            }
            Ok(Done::Elsewhere) => name.next = Some(now + ELSEWHERE),
            Ok(Done::Window(window)) => {
                name.window = Some(window);
                name.failures = 0;
                name.last_error = None;
                name.next = next_time(name, now, ari);
            }
            Err(failure) => {
                name.failures += 1;
                name.failed += 1;
                let wait = schedule::backoff(name.failures, store::random_u64())
                    .max(failure.retry_after.unwrap_or_default());
                // An account the CA lost (a CA reset) is made again at
                // once, the first time.
                let wait = match failure.is("accountDoesNotExist") && name.failures == 1 {
                    true => Duration::ZERO,
                    false => wait,
                };
                name.next = Some(now + wait);
                name.last_error = Some(failure.message.clone());
                shared.logs.error(format_args!(
                    "ACME {domain}: {}; next attempt at {}",
                    failure.message,
                    format_utc(now + wait)
                ));
            }
        }
        drop(state);
        self.publish(shared);
    }

    /// Writes what `nikaia explain` shows of each name.
    fn publish(&self, shared: &Shared) {
        let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let state = lock(&self.state);
        let now = SystemTime::now();
        let reports = (state.names.iter())
            .map(|(domain, n)| {
                let mut r = CertReport::new("acme", domain.clone());
                if let Some(pair) = &n.pair {
                    r.names = pair.names();
                    r.not_after = pair.not_after.map_or(0, secs);
                    r.expires_in = pair
                        .not_after
                        .map_or(0, |end| secs(end) as i64 - secs(now) as i64);
                } else {
                    r.names = vec![domain.clone()];
                }
                r.next_renewal = n.next.map_or(0, secs);
                r.last_attempt = n.last_attempt.map_or(0, secs);
                r.last_error = n.last_error.clone().unwrap_or_default();
                r.orders = n.orders;
                r.failures = n.failed;
                r
            })
            .collect();
        *lock(&shared.acme_status) = reports;
    }
}

/// When a name is next looked at: its renewal (the CA's window if there
/// is one, else by its lifetime; never past the floor), or sooner, to ask
/// the CA for the window again (`ari`: whether the CA offers windows;
/// `None`: not known yet, so ask).
fn next_time(name: &Name, now: SystemTime, ari: Option<bool>) -> Option<SystemTime> {
    let Some(pair) = &name.pair else {
        return Some(now);
    };
    let (Some(not_before), Some(not_after)) = (pair.not_before, pair.not_after) else {
        return Some(now);
    };
    let validity = Validity {
        not_before,
        not_after,
    };
    let due = validity.due(name.window.map(|(choice, _)| choice));
    Some(match name.window {
        Some((_, ask_again)) => due.min(ask_again),
        None if pair.ari_id.is_some() && ari != Some(false) => due.min(now),
        None => due,
    })
}

/// The challenges some listener of this server can answer: HTTP-01 on a
/// plain TCP listener, TLS-ALPN-01 on a TLS one.
fn usable(shared: &Shared, acme: &Acme) -> Vec<ChallengeKind> {
    let listeners = shared.listeners();
    let tcp =
        |l: &&Arc<super::listen::Listener>| matches!(l.address, crate::rt::ListenAddr::Tcp(_));
    let plain = listeners.iter().filter(tcp).any(|l| !l.tls);
    let tls = listeners.iter().filter(tcp).any(|l| l.tls);
    (acme.challenges.iter().copied())
        .filter(|c| match c {
            ChallengeKind::Http01 => plain,
            ChallengeKind::TlsAlpn01 => tls,
        })
        .collect()
}

/// Reads `<domain>.pem` (or, when it does not load, `<domain>.prev.pem`)
/// into `name` and the TLS set. Whether the served pair changed.
fn load_stored(
    shared: &Shared,
    store: &Store,
    domain: &str,
    name: &mut Name,
    now: SystemTime,
    ari: Option<bool>,
) -> bool {
    let file = format!("{domain}.pem");
    let version = store.version(&file);
    name.stored = version;
    let Some(pair) = read_pair(shared, store, domain, &file)
        .or_else(|| read_pair(shared, store, domain, &format!("{domain}.prev.pem")))
    else {
        return false;
    };
    let same = name
        .pair
        .as_ref()
        .is_some_and(|p| p.not_after == pair.not_after && p.ari_id == pair.ari_id);
    if same {
        return false;
    }
    name.pair = Some(pair.clone());
    name.window = None;
    name.next = next_time(name, now, ari);
    if let Some(tls) = &shared.tls {
        tls.set_acme(domain, Some(pair));
    }
    true
}

/// A stored pair that loads and names `domain`; one that does not is
/// logged and left alone.
fn read_pair(shared: &Shared, store: &Store, domain: &str, file: &str) -> Option<Arc<Pair>> {
    let bytes = match store.read(file) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return None,
        Err(e) => {
            shared.logs.error(format_args!("ACME {domain}: {e}"));
            return None;
        }
    };
    match Pair::from_pem(&bytes, &bytes) {
        Ok(pair) if pair.dns.iter().any(|n| n == domain) => Some(Arc::new(pair)),
        Ok(_) => {
            shared.logs.error(format_args!(
                "ACME {domain}: {}/{file} does not name {domain}; ignored",
                store.path.display()
            ));
            None
        }
        Err((_, why)) => {
            shared.logs.error(format_args!(
                "ACME {domain}: {}/{file} does not load ({why}); ignored",
                store.path.display()
            ));
            None
        }
    }
}

fn challenge_file(domain: &str) -> String {
    format!("{domain}.challenge.json")
}

/// Offers the validation another process stored for `domain` (it may be
/// this process that the CA reaches), or withdraws it when it is gone;
/// the token offered.
fn offer_stored(shared: &Shared, store: &Store, domain: &str) -> Option<String> {
    let record: serde_json::Value = store
        .read(&challenge_file(domain))
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let kind = record["kind"].as_str().and_then(kind_named);
    match (
        kind,
        record["token"].as_str(),
        record["key_authorization"].as_str(),
    ) {
        (Some(kind), Some(token), Some(ka)) => {
            let _ = offer(shared, domain, kind, token, ka);
            Some(token.to_owned())
        }
        _ => {
            shared.challenges.withdraw(domain, None);
            None
        }
    }
}

/// Offers the answer to a validation of `domain` by `kind`: HTTP-01's key
/// authorization by token, or TLS-ALPN-01's certificate by name.
fn offer(
    shared: &Shared,
    domain: &str,
    kind: ChallengeKind,
    token: &str,
    key_authorization: &str,
) -> Result<(), String> {
    match kind {
        ChallengeKind::Http01 => shared.challenges.offer_http(token, key_authorization),
        ChallengeKind::TlsAlpn01 => {
            let Some(tls) = &shared.tls else {
                return Err("TLS-ALPN-01 needs a TLS listener".into());
            };
            let (cert, key) = order::alpn_certificate(domain, key_authorization)?;
            let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.into());
            let provider = rustls::crypto::aws_lc_rs::default_provider();
            let signer = provider
                .key_provider
                .load_private_key(key)
                .map_err(|e| e.to_string())?;
            // Not `from_der`: it checks the certificate as a peer's, and
            // refuses the critical acmeIdentifier extension it must carry.
            let certified = rustls::sign::CertifiedKey::new(vec![cert.into()], signer);
            shared
                .challenges
                .offer_alpn(domain, tls.challenge_config(Arc::new(certified)));
        }
    }
    Ok(())
}

fn kind_named(name: &str) -> Option<ChallengeKind> {
    [ChallengeKind::Http01, ChallengeKind::TlsAlpn01]
        .into_iter()
        .find(|k| k.name() == name)
}

/// A job's result for the manager.
struct Outcome {
    result: Result<Done, Failure>,
    orders: u64,
    /// The CA was asked.
    asked: bool,
    /// Whether the CA's directory offers renewal windows, once read.
    ari: Option<bool>,
}

enum Done {
    /// A new pair, stored (the version of its file).
    Obtained(Arc<Pair>, Option<Version>),
    /// Another process holds the name's lock.
    Elsewhere,
    /// Not due: the CA's window, chosen in, and when to ask again.
    Window((SystemTime, SystemTime)),
}

/// What a job runs with: a copy of the name's state when it began.
struct Job {
    acme: Acme,
    usable: Vec<ChallengeKind>,
    pair: Option<Arc<Pair>>,
    window: Option<(SystemTime, SystemTime)>,
    domain: String,
    ari: Option<bool>,
}

/// Where a job offers its validations: this process's memory, and the
/// storage (for another process the CA may reach).
struct Offer<'a> {
    shared: &'a Shared,
    store: &'a Store,
}

impl Validations for Offer<'_> {
    fn offer(
        &self,
        name: &str,
        kind: ChallengeKind,
        token: &str,
        key_authorization: &str,
    ) -> Result<(), String> {
        offer(self.shared, name, kind, token, key_authorization)?;
        let record =
            json!({"kind": kind.name(), "token": token, "key_authorization": key_authorization});
        self.store
            .write(&challenge_file(name), record.to_string().as_bytes(), None)
            .map_err(|e| e.to_string())
    }

    fn withdraw(&self, name: &str, token: &str) {
        self.shared.challenges.withdraw(name, Some(token));
        let _ = self.store.remove(&challenge_file(name));
    }
}

impl Job {
    fn run(&self, manager: &Manager, shared: &Shared) -> Outcome {
        let mut outcome = Outcome {
            result: Err(Failure::new("not run")),
            orders: 0,
            asked: false,
            ari: None,
        };
        outcome.result = self.work(manager, shared, &mut outcome);
        outcome
    }

    fn work(
        &self,
        manager: &Manager,
        shared: &Shared,
        outcome: &mut Outcome,
    ) -> Result<Done, Failure> {
        let store = Store::open(&self.acme.storage, &self.acme.directory)?;
        let Some(_lock) = store.try_lock(&self.domain)? else {
            return Ok(Done::Elsewhere);
        };
        // Another process may have renewed while this one waited.
        let now = SystemTime::now();
        let mut name = Name {
            pair: self.pair.clone(),
            window: self.window,
            ..Name::default()
        };
        let file = format!("{}.pem", self.domain);
        if let Some(stored) = read_pair(shared, &store, &self.domain, &file) {
            let newer = name
                .pair
                .as_ref()
                .is_none_or(|p| stored.not_after > p.not_after);
            if newer {
                name.pair = Some(stored.clone());
                name.window = None;
                if next_time(&name, now, self.ari).is_some_and(|t| t > now) {
                    return Ok(Done::Obtained(stored, store.version(&file)));
                }
            }
        }
        if self.usable.is_empty() {
            return Err(Failure::new(
                "no listener can answer the allowed challenges (HTTP-01 needs a plain listener, TLS-ALPN-01 a TLS one)",
            ));
        }
        outcome.asked = true;
        let mut ca = session(&self.acme, &store)?;
        outcome.ari = Some(ca.directory.renewal_info.is_some());
        let result = self.with_ca(&mut ca, manager, shared, &store, &name, now, outcome);
        if let Err(f) = &result {
            if f.is("accountDoesNotExist") {
                // The CA no longer knows the account (reset, deleted):
                // the next attempt registers again.
                let _ = store.remove("account.json");
            }
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn with_ca(
        &self,
        ca: &mut Ca,
        manager: &Manager,
        shared: &Shared,
        store: &Store,
        name: &Name,
        now: SystemTime,
        outcome: &mut Outcome,
    ) -> Result<Done, Failure> {
        let replaces = name.pair.as_ref().and_then(|p| p.ari_id.clone());
        // With a pair, the CA's window first: it may move the renewal.
        if let (Some(pair), Some(id)) = (&name.pair, &replaces) {
            let (Some(not_before), Some(not_after)) = (pair.not_before, pair.not_after) else {
                return Err(Failure::new("the stored certificate has no validity"));
            };
            let validity = Validity {
                not_before,
                not_after,
            };
            let window = match ca.renewal_info(id) {
                Ok(Some((start, end, retry))) => {
                    let ask_again = now + schedule::window_poll(retry);
                    schedule::choose_in_window(start, end, store::random_u64())
                        .map(|t| (t, ask_again))
                }
                Ok(None) => None,
                // A window that cannot be read: renew by the lifetime.
                Err(f) => {
                    shared.logs.error(format_args!(
                        "ACME {}: renewal window: {}",
                        self.domain, f.message
                    ));
                    None
                }
            };
            let due = validity.due(window.map(|(choice, _)| choice));
            if due > now {
                return Ok(match window {
                    Some(window) => Done::Window(window),
                    None => Done::Window((due, due)),
                });
            }
        }
        if let Some(profile) = &self.acme.profile {
            let offered = &ca.directory.profiles;
            if !offered.is_empty() && !offered.contains(profile) {
                return Err(Failure::new(format!(
                    "the CA offers no profile \"{profile}\" (it offers {})",
                    offered.join(", ")
                )));
            }
        }
        let want = Want {
            name: &self.domain,
            profile: self.acme.profile.as_deref(),
            key_type: self.acme.key_type,
            challenges: &self.usable,
            replaces: replaces.as_deref(),
        };
        let offer = Offer { shared, store };
        let mut placed = || outcome.orders += 1;
        let bundle = order::obtain(ca, store, &want, &offer, &manager.stop, &mut placed)?;
        let file = format!("{}.pem", self.domain);
        store.write(&file, &bundle, Some(&format!("{}.prev.pem", self.domain)))?;
        store.remove(&order::order_file(&self.domain))?;
        let pair = Pair::from_pem(&bundle, &bundle).map_err(|(_, why)| Failure::new(why))?;
        Ok(Done::Obtained(Arc::new(pair), store.version(&file)))
    }
}

/// A session with the CA: its directory read, the account's key (made and
/// stored, synced, before its first use) and the account (registered once
/// per CA, its URL stored).
fn session(acme: &Acme, store: &Store) -> Result<Ca, Failure> {
    let http = http::Http::new(client_config(acme.ca_roots.as_deref())?);
    let _account = store.lock("account")?;
    let key = match store.read("account.key")? {
        Some(pem) => {
            let der = rustls::pki_types::PrivateKeyDer::from_pem_slice(&pem)
                .map_err(|e| Failure::new(format!("{}/account.key: {e}", store.path.display())))?;
            jws::AccountKey::from_pkcs8(der.secret_der()).map_err(Failure::new)?
        }
        None => {
            let key = jws::AccountKey::generate().map_err(Failure::new)?;
            let pem = pem("PRIVATE KEY", key.pkcs8());
            store.write("account.key", pem.as_bytes(), None)?;
            key
        }
    };
    let mut ca = Ca::connect(http, &acme.directory, key)?;
    let stored: Option<serde_json::Value> = store
        .read("account.json")?
        .and_then(|b| serde_json::from_slice(&b).ok());
    match stored.as_ref().and_then(|v| v["url"].as_str()) {
        Some(url) => ca.kid = Some(url.to_owned()),
        None => {
            let eab = match &acme.eab {
                Some(eab) => {
                    let text = std::fs::read_to_string(&eab.hmac_key_file).map_err(|e| {
                        Failure::new(format!("{}: {e}", eab.hmac_key_file.display()))
                    })?;
                    let key = jws::b64_decode(&text).ok_or_else(|| {
                        Failure::new(format!(
                            "{}: not a base64url key",
                            eab.hmac_key_file.display()
                        ))
                    })?;
                    Some((eab.kid.clone(), key))
                }
                None if ca.directory.eab_required => return Err(Failure::new(
                    "the CA requires an external account binding: set `eab-kid` and `eab-hmac-key`",
                )),
                None => None,
            };
            let url = ca.account(
                &acme.contact,
                eab.as_ref().map(|(k, v)| (k.as_str(), v.as_slice())),
            )?;
            store.write(
                "account.json",
                json!({"url": url, "terms": ca.directory.terms})
                    .to_string()
                    .as_bytes(),
                None,
            )?;
        }
    }
    Ok(ca)
}

/// The TLS client configuration for the CA: its roots from `roots` (PEM),
/// else the system's.
fn client_config(roots: Option<&Path>) -> Result<Arc<ClientConfig>, Failure> {
    use rustls::pki_types::pem::PemObject;
    let mut store = rustls::RootCertStore::empty();
    match roots {
        Some(path) => {
            let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
                .map_err(|e| Failure::new(format!("{}: {e}", path.display())))?;
            for cert in certs {
                let cert = cert.map_err(|e| Failure::new(format!("{}: {e}", path.display())))?;
                store
                    .add(cert)
                    .map_err(|e| Failure::new(format!("{}: {e}", path.display())))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                let _ = store.add(cert);
            }
        }
    }
    if store.is_empty() {
        return Err(Failure::new(
            "no trust roots for the CA's HTTPS (set `ca-roots`)",
        ));
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Failure::new(e.to_string()))?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// DER as PEM.
fn pem(label: &str, der: &[u8]) -> String {
    let text = base64_std(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in text.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Standard base64 with padding (PEM's).
fn base64_std(bytes: &[u8]) -> String {
    let url = jws::b64(bytes).replace('-', "+").replace('_', "/");
    let pad = (4 - url.len() % 4) % 4;
    url + &"=".repeat(pad)
}
