//! A response body the program produces piece by piece (`spec/http.md`,
//! "Produced bodies"): std pulls the next piece when the connection can
//! take more — never a push into a queue without bound — parks the
//! producer while the client does not read, and cancels it when the
//! answer will not be sent to its end. The producer runs on the worker, in
//! `pull`, and must not block there: with nothing to give yet it says
//! `Later` and resumes the body from any thread when it has more, as a
//! streamed request body's sink does.

pub(crate) mod sending;

pub(crate) use sending::{Next, Sending};

use super::body::Resume;
use super::response::{Body, IntoResponse, Response};
use bytes::Bytes;

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
}

impl<'a> Pull<'a> {
    pub(crate) fn new(room: usize, make: &'a mut dyn FnMut() -> Resume) -> Pull<'a> {
        Pull { room, make }
    }

    /// How many bytes the connection takes now.
    pub fn room(&self) -> usize {
        self.room
    }

    /// The handle that wakes this body after [`Pulled::Later`]: resumed,
    /// or dropped, it has std pull again.
    pub fn later(&mut self) -> Resume {
        (self.make)()
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
