//! HTTP/3's framing (RFC 9114 §7) and the QUIC variable-length integers it
//! is written in (RFC 9000 §16): frame and stream types, error codes, the
//! SETTINGS we send and the ones we accept, and a frame head read from a
//! stream's buffered octets.

/// A QUIC variable-length integer's largest value, 2^62 - 1.
pub(crate) const VARINT_MAX: u64 = (1 << 62) - 1;

/// Reads a variable-length integer from the front of `buf`: its value and
/// length, or `None` when `buf` holds only part of it.
pub(crate) fn read_varint(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    let bytes = buf.get(..len)?;
    let mut value = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        value = value << 8 | u64::from(b);
    }
    Some((value, len))
}

/// Appends `value` (at most [`VARINT_MAX`], else clamped) in its shortest
/// encoding.
pub(crate) fn write_varint(out: &mut Vec<u8>, value: u64) {
    let v = value.min(VARINT_MAX);
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// Frame types (§7.2, §11.2.1).
pub(crate) mod kind {
    pub(crate) const DATA: u64 = 0x00;
    pub(crate) const HEADERS: u64 = 0x01;
    pub(crate) const CANCEL_PUSH: u64 = 0x03;
    pub(crate) const SETTINGS: u64 = 0x04;
    pub(crate) const PUSH_PROMISE: u64 = 0x05;
    pub(crate) const GOAWAY: u64 = 0x07;
    pub(crate) const MAX_PUSH_ID: u64 = 0x0d;

    /// HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION: reserved
    /// in HTTP/3, and H3_FRAME_UNEXPECTED wherever they arrive (§7.2.8).
    pub(crate) fn http2_only(kind: u64) -> bool {
        matches!(kind, 0x02 | 0x06 | 0x08 | 0x09)
    }
}

/// Unidirectional stream types (§6.2, RFC 9204 §4.2).
pub(crate) mod stream {
    pub(crate) const CONTROL: u64 = 0x00;
    pub(crate) const PUSH: u64 = 0x01;
    pub(crate) const QPACK_ENCODER: u64 = 0x02;
    pub(crate) const QPACK_DECODER: u64 = 0x03;
}

/// Whether a frame, stream, setting or error type is one of the reserved
/// 0x1f·N + 0x21, sent to exercise the peer's tolerance (§7.2.8, §6.2.3,
/// §7.2.4.1): frames and streams of such a type are ignored.
pub(crate) fn reserved(t: u64) -> bool {
    t >= 0x21 && (t - 0x21).is_multiple_of(0x1f)
}

/// Error codes (§8.1, RFC 9204 §6), for CONNECTION_CLOSE and stream resets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Code {
    NoError = 0x100,
    GeneralProtocolError = 0x101,
    InternalError = 0x102,
    StreamCreationError = 0x103,
    ClosedCriticalStream = 0x104,
    FrameUnexpected = 0x105,
    FrameError = 0x106,
    ExcessiveLoad = 0x107,
    IdError = 0x108,
    SettingsError = 0x109,
    MissingSettings = 0x10a,
    RequestRejected = 0x10b,
    RequestCancelled = 0x10c,
    RequestIncomplete = 0x10d,
    MessageError = 0x10e,
    ConnectError = 0x10f,
    VersionFallback = 0x110,
    QpackDecompressionFailed = 0x200,
    QpackEncoderStreamError = 0x201,
    QpackDecoderStreamError = 0x202,
}

impl Code {
    pub(crate) fn value(self) -> u64 {
        self as u64
    }
}

/// Setting identifiers (§7.2.4.1, RFC 9204 §5).
pub(crate) mod setting {
    pub(crate) const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
    pub(crate) const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
    pub(crate) const QPACK_BLOCKED_STREAMS: u64 = 0x07;

    /// HTTP/2's ENABLE_PUSH, MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE
    /// and MAX_FRAME_SIZE: H3_SETTINGS_ERROR if received (§7.2.4.1).
    pub(crate) fn http2_only(id: u64) -> bool {
        matches!(id, 0x02..=0x05)
    }
}

/// What the peer's SETTINGS said that we use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PeerSettings {
    /// The largest field section the peer accepts (unlimited if absent).
    pub max_field_section_size: Option<u64>,
}

/// Reads a SETTINGS frame's payload. An HTTP/2 setting, an identifier
/// twice or a truncated pair is H3_SETTINGS_ERROR (§7.2.4); unknown and
/// reserved identifiers are ignored, as are the QPACK ones (the peer's
/// table capacity and blocked streams permit what we never use).
pub(crate) fn read_settings(mut payload: &[u8]) -> Result<PeerSettings, Code> {
    let mut settings = PeerSettings::default();
    let mut seen: Vec<u64> = Vec::new();
    while !payload.is_empty() {
        let (id, n) = read_varint(payload).ok_or(Code::SettingsError)?;
        payload = &payload[n..];
        let (value, n) = read_varint(payload).ok_or(Code::SettingsError)?;
        payload = &payload[n..];
        if setting::http2_only(id) || seen.contains(&id) {
            return Err(Code::SettingsError);
        }
        // At most a few dozen, by the frame's bound.
        seen.push(id);
        if id == setting::MAX_FIELD_SECTION_SIZE {
            settings.max_field_section_size = Some(value);
        }
    }
    Ok(settings)
}

/// Appends a frame's head: its type and payload length.
pub(crate) fn write_head(out: &mut Vec<u8>, kind: u64, len: u64) {
    write_varint(out, kind);
    write_varint(out, len);
}

/// Appends a whole frame.
pub(crate) fn write_frame(out: &mut Vec<u8>, kind: u64, payload: &[u8]) {
    write_head(out, kind, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// Our control stream's first octets: its type, then SETTINGS with
/// MAX_FIELD_SECTION_SIZE and one reserved setting (`grease`, any number:
/// it picks the reserved identifier and is the value), so a peer that
/// chokes on unknown settings is found early, as §7.2.4.1 asks.
pub(crate) fn control_stream_start(max_field_section: u64, grease: u32) -> Vec<u8> {
    let mut settings = Vec::new();
    write_varint(&mut settings, setting::MAX_FIELD_SECTION_SIZE);
    write_varint(&mut settings, max_field_section);
    write_varint(&mut settings, 0x1f * u64::from(grease % 1024) + 0x21);
    write_varint(&mut settings, u64::from(grease));
    let mut out = Vec::new();
    write_varint(&mut out, stream::CONTROL);
    write_frame(&mut out, kind::SETTINGS, &settings);
    out
}

/// A GOAWAY frame naming the first request stream we will not serve.
pub(crate) fn goaway(stream_id: u64) -> Vec<u8> {
    let mut id = Vec::new();
    write_varint(&mut id, stream_id);
    let mut out = Vec::new();
    write_frame(&mut out, kind::GOAWAY, &id);
    out
}

/// A frame's head as read from a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub kind: u64,
    pub len: u64,
    /// The octets the head took.
    pub size: usize,
}

/// The frame head at the front of `buf`, or `None` when it has only part
/// of one.
pub(crate) fn read_head(buf: &[u8]) -> Option<Head> {
    let (kind, a) = read_varint(buf)?;
    let (len, b) = read_varint(&buf[a..])?;
    Some(Head {
        kind,
        len,
        size: a + b,
    })
}

/// A frame head that may arrive split across reads: at most two 8-octet
/// integers, gathered here until whole.
#[derive(Debug, Default)]
pub(crate) struct HeadBuf {
    buf: [u8; 16],
    len: usize,
}

impl HeadBuf {
    /// Takes what the head needs from the front of `data`: the head once
    /// whole (the buffer then empty again), and how many octets of `data`
    /// it took.
    pub(crate) fn feed(&mut self, data: &[u8]) -> (Option<Head>, usize) {
        let take = data.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + take].copy_from_slice(&data[..take]);
        let before = self.len;
        self.len += take;
        match read_head(&self.buf[..self.len]) {
            // With 16 octets held a head always reads.
            None => (None, take),
            Some(head) => {
                self.len = 0;
                (Some(head), head.size - before)
            }
        }
    }

    /// Whether part of a head is held.
    pub(crate) fn partial(&self) -> bool {
        self.len > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_each_length_and_rfc_9000_a_1_s_examples() {
        for (hex, value) in [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
            (&[0x40, 0x25], 37), // not the shortest, still 37
        ] {
            assert_eq!(read_varint(hex), Some((value, hex.len())));
        }
        for v in [
            0,
            63,
            64,
            16_383,
            16_384,
            (1 << 30) - 1,
            1 << 30,
            VARINT_MAX,
        ] {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            assert_eq!(read_varint(&out), Some((v, out.len())));
            assert_eq!(
                read_varint(&out[..out.len() - 1]),
                None,
                "a part is not a value"
            );
        }
    }

    #[test]
    fn reserved_types_are_0x1f_n_plus_0x21() {
        assert!(reserved(0x21) && reserved(0x40) && reserved(0x1f * 1000 + 0x21));
        assert!(!reserved(0x20) && !reserved(0x22) && !reserved(kind::GOAWAY));
    }

    #[test]
    fn settings_refuse_http2_ids_and_twins_and_ignore_the_unknown() {
        let pairs = |p: &[(u64, u64)]| {
            let mut out = Vec::new();
            for &(id, v) in p {
                write_varint(&mut out, id);
                write_varint(&mut out, v);
            }
            out
        };
        assert_eq!(
            read_settings(&pairs(&[
                (0x06, 16_384),
                (0x1f * 7 + 0x21, 3),
                (0x33, 1),
                (0x01, 0)
            ])),
            Ok(PeerSettings {
                max_field_section_size: Some(16_384)
            })
        );
        for bad in [&[(0x02, 0)][..], &[(0x05, 16_384)], &[(0x06, 1), (0x06, 1)]] {
            assert_eq!(
                read_settings(&pairs(bad)),
                Err(Code::SettingsError),
                "{bad:?}"
            );
        }
        let mut cut = pairs(&[(0x06, 16_384)]);
        cut.pop();
        assert_eq!(read_settings(&cut), Err(Code::SettingsError));
    }

    #[test]
    fn our_control_stream_opens_with_settings_that_we_would_accept() {
        let start = control_stream_start(16_384, 77);
        assert_eq!(start[0], 0x00, "stream type: control");
        let head = read_head(&start[1..]).unwrap();
        assert_eq!(head.kind, kind::SETTINGS);
        let payload = &start[1 + head.size..];
        assert_eq!(payload.len() as u64, head.len);
        assert_eq!(
            read_settings(payload).unwrap().max_field_section_size,
            Some(16_384)
        );
    }
}
