//! A produced body being sent (`spec/http.md`, "Produced bodies"): the
//! one state machine every backend pulls through — parked while its
//! producer waits, pieces given at once gathered into runs, a promised
//! length kept, and the counters `nikaia explain` shows.

use super::{Cancelled, Produced, Producer, Pull, Pulled};
use crate::http::body::Resume;
use bytes::Bytes;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// A produced body being sent: the one place a backend pulls it (the same
/// for HTTP/1.1, HTTP/2 and every target). Dropped before its end, it
/// cancels the producer with the reason the backend set.
///
/// Two rules every backend gets from here rather than from its own
/// driver. A producer that said `Later` is *parked*: it is not pulled
/// again, whatever wakes the connection, until a handle it took is
/// resumed or dropped — so a quiet producer costs nothing, even one that
/// takes a new handle on every pull (each pull's handle replacing the
/// last). And what a producer gives at once is *gathered*: small pieces
/// are pulled one after another into one run of up to [`GATHER`] bytes
/// (or the room asked for, if less), at most [`GATHER_PULLS`] pulls a
/// run, never waiting for more — so a body made of rows leaves in frames
/// and chunks of many rows, and an event leaves as soon as it is given.
pub(crate) struct Sending {
    producer: Box<dyn Producer>,
    /// The promised length, if any.
    pub length: Option<u64>,
    /// Bytes handed to the backend so far.
    pub sent: u64,
    /// The rest of a piece larger than the room it was pulled for.
    rest: Bytes,
    /// Pulls made (the counters' and the tests' measure of a parked body).
    pub pulls: u64,
    /// The producer ended or failed (no cancel follows).
    finished: bool,
    /// How it ended, when bytes gathered before the end go first.
    outcome: Option<Over>,
    /// The last pull said `Later`: the body waits for its producer, not
    /// for the client (no send clock runs).
    pub waiting: bool,
    /// Which handles were made and woke, shared with them.
    handles: std::sync::Arc<Handles>,
    /// Why, if it is dropped unfinished.
    pub why: Cancelled,
    /// The backend's counters, if it keeps any.
    tally: Option<std::sync::Arc<Tally>>,
}

/// A produced body's handles, by the number of the pull that made each.
#[derive(Debug, Default)]
struct Handles {
    /// The newest handle made.
    made: std::sync::atomic::AtomicU64,
    /// The newest handle resumed or dropped: while it is older than
    /// `made`, a waiting body is parked.
    woken: std::sync::atomic::AtomicU64,
}

impl Handles {
    /// Whether a handle is still out: neither the newest nor a newer
    /// one has been resumed or dropped.
    fn out(&self) -> bool {
        self.woken.load(Acquire) < self.made.load(Acquire)
    }

    /// Handle `number` woke: the body goes on if it was the newest. An
    /// older one (dropped as a newer took its place) wakes nothing, not
    /// even a turn of the connection.
    fn woke(&self, number: u64, theirs: Resume) {
        self.woken.fetch_max(number, Release);
        if number >= self.made.load(Acquire) {
            drop(theirs);
        } else {
            theirs.defuse();
        }
    }
}

/// The most bytes gathered from pieces given at once into one run.
pub(crate) const GATHER: usize = 64 << 10;

/// The most pulls one run takes (the fairness bound: a worker serves its
/// other connections after at most this many).
pub(crate) const GATHER_PULLS: u64 = 1024;

/// What became of produced bodies: the backend's counters (`nikaia
/// explain`).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub started: std::sync::atomic::AtomicU64,
    pub pulls: std::sync::atomic::AtomicU64,
    pub bytes: std::sync::atomic::AtomicU64,
    pub ended: std::sync::atomic::AtomicU64,
    pub failed: std::sync::atomic::AtomicU64,
    pub cancelled: std::sync::atomic::AtomicU64,
}

/// What the backend sends next.
#[derive(Debug)]
pub(crate) enum Next {
    Bytes(Bytes),
    /// Nothing until the resume the producer holds (or one posted now).
    Wait,
    End,
    /// The producer failed, or gave more or fewer bytes than promised.
    Fail(String),
}

impl Tally {
    /// The counters now, as `nikaia explain` shows them.
    pub(crate) fn report(&self) -> crate::rt::ProducedReport {
        let load = |c: &std::sync::atomic::AtomicU64| c.load(Relaxed);
        crate::rt::ProducedReport {
            started: load(&self.started),
            pulls: load(&self.pulls),
            bytes: load(&self.bytes),
            ended: load(&self.ended),
            failed: load(&self.failed),
            cancelled: load(&self.cancelled),
        }
    }
}

/// What one pull gave, as the gathering sees it.
enum Gave {
    Piece(Bytes),
    /// An empty piece: nothing to send, pull again.
    Empty,
    /// `Later`: nothing now.
    Nothing,
    Over(Over),
}

/// How a producer's body ended.
enum Over {
    End,
    /// Failed (counted when it failed).
    Failed(String),
}

impl Sending {
    pub(crate) fn new(produced: Produced) -> Sending {
        Sending {
            producer: produced.producer,
            length: produced.length,
            sent: 0,
            rest: Bytes::new(),
            pulls: 0,
            finished: false,
            outcome: None,
            waiting: false,
            handles: std::sync::Arc::default(),
            why: Cancelled::Gone,
            tally: None,
        }
    }

    /// Counts what becomes of it in `tally` (from now: it starts).
    pub(crate) fn count_in(&mut self, tally: &std::sync::Arc<Tally>) {
        tally.started.fetch_add(1, Relaxed);
        self.tally = Some(tally.clone());
    }

    fn count(&self, what: impl Fn(&Tally) -> &std::sync::atomic::AtomicU64, n: u64) {
        if let Some(t) = &self.tally {
            what(t).fetch_add(n, Relaxed);
        }
    }

    fn handle_out(&self) -> bool {
        self.handles.out()
    }

    /// The next bytes, at most `room` of them: what is left of the last
    /// piece, then what the producer gives now, gathered (see the type's
    /// doc). `make` makes the backend's handle that resumes a body that
    /// waits; a producer that says `Later` holding no handle is resumed
    /// at once (posted, not called in place).
    pub(crate) fn next(&mut self, room: usize, make: &mut dyn FnMut() -> Resume) -> Next {
        if self.waiting && self.handle_out() {
            // Parked: nothing is pulled until its handle wakes it.
            return Next::Wait;
        }
        self.waiting = false;
        if let Some(over) = self.outcome.take() {
            return self.over(over);
        }
        let room = room.max(1);
        let want = room.min(GATHER);
        // The first piece is kept as it came (no copy when it is enough);
        // a second one starts the run they are gathered into.
        let mut first = std::mem::take(&mut self.rest);
        let mut run = bytes::BytesMut::new();
        let mut pulls = 0;
        while first.len() + run.len() < want && pulls < GATHER_PULLS && !self.finished {
            pulls += 1;
            match self.pull(room, make) {
                Gave::Piece(b) if first.is_empty() && run.is_empty() => first = b,
                Gave::Empty => {}
                Gave::Piece(b) => {
                    if run.is_empty() {
                        run.reserve(want);
                        run.extend_from_slice(&std::mem::take(&mut first));
                    }
                    let fits = b.len().min(want - run.len());
                    run.extend_from_slice(&b[..fits]);
                    self.rest = b.slice(fits..);
                }
                Gave::Nothing => {
                    let gathered = !first.is_empty() || !run.is_empty();
                    if self.handle_out() {
                        // What was gathered goes now; the body then waits
                        // for the producer's handle.
                        self.waiting = true;
                    } else if !gathered {
                        self.wake_now(make);
                        self.waiting = true;
                    }
                    break;
                }
                Gave::Over(over) => {
                    self.outcome = Some(over);
                    break;
                }
            }
        }
        let bytes = match run.is_empty() {
            true => first,
            false => run.freeze(),
        };
        if !bytes.is_empty() {
            return self.take(bytes, room);
        }
        if let Some(over) = self.outcome.take() {
            return self.over(over);
        }
        if self.finished {
            return Next::End;
        }
        if !self.waiting {
            // Empty pieces only, as many as a run takes: the connection's
            // others go first, and it is pulled again after.
            self.wake_now(make);
            self.waiting = true;
        }
        Next::Wait
    }

    /// `bytes` handed to the backend, at most `room` of them (the rest
    /// is kept for the next call), checked against a promised length.
    fn take(&mut self, mut bytes: Bytes, room: usize) -> Next {
        if bytes.len() > room {
            self.rest = bytes.split_off(room);
        }
        self.sent += bytes.len() as u64;
        self.count(|t| &t.bytes, bytes.len() as u64);
        if let Some(n) = self.length.filter(|n| self.sent > *n) {
            self.outcome = None;
            let over = self.fail(format!(
                "the producer gave more than the {n} bytes it promised"
            ));
            return self.over(over);
        }
        Next::Bytes(bytes)
    }

    /// The end delivered: a promised length kept, or the failure.
    fn over(&mut self, over: Over) -> Next {
        match over {
            Over::Failed(why) => Next::Fail(why),
            Over::End => match self.length {
                Some(n) if n != self.sent => {
                    self.count(|t| &t.failed, 1);
                    Next::Fail(format!(
                        "the producer ended after {} of the {n} bytes it promised",
                        self.sent
                    ))
                }
                _ => {
                    self.count(|t| &t.ended, 1);
                    Next::End
                }
            },
        }
    }

    /// Has the body pulled again soon: a handle made and dropped now
    /// (the backend posts the pull; it is not made in place).
    fn wake_now(&mut self, make: &mut dyn FnMut() -> Resume) {
        self.handles.made.fetch_max(self.pulls, Release);
        self.handles.woke(self.pulls, make());
    }

    /// One pull, counted; the handles it makes say, when they wake,
    /// which pull made them.
    fn pull(&mut self, room: usize, make: &mut dyn FnMut() -> Resume) -> Gave {
        self.pulls += 1;
        self.count(|t| &t.pulls, 1);
        let number = self.pulls;
        let handles = self.handles.clone();
        let mut ours = || {
            handles.made.fetch_max(number, Release);
            let theirs = make();
            let handles = handles.clone();
            // Marked woken before the backend's handle posts the pull.
            Resume::new(move || handles.woke(number, theirs))
        };
        let mut pull = Pull::new(room, &mut ours);
        let producer = &mut self.producer;
        let pulled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| producer.pull(&mut pull)));
        match pulled {
            Ok(Pulled::Piece(b)) if b.is_empty() => Gave::Empty,
            Ok(Pulled::Piece(b)) => Gave::Piece(b),
            Ok(Pulled::Later) => Gave::Nothing,
            Ok(Pulled::End) => {
                self.finished = true;
                Gave::Over(Over::End)
            }
            Ok(Pulled::Failed(why)) => Gave::Over(self.fail(why)),
            Err(_) => Gave::Over(self.fail("the producer panicked".to_owned())),
        }
    }

    /// It cannot go on: counted, and no cancel follows.
    fn fail(&mut self, why: String) -> Over {
        self.finished = true;
        self.count(|t| &t.failed, 1);
        Over::Failed(why)
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        if !self.finished {
            self.finished = true;
            self.count(|t| &t.cancelled, 1);
            let why = self.why;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.producer.cancel(why)
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Mutex};

    /// A backend's handle maker that counts the pulls it posts.
    fn poster() -> (Arc<AtomicUsize>, impl FnMut() -> Resume) {
        let posted = Arc::new(AtomicUsize::new(0));
        let count = posted.clone();
        let make = move || {
            let count = count.clone();
            Resume::new(move || {
                count.fetch_add(1, Relaxed);
            })
        };
        (posted, make)
    }

    fn bytes_of(next: Next) -> Bytes {
        match next {
            Next::Bytes(b) => b,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn pieces_given_at_once_are_gathered_up_to_the_room_and_the_pull_bound() {
        let rows = (0..10_000u32).map(|i| format!("{i:>15}\n"));
        let mut s = Sending::new(Produced::from_iter(rows));
        let (posted, mut make) = poster();
        // 16-byte rows: a run of at most GATHER_PULLS of them.
        let run = bytes_of(s.next(64 << 10, &mut make));
        assert_eq!(run.len(), 16 * GATHER_PULLS as usize);
        assert_eq!(&run[..16], b"              0\n");
        // A room smaller than a run: filled exactly, the rest kept.
        let run = bytes_of(s.next(1000, &mut make));
        assert_eq!(run.len(), 1000);
        assert_eq!(s.pulls, GATHER_PULLS + 63);
        let mut all = 16 * GATHER_PULLS + 1000;
        loop {
            match s.next(64 << 10, &mut make) {
                Next::Bytes(b) => all += b.len() as u64,
                Next::End => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(all, 160_000);
        assert_eq!(posted.load(Relaxed), 0, "nothing waited");
    }

    #[test]
    fn a_large_piece_goes_as_it_came_and_its_rest_next() {
        let big = Bytes::from(vec![7u8; 100_000]);
        let mut s = Sending::new(Produced::from_iter([big.clone()]).length(100_000));
        let (_, mut make) = poster();
        let first = bytes_of(s.next(64 << 10, &mut make));
        assert_eq!(first.len(), 64 << 10);
        assert_eq!(first.as_ptr(), big.as_ptr(), "no copy");
        assert_eq!(s.pulls, 1);
        // The rest, then a pull that finds the end (it comes after).
        assert_eq!(
            bytes_of(s.next(64 << 10, &mut make)).len(),
            100_000 - (64 << 10)
        );
        assert_eq!(s.pulls, 2);
        assert!(matches!(s.next(64 << 10, &mut make), Next::End));
    }

    #[test]
    fn the_end_after_gathered_bytes_comes_after_them_and_checks_the_length() {
        let pieces = [&b"ab"[..], b"cd", b"ef"].map(Bytes::from_static);
        let mut s = Sending::new(Produced::from_iter(pieces.clone()).length(6));
        let (_, mut make) = poster();
        assert_eq!(&bytes_of(s.next(100, &mut make))[..], b"abcdef");
        assert!(matches!(s.next(100, &mut make), Next::End));
        let mut s = Sending::new(Produced::from_iter(pieces.clone()).length(7));
        assert_eq!(&bytes_of(s.next(100, &mut make))[..], b"abcdef");
        assert!(matches!(s.next(100, &mut make), Next::Fail(_)));
    }

    /// Gives what is queued; takes a new handle every pull, dropping the
    /// one before.
    struct Restless(Arc<Mutex<(Vec<Bytes>, Option<Resume>)>>);

    impl Producer for Restless {
        fn pull(&mut self, pull: &mut Pull<'_>) -> Pulled {
            let mut q = self.0.lock().unwrap();
            let old = q.1.replace(pull.later());
            let piece = q.0.pop();
            drop(q);
            drop(old);
            piece.map_or(Pulled::Later, Pulled::Piece)
        }
    }

    #[test]
    fn a_waiting_producer_is_pulled_only_when_its_newest_handle_wakes() {
        let q = Arc::new(Mutex::new((Vec::new(), None)));
        let mut s = Sending::new(Produced::new(Restless(q.clone())));
        let (posted, mut make) = poster();
        assert!(matches!(s.next(100, &mut make), Next::Wait));
        assert_eq!(s.pulls, 1);
        // Whatever wakes the connection now pulls nothing.
        for _ in 0..10 {
            assert!(matches!(s.next(100, &mut make), Next::Wait));
        }
        assert_eq!((s.pulls, posted.load(Relaxed)), (1, 0));
        // A piece, and the handle resumed: one run, then parked again
        // (the old handle dropped inside the second pull wakes nothing,
        // and posts nothing).
        let handle = {
            let mut q = q.lock().unwrap();
            q.0.push(Bytes::from_static(b"tick"));
            q.1.take().unwrap()
        };
        handle.resume();
        assert_eq!(posted.load(Relaxed), 1);
        assert_eq!(&bytes_of(s.next(100, &mut make))[..], b"tick");
        assert_eq!(s.pulls, 3);
        for _ in 0..10 {
            assert!(matches!(s.next(100, &mut make), Next::Wait));
        }
        assert_eq!((s.pulls, posted.load(Relaxed)), (3, 1));
    }

    /// Says `Later` and keeps no handle: resumed at once, posted.
    struct Careless(u32);

    impl Producer for Careless {
        fn pull(&mut self, _pull: &mut Pull<'_>) -> Pulled {
            self.0 += 1;
            match self.0 {
                1 => Pulled::Later,
                2 => Pulled::Piece(Bytes::from_static(b"x")),
                _ => Pulled::End,
            }
        }
    }

    #[test]
    fn later_without_a_handle_is_pulled_again_after_a_post() {
        let mut s = Sending::new(Produced::new(Careless(0)));
        let (posted, mut make) = poster();
        assert!(matches!(s.next(100, &mut make), Next::Wait));
        assert_eq!(posted.load(Relaxed), 1);
        assert_eq!(&bytes_of(s.next(100, &mut make))[..], b"x");
        assert!(matches!(s.next(100, &mut make), Next::End));
    }
}
