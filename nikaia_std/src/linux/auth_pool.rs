//! The verifier threads (`spec/site.md`, "Basic authentication"): bcrypt
//! checks run here, never on a worker, at most [`MAX_WAITING`] at once; and
//! the table of credentials verified a moment ago, which the workers
//! consult so a logged-in client does not pay bcrypt per request.

use super::pool::IoPool;
use super::verify::{verify, Verified};
use crate::http::site::{Check, Verdict};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Checks waiting or running at once; past it a new check is answered 503.
pub(crate) const MAX_WAITING: usize = 64;
/// Verified credentials kept, and for how long.
const KEPT: usize = 4096;
const KEPT_FOR: Duration = Duration::from_secs(300);

pub(crate) struct AuthPool {
    threads: IoPool,
    waiting: Arc<AtomicUsize>,
    verified: Arc<Mutex<Verified>>,
}

impl AuthPool {
    /// As many threads as the machine has cores, at most 4: bcrypt is CPU
    /// work, and more threads than cores would only queue it in the kernel.
    pub(crate) fn new() -> std::io::Result<AuthPool> {
        let threads = crate::rt::available_cores().clamp(1, 4);
        Ok(AuthPool {
            threads: IoPool::named("nikaia-auth", threads)?,
            waiting: Arc::default(),
            verified: Arc::new(Mutex::new(Verified::new(KEPT, KEPT_FOR))),
        })
    }

    /// Whether `check`'s credentials were verified a moment ago.
    pub(crate) fn known(&self, check: &Check) -> bool {
        let mut table = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        let key = table.key(&check.user, &check.password);
        table.contains(&key, check.generation, Instant::now())
    }

    /// Runs `check` on a verifier thread, then `done` there with the
    /// verdict. `Err`: too many checks wait already (the check comes back).
    pub(crate) fn submit(
        &self,
        check: Box<Check>,
        done: impl FnOnce(Box<Check>, Verdict) + Send + 'static,
    ) -> Result<(), Box<Check>> {
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= MAX_WAITING {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(check);
        }
        let waiting = self.waiting.clone();
        let verified = self.verified.clone();
        self.threads.submit(move || {
            let valid = verify(&check.users, &check.user, &check.password);
            if valid {
                let mut table = verified.lock().unwrap_or_else(|e| e.into_inner());
                let key = table.key(&check.user, &check.password);
                table.insert(key, check.generation, Instant::now());
            }
            waiting.fetch_sub(1, Ordering::AcqRel);
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
