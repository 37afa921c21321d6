//! How a route takes its request body (`spec/http.md`, "Request bodies"):
//! not at all ([`Server::route`]), whole up to a limit
//! ([`Server::method`], the handler gets a [`WithBody`]), or streamed
//! ([`Server::stream`], a [`Sink`] fed each piece as it arrives). The
//! declaration is read at head time, before any byte of the body, by
//! [`rule`] and [`admit`]: what is refused (413, 415), whether `100
//! Continue` goes out, and how the body is read. Protocol-independent:
//! HTTP/1.1 and HTTP/2 ask the same questions here.
//!
//! [`Server::route`]: super::Server::route
//! [`Server::method`]: super::Server::method
//! [`Server::stream`]: super::Server::stream

use super::request::Request;
use super::response::{IntoResponse, Response};
use crate::rt::Runtime;
use bytes::Bytes;

/// A request with its whole body: what a [`Server::method`] handler gets.
/// It is the [`Request`] (by `Deref`) and [`WithBody::body`].
///
/// [`Server::method`]: super::Server::method
pub struct WithBody<'a> {
    pub(crate) req: &'a Request,
}

impl WithBody<'_> {
    /// The whole body, as sent (its `Content-Encoding` undone by no one).
    pub fn body(&self) -> &Bytes {
        &self.req.body
    }
}

impl std::ops::Deref for WithBody<'_> {
    type Target = Request;

    fn deref(&self) -> &Request {
        self.req
    }
}

/// What a streamed route's handler makes for a request: it is given the
/// body a piece at a time, on the worker that reads it, as the pieces
/// arrive; then it answers. The worker never waits for it: a sink that
/// cannot take the next piece yet pauses the body ([`Flow::pause`]) and
/// resumes it from wherever it likes.
pub trait Sink: Send + 'static {
    /// What the sink answers with once the whole body arrived.
    type Answer: IntoResponse;

    /// The next piece of the body, in order, never empty. It is lent for
    /// this call: keep what is needed of it by copying (std holds nothing
    /// of a piece once the call returns, so nothing more is buffered).
    fn piece(&mut self, piece: &[u8], flow: &mut Flow<'_>);

    /// The whole body arrived: the answer.
    fn end(self, req: &Request) -> Self::Answer;

    /// The body will not arrive whole (the client left or reset the
    /// stream, a limit or a clock ended it, the server stops): nothing is
    /// answered by the sink. The default does nothing.
    fn abort(self, why: Aborted)
    where
        Self: Sized,
    {
        let _ = why;
    }
}

/// What a streamed route's handler returns from a request's head: the
/// [`Sink`] to take its body, or — as `Err` of a `Result` — the answer
/// instead (a failed check of the head: its credentials, its type, its
/// size): then no byte of the body is read for the program and no `100
/// Continue` is sent.
pub trait IntoSink {
    /// The sink that takes the body.
    type Sink: Sink;

    /// The sink, or the answer that replaces it.
    fn into_sink(self) -> Result<Self::Sink, Response>;
}

impl<S: Sink> IntoSink for S {
    type Sink = S;

    fn into_sink(self) -> Result<S, Response> {
        Ok(self)
    }
}

impl<S: Sink, R: IntoResponse> IntoSink for Result<S, R> {
    type Sink = S;

    fn into_sink(self) -> Result<S, Response> {
        self.map_err(IntoResponse::into_response)
    }
}

/// Why a streamed body ended before its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Aborted {
    /// The client closed the connection or reset the stream.
    Gone,
    /// It grew past the route's limit (413).
    TooLarge,
    /// A body clock ran out: too long a pause, or too slow (408).
    TooSlow,
    /// The framing was broken (a bad chunk, more than `Content-Length`).
    Malformed,
    /// The server is stopping.
    Stopping,
}

/// What a sink may do while it takes a piece.
pub struct Flow<'a> {
    pause: &'a mut dyn FnMut() -> Resume,
    paused: bool,
}

impl<'a> Flow<'a> {
    /// A flow whose [`Flow::pause`] makes its handle with `pause`.
    pub(crate) fn new(pause: &'a mut dyn FnMut() -> Resume) -> Flow<'a> {
        Flow {
            pause,
            paused: false,
        }
    }

    /// Takes no more body after this piece until the returned handle is
    /// resumed (or dropped): HTTP/1.1 stops reading the connection, HTTP/2
    /// stops granting the stream window. The body's clocks stop meanwhile.
    pub fn pause(&mut self) -> Resume {
        self.paused = true;
        (self.pause)()
    }

    /// Whether the sink paused the body.
    pub(crate) fn paused(&self) -> bool {
        self.paused
    }
}

/// A paused body's handle: resuming it (from any thread) lets the body go
/// on; dropping it does too.
pub struct Resume {
    wake: Option<Box<dyn FnOnce() + Send>>,
}

impl Resume {
    /// A handle that runs `wake` when resumed or dropped.
    pub(crate) fn new(wake: impl FnOnce() + Send + 'static) -> Resume {
        Resume {
            wake: Some(Box::new(wake)),
        }
    }

    /// Lets the body go on.
    pub fn resume(mut self) {
        if let Some(wake) = self.wake.take() {
            wake();
        }
    }

    /// Drops the handle without waking anything (one that a newer handle
    /// has replaced).
    pub(crate) fn defuse(mut self) {
        self.wake = None;
    }
}

impl Drop for Resume {
    fn drop(&mut self) {
        if let Some(wake) = self.wake.take() {
            wake();
        }
    }
}

/// A body limit, as a route declares it ([`Server::max_body`]).
///
/// [`Server::max_body`]: super::Server::max_body
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// At most this many bytes (decoded, for a chunked body).
    Bytes(u64),
    /// No limit: only by this explicit choice.
    None,
}

/// How a route takes its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Takes {
    /// No body (`route`): a body sent is not read for the handler.
    Nothing,
    /// The whole body in memory (`method`).
    Whole,
    /// A piece at a time (`stream`).
    Stream,
}

/// A route's body declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    pub takes: Takes,
    /// The route's own limit; `None`: the runtime file's for its kind.
    pub limit: Option<Limit>,
    /// It takes bodies with a `Content-Encoding` as they are.
    pub coded: bool,
}

impl Rule {
    pub(crate) const NOTHING: Rule = Rule {
        takes: Takes::Nothing,
        limit: None,
        coded: false,
    };

    /// The limit in force: the route's when it declared one, else the
    /// runtime file's for its kind (`body-limit`, `stream-limit`); `None`:
    /// no limit.
    pub(crate) fn limit(&self, rt: &Runtime) -> Option<u64> {
        match (self.limit, self.takes) {
            (Some(Limit::Bytes(n)), _) => Some(n),
            (Some(Limit::None), _) => None,
            (None, Takes::Stream) => Some(rt.stream_limit),
            (None, _) => Some(rt.body_limit),
        }
    }
}

/// The most of a body not read for anyone (refused, or sent to a route
/// that takes none) that is read and thrown away to keep the connection;
/// past it, the connection closes after the answer.
pub(crate) const DRAIN_MAX: u64 = 256 << 10;

/// How a request's body is to be taken, decided from its head alone.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// No body came (nothing declared, nothing to read).
    Bodiless,
    /// Answer now with this status; the body is not read for anyone.
    Refuse(u16, &'static str),
    /// Read it (after `100 Continue` where the client waits for one).
    Take {
        takes: Takes,
        /// The most that may arrive; `None`: no limit.
        limit: Option<u64>,
    },
}

/// How a protocol unit reads a request body it was told to take, on a
/// multiplexed protocol (HTTP/2, HTTP/3): a stream's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intake {
    /// Whole, into memory, up to `limit` octets (`None`: no limit).
    Whole { limit: Option<u64> },
    /// Piece by piece as it arrives, at the pace its sink takes it (HTTP/2:
    /// the stream's window starts at 256 KiB; HTTP/3: QUIC's stream flow
    /// control).
    Stream,
    /// Not read for anyone, and small enough to let arrive: dropped as it
    /// comes, credited so the client can finish, up to `max` octets (past
    /// them, as `Discard`). The stream ends as the client ends it.
    Drain { max: u64 },
    /// Not read for anyone: dropped as it comes, never credited (the
    /// stream is reset once its answer is out).
    Discard,
}

/// What a request's head says of its body, whatever the protocol.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Declared {
    /// It has a body (a `Content-Length` above zero, chunked, or HTTP/2
    /// DATA to come).
    pub present: bool,
    /// Its `Content-Length`, if it gave one.
    pub length: Option<u64>,
    /// It carries a `Content-Encoding` other than `identity`.
    pub coded: bool,
}

/// Decides how a request's body is taken, from its route's `rule`, before
/// any of it is read: 415 for a coded body the route did not ask for, 413
/// for a `Content-Length` over the limit.
pub(crate) fn admit(rule: &Rule, declared: Declared, rt: &Runtime) -> Admit {
    if !declared.present {
        return Admit::Bodiless;
    }
    if rule.takes == Takes::Nothing {
        return Admit::Take {
            takes: Takes::Nothing,
            limit: Some(DRAIN_MAX),
        };
    }
    if declared.coded && !rule.coded {
        return Admit::Refuse(
            415,
            "a request body with a Content-Encoding this route does not take",
        );
    }
    let limit = rule.limit(rt);
    if let (Some(limit), Some(length)) = (limit, declared.length) {
        if length > limit {
            return Admit::Refuse(413, "request body larger than allowed");
        }
    }
    Admit::Take {
        takes: rule.takes,
        limit,
    }
}

/// Whether a request's `Content-Encoding` codes its body (anything but
/// `identity`).
pub(crate) fn coded(req: &Request) -> bool {
    req.header("content-encoding")
        .is_some_and(|v| !v.trim().eq_ignore_ascii_case("identity") && !v.trim().is_empty())
}

/// A sink with its type erased, as a route keeps it; std's own sinks (a
/// body written to a file) implement it directly, to hold the body before
/// its first byte and to answer later.
pub(crate) trait Erased: Send {
    /// Before the first piece: a sink may pause here ([`Flow::pause`]) to
    /// hold the body — and a `100 Continue` — until it is ready for it;
    /// `reply` answers the request at any time from any thread (before the
    /// whole body came: the rest is not read). A program's sink does
    /// neither.
    fn begin(&mut self, flow: &mut Flow<'_>, reply: Reply) {
        let _ = (flow, reply);
    }
    fn piece(&mut self, piece: &[u8], flow: &mut Flow<'_>);
    /// The whole body arrived: the answer, or `None` when the sink answers
    /// later through its [`Reply`].
    fn end(self: Box<Self>, req: &Request) -> Option<Response>;
    fn abort(self: Box<Self>, why: Aborted);
}

impl<S: Sink> Erased for S {
    fn piece(&mut self, piece: &[u8], flow: &mut Flow<'_>) {
        Sink::piece(self, piece, flow)
    }

    fn end(self: Box<Self>, req: &Request) -> Option<Response> {
        Some(Sink::end(*self, req).into_response())
    }

    fn abort(self: Box<Self>, why: Aborted) {
        Sink::abort(*self, why)
    }
}

/// How a sink answers later ([`Erased::begin`]): once, from any thread.
pub(crate) struct Reply(Box<dyn FnOnce(Response) + Send>);

impl Reply {
    pub(crate) fn new(send: impl FnOnce(Response) + Send + 'static) -> Reply {
        Reply(Box::new(send))
    }

    /// Sends the answer to the request's connection.
    pub(crate) fn send(self, resp: Response) {
        (self.0)(resp)
    }
}

/// Feeds a body that is here whole (a request without one; every body on
/// the wasm32 host, which reads it before std sees it) to `sink` as its
/// one piece, and ends it: the sink's answer.
pub(crate) fn feed_whole(mut sink: Box<dyn Erased>, req: &Request) -> Response {
    if !req.body.is_empty() {
        // Nothing more can come: a pause has nothing to hold back.
        let mut pause = || Resume::new(|| {});
        sink.piece(&req.body, &mut Flow::new(&mut pause));
    }
    sink.end(req).unwrap_or_else(|| {
        Response::internal_error("a sink that answers later was fed a whole body".to_owned())
    })
}

/// A streamed route's handler: makes the sink for a request, or answers
/// instead.
pub(crate) type MakeSink = Box<dyn Fn(&Request) -> Result<Box<dyn Erased>, Response> + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(takes: Takes, limit: Option<Limit>) -> Rule {
        Rule {
            takes,
            limit,
            coded: false,
        }
    }

    fn declared(length: Option<u64>, coded: bool) -> Declared {
        Declared {
            present: length != Some(0),
            length,
            coded,
        }
    }

    #[test]
    fn the_route_decides_at_head_time() {
        let rt = Runtime::default();
        let whole = rule(Takes::Whole, None);
        assert_eq!(
            admit(&whole, declared(Some(0), false), &rt),
            Admit::Bodiless
        );
        assert_eq!(
            admit(&whole, declared(Some(1 << 20), false), &rt),
            Admit::Take {
                takes: Takes::Whole,
                limit: Some(1 << 20)
            }
        );
        assert_eq!(
            admit(&whole, declared(Some((1 << 20) + 1), false), &rt),
            Admit::Refuse(413, "request body larger than allowed")
        );
        // Chunked: no length to refuse by; counted as it arrives.
        assert!(matches!(
            admit(&whole, declared(None, false), &rt),
            Admit::Take { .. }
        ));
        assert!(matches!(
            admit(&whole, declared(Some(10), true), &rt),
            Admit::Refuse(415, _)
        ));
        let coded = Rule {
            coded: true,
            ..whole
        };
        assert!(matches!(
            admit(&coded, declared(Some(10), true), &rt),
            Admit::Take { .. }
        ));
        // A stream's default is the runtime's stream limit; the route's own
        // wins when it gives one, and "none" is a choice.
        let stream = rule(Takes::Stream, None);
        assert_eq!(stream.limit(&rt), Some(1 << 30));
        assert_eq!(
            rule(Takes::Stream, Some(Limit::Bytes(5))).limit(&rt),
            Some(5)
        );
        assert_eq!(rule(Takes::Whole, Some(Limit::None)).limit(&rt), None);
        // A route that takes none drains what comes, to a bound.
        assert_eq!(
            admit(&Rule::NOTHING, declared(Some(10), true), &rt),
            Admit::Take {
                takes: Takes::Nothing,
                limit: Some(DRAIN_MAX)
            }
        );
    }
}
