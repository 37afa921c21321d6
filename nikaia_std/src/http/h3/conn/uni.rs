//! The peer's unidirectional streams (RFC 9114 §6.2): each opens with its
//! type. One control stream, whose first frame is SETTINGS; one QPACK
//! encoder stream and one decoder stream (RFC 9204 §4.2); a second of any
//! of them is H3_STREAM_CREATION_ERROR, and closing one is
//! H3_CLOSED_CRITICAL_STREAM (§6.2.1) — a reopened QPACK stream is exactly
//! what nginx's CVE-2026-42530 was. A push stream from a client is
//! H3_STREAM_CREATION_ERROR; reserved and unknown types are stopped with
//! H3_STREAM_CREATION_ERROR and never read (§6.2.3).

use crate::http::h3::frame::{
    kind, read_settings, read_varint, stream, Code, HeadBuf, PeerSettings,
};
use crate::http::h3::qpack::streams::{DecoderStream, EncoderStream};

/// The largest control frame payload read (SETTINGS, GOAWAY, MAX_PUSH_ID,
/// CANCEL_PUSH): far above what a real one takes; past it,
/// H3_EXCESSIVE_LOAD. Unknown frames are skipped, whatever their length.
const MAX_CONTROL_FRAME: u64 = 4096;

/// A connection error a unidirectional stream raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fatal(pub Code, pub &'static str);

/// What became of a stream's octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// Taken; more may come.
    Taken,
    /// A stream of a type we do not read: stop it with this code and drop
    /// it (§6.2.3).
    Stop(Code),
}

/// What the peer's control stream said, for the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Said {
    Settings(PeerSettings),
    /// GOAWAY: the client will open nothing more (its id is a push id,
    /// which we never use).
    Goaway,
}

#[derive(Debug)]
enum Kind {
    /// The type octets are still arriving.
    Untyped(Vec<u8>),
    Control(Control),
    Encoder(EncoderStream),
    Decoder(DecoderStream),
    /// A type we do not read: stopped, what still arrives dropped.
    Stopped,
}

/// The peer's control stream: frames, read whole (bounded) or skipped.
#[derive(Debug, Default)]
struct Control {
    settings: bool,
    /// A head being gathered.
    head: HeadBuf,
    /// A payload being gathered.
    held: Vec<u8>,
    /// The current frame: its type and payload length, once its head read.
    frame: Option<(u64, u64)>,
    /// Octets of an unknown frame still to skip.
    skip: u64,
    /// The last MAX_PUSH_ID and GOAWAY ids: neither may go the wrong way.
    max_push_id: Option<u64>,
    goaway: Option<u64>,
}

/// One of the peer's unidirectional streams.
#[derive(Debug)]
pub(crate) struct Uni {
    kind: Kind,
}

/// Which critical streams the peer opened so far.
#[derive(Debug, Default)]
pub(crate) struct Opened {
    control: bool,
    encoder: bool,
    decoder: bool,
}

impl Uni {
    pub(crate) fn new() -> Uni {
        Uni {
            kind: Kind::Untyped(Vec::new()),
        }
    }

    /// The stream's next octets; `said` gets what its control frames say.
    pub(crate) fn read(
        &mut self,
        mut data: &[u8],
        opened: &mut Opened,
        said: &mut Vec<Said>,
    ) -> Result<Read, Fatal> {
        if let Kind::Untyped(held) = &mut self.kind {
            let take = data.len().min(8 - held.len());
            held.extend_from_slice(&data[..take]);
            let Some((t, n)) = read_varint(held) else {
                return Ok(Read::Taken);
            };
            data = &data[n - (held.len() - take)..];
            let creation = |what| Err(Fatal(Code::StreamCreationError, what));
            self.kind = match t {
                stream::CONTROL if opened.control => return creation("a second control stream"),
                stream::CONTROL => {
                    opened.control = true;
                    Kind::Control(Control::default())
                }
                stream::QPACK_ENCODER if opened.encoder => {
                    return creation("a second QPACK encoder stream")
                }
                stream::QPACK_ENCODER => {
                    opened.encoder = true;
                    Kind::Encoder(EncoderStream::default())
                }
                stream::QPACK_DECODER if opened.decoder => {
                    return creation("a second QPACK decoder stream")
                }
                stream::QPACK_DECODER => {
                    opened.decoder = true;
                    Kind::Decoder(DecoderStream::default())
                }
                stream::PUSH => return creation("a push stream from a client"),
                _ => {
                    self.kind = Kind::Stopped;
                    return Ok(Read::Stop(Code::StreamCreationError));
                }
            };
        }
        match &mut self.kind {
            Kind::Untyped(_) | Kind::Stopped => Ok(Read::Taken),
            Kind::Control(c) => c.read(data, said).map(|()| Read::Taken),
            Kind::Encoder(e) => e.read(data).map(|()| Read::Taken).map_err(|_| {
                Fatal(
                    Code::QpackEncoderStreamError,
                    "an encoder instruction for a table we refused",
                )
            }),
            Kind::Decoder(d) => d.read(data).map(|()| Read::Taken).map_err(|_| {
                Fatal(
                    Code::QpackDecoderStreamError,
                    "a decoder instruction for a table we never used",
                )
            }),
        }
    }

    /// The peer ended or reset the stream.
    pub(crate) fn closed(&self) -> Result<(), Fatal> {
        match self.kind {
            // A stream that never said its type, or one we stopped:
            // nothing was lost.
            Kind::Untyped(_) | Kind::Stopped => Ok(()),
            _ => Err(Fatal(
                Code::ClosedCriticalStream,
                "a critical stream closed",
            )),
        }
    }
}

impl Control {
    fn read(&mut self, mut data: &[u8], said: &mut Vec<Said>) -> Result<(), Fatal> {
        loop {
            if self.skip > 0 {
                let n = data
                    .len()
                    .min(usize::try_from(self.skip).unwrap_or(usize::MAX));
                data = &data[n..];
                self.skip -= n as u64;
                if self.skip > 0 {
                    return Ok(());
                }
            }
            match self.frame {
                None => {
                    if data.is_empty() {
                        return Ok(());
                    }
                    let (head, took) = self.head.feed(data);
                    data = &data[took..];
                    if let Some(head) = head {
                        self.begin(head.kind, head.len)?;
                    }
                }
                Some((k, len)) => {
                    let want = usize::try_from(len).unwrap_or(usize::MAX) - self.held.len();
                    let n = data.len().min(want);
                    self.held.extend_from_slice(&data[..n]);
                    data = &data[n..];
                    if self.held.len() as u64 != len {
                        return Ok(());
                    }
                    self.frame = None;
                    let payload = std::mem::take(&mut self.held);
                    self.whole(k, &payload, said)?;
                }
            }
        }
    }

    /// A frame's head was read.
    fn begin(&mut self, k: u64, len: u64) -> Result<(), Fatal> {
        let unexpected = |why| Err(Fatal(Code::FrameUnexpected, why));
        if !self.settings && k != kind::SETTINGS {
            return Err(Fatal(
                Code::MissingSettings,
                "the control stream began without SETTINGS",
            ));
        }
        match k {
            kind::SETTINGS if self.settings => return unexpected("a second SETTINGS"),
            kind::DATA | kind::HEADERS => {
                return unexpected("DATA or HEADERS on the control stream")
            }
            kind::PUSH_PROMISE => return unexpected("PUSH_PROMISE from a client"),
            k if kind::http2_only(k) => return unexpected("an HTTP/2 frame type"),
            kind::SETTINGS | kind::GOAWAY | kind::MAX_PUSH_ID | kind::CANCEL_PUSH => {
                if len > MAX_CONTROL_FRAME {
                    return Err(Fatal(Code::ExcessiveLoad, "a control frame past its bound"));
                }
                self.settings = true;
                self.frame = Some((k, len));
            }
            _ => self.skip = len,
        }
        Ok(())
    }

    /// A control frame's whole payload.
    fn whole(&mut self, k: u64, payload: &[u8], said: &mut Vec<Said>) -> Result<(), Fatal> {
        if k == kind::SETTINGS {
            let settings =
                read_settings(payload).map_err(|code| Fatal(code, "a malformed SETTINGS"))?;
            said.push(Said::Settings(settings));
            return Ok(());
        }
        let id = match read_varint(payload) {
            Some((id, n)) if n == payload.len() => id,
            _ => {
                return Err(Fatal(
                    Code::FrameError,
                    "a control frame of the wrong length",
                ))
            }
        };
        let id_error = |why| Err(Fatal(Code::IdError, why));
        match k {
            // §5.2: a GOAWAY's id never grows.
            kind::GOAWAY if self.goaway.is_some_and(|last| id > last) => {
                return id_error("a GOAWAY whose id grew")
            }
            kind::GOAWAY => {
                self.goaway = Some(id);
                said.push(Said::Goaway);
            }
            // §7.2.7: nor does MAX_PUSH_ID shrink (we never push).
            kind::MAX_PUSH_ID if self.max_push_id.is_some_and(|last| id < last) => {
                return id_error("a MAX_PUSH_ID that shrank")
            }
            kind::MAX_PUSH_ID => self.max_push_id = Some(id),
            // §7.2.3: a CANCEL_PUSH names a push we never promised.
            _ => return id_error("CANCEL_PUSH of a push never promised"),
        }
        Ok(())
    }
}
