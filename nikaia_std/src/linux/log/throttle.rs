//! The rate limit of error lines that a crowd could repeat (failed TLS
//! handshakes, HTTP/2 protocol errors, answers that made no progress):
//! one line per 10 seconds, saying how many were left out since the last.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A rate limit for one kind of error line: the first event in a 10-second
/// window is logged, with the number left out since the last line, so a
/// scan or a crowd of slow clients cannot flood the error log.
#[derive(Default)]
pub(crate) struct Throttle {
    /// Events left out of the log since the last line.
    unlogged: AtomicU64,
    /// Second (since the Unix epoch) of the last line.
    last_logged: AtomicU64,
}

impl Throttle {
    /// `Some(left out)`: log this one, ending the line with what was not.
    pub(crate) fn pass(&self) -> Option<Unlogged> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let last = self.last_logged.load(Ordering::Relaxed);
        if now >= last + 10
            && self
                .last_logged
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            Some(Unlogged {
                count: self.unlogged.swap(0, Ordering::Relaxed),
                what: None,
            })
        } else {
            self.unlogged.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

/// How many events a [`Throttle`] left out of the log since its last line,
/// as the next line ends: ` (3 more not logged since the last line)`, and
/// nothing at all when none were.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unlogged {
    count: u64,
    /// What the events are called (`failures`), if the line says.
    what: Option<&'static str>,
}

impl Unlogged {
    /// The same, naming what was left out: ` (3 more failures not logged …)`.
    pub(crate) fn of(self, what: &'static str) -> Unlogged {
        Unlogged {
            what: Some(what),
            ..self
        }
    }
}

impl fmt::Display for Unlogged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.count, self.what) {
            (0, _) => Ok(()),
            (n, Some(what)) => write!(f, " ({n} more {what} not logged since the last line)"),
            (n, None) => write!(f, " ({n} more not logged since the last line)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_says_nothing_of_lines_left_out_and_a_later_one_counts_them() {
        let throttle = Throttle::default();
        let first = throttle.pass().expect("the first event is logged");
        assert_eq!(format!("x{first}"), "x");
        assert_eq!(format!("x{}", first.of("failures")), "x");
        for _ in 0..3 {
            assert_eq!(throttle.pass(), None, "within the 10 s window");
        }
        // The window is over (as if its line were 10 s old).
        throttle.last_logged.fetch_sub(10, Ordering::Relaxed);
        let next = throttle.pass().expect("a new window");
        assert_eq!(
            format!("x{}", next.of("failures")),
            "x (3 more failures not logged since the last line)"
        );
        assert_eq!(
            format!("x{next}"),
            "x (3 more not logged since the last line)"
        );
    }
}
