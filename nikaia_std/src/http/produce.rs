//! A response body the program produces piece by piece (`spec/http.md`,
//! "Produced bodies"): std pulls the next piece when the connection can
//! take more — never a push into a queue without bound — parks the
//! producer while the client does not read, and cancels it when the
//! answer will not be sent to its end. The producer runs on the worker, in
//! `pull`, and must not block there: with nothing to give yet it says
//! `Later` and resumes the body from any thread when it has more, as a
//! streamed request body's sink does.

use super::body::Resume;
use super::response::{Body, IntoResponse, Response};
use bytes::Bytes;
use std::sync::atomic::Ordering::Relaxed;

/// The source of a produced body: what std pulls.
///
/// ```no_run
/// use nikaia_std::http::{Produced, Server};
/// // A CSV made row by row, as the client takes it.
/// Server::new()
///     .route("/rows.csv", |_| {
///         let rows = (0..1_000_000u32).map(|i| format!("{i},{}\n", i * i));
///         Produced::from_iter(rows).content_type("text/csv")
///     })
///     .run()
///     .unwrap();
/// ```
pub trait Producer: Send + 'static {
    /// The next piece, when the connection can take it: at most about
    /// [`Pull::room`] bytes is what it takes now (a larger piece is sent
    /// in parts before the next pull). [`Pulled::Later`] when there is
    /// nothing yet: keep [`Pull::later`]'s handle and resume it (from any
    /// thread) once there is more.
    fn pull(&mut self, pull: &mut Pull<'_>) -> Pulled;

    /// The body will not be sent to its end (the client left, reset its
    /// stream or stopped reading for `send-timeout`, or the server is
    /// stopping): the producer stops here. Called at most once, never
    /// after `End` or `Failed`.
    fn cancel(&mut self, why: Cancelled) {
        let _ = why;
    }
}

/// What a pull gave.
#[derive(Debug)]
pub enum Pulled {
    /// These bytes come next.
    Piece(Bytes),
    /// Nothing yet: the body waits for the resume of [`Pull::later`].
    Later,
    /// The body is whole.
    End,
    /// The producer cannot go on: the answer ends the way its protocol
    /// can (HTTP/1.1 without the last chunk, HTTP/2 with `RST_STREAM
    /// INTERNAL_ERROR`), and this is logged.
    Failed(String),
}

/// Why a produced body was cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cancelled {
    /// The client closed the connection, or it failed.
    Gone,
    /// The client reset the stream (HTTP/2).
    Reset,
    /// The client took nothing for `send-timeout`.
    TimedOut,
    /// The server is stopping (or handing over to an upgrade): the body
    /// was ended where its protocol could end it.
    Stopping,
}

/// What a pull may take: room, and the handle that resumes a body that
/// waits.
pub struct Pull<'a> {
    room: usize,
    make: &'a mut dyn FnMut() -> Resume,
    taken: bool,
}

impl<'a> Pull<'a> {
    pub(crate) fn new(room: usize, make: &'a mut dyn FnMut() -> Resume) -> Pull<'a> {
        Pull {
            room,
            make,
            taken: false,
        }
    }

    /// How many bytes the connection takes now.
    pub fn room(&self) -> usize {
        self.room
    }

    /// The handle that wakes this body after [`Pulled::Later`]: resumed,
    /// or dropped, it has std pull again.
    pub fn later(&mut self) -> Resume {
        self.taken = true;
        (self.make)()
    }

    /// Whether the producer took a handle to wake the body with.
    pub(crate) fn took_later(&self) -> bool {
        self.taken
    }
}

/// A produced response body: a [`Producer`], and its length when the
/// program knows it (else it is sent chunked on HTTP/1.1 and
/// close-delimited on HTTP/1.0).
pub struct Produced {
    pub(crate) producer: Box<dyn Producer>,
    pub(crate) length: Option<u64>,
    pub(crate) content_type: Option<&'static str>,
}

impl std::fmt::Debug for Produced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Produced")
            .field("length", &self.length)
            .finish_non_exhaustive()
    }
}

impl Produced {
    /// The body `producer` produces.
    pub fn new(producer: impl Producer) -> Produced {
        Produced {
            producer: Box::new(producer),
            length: None,
            content_type: None,
        }
    }

    /// The body an iterator's items make, one item a pull: for a body
    /// whose pieces are computed and never wait.
    #[allow(clippy::should_implement_trait)] // a body, not a collection
    pub fn from_iter<I>(items: I) -> Produced
    where
        I: IntoIterator,
        I::IntoIter: Send + 'static,
        I::Item: Into<Bytes>,
    {
        Produced::new(Items(items.into_iter()))
    }

    /// The body's length, promised: sent as `Content-Length`. A producer
    /// that gives more or fewer bytes ends the connection short, logged,
    /// as a file that shrank does.
    pub fn length(mut self, length: u64) -> Produced {
        self.length = Some(length);
        self
    }

    /// The `Content-Type` unless a header says another
    /// (`application/octet-stream` otherwise).
    pub fn content_type(mut self, content_type: &'static str) -> Produced {
        self.content_type = Some(content_type);
        self
    }
}

impl IntoResponse for Produced {
    fn into_response(self) -> Response {
        let mut r = Response::new(200);
        r.default_type = Some(self.content_type.unwrap_or("application/octet-stream"));
        r.body = Body::Produced(Held(std::sync::Arc::new(std::sync::Mutex::new(Some(self)))));
        r
    }
}

/// A produced body inside a [`Response`], which is `Clone`: the clones
/// share it, and the first answer sent takes it (a clone sent after is
/// empty).
#[derive(Clone, Debug)]
pub(crate) struct Held(std::sync::Arc<std::sync::Mutex<Option<Produced>>>);

impl Held {
    /// The length it promised, if it is still here and promised one.
    pub(crate) fn length(&self) -> Option<u64> {
        let held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        held.as_ref().and_then(|p| p.length)
    }

    /// The body, once.
    pub(crate) fn take(&self) -> Option<Produced> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// An iterator's items, a pull each.
struct Items<I>(I);

impl<I> Producer for Items<I>
where
    I: Iterator + Send + 'static,
    I::Item: Into<Bytes>,
{
    fn pull(&mut self, _pull: &mut Pull<'_>) -> Pulled {
        match self.0.next() {
            Some(item) => Pulled::Piece(item.into()),
            None => Pulled::End,
        }
    }
}

/// A produced body being sent: the one place a backend pulls it (the same
/// for HTTP/1.1, HTTP/2 and every target). Dropped before its end, it
/// cancels the producer with the reason the backend set.
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
    finished: bool,
    /// The last pull said `Later`: the body waits for its producer, not
    /// for the client (no send clock runs).
    pub waiting: bool,
    /// Why, if it is dropped unfinished.
    pub why: Cancelled,
    /// The backend's counters, if it keeps any.
    tally: Option<std::sync::Arc<Tally>>,
}

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

impl Sending {
    pub(crate) fn new(produced: Produced) -> Sending {
        Sending {
            producer: produced.producer,
            length: produced.length,
            sent: 0,
            rest: Bytes::new(),
            pulls: 0,
            finished: false,
            waiting: false,
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

    /// The next bytes, at most `room` of them: what is left of the last
    /// piece, else a pull. `make` makes the handle that resumes a body
    /// that waits; a producer that says `Later` without taking one is
    /// resumed at once (posted, not called in place).
    pub(crate) fn next(&mut self, room: usize, make: &mut dyn FnMut() -> Resume) -> Next {
        let next = self.pulled(room.max(1), make);
        self.waiting = matches!(next, Next::Wait);
        next
    }

    fn pulled(&mut self, room: usize, make: &mut dyn FnMut() -> Resume) -> Next {
        if self.rest.is_empty() {
            if self.finished {
                return Next::End;
            }
            self.pulls += 1;
            self.count(|t| &t.pulls, 1);
            let mut pull = Pull::new(room, make);
            let pulled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.producer.pull(&mut pull)
            }));
            let took = pull.took_later();
            match pulled {
                Ok(Pulled::Piece(b)) => self.rest = b,
                Ok(Pulled::Later) => {
                    if !took {
                        drop(make());
                    }
                    return Next::Wait;
                }
                Ok(Pulled::End) => {
                    self.finished = true;
                    return match self.length {
                        Some(n) if n != self.sent => self.fail(format!(
                            "the producer ended after {} of the {n} bytes it promised",
                            self.sent
                        )),
                        _ => {
                            self.count(|t| &t.ended, 1);
                            Next::End
                        }
                    };
                }
                Ok(Pulled::Failed(why)) => return self.fail(why),
                Err(_) => return self.fail("the producer panicked".to_owned()),
            }
            if self.rest.is_empty() {
                // An empty piece: nothing to send; pull again next time.
                drop(make());
                return Next::Wait;
            }
        }
        let take = self.rest.len().min(room);
        let bytes = self.rest.split_to(take);
        self.sent += bytes.len() as u64;
        self.count(|t| &t.bytes, bytes.len() as u64);
        if let Some(n) = self.length.filter(|n| self.sent > *n) {
            return self.fail(format!(
                "the producer gave more than the {n} bytes it promised"
            ));
        }
        Next::Bytes(bytes)
    }

    /// It cannot go on: counted, and no cancel follows.
    fn fail(&mut self, why: String) -> Next {
        self.finished = true;
        self.count(|t| &t.failed, 1);
        Next::Fail(why)
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
