//! The server side of one HTTP/3 connection, sans-IO (RFC 9114): each
//! QUIC stream's octets in ([`Core::request_data`], [`Core::uni_data`]),
//! requests and their bodies out ([`Event`]), and what the QUIC connection
//! must do to streams ([`Action`]) or to itself ([`Fatal`]). QUIC gives
//! each stream its own order, flow control and end, so unlike HTTP/2 there
//! are no windows or stream ids to keep here: only each stream's frames,
//! the peer's critical streams, the request count and the resets.
//!
//! Responses are written by the protocol unit with `http/h3/response.rs`.
//! The limits are in `spec/http3.md`.

mod body;
mod request;
#[cfg(test)]
mod tests;
mod uni;

use super::frame::{self, Code, PeerSettings};
use super::qpack::{self, Decoded, Decoder};
use crate::http::fields::request::{Fields, Parsed, Refusal};
use crate::http::request::{reject, Reject, Version};
use body::Taking;
use bytes::{Bytes, BytesMut};
use request::{Fault, Piece, Reader};
use std::collections::{HashMap, VecDeque};
use uni::{Opened, Read, Said, Uni};

/// What a connection allows; the defaults and their reasons are in
/// `spec/http3.md`, "Limits".
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    /// Request streams one connection may open before it is asked to go
    /// away (GOAWAY); later ones are refused with H3_REQUEST_REJECTED.
    pub max_requests: u32,
    /// The decoded field section (name + value + 32 per line),
    /// `max-header-bytes`, advertised as SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub max_list: usize,
}

/// Resets one connection may cause or take — a client's reset of a stream
/// still being answered, and every stream error we raise — before it is
/// closed with H3_EXCESSIVE_LOAD; each stream answered in full earns one
/// back. HTTP/2's rapid-reset answer, kept for HTTP/3: QUIC's stream
/// credit already bounds the streams open at once, but not how fast they
/// are opened and cancelled.
const RESET_BUDGET: i32 = 100;

/// A connection error: close the QUIC connection with this code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fatal {
    pub code: Code,
    pub reason: &'static str,
}

/// What the connection hands its protocol unit.
#[derive(Debug)]
pub(crate) enum Event {
    /// A request whose stream ended with its HEADERS: answer it. `Err`:
    /// answer with that status.
    Request {
        stream: u64,
        request: Result<Parsed, Refused>,
    },
    /// A request whose stream goes on: decide from its head how its body
    /// is taken ([`Core::take_body`]); until then what arrives waits here.
    Head { stream: u64, request: Parsed },
    /// The whole body of a request taken [`Intake::Whole`].
    Body { stream: u64, body: Bytes },
    /// The next piece of a body taken [`Intake::Stream`]; `end`: the last
    /// (possibly empty).
    Data { stream: u64, data: Bytes, end: bool },
    /// A body taken whole passed its limit: answer 413 (the stream's
    /// reading is stopped).
    TooLarge { stream: u64 },
    /// A stream being answered is gone (the client reset or stopped it, or
    /// it broke a rule): drop its answer, and its body.
    Cancel { stream: u64 },
}

/// A request answered with a status page instead of the pipeline.
#[derive(Debug)]
pub(crate) struct Refused {
    pub reject: Reject,
    /// Malformed: after its answer the stream is reset with
    /// H3_MESSAGE_ERROR instead of finished.
    pub reset: bool,
}

/// What the unit must do to a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Reset our sending side (RESET_STREAM) and stop the peer's
    /// (STOP_SENDING), both with `code`: the stream is over.
    Reset { stream: u64, code: Code },
    /// Stop the peer's sending side only: what it still sends is not
    /// wanted (the answer may still go out).
    StopSending { stream: u64, code: Code },
}

/// What happened on the connection since the unit last looked: for the
/// counters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Tally {
    pub streams: u64,
    pub resets_sent: u64,
    pub resets_received: u64,
}

#[derive(Debug)]
struct Stream {
    reader: Reader,
    taking: Taking,
    /// The request's `content-length`, if it gave one.
    declared: Option<u64>,
    /// Octets of body received.
    received: u64,
    /// The request went to the unit: a reset must cancel its answer.
    handed: bool,
    /// Answered, reset or cancelled: what still arrives is ignored until
    /// the unit forgets the stream ([`Core::forget`]).
    over: bool,
}

impl Stream {
    /// A stream just seen: reading, or `over` from the start (refused).
    fn new(reader: Reader, over: bool) -> Stream {
        Stream {
            reader,
            taking: Taking::Done,
            declared: None,
            received: 0,
            handed: false,
            over,
        }
    }
}

pub(crate) struct Core {
    limits: Limits,
    decoder: Decoder,
    opened: Opened,
    unis: HashMap<u64, Uni>,
    streams: HashMap<u64, Stream>,
    /// Request streams the client opened.
    requests: u32,
    /// The first request stream id past every one opened.
    next_request: u64,
    /// The first request stream no longer served, once GOAWAY names it.
    goaway: Option<u64>,
    peer: Option<PeerSettings>,
    /// The client sent GOAWAY: no new request will come.
    peer_gone: bool,
    reset_budget: i32,
    events: VecDeque<Event>,
    actions: VecDeque<Action>,
    tally: Tally,
    pieces: Vec<Piece>,
}

impl Core {
    pub(crate) fn new(limits: Limits) -> Core {
        Core {
            limits,
            decoder: Decoder::default(),
            opened: Opened::default(),
            unis: HashMap::new(),
            streams: HashMap::new(),
            requests: 0,
            next_request: 0,
            goaway: None,
            peer: None,
            peer_gone: false,
            reset_budget: RESET_BUDGET,
            events: VecDeque::new(),
            actions: VecDeque::new(),
            tally: Tally::default(),
            pieces: Vec::new(),
        }
    }

    /// Our control stream's first octets (its type and SETTINGS), to write
    /// on the unidirectional stream the unit opens first. `grease`: any
    /// number, for the reserved setting.
    pub(crate) fn control_stream_start(&self, grease: u32) -> Vec<u8> {
        frame::control_stream_start(self.limits.max_list as u64, grease)
    }

    /// The next event, if any.
    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The next action on a stream, if any.
    pub(crate) fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The counters since the last call.
    pub(crate) fn take_tally(&mut self) -> Tally {
        std::mem::take(&mut self.tally)
    }

    /// The peer's SETTINGS, once its control stream gave them.
    pub(crate) fn peer_settings(&self) -> Option<PeerSettings> {
        self.peer
    }

    /// Whether the client said GOAWAY or we did: no new request.
    pub(crate) fn going_away(&self) -> bool {
        self.peer_gone || self.goaway.is_some()
    }

    /// Octets of one of the peer's unidirectional streams; `fin`: it ended.
    pub(crate) fn uni_data(&mut self, id: u64, data: &[u8], fin: bool) -> Result<(), Fatal> {
        let uni = self.unis.entry(id).or_insert_with(Uni::new);
        let mut said = Vec::new();
        let read = uni
            .read(data, &mut self.opened, &mut said)
            .map_err(|uni::Fatal(code, reason)| Fatal { code, reason })?;
        for s in said {
            match s {
                Said::Settings(p) => self.peer = Some(p),
                Said::Goaway => self.peer_gone = true,
            }
        }
        if let Read::Stop(code) = read {
            // Kept, stopped, until the peer's side ends: what it still
            // sends is dropped, not read as a new stream's type.
            self.actions
                .push_back(Action::StopSending { stream: id, code });
        }
        if fin {
            return self.uni_closed(id);
        }
        Ok(())
    }

    /// The peer reset one of its unidirectional streams, or ended it.
    pub(crate) fn uni_closed(&mut self, id: u64) -> Result<(), Fatal> {
        match self.unis.remove(&id) {
            Some(uni) => uni
                .closed()
                .map_err(|uni::Fatal(code, reason)| Fatal { code, reason }),
            None => Ok(()),
        }
    }

    /// Octets of a request stream (a client-initiated bidirectional one);
    /// `fin`: its sending side ended after them.
    pub(crate) fn request_data(&mut self, id: u64, data: Bytes, fin: bool) -> Result<(), Fatal> {
        if self.streams.get(&id).is_some_and(|s| s.over) {
            return Ok(());
        }
        if !self.streams.contains_key(&id) {
            if !self.admit(id) {
                return Ok(());
            }
            let reader = Reader::new(4 * self.limits.max_list + 1024);
            self.streams.insert(id, Stream::new(reader, false));
        }
        let mut pieces = std::mem::take(&mut self.pieces);
        let stream = self.streams.get_mut(&id).expect("inserted above");
        let result = stream.reader.read(data, fin, &mut pieces);
        let mut outcome = Ok(());
        let mut drain = pieces.drain(..).peekable();
        while let Some(piece) = drain.next() {
            if outcome.is_err() || self.is_over(id) {
                break;
            }
            let ends = drain.peek() == Some(&Piece::End);
            outcome = self.piece(id, piece, ends);
        }
        drop(drain);
        self.pieces = pieces;
        outcome?;
        match result {
            Ok(()) => Ok(()),
            // What its pieces did closed the stream (a malformed request
            // reset it): the octets after them are not read, whatever
            // they hold, as they would not be had they come later.
            Err(_) if self.is_over(id) => Ok(()),
            Err(Fault::Connection(code, reason)) => Err(Fatal { code, reason }),
            Err(Fault::Stream(code, _)) => self.stream_error(id, code),
        }
    }

    /// A new request stream: counted, or refused past GOAWAY and the cap.
    fn admit(&mut self, id: u64) -> bool {
        self.next_request = self.next_request.max(id + 4);
        if self.goaway.is_some_and(|g| id >= g) {
            // Remembered, over, so what else arrives on it is not refused
            // again.
            self.streams.insert(id, Stream::new(Reader::new(0), true));
            self.reset(id, Code::RequestRejected);
            return false;
        }
        self.requests += 1;
        self.tally.streams += 1;
        if self.requests >= self.limits.max_requests && self.goaway.is_none() {
            self.goaway = Some(id + 4);
        }
        true
    }

    /// One piece of a request stream. `ends`: the stream's end is the
    /// next piece.
    fn piece(&mut self, id: u64, piece: Piece, ends: bool) -> Result<(), Fatal> {
        match piece {
            Piece::Headers(section) => self.headers(id, &section, ends),
            Piece::TooLarge if self.streams[&id].handed => {
                self.stream_error(id, Code::ExcessiveLoad)
            }
            Piece::TooLarge => {
                let too_large = reject(431, "field section larger than max-header-bytes");
                self.refuse(id, too_large, false);
                Ok(())
            }
            Piece::Trailers(section) => {
                let mut fields = Fields::trailers(Version::Http3);
                match self.decode(&section, &mut fields)? {
                    Decoded::Complete if fields.trailers_fault().is_none() => Ok(()),
                    _ => self.stream_error(id, Code::MessageError),
                }
            }
            Piece::Data(data) => self.data(id, data),
            Piece::End => self.end(id),
        }
    }

    fn decode(&mut self, section: &[u8], fields: &mut Fields) -> Result<Decoded, Fatal> {
        self.decoder
            .decode(section, self.limits.max_list, &mut |n, v| {
                fields.field(n, v)
            })
            .map_err(|qpack::DecompressionFailed| Fatal {
                code: Code::QpackDecompressionFailed,
                reason: "a field section QPACK cannot decode",
            })
    }

    /// The request's HEADERS; `ends`: the stream ends right after them,
    /// so the request has no body.
    fn headers(&mut self, id: u64, section: &[u8], ends: bool) -> Result<(), Fatal> {
        let mut fields = Fields::request(Version::Http3);
        let decoded = self.decode(section, &mut fields)?;
        let parsed = fields.finish(decoded == Decoded::TooLarge);
        let request = match parsed {
            Ok(p) => p,
            Err(Refusal::Malformed(_)) => return self.stream_error(id, Code::MessageError),
            Err(Refusal::Answer(reject)) => {
                self.refuse(id, reject, false);
                return Ok(());
            }
            Err(Refusal::AnswerThenReset(reject)) => {
                self.refuse(id, reject, true);
                return Ok(());
            }
        };
        if ends && request.content_length.is_some_and(|n| n > 0) {
            // The end right after a head that promised a body: malformed
            // (§4.1.2), found before the request reaches anyone.
            return self.stream_error(id, Code::MessageError);
        }
        let stream = self.streams.get_mut(&id).expect("a stream being read");
        stream.declared = request.content_length;
        if ends {
            // A `content-length` above 0 with no DATA is caught at the end.
            self.hand(
                id,
                Event::Request {
                    stream: id,
                    request: Ok(request),
                },
            );
        } else {
            stream.taking = Taking::Undecided(BytesMut::new(), false);
            self.hand(
                id,
                Event::Head {
                    stream: id,
                    request,
                },
            );
        }
        Ok(())
    }

    /// A request answered with a status page: handed as refused; unless
    /// `reset` (malformed: the unit resets the stream after the answer),
    /// what else the client sends is not wanted.
    fn refuse(&mut self, id: u64, reject: Reject, reset: bool) {
        let request = Err(Refused { reject, reset });
        self.hand(
            id,
            Event::Request {
                stream: id,
                request,
            },
        );
        if !reset {
            self.stop(id, Code::NoError);
        }
    }

    fn hand(&mut self, id: u64, event: Event) {
        if let Some(s) = self.streams.get_mut(&id) {
            s.handed = true;
        }
        self.events.push_back(event);
    }

    /// The client reset its sending side of a request stream.
    pub(crate) fn request_reset(&mut self, id: u64) -> Result<(), Fatal> {
        self.tally.resets_received += 1;
        match self.close(id) {
            Some(true) => {
                self.events.push_back(Event::Cancel { stream: id });
                self.spend()
            }
            _ => Ok(()),
        }
    }

    /// The client asked us to stop sending on a request stream
    /// (STOP_SENDING): the answer is dropped.
    pub(crate) fn stopped(&mut self, id: u64) -> Result<(), Fatal> {
        self.tally.resets_received += 1;
        if self.close(id).is_some() {
            self.events.push_back(Event::Cancel { stream: id });
        }
        self.spend()
    }

    /// The answer on `id` went out whole: the stream earns a reset back.
    pub(crate) fn answered(&mut self, id: u64) {
        if let Some(s) = self.streams.get(&id) {
            if !s.over
                && matches!(
                    s.taking,
                    Taking::Undecided(..)
                        | Taking::Whole { .. }
                        | Taking::Stream
                        | Taking::Drain(_)
                )
            {
                // The answer went before the body ended: what is left is
                // not wanted (§4.1: the server may answer first). Unlike a
                // TCP reset, STOP_SENDING loses nothing of the answer, so
                // a drained body stops here too.
                self.stop(id, Code::NoError);
            }
        }
        self.close(id);
        self.reset_budget = (self.reset_budget + 1).min(RESET_BUDGET);
    }

    /// Whether the request on `id` went to the unit (its head arrived).
    pub(crate) fn is_handed(&self, id: u64) -> bool {
        self.streams.get(&id).is_some_and(|s| s.handed || s.over)
    }

    /// The unit gives up on a stream (its head came too slowly): it is
    /// reset and stopped with `code`, as a stream error.
    pub(crate) fn cancel(&mut self, id: u64, code: Code) -> Result<(), Fatal> {
        if self.is_over(id) {
            return Ok(());
        }
        self.stream_error(id, code)
    }

    /// The first request stream id the client has not opened: what a
    /// GOAWAY for a graceful close names.
    pub(crate) fn next_request_stream(&self) -> u64 {
        self.next_request
    }

    /// GOAWAY for a graceful close: the octets for our control stream, and
    /// every request stream at or past the first unopened one is refused
    /// when it comes. Idempotent: a second call gives the same frame.
    pub(crate) fn goaway(&mut self, next_unopened: u64) -> Vec<u8> {
        let id = *self.goaway.get_or_insert(next_unopened);
        frame::goaway(id)
    }

    /// A stream error: reset and stop the stream, cancel its answer.
    fn stream_error(&mut self, id: u64, code: Code) -> Result<(), Fatal> {
        if self.close(id) == Some(true) {
            self.events.push_back(Event::Cancel { stream: id });
        }
        self.reset(id, code);
        self.spend()
    }

    /// Marks a stream over, dropping what it held: whether it was open
    /// and handed to the unit, or `None` if it was not open.
    fn close(&mut self, id: u64) -> Option<bool> {
        let s = self.streams.get_mut(&id).filter(|s| !s.over)?;
        s.over = true;
        s.taking = Taking::Done;
        s.reader = Reader::new(0);
        Some(s.handed)
    }

    fn is_over(&self, id: u64) -> bool {
        self.streams.get(&id).is_none_or(|s| s.over)
    }

    /// QUIC closed the stream both ways: nothing more will arrive on it.
    pub(crate) fn forget(&mut self, id: u64) {
        self.streams.remove(&id);
    }

    fn reset(&mut self, id: u64, code: Code) {
        self.tally.resets_sent += 1;
        self.actions.push_back(Action::Reset { stream: id, code });
    }

    fn stop(&mut self, id: u64, code: Code) {
        self.actions
            .push_back(Action::StopSending { stream: id, code });
    }

    fn spend(&mut self) -> Result<(), Fatal> {
        self.reset_budget -= 1;
        if self.reset_budget < 0 {
            return Err(Fatal {
                code: Code::ExcessiveLoad,
                reason: "too many streams reset",
            });
        }
        Ok(())
    }
}
