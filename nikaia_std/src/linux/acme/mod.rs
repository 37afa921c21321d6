//! Automatic HTTPS (`spec/tls.md`, "Automatic HTTPS"): certificates for
//! the `[acme]` names obtained and renewed by the server itself, on a
//! thread of its own, never a worker's.
//!
//! - this file: the manager: what each name has and when it is next
//!   looked at, the thread that looks (every quarter second: the wall
//!   clock, the storage another process may have written), and a thread
//!   per name while its order runs, so one stuck name delays no other;
//!   and its [`Context`], what it uses of the running server;
//! - `schedule.rs`: when to renew, when to try again;
//! - `order.rs`: one certificate obtained; `protocol.rs`: RFC 8555 and
//!   RFC 9773 requests; `objects.rs`: the CA's objects they read;
//!   `jws.rs`: what they are signed with; `http.rs`: HTTPS to the CA;
//! - `store.rs`: what survives a crash, and the per-name locks.

mod http;
mod job;
mod jws;
mod objects;
mod offer;
mod order;
mod protocol;
mod schedule;
mod store;
mod stored;

use self::job::{Done, Job, Outcome};
use self::objects::ProblemType;
use self::offer::{challenge_file, offer_stored};
use self::schedule::Validity;
use self::store::{Store, Version};
use self::stored::load_stored;
use super::challenges::Challenges;
use super::listen::Listener;
use super::log::Logs;
use super::tls::{Pair, Tls};
use crate::rt::{format_utc, Acme, CertReport, ChallengeKind, ListenAddr};
use crate::sync::lock;
use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often the thread looks at the clock and the storage.
pub(super) const TICK: Duration = Duration::from_millis(250);
/// How soon a name whose lock another process holds is looked at again.
const ELSEWHERE: Duration = Duration::from_secs(2);

/// What ACME uses of the running server, and nothing more: made where the
/// server starts (and by a reload that adds `[acme]`).
pub(crate) struct Context {
    /// The HTTPS side, when a listener speaks TLS: the set ACME's pairs
    /// are served in.
    pub(crate) tls: Option<Arc<Tls>>,
    /// The validations in flight, answered on every listener.
    pub(crate) challenges: Arc<Challenges>,
    pub(crate) logs: Arc<Logs>,
    /// Set when the server stops.
    pub(crate) stop: Arc<AtomicBool>,
    /// What `nikaia explain` shows of each name.
    pub(crate) status: Arc<Mutex<Vec<CertReport>>>,
    /// The challenges some listener can answer: HTTP-01 on a plain TCP
    /// listener, TLS-ALPN-01 on a TLS one.
    pub(crate) answerable: Vec<ChallengeKind>,
}

impl Context {
    /// The challenges `listeners` can answer, for [`Context::answerable`].
    pub(crate) fn answerable(listeners: &[Arc<Listener>]) -> Vec<ChallengeKind> {
        let tcp = |l: &&Arc<Listener>| matches!(l.address, ListenAddr::Tcp(_));
        let plain = listeners.iter().filter(tcp).any(|l| !l.tls);
        let tls = listeners.iter().filter(tcp).any(|l| l.tls);
        let mut kinds = Vec::new();
        if plain {
            kinds.push(ChallengeKind::Http01);
        }
        if tls {
            kinds.push(ChallengeKind::TlsAlpn01);
        }
        kinds
    }
}

/// The ACME side of a running server.
pub(crate) struct Manager {
    ctx: Context,
    state: Mutex<State>,
    /// This process's mark in the storage, for another process on it:
    /// made at start, moved by a reload that moves the storage, removed
    /// when the manager stops (a clean exit, `[acme]` removed).
    presence: Mutex<Option<store::Presence>>,
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
pub(super) struct Name {
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

impl Manager {
    /// Checks the storage, serves every stored pair at once (no request to
    /// the CA first), and starts the thread that obtains the rest and
    /// renews. Refused when the storage is not private or cannot be made.
    pub(crate) fn start(ctx: Context, acme: &Acme) -> io::Result<Arc<Manager>> {
        let store = Store::open(&acme.storage, &acme.directory)?;
        let manager = Arc::new(Manager {
            state: Mutex::new(State {
                acme: acme.clone(),
                usable: usable(&ctx, acme),
                names: BTreeMap::new(),
                ari: None,
            }),
            presence: Mutex::new(store.present().ok()),
            stop: AtomicBool::new(false),
            ctx,
        });
        manager.adopt(acme, &store);
        let thread_manager = manager.clone();
        std::thread::Builder::new()
            .name("nikaia-acme".into())
            .spawn(move || thread_manager.run())?;
        Ok(manager)
    }

    /// Takes a new `[acme]` table (a reload): names added are obtained,
    /// names removed no longer renewed nor served; a new directory or
    /// storage reads the pairs stored there.
    pub(crate) fn configure(&self, acme: &Acme) -> io::Result<()> {
        let store = Store::open(&acme.storage, &acme.directory)?;
        let mut presence = lock(&self.presence);
        // The same storage keeps its mark: a second one of this process
        // is refused by the first's lock, and dropping the first would
        // remove it.
        if !presence.as_ref().is_some_and(|p| p.is_in(&store)) {
            *presence = None;
            *presence = store.present().ok();
        }
        drop(presence);
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
            state.usable = usable(&self.ctx, acme);
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
        if let Some(tls) = &self.ctx.tls {
            for name in &removed {
                tls.set_acme(name, None);
            }
        }
        self.adopt(acme, &store);
        Ok(())
    }

    /// Stops the thread (the server stops, or `[acme]` was removed); the
    /// pairs it obtained stay served until the set is rebuilt without them.
    /// The presence mark goes at once: nothing here answers from the
    /// storage any more (an upgrade's old process, draining, included).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        *lock(&self.presence) = None;
    }

    /// Adds the names of `acme` not known yet, serving their stored pairs.
    fn adopt(&self, acme: &Acme, store: &Store) {
        self.ctx
            .challenges
            .set_managed(acme.domains.iter().cloned());
        let now = SystemTime::now();
        let mut state = lock(&self.state);
        let ari = state.ari;
        for domain in &acme.domains {
            let name = state.names.entry(domain.clone()).or_default();
            if name.stored.is_none() {
                name.next = Some(now);
                load_stored(&self.ctx, store, domain, name, now, ari);
            }
        }
        drop(state);
        self.publish();
    }

    /// The thread: every tick, the storage and the clock.
    fn run(self: Arc<Self>) {
        let ctx = &self.ctx;
        let mut expiry_seen = None;
        // The storage, opened again only when a reload moves it (or after
        // it could not be opened: logged once).
        let mut store: Option<(std::path::PathBuf, String, Store)> = None;
        let mut failing = false;
        while !self.stop.load(Ordering::Relaxed) && !ctx.stop.load(Ordering::Relaxed) {
            let now = SystemTime::now();
            let (storage, directory) = {
                let state = lock(&self.state);
                (state.acme.storage.clone(), state.acme.directory.clone())
            };
            let current = store
                .as_ref()
                .is_some_and(|(s, d, _)| *s == storage && *d == directory);
            if !current {
                store = match Store::open(&storage, &directory) {
                    Ok(opened) => {
                        failing = false;
                        Some((storage, directory, opened))
                    }
                    Err(e) => {
                        if !failing {
                            ctx.logs.error(format_args!("ACME: {e}"));
                        }
                        failing = true;
                        None
                    }
                };
            }
            if let Some((_, _, store)) = &store {
                self.poll_storage(store, now);
            }
            self.start_due(now);
            // A pair that just expired stops winning over the others.
            if let Some(tls) = &ctx.tls {
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
    fn poll_storage(&self, store: &Store, now: SystemTime) {
        let ctx = &self.ctx;
        let mut state = lock(&self.state);
        let ari = state.ari;
        let mut changed = false;
        for (domain, name) in state.names.iter_mut() {
            if name.running {
                continue;
            }
            let file = format!("{domain}.pem");
            if store.version(&file) != name.stored {
                changed |= load_stored(ctx, store, domain, name, now, ari);
            }
            let file = challenge_file(domain);
            let version = store.version(&file);
            if version != name.challenge {
                name.challenge = version;
                let token = offer_stored(ctx, store, domain);
                if token != name.challenge_token {
                    if let Some(old) = &name.challenge_token {
                        ctx.challenges.withdraw(domain, Some(old));
                    }
                    name.challenge_token = token;
                }
            }
        }
        drop(state);
        if changed {
            self.publish();
        }
    }

    /// Starts a job for every name whose time has come.
    fn start_due(self: &Arc<Self>, now: SystemTime) {
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
            let manager = self.clone();
            let spawned = std::thread::Builder::new()
                .name("nikaia-acme-order".into())
                .spawn(move || {
                    let outcome = job.run(&manager);
                    manager.finish(&job.domain, outcome);
                });
            if let Err(e) = spawned {
                let name = state.names.get_mut(&domain).expect("a known name");
                name.running = false;
                name.next = Some(now + ELSEWHERE);
                (self.ctx.logs).error(format_args!("ACME {domain}: no thread for the order: {e}"));
            }
        }
    }

    /// What a job came to.
    fn finish(&self, domain: &str, outcome: Outcome) {
        let ctx = &self.ctx;
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
                ctx.logs
                    .notice(format_args!("ACME {domain}: {how}, not after {end}{next}"));
                if let Some(tls) = &ctx.tls {
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
                // The CA's Retry-After when it said one (rate limits, 503),
                // else the backoff.
                let wait = failure
                    .retry_after
                    .unwrap_or_else(|| schedule::backoff(name.failures, store::random_u64()));
                // An account the CA lost (a CA reset) is made again at
                // once, the first time.
                let wait = match failure.is(ProblemType::AccountDoesNotExist) && name.failures == 1
                {
                    true => Duration::ZERO,
                    false => wait,
                };
                name.next = Some(now + wait);
                name.last_error = Some(failure.message.clone());
                ctx.logs.error(format_args!(
                    "ACME {domain}: {}; next attempt at {}",
                    failure.message,
                    format_utc(now + wait)
                ));
            }
        }
        drop(state);
        self.publish();
    }

    /// Writes what `nikaia explain` shows of each name.
    fn publish(&self) {
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
        *lock(&self.ctx.status) = reports;
    }
}

/// A point of an order or a write where a crash must lose nothing: with
/// `NIKAIA_ACME_CRASH_AFTER=N` in the environment, the process kills
/// itself (SIGKILL) at the Nth point it passes. The tests use it to crash
/// at every one (`spec/tls.md`, "Storage"); without the variable it is a
/// counter's load.
pub(super) fn checkpoint(what: &str) {
    use std::sync::atomic::AtomicU64;
    use std::sync::OnceLock;
    static AFTER: OnceLock<Option<u64>> = OnceLock::new();
    static PASSED: AtomicU64 = AtomicU64::new(0);
    let after = AFTER.get_or_init(|| std::env::var("NIKAIA_ACME_CRASH_AFTER").ok()?.parse().ok());
    if let Some(after) = after {
        if PASSED.fetch_add(1, Ordering::SeqCst) + 1 == *after {
            eprintln!("nikaia: NIKAIA_ACME_CRASH_AFTER={after}: killed at {what}");
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::KILL,
            );
        }
    }
}

/// When a name is next looked at: its renewal (the CA's window if there
/// is one, else by its lifetime; never past the floor), or sooner, to ask
/// the CA for the window again (`ari`: whether the CA offers windows;
/// `None`: not known yet, so ask).
pub(super) fn next_time(name: &Name, now: SystemTime, ari: Option<bool>) -> Option<SystemTime> {
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

/// The challenges `acme` allows that some listener of this server can
/// answer, in the operator's order.
fn usable(ctx: &Context, acme: &Acme) -> Vec<ChallengeKind> {
    (acme.challenges.iter().copied())
        .filter(|c| ctx.answerable.contains(c))
        .collect()
}
