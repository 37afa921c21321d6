//! The verifier threads (`spec/site.md`, "Basic authentication"): bcrypt
//! checks run here, never on a worker, at most [`MAX_WAITING`] at once; and
//! the table of credentials verified a moment ago, which the workers
//! consult so a logged-in client does not pay bcrypt per request.

use super::pool::{at_lowest_priority, IoPool};
use super::verify::{verify, Verified};
use crate::http::site::{Check, Verdict, PER_CLIENT};
use crate::sync::lock;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Checks waiting or running at once; past it a new check is answered 503.
pub(crate) const MAX_WAITING: usize = 64;
/// Verified credentials kept, and for how long.
const KEPT: usize = 4096;
const KEPT_FOR: Duration = Duration::from_secs(300);

pub(crate) struct AuthPool {
    threads: IoPool,
    waiting: Arc<Mutex<Waiting>>,
    verified: Arc<Mutex<Verified>>,
}

/// The checks waiting or running, in all and by client.
#[derive(Default)]
struct Waiting {
    all: usize,
    by_client: HashMap<Option<IpAddr>, usize>,
}

impl Waiting {
    /// Takes a place for a check of `client`, if one is free.
    fn enter(&mut self, client: Option<IpAddr>) -> bool {
        let mine = self.by_client.get(&client).copied().unwrap_or(0);
        if self.all >= MAX_WAITING || mine >= PER_CLIENT {
            return false;
        }
        *self.by_client.entry(client).or_default() += 1;
        self.all += 1;
        true
    }

    fn leave(&mut self, client: Option<IpAddr>) {
        self.all -= 1;
        if let Some(mine) = self.by_client.get_mut(&client) {
            *mine -= 1;
            if *mine == 0 {
                self.by_client.remove(&client);
            }
        }
    }
}

impl AuthPool {
    /// As many threads as the machine has cores, at most 4: bcrypt is CPU
    /// work, and more threads than cores would only queue it in the kernel.
    pub(crate) fn new() -> std::io::Result<AuthPool> {
        let threads = crate::rt::available_cores().clamp(1, 4);
        Ok(AuthPool {
            threads: IoPool::with_start("nikaia-auth", threads, at_lowest_priority)?,
            waiting: Arc::default(),
            verified: Arc::new(Mutex::new(Verified::new(KEPT, KEPT_FOR))),
        })
    }

    /// Whether `check`'s credentials were verified a moment ago.
    pub(crate) fn known(&self, check: &Check) -> bool {
        let mut table = lock(&self.verified);
        let key = table.key(check.generation, &check.user, &check.password);
        table.contains(&key, check.generation, Instant::now())
    }

    /// Runs `check` on a verifier thread, then `done` there with the
    /// verdict. `Err`: too many checks wait already, in all or from this
    /// client (the check comes back).
    pub(crate) fn submit(
        &self,
        check: Box<Check>,
        done: impl FnOnce(Box<Check>, Verdict) + Send + 'static,
    ) -> Result<(), Box<Check>> {
        let client = check.client;
        if !lock(&self.waiting).enter(client) {
            return Err(check);
        }
        let waiting = self.waiting.clone();
        let verified = self.verified.clone();
        self.threads.submit(move || {
            let valid = verify(&check.users, &check.user, &check.password);
            if valid {
                let mut table = lock(&verified);
                let key = table.key(check.generation, &check.user, &check.password);
                table.insert(key, check.generation, Instant::now());
            }
            lock(&waiting).leave(client);
            let verdict = if valid {
                Verdict::Valid
            } else {
                Verdict::Invalid
            };
            done(check, verdict);
        });
        Ok(())
    }

    /// Finishes the checks queued, then stops the threads.
    pub(crate) fn close(&self) {
        self.threads.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_has_its_share_and_everyone_the_bound() {
        let mut w = Waiting::default();
        let one = Some(IpAddr::from([192, 0, 2, 1]));
        for _ in 0..PER_CLIENT {
            assert!(w.enter(one));
        }
        assert!(!w.enter(one), "past its share");
        let mut others = 0;
        for i in 0..=255u8 {
            if w.enter(Some(IpAddr::from([198, 51, 100, i]))) {
                others += 1;
            }
        }
        assert_eq!(others, MAX_WAITING - PER_CLIENT, "past the bound");
        w.leave(one);
        assert!(w.enter(one), "a place freed");
        assert_eq!(w.all, MAX_WAITING);
        assert_eq!(
            w.by_client.len(),
            1 + MAX_WAITING - PER_CLIENT,
            "no empty entries"
        );
    }
}
