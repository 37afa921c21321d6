//! When a certificate is renewed and when a failed attempt is tried again
//! (`spec/tls.md`, "Renewal"): from the certificate's own dates, the CA's
//! renewal window (ARI, RFC 9773) where it offers one, and a floor no
//! window can move; all in wall-clock time, read against the clock at
//! least once a minute, so a host that slept renews soon after it wakes.

use std::time::{Duration, SystemTime};

/// A certificate's validity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Validity {
    pub not_before: SystemTime,
    pub not_after: SystemTime,
}

impl Validity {
    fn lifetime(&self) -> Duration {
        self.not_after
            .duration_since(self.not_before)
            .unwrap_or_default()
    }

    /// Without a window from the CA: at two thirds of the lifetime, or at
    /// half of it for a certificate of ten days or less.
    pub(super) fn by_lifetime(&self) -> SystemTime {
        let life = self.lifetime();
        let part = match life <= Duration::from_secs(10 * 86_400) {
            true => life / 2,
            false => life * 2 / 3,
        };
        self.not_before + part
    }

    /// The floor: when a fiftieth of the lifetime is left, the certificate
    /// is renewed whatever a window says.
    pub(super) fn floor(&self) -> SystemTime {
        self.not_after - self.lifetime() / 50
    }

    /// When to renew: the time chosen in the CA's window if there is one,
    /// else by the lifetime; never after the floor.
    pub(super) fn due(&self, window_choice: Option<SystemTime>) -> SystemTime {
        window_choice
            .unwrap_or_else(|| self.by_lifetime())
            .min(self.floor())
    }
}

/// A renewal window a CA suggested (ARI): usable only if it ends after it
/// starts (RFC 9773 §4.2).
pub(super) fn choose_in_window(
    start: SystemTime,
    end: SystemTime,
    random: u64,
) -> Option<SystemTime> {
    let span = end.duration_since(start).ok().filter(|d| !d.is_zero())?;
    let at = span.as_secs_f64() * (random as f64 / u64::MAX as f64);
    Some(start + Duration::from_secs_f64(at))
}

/// How long to wait after the `failures`th failure in a row (1 and up):
/// about a minute first, doubling, at most three hours, with a fifth of
/// jitter either way from `random`, so names and processes drift apart.
pub(super) fn backoff(failures: u32, random: u64) -> Duration {
    const FIRST: u64 = 60;
    const MOST: u64 = 3 * 3600;
    let base = FIRST
        .saturating_mul(1 << failures.saturating_sub(1).min(16))
        .min(MOST);
    let jitter = 0.8 + 0.4 * (random as f64 / u64::MAX as f64);
    Duration::from_secs_f64(base as f64 * jitter)
}

/// How long to wait before asking the CA for a renewal window again: its
/// `Retry-After` (the CA's load is the CA's to set), at most a day; six
/// hours without one.
pub(super) fn window_poll(retry_after: Option<Duration>) -> Duration {
    retry_after
        .unwrap_or(Duration::from_secs(6 * 3600))
        .clamp(Duration::from_secs(1), Duration::from_secs(86_400))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn at(days: f64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs_f64(days * 86_400.0)
    }

    #[test]
    fn renewal_by_the_lifetime_read_from_the_certificate() {
        // 90 days: at 60; 45 days: at 30; 6.67 days (shortlived): at half.
        let v = Validity {
            not_before: at(0.0),
            not_after: at(90.0),
        };
        assert_eq!(v.by_lifetime(), at(60.0));
        assert_eq!(v.due(None), at(60.0));
        let v = Validity {
            not_before: at(0.0),
            not_after: at(45.0),
        };
        assert_eq!(v.due(None), at(30.0));
        let v = Validity {
            not_before: at(0.0),
            not_after: at(160.0 / 24.0),
        };
        assert_eq!(v.due(None), at(80.0 / 24.0));
        // 30 seconds: at 15.
        let v = Validity {
            not_before: at(0.0),
            not_after: at(30.0 / 86_400.0),
        };
        assert_eq!(v.due(None), at(15.0 / 86_400.0));
    }

    #[test]
    fn a_window_moves_the_renewal_but_never_past_the_floor() {
        let v = Validity {
            not_before: at(0.0),
            not_after: at(90.0),
        };
        assert_eq!(v.due(Some(at(10.0))), at(10.0));
        // A window late in the life is held to the floor: 1/50 left.
        assert_eq!(v.due(Some(at(89.9))), at(90.0 - 90.0 / 50.0));
        let chosen = choose_in_window(at(20.0), at(22.0), u64::MAX / 2).unwrap();
        assert!(chosen >= at(20.0) && chosen <= at(22.0));
        assert_eq!(choose_in_window(at(20.0), at(20.0), 5), None);
        assert_eq!(choose_in_window(at(22.0), at(20.0), 5), None);
    }

    #[test]
    fn failures_back_off_from_a_minute_to_hours_with_jitter() {
        let mid = u64::MAX / 2;
        assert_eq!(backoff(1, mid).as_secs(), 60);
        assert_eq!(backoff(2, mid).as_secs(), 120);
        assert_eq!(backoff(9, mid).as_secs(), 3 * 3600);
        assert_eq!(backoff(500, mid).as_secs(), 3 * 3600);
        assert_eq!(backoff(1, 0).as_secs(), 48);
        assert_eq!(backoff(1, u64::MAX).as_secs(), 72);
        assert_eq!(window_poll(Some(Duration::ZERO)).as_secs(), 1);
        assert_eq!(
            window_poll(Some(Duration::from_secs(90_000))).as_secs(),
            86_400
        );
        assert_eq!(window_poll(None).as_secs(), 6 * 3600);
    }
}
